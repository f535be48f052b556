"""Pooled retrieval: two hypotheses of issue #15 measured on one chunker's chunks.

``python -m bench.chunkeval.pool_diagnosis --corpora DIR --questions FILE [--chunker SPEC] [--k 5]``

A question searches every chunk of its genre (``--pool genre`` of the evaluation).
Per genre it prints:

- the prefix's share of each chunk: tokens of the embedded text minus tokens of
  the body (mean and max), against the model's 254 content tokens -- the "prefix
  length eats the budget" hypothesis;
- heading-only chunks: chunks whose body is shorter than ``ORPHAN_CHARS`` (a
  heading with a label line under it), how many top-k slots they take over all the
  genre's questions, and pooled recall with them left out of the pool -- the
  "very short chunks crowd out answers" hypothesis.

Leaving chunks out breaks the coverage guarantee, so this is a diagnosis, not a
chunker.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import numpy as np

from bench.chunkeval.chunkeval import ORPHAN_CHARS, _top_k, genre_of, load_corpora
from ingestion.quality import score_question


def diagnose(corpora, questions, chunker, embedder, count_tokens, k: int = 5) -> list[dict]:
    """One row per genre: prefix tokens, short chunks, their top-k slots, recall with and without them."""
    rows = []
    genres = sorted({genre_of(q.corpus_id) for q in questions} - {None})
    for genre in genres:
        members = sorted({q.corpus_id for q in questions if genre_of(q.corpus_id) == genre})
        chunks = [(cid, c) for cid in members for c in chunker(corpora[cid])]
        embedded = count_tokens([c.embed_text for _, c in chunks])
        bodies = count_tokens([corpora[cid][c.start : c.end] for cid, c in chunks])
        prefix = [e - b for e, b in zip(embedded, bodies, strict=True)]
        short = np.array([c.end - c.start < ORPHAN_CHARS for _, c in chunks])
        matrix = embedder.embed([c.embed_text for _, c in chunks])
        asked = [q for q in questions if genre_of(q.corpus_id) == genre and q.spans]
        qv = embedder.embed([q.question for q in asked])
        recall, recall_without, slots = [], [], 0
        for q, v in zip(asked, qv, strict=True):
            sims = matrix @ v
            top = _top_k(sims, k)
            slots += int(short[top].sum())
            recall.append(_recall(q, top, chunks))
            kept = np.flatnonzero(~short)
            recall_without.append(_recall(q, [int(kept[i]) for i in _top_k(sims[kept], k)], chunks))
        rows.append(
            {
                "genre": genre,
                "chunks": len(chunks),
                "prefix_mean": float(np.mean(prefix)) if prefix else 0.0,
                "prefix_max": max(prefix, default=0),
                "short": int(short.sum()),
                "short_slots": slots,
                "slots": k * len(asked),
                "recall": 100 * float(np.mean(recall)) if recall else 0.0,
                "recall_without_short": 100 * float(np.mean(recall_without)) if recall_without else 0.0,
            }
        )
    return rows


def _recall(question, top: Sequence[int], chunks) -> float:
    retrieved = [(c.start, c.end) for cid, c in (chunks[i] for i in top) if cid == question.corpus_id]
    return score_question(question.spans, retrieved).recall


def format_rows(rows: Sequence[dict], k: int) -> str:
    lines = [
        f"| genre | chunks | prefix tokens mean / max | chunks < {ORPHAN_CHARS} chars | their top-{k} slots "
        f"| pooled recall@{k} | without them |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['genre']} | {r['chunks']} | {r['prefix_mean']:.1f} / {r['prefix_max']} | {r['short']} "
            f"| {r['short_slots']} of {r['slots']} | {r['recall']:.1f} | {r['recall_without_short']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from bench.chunkeval.cli import make_chunker
    from bench.chunkeval.embedding_cache import DEFAULT_CACHE_DIR, CachedEmbedder
    from ingestion.chunking.tokens import DEFAULT_MODEL, default_counter
    from ingestion.golden import load_questions

    parser = argparse.ArgumentParser(prog="pool_diagnosis", description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpora", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--chunker", action="append", default=None, help="chunker name (default: bulkhead)")
    parser.add_argument("--k", type=int, default=5)
    args = parser.parse_args(argv)
    questions = load_questions(args.questions)
    corpora = load_corpora(args.corpora, [q.corpus_id for q in questions])
    embedder = CachedEmbedder(DEFAULT_MODEL, cache_dir=DEFAULT_CACHE_DIR)
    for spec in args.chunker or ["bulkhead"]:
        name, chunker = make_chunker(spec)
        rows = diagnose(corpora, questions, chunker, embedder, default_counter().count_batch, k=args.k)
        print(f"\n{name}\n{format_rows(rows, args.k)}", file=sys.stdout)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
