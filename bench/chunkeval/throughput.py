"""Chunking throughput: MB/s of input text, one process, parsing included.

``python -m bench.chunkeval.throughput DIR [--glob '**/*.txt'] [--repeat 3]``

Runs our chunker (plain-text parser + :func:`chunk_document`) side by side with
LangChain's token-aware ``RecursiveCharacterTextSplitter`` and chonkie's
``RecursiveChunker`` (both at 200 tokens of the same tokenizer), and the bare
fast tokenizer as a floor, over the same files.  Prints the best of
``--repeat`` runs for each; records nothing (see docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path


def _ours(target: int | None, **options) -> Callable[[bytes], int]:
    from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
    from ingestion.parsers import parse

    config = ChunkingConfig(**options) if target is None else ChunkingConfig(target_tokens=target, **options)
    counter = default_counter()

    def run(data: bytes) -> int:
        return len(chunk_document(parse(data, content_type="text/plain"), config, counter))

    return run


def _langchain(size: int) -> Callable[[bytes], int]:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    from bench.chunkeval.baselines import _hf_tokenizer

    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(_hf_tokenizer(), chunk_size=size)
    return lambda data: len(splitter.split_text(data.decode("utf-8")))


def _chonkie(size: int) -> Callable[[bytes], int]:
    from chonkie import RecursiveChunker

    from ingestion.chunking import default_counter

    chunker = RecursiveChunker(tokenizer=default_counter().tokenizer, chunk_size=size)
    return lambda data: len(chunker.chunk(data.decode("utf-8")))


def _tokenizer_only() -> Callable[[bytes], int]:
    from ingestion.chunking import default_counter

    counter = default_counter()
    return lambda data: len(counter.encode_offsets(data.decode("utf-8")))


def measure(files: Sequence[bytes], fn: Callable[[bytes], int]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (all threads of this process) and chunks of one pass over ``files``.

    CPU time is reported besides wall time because a shared machine's load
    inflates wall time unevenly between chunkers.
    """
    wall, cpu = time.perf_counter(), time.process_time()
    chunks = sum(fn(data) for data in files)
    return time.perf_counter() - wall, time.process_time() - cpu, chunks


def main(argv: Sequence[str] | None = None) -> int:
    """Print MB/s of every chunker over the files under DIR."""
    parser = argparse.ArgumentParser(prog="python -m bench.chunkeval.throughput")
    parser.add_argument("directory")
    parser.add_argument("--glob", default="**/*.txt")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", action="append", default=None, help="run only these (names below)")
    args = parser.parse_args(argv)
    files = [p.read_bytes() for p in sorted(Path(args.directory).glob(args.glob)) if p.is_file()]
    total = sum(len(f) for f in files)
    print(f"{len(files)} files, {total / 1e6:.2f} MB, best of {args.repeat}")
    candidates = {
        "bulkhead (default config)": lambda: _ours(None),
        "bulkhead target 200": lambda: _ours(200),
        "bulkhead, no row chunks (the default before issue 30)": lambda: _ours(None, table_rows=False),
        "bulkhead, no Markdown row chunks (the default before issue 30's third round)": lambda: _ours(
            None, markdown_table_rows=False),
        "bulkhead, table headers repeated whole (the default before issue 30's sixth round)": lambda: _ours(
            None, compact_table_header=False),
        "bulkhead, compact table header and line cuts (issue 30's fourth round; the first the default since the sixth)":
            lambda: _ours(None, compact_table_header=True, long_sentence_lines=True),
        "bulkhead, labels end no table (the default before issue 30's twelfth round)": lambda: _ours(
            None, table_label_columns=False),
        "bulkhead, sentence boundaries and overlap everywhere (the default before)": lambda: _ours(
            None, boundaries="sentence", prose_overlap=True),
        "LangChain token-aware recursive 200": lambda: _langchain(200),
        "chonkie RecursiveChunker 200": lambda: _chonkie(200),
        "tokenizer alone (encode with offsets)": _tokenizer_only,
    }
    chosen = {
        name: factory
        for name, factory in candidates.items()
        if not args.only or any(o.lower() in name.lower() for o in args.only)
    }
    runners = {}
    for name, factory in chosen.items():
        runners[name] = factory()
        runners[name](files[0])  # warm up: load the tokenizer, compile regexes
    # Passes are interleaved (every chunker once per round) so that load changes hit all alike.
    passes: dict[str, list[tuple[float, float, int]]] = {name: [] for name in runners}
    for _ in range(args.repeat):
        for name, fn in runners.items():
            passes[name].append(measure(files, fn))
    mb = total / 1e6
    print("| chunker | first pass MB/s (wall) | best MB/s (wall) | best MB/s (CPU time) | chunks |")
    print("|---|---|---|---|---|")
    for name, results in passes.items():
        first = results[0][0]
        best_wall = min(r[0] for r in results)
        best_cpu = min(r[1] for r in results)
        print(f"| {name} | {mb / first:.2f} | {mb / best_wall:.2f} | {mb / best_cpu:.2f} | {results[0][2]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
