"""The search benchmark's corpus: real text, real MiniLM embeddings, cached on disk.

Building 100k embeddings takes a quarter of an hour on two cores, so the corpus is
built once and kept under ``.bench-cache/`` (git-ignored), in blocks that are saved
as they finish: an interrupted build resumes where it stopped.

Sources (all real prose): the Django documentation (``docs/**/*.txt`` of the Django
source distribution), docstrings of Python's standard library and of the installed
packages, and the two Chroma evaluation corpora. Texts are paragraphs merged up to
roughly 40-110 words, deduplicated. Queries are the 220 questions of the Chroma set
plus sentences taken from the corpus.

No Django imports: this is pure data preparation.
"""

from __future__ import annotations

import ast
import csv
import hashlib
import json
import random
import re
import sys
import sysconfig
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".bench-cache" / "search"
EVAL = ROOT / "evaluation" / "chroma-general"
BLOCK = 4096  # texts per saved block of embeddings
CORPUS_SIZE = 100_000  # unique texts collected; a run uses the first N (and synthesises beyond them)

_WS = re.compile(r"\s+")


def _paragraphs(text: str) -> Iterator[str]:
    for para in re.split(r"\n\s*\n", text):
        para = _WS.sub(" ", para).strip()
        if para:
            yield para


def _merge(paragraphs: Iterator[str], *, low: int = 40, high: int = 110) -> Iterator[str]:
    """Merge short paragraphs up to ``low`` words; cut long ones at sentence ends near ``high``."""
    buf: list[str] = []
    words = 0
    for para in paragraphs:
        n = len(para.split())
        if n > high:
            sentences = re.split(r"(?<=[.!?])\s+", para)
            for sentence in sentences:
                buf.append(sentence)
                words += len(sentence.split())
                if words >= low:
                    yield " ".join(buf)[:1500]
                    buf, words = [], 0
            continue
        buf.append(para)
        words += n
        if words >= low:
            yield " ".join(buf)[:1500]
            buf, words = [], 0
    if words >= 12:
        yield " ".join(buf)[:1500]


def _django_docs(source: Path) -> Iterator[str]:
    for path in sorted(source.glob("docs/**/*.txt")):
        text = path.read_text(encoding="utf-8", errors="replace")
        # Drop reST directives and underline rows: they are markup, not prose.
        lines = [ln for ln in text.splitlines() if not re.fullmatch(r"\s*([=\-~^*#+`'\".]{3,}|\.\. .*)", ln)]
        yield from _merge(_paragraphs("\n".join(lines)))


def _docstrings(root: Path) -> Iterator[str]:
    for path in sorted(root.rglob("*.py")):
        if "test" in path.parts[-2:-1] or "/tests/" in str(path):
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError, RecursionError, OSError):
            continue
        docs = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc and len(doc.split()) >= 12:
                    docs.append(doc)
        yield from _merge(_paragraphs("\n\n".join(docs)))


def _chroma() -> Iterator[str]:
    for path in sorted((EVAL / "corpora").glob("*.md")):
        yield from _merge(_paragraphs(path.read_text(encoding="utf-8")))


def collect_texts(limit: int, django_source: Path | None) -> list[str]:
    """Unique real paragraphs, up to ``limit``, in a stable order."""
    seen: set[str] = set()
    texts: list[str] = []
    sources: list[Iterator[str]] = [_chroma()]
    if django_source and django_source.exists():
        sources.append(_django_docs(django_source))
    sources.append(_docstrings(Path(sysconfig.get_paths()["stdlib"])))
    sources.append(_docstrings(Path(sysconfig.get_paths()["purelib"])))
    for source in sources:
        for text in source:
            key = text.lower()
            if key in seen or len(text) < 60:
                continue
            seen.add(key)
            texts.append(text)
            if len(texts) >= limit:
                return texts
    return texts


def chroma_questions() -> list[str]:
    with open(EVAL / "questions.csv", newline="", encoding="utf-8") as fh:
        return [row["question"] for row in csv.DictReader(fh)]


def corpus_queries(texts: list[str], count: int, seed: int = 7) -> list[str]:
    """The Chroma questions, then sentences drawn from the corpus until ``count``."""
    queries = chroma_questions()[:count]
    rng = random.Random(seed)
    while len(queries) < count:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", rng.choice(texts)) if 6 <= len(s.split()) <= 30]
        if sentences:
            queries.append(rng.choice(sentences))
    return queries


def _digest(texts: list[str]) -> str:
    return hashlib.sha256("\n\x00".join(texts).encode()).hexdigest()[:16]


def build(
    limit: int, *, django_source: Path | None, log=print, available_only: bool = False
) -> tuple[list[str], np.ndarray]:
    """Texts and their unit vectors; embeds only the blocks not cached yet.

    With ``available_only`` nothing is embedded: the vectors of the leading blocks already
    cached are returned (fewer than the texts while a build is still running).
    """
    from ingestion.embedding import get_embedder

    CACHE.mkdir(parents=True, exist_ok=True)
    texts_path = CACHE / f"texts-{limit}.json"
    if texts_path.exists():
        texts = json.loads(texts_path.read_text())
    else:
        texts = collect_texts(limit, django_source)
        texts_path.write_text(json.dumps(texts))
    digest = _digest(texts)
    log(f"corpus: {len(texts)} unique texts (digest {digest})")
    blocks = []
    model = None
    started = time.monotonic()
    done_new = 0
    for i in range(0, len(texts), BLOCK):
        path = CACHE / f"vec-{digest}-{i // BLOCK:04d}.npy"
        if path.exists():
            blocks.append(np.load(path))
            continue
        if available_only:
            break
        if model is None:
            model = get_embedder("", "cpu", 64)
        vectors = model.embed(texts[i : i + BLOCK])
        np.save(path, vectors)
        blocks.append(vectors)
        done_new += len(vectors)
        rate = done_new / (time.monotonic() - started)
        log(f"embedded {i + len(vectors)}/{len(texts)} ({rate:.0f}/s)")
    return texts, np.concatenate(blocks) if blocks else np.zeros((0, 384), np.float32)


def query_vectors(queries: list[str]) -> np.ndarray:
    from ingestion.embedding import get_embedder

    path = CACHE / f"queries-{_digest(queries)}.npy"
    if path.exists():
        return np.load(path)
    vectors = get_embedder("", "cpu", 64).embed(queries)
    np.save(path, vectors)
    return vectors


if __name__ == "__main__":  # python -m bench.search_bench_corpus 100000 /tmp/djsrc/django-5.2.19
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    src = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    texts, vectors = build(n, django_source=src, log=lambda m: print(m, flush=True))
    print("done", vectors.shape, flush=True)
