"""The transfer suite (issue 30): chunkers scored per source, with confidence intervals, and a
choice made by leave-one-*source*-out that scores each candidate by its worst source.

``python manage.py kb_transfer [--suite evaluation/transfer] [--k 5] [--chunker NAME]...``

A source is the first folder of a golden document name (``pkg-orjson/README.md`` -> ``pkg-orjson``);
every question also has a ``type`` ("doc", "para": a fact inside a long one-line paragraph, "row":
a table row, "mdrow": a cell of a Markdown table of words, "rstrow": a row of a reST grid table, "boxrow":
a row of a table drawn with box characters, "chroma"). Retrieval is exact cosine top-k among the chunks of the question's own
document, as in ``kb_chunkeval``; the embeddings are cached (``--cache-dir``).

What it prints:

* per source, recall / IoU at k (%), for every chunker;
* per question type, the same;
* each candidate's gain over the first chunker (the default), recall and IoU, with a paired
  bootstrap 95% interval over questions: a gain whose interval holds 0 is not a gain;
* leave-one-source-out: for each source S, the candidate whose *worst* source (of the others)
  is best, where a source's score is ``min(recall / reference recall, IoU / reference IoU)``
  against the reference (semchunk 200): the choice made without S, and how it does on S.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ingestion.quality import score_question

DEFAULT_SUITE = Path("evaluation/transfer")
REFERENCE = "semchunk 200"
DEFAULT_CHUNKERS = ("bulkhead", "semchunk:200")


@dataclass(frozen=True)
class Question:
    question: str
    document: str
    spans: tuple[tuple[int, int], ...]
    type: str

    @property
    def source(self) -> str:
        return self.document.split("/", 1)[0]


@dataclass
class Run:
    """One chunker's per-question scores (arrays aligned with the questions)."""

    name: str
    recall: np.ndarray
    iou: np.ndarray
    chunks: int


def load_suite(suite: Path) -> tuple[list[Question], dict[str, str]]:
    """The suite's questions and the texts of the documents they name."""
    questions: list[Question] = []
    with open(suite / "questions.jsonl", encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                spans = tuple((int(s), int(e)) for s, e in obj["spans"])
                questions.append(Question(str(obj["question"]), str(obj["document"]), spans, str(obj["type"])))
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"questions.jsonl:{lineno}: {exc}") from exc
    texts: dict[str, str] = {}
    for doc in sorted({q.document for q in questions}):
        with open(suite / "corpora" / doc, encoding="utf-8", newline="") as fh:
            texts[doc] = fh.read()
    for q in questions:
        if not all(0 <= s < e <= len(texts[q.document]) for s, e in q.spans):
            raise ValueError(f"{q.document}: a span of {q.question[:50]!r} lies outside the document")
    return questions, texts


def evaluate(questions: Sequence[Question], texts: dict[str, str], chunkers: dict, embedder, k: int) -> list[Run]:
    """Chunk every document with every chunker, retrieve top-k per question, score each question."""
    qvec = embedder.embed([q.question for q in questions])
    runs = []
    for name, chunker in chunkers.items():
        weight = pieces_weight(name)
        spans: dict[str, list[tuple[int, int]]] = {}
        vectors: dict[str, np.ndarray] = {}
        texts_of: dict[str, list[str]] = {}
        total = 0
        for doc, text in texts.items():
            chunks = chunker(text, doc) if getattr(chunker, "takes_name", False) else chunker(text)
            spans[doc] = [(c.start, c.end) for c in chunks]
            vectors[doc] = embedder.embed([c.embed_text for c in chunks])
            texts_of[doc] = [c.embed_text for c in chunks]
            total += len(chunks)
        if weight:
            # every chunk's pieces in one pass (cached once), not twenty at a time per question
            embedder.pieces([t for doc in texts for t in texts_of[doc]])
        recall = np.zeros(len(questions))
        iou = np.zeros(len(questions))
        for i, (q, v) in enumerate(zip(questions, qvec, strict=True)):
            sims = vectors[q.document] @ v
            order = np.lexsort((np.arange(len(sims)), -sims))[:k]
            if weight:
                order = pieces_rerank(sims, v, embedder, texts_of[q.document], weight, k)
            s = score_question(q.spans, [spans[q.document][j] for j in order])
            recall[i], iou[i] = s.recall, s.iou
        runs.append(Run(name, recall, iou, total))
    return runs


PIECES_DEPTH = 20  # the candidates a hybrid search fetches for a page of 5 (kb.retrieval.hybrid_mode)


def pieces_weight(name: str) -> float:
    """The piece weight a chunker's display name asks for (``bulkhead (pieces=0.4)``), else 0."""
    for part in name.replace("(", ",").replace(")", ",").split(","):
        key, _, value = part.strip().partition("=")
        if key == "pieces":
            return float(value)
    return 0.0


def pieces_rerank(sims: np.ndarray, query: np.ndarray, embedder, embed_texts: list[str], weight: float, k: int):
    """The top ``k`` of the first :data:`PIECES_DEPTH` chunks by cosine, re-ordered by
    :func:`ingestion.pieces.piece_score` (each chunk's own similarity beside its best piece's)."""
    from ingestion.pieces import best_piece, piece_score

    depth = np.lexsort((np.arange(len(sims)), -sims))[:PIECES_DEPTH]
    pieces = embedder.pieces([embed_texts[j] for j in depth])
    scores = np.array([piece_score(float(sims[j]), best_piece(p, query), weight)
                       for j, p in zip(depth, pieces, strict=True)])
    return depth[np.lexsort((np.arange(len(scores)), -scores))][:k]


def paired_bootstrap(a: np.ndarray, b: np.ndarray, *, rounds: int = 2000, seed: int = 0) -> tuple[float, float, float]:
    """Mean of ``a - b`` and its 95% percentile interval, resampling questions (paired)."""
    diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(diff), size=(rounds, len(diff)))
    means = diff[idx].mean(axis=1)
    return float(diff.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def _groups(questions: Sequence[Question], key) -> dict[str, np.ndarray]:
    out: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        out.setdefault(key(q), []).append(i)
    return {g: np.array(ix) for g, ix in sorted(out.items())}


def source_scores(run: Run, groups: dict[str, np.ndarray]) -> dict[str, tuple[float, float]]:
    return {g: (float(run.recall[ix].mean()), float(run.iou[ix].mean())) for g, ix in groups.items()}


def group_table(runs: Sequence[Run], groups: dict[str, np.ndarray], label: str) -> str:
    header = ["chunker"] + [f"{g} R / IoU" for g in groups] + ["all R / IoU", "chunks"]
    lines = [f"| {' | '.join(header)} |", "|" + "---|" * len(header)]
    for r in runs:
        cells = [r.name] + [f"{100 * r.recall[ix].mean():.1f} / {100 * r.iou[ix].mean():.2f}" for ix in groups.values()]
        cells += [f"{100 * r.recall.mean():.1f} / {100 * r.iou.mean():.2f}", str(r.chunks)]
        lines.append(f"| {' | '.join(cells)} |")
    return f"Per {label} (n = " + ", ".join(f"{g} {len(ix)}" for g, ix in groups.items()) + "):\n" + "\n".join(lines)


def gain_table(runs: Sequence[Run], base: Run, *, rounds: int = 2000) -> str:
    lines = [
        f"| chunker | recall gain vs {base.name} [95% CI] | IoU gain [95% CI] | verdict |",
        "|---|---|---|---|",
    ]
    for r in runs:
        if r is base:
            continue
        dr = paired_bootstrap(r.recall, base.recall, rounds=rounds)
        di = paired_bootstrap(r.iou, base.iou, rounds=rounds)
        lines.append(f"| {r.name} | {_ci(dr, 1)} | {_ci(di, 2)} | {verdict(dr, di)} |")
    return "\n".join(lines)


def verdict(recall: tuple[float, float, float], iou: tuple[float, float, float]) -> str:
    """ "gain" only when one metric's interval lies above 0 and the other's does not lie below it."""
    if recall[2] < 0 or iou[2] < 0:
        return "loss"
    if recall[1] > 0 or iou[1] > 0:
        return "gain"
    return "inside the interval"


def _ci(d: tuple[float, float, float], digits: int) -> str:
    return f"{100 * d[0]:+.{digits}f} [{100 * d[1]:+.{digits}f}, {100 * d[2]:+.{digits}f}]"


def objective(run: Run, ref: Run, groups: dict[str, np.ndarray], sources: Sequence[str]) -> tuple[float, float]:
    """(worst, mean) over ``sources`` of min(recall ratio, IoU ratio) against the reference."""
    mine, theirs = source_scores(run, groups), source_scores(ref, groups)
    ratios = [min(mine[s][0] / max(theirs[s][0], 1e-9), mine[s][1] / max(theirs[s][1], 1e-9)) for s in sources]
    return min(ratios), float(np.mean(ratios))


def leave_one_source_out(
    runs: Sequence[Run], candidates: Sequence[str], ref: Run, groups: dict[str, np.ndarray]
) -> list[tuple[str, str, tuple[float, float], tuple[float, float]]]:
    """Per held-out source: (source, chosen candidate, its R/IoU there, the reference's R/IoU there)."""
    by_name = {r.name: r for r in runs}
    out = []
    for held in groups:
        others = [s for s in groups if s != held]
        chosen = max(candidates, key=lambda n: (objective(by_name[n], ref, groups, others), -candidates.index(n)))
        out.append((held, chosen, source_scores(by_name[chosen], groups)[held], source_scores(ref, groups)[held]))
    return out


def loso_table(rows) -> str:
    lines = [
        "| held-out source | chosen on the other sources | its R / IoU there | semchunk 200 there | >= on both |",
        "|---|---|---|---|---|",
    ]
    for held, chosen, (r, i), (rr, ri) in rows:
        ok = "yes" if r >= rr - 1e-12 and i >= ri - 1e-12 else "**no**"
        lines.append(f"| {held} | {chosen} | {100 * r:.1f} / {100 * i:.2f} | {100 * rr:.1f} / {100 * ri:.2f} | {ok} |")
    return "\n".join(lines)


def run(
    *,
    suite: str | None = None,
    k: int = 5,
    chunker: Sequence[str] | None = None,
    cache_dir: str | None = None,
    rounds: int = 2000,
    json_path: str | None = None,
    out=None,
) -> list[Run]:
    """Run the suite and print its tables (see the module docstring)."""
    from bench.chunkeval.cli import make_chunker
    from bench.chunkeval.embedding_cache import DEFAULT_CACHE_DIR, CachedEmbedder
    from ingestion.chunking.tokens import DEFAULT_MODEL

    out = out or sys.stdout
    names = list(chunker or DEFAULT_CHUNKERS)
    if not any(n.partition(":")[0] == "semchunk" and n.partition(":")[2] in ("", "200") for n in names):
        names.append("semchunk:200")
    questions, texts = load_suite(Path(suite) if suite else DEFAULT_SUITE)
    chunkers = dict(make_chunker(n) for n in names)
    embedder = CachedEmbedder(DEFAULT_MODEL, cache_dir=cache_dir or DEFAULT_CACHE_DIR)
    runs = evaluate(questions, texts, chunkers, embedder, k)
    by_source = _groups(questions, lambda q: q.source)
    print(f"k = {k}; {len(questions)} questions, {len(by_source)} sources.\n", file=out)
    print(group_table(runs, by_source, "source"), file=out)
    print("\n" + group_table(runs, _groups(questions, lambda q: q.type), "question type"), file=out)
    print(f"\nGains over the first chunker, paired bootstrap over questions ({rounds} rounds):", file=out)
    print(gain_table(runs, runs[0], rounds=rounds), file=out)
    ref = next(r for r in runs if r.name == REFERENCE)
    candidates = [r.name for r in runs if r.name.startswith("bulkhead")]
    if candidates:
        print("\nLeave-one-source-out (candidates scored by their worst source):", file=out)
        print(loso_table(leave_one_source_out(runs, candidates, ref, by_source)), file=out)
        best = max(
            candidates,
            key=lambda n: (
                objective(next(r for r in runs if r.name == n), ref, by_source, list(by_source)),
                -candidates.index(n),
            ),
        )
        print(f"\nChosen on all sources: {best}", file=out)
    if json_path:
        data = {
            "k": k,
            "questions": [vars(q) | {"source": q.source} for q in questions],
            "runs": [
                {"name": r.name, "recall": r.recall.tolist(), "iou": r.iou.tolist(), "chunks": r.chunks} for r in runs
            ],
        }
        Path(json_path).write_text(json.dumps(data), encoding="utf-8")
    return runs
