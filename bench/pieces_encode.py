"""What pieces cost ingestion's model step: ``Embedder.embed`` against ``Embedder.embed_with_pieces`` on the same
chunk texts, interleaved (issue 30, docs/benchmarks.md, "Pieces in the product"). Pure: no database, no Django.

    python -m bench.pieces_encode evaluation/suite/corpora evaluation/transfer/corpora --min-chunks 800 --rounds 3

The two differ only after the forward pass (``embed_with_pieces`` asks the model for its token vectors, tokenizes
again for the offsets and mean-pools each piece in numpy); the pipeline's other stages are the same for both.
Prints numbers; asserts nothing.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ingestion.chunking.chunker import chunk_document
from ingestion.chunking.config import ChunkingConfig
from ingestion.embedding import get_embedder
from ingestion.parsers import detect_content_type, parse


def texts_of(paths: list[str], min_chunks: int) -> list[str]:
    """Embedded texts of the default config's chunks of the files, in path order, until ``min_chunks``
    (the files ``kb_bench ingest`` takes)."""
    config, texts = ChunkingConfig(), []
    for raw in paths:
        path = Path(raw)
        for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            data = file.read_bytes()
            content_type = detect_content_type(file.name, data)
            if content_type is None:
                continue
            try:
                texts.extend(c.embed_text for c in chunk_document(parse(data, content_type=content_type,
                                                                        filename=file.name), config))
            except ValueError:
                continue
            if len(texts) >= min_chunks:
                return texts
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--min-chunks", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256, help="texts per call (pipeline.embed.EMBED_BATCH)")
    args = parser.parse_args()
    texts = texts_of(args.paths, args.min_chunks)
    model = get_embedder()
    model.embed(texts[:8])
    model.embed_with_pieces(texts[:8])
    print(f"{len(texts)} texts, device {model.device}, {args.rounds} rounds, calls of {args.batch}")
    totals = {"embed": 0.0, "embed_with_pieces": 0.0}
    pieces = 0
    for round_ in range(args.rounds):
        for name in (("embed", "embed_with_pieces") if round_ % 2 == 0 else ("embed_with_pieces", "embed")):
            started = time.perf_counter()
            for i in range(0, len(texts), args.batch):
                out = getattr(model, name)(texts[i : i + args.batch])
                if name == "embed_with_pieces":
                    pieces += sum(len(m) for m in out[1]) if round_ == 0 else 0
            seconds = time.perf_counter() - started
            totals[name] += seconds
            print(f"round {round_ + 1}: {name:<18} {seconds:7.2f} s")
    print(f"pieces: {pieces} ({pieces / len(texts):.2f} a chunk)")
    print(f"total: embed {totals['embed']:.2f} s, embed_with_pieces {totals['embed_with_pieces']:.2f} s, "
          f"ratio {totals['embed_with_pieces'] / totals['embed']:.3f}")


if __name__ == "__main__":
    main()
