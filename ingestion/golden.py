"""Golden question sets: the Chroma CSV and a JSONL format.

CSV (Chroma chunking benchmark): columns ``question``, ``references`` (a JSON
list of ``{content, start_index, end_index}``) and ``corpus_id``.

JSONL: one object per line with ``question``, ``document`` (the corpus or
document name) and optional ``spans`` (``[[start, end], ...]`` character ranges).
A question without spans only supports document-level metrics.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GoldenQuestion:
    question: str
    corpus_id: str
    spans: tuple[tuple[int, int], ...] = ()


def load_chroma_csv(path: str | Path) -> list[GoldenQuestion]:
    """Questions of a Chroma-style ``questions.csv``."""
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            refs = json.loads(row["references"])
            spans = tuple((int(r["start_index"]), int(r["end_index"])) for r in refs)
            out.append(GoldenQuestion(row["question"], row["corpus_id"], spans))
    return out


def load_jsonl(path: str | Path) -> list[GoldenQuestion]:
    """Questions of a JSONL golden file (``question``, ``document``, optional ``spans``)."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                spans = tuple((int(s), int(e)) for s, e in obj.get("spans") or ())
                out.append(GoldenQuestion(str(obj["question"]), str(obj["document"]), spans))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{lineno}: malformed golden question: {exc}") from exc
    return out


def load_questions(path: str | Path) -> list[GoldenQuestion]:
    """Load a golden set by extension: ``.csv`` (Chroma) or ``.jsonl``/``.json``."""
    suffix = Path(path).suffix.lower()
    if suffix == ".csv":
        return load_chroma_csv(path)
    if suffix in (".jsonl", ".json", ".ndjson"):
        return load_jsonl(path)
    raise ValueError(f"unknown golden-set format {suffix!r} (expected .csv or .jsonl)")


def check_references(questions: list[GoldenQuestion], corpora: dict[str, str]) -> None:
    """Fail early when a question names a missing corpus or a span outside it."""
    for q in questions:
        if q.corpus_id not in corpora:
            raise ValueError(f"question {q.question[:60]!r}: unknown corpus {q.corpus_id!r}")
        size = len(corpora[q.corpus_id])
        for s, e in q.spans:
            if not 0 <= s <= e <= size:
                raise ValueError(f"question {q.question[:60]!r}: span {s}:{e} outside corpus of {size} chars")
