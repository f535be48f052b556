"""Issue 30, a probe read for the next round (nineteenth session; docs/benchmarks.md "The Markdown path").

The transfer suite reads every document as plain text (as ``kb_eval --load-corpora`` ingests it), but the product
parses an upload named ``README.md`` as Markdown (sections under its headings, heading paths in the embedded text).
This measures, on the ``.md`` documents whose Markdown parse keeps the text unchanged (so the golden spans still
index it), the default through plain text, the default through the Markdown parser, and semchunk 200 -- per source,
with the paired bootstrap. Not a candidate: nothing is chosen on it.

    python -m bench.round18_markdown .data/dev96 .data/t18-suite
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def main(suites: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    from bench.chunkeval.baselines import structure_chunker_by_type
    from bench.chunkeval.cli import make_chunker
    from bench.chunkeval.embedding_cache import DEFAULT_CACHE_DIR, CachedEmbedder
    from bench.transfer_suite import evaluate, load_suite, paired_bootstrap
    from ingestion.chunking.tokens import DEFAULT_MODEL

    questions, texts = [], {}
    for suite in suites:
        found, read = load_suite(Path(suite))
        questions += found
        texts.update(read)
    markdown = structure_chunker_by_type()  # each .md parsed as Markdown, as an upload of it is
    kept = {doc for doc in texts if doc.endswith(".md")}
    questions = [q for q in questions if q.document in kept]
    texts = {d: texts[d] for d in kept}
    print(f"{len(kept)} Markdown documents, {len(questions)} questions")
    embedder = CachedEmbedder(DEFAULT_MODEL, cache_dir=DEFAULT_CACHE_DIR)
    chunkers = {"bulkhead (pieces=0.5)": make_chunker("bulkhead:pieces=0.5")[1],
                "bulkhead markdown (pieces=0.5)": markdown,
                "semchunk 200": make_chunker("semchunk:200")[1]}
    runs = evaluate(questions, texts, chunkers, embedder, 5)
    for run in runs:
        print(f"{run.name}: R {100 * run.recall.mean():.1f} IoU {100 * run.iou.mean():.2f} chunks {run.chunks}")
    for run in runs[1:]:
        r, i = paired_bootstrap(run.recall, runs[0].recall), paired_bootstrap(run.iou, runs[0].iou)
        print(f"{run.name} against plain: recall {100 * r[0]:+.1f} [{100 * r[1]:+.1f}, {100 * r[2]:+.1f}], IoU "
              f"{100 * i[0]:+.2f} [{100 * i[1]:+.2f}, {100 * i[2]:+.2f}]")
    by: dict[str, list[float]] = {}
    for q, plain, md, semchunk in zip(questions, *(r.recall for r in runs), strict=True):
        row = by.setdefault(q.source, [0, 0.0, 0.0, 0.0])
        row[0] += 1
        row[1] += plain
        row[2] += md
        row[3] += semchunk
    for source, (n, plain, md, semchunk) in sorted(by.items()):
        print(f"  {source} ({n}): plain {100 * plain / n:.1f}, markdown {100 * md / n:.1f}, "
              f"semchunk {100 * semchunk / n:.1f}")


if __name__ == "__main__":
    main(sys.argv[1:] or [".data/dev96", ".data/t18-suite"])
