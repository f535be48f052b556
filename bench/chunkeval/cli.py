"""Command-line front end of the chunk-quality evaluation.

``python -m bench.chunkeval --corpora DIR --questions FILE [--k 5,10]
[--chunker NAME]... [--json FILE]``; the Django command ``kb_chunkeval`` calls
:func:`main` with the same arguments.

Chunker names:
  ``bulkhead`` (the default config) or ``bulkhead:target_tokens=200,overlap=0.1,prefix=none``;
  ``fixed:200/0``, ``langchain:250/125``, ``semchunk:200``, ``chonkie:200``.
Without ``--chunker``: bulkhead plus the usual baselines (LangChain, fixed windows, semchunk, chonkie).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import fields

from bench.chunkeval import baselines
from bench.chunkeval.baselines import ChunkerFn

DEFAULT_CHUNKERS = (
    "bulkhead",
    "fixed:200/0",
    "langchain:200/0",
    "langchain:250/125",
    "semchunk:200",
    "chonkie:200",
)


def _config_from_spec(spec: str):
    from ingestion.chunking import ChunkingConfig

    if not spec:
        return ChunkingConfig()
    types = {f.name: f.type for f in fields(ChunkingConfig)}
    values: dict[str, object] = {}
    for item in spec.split(","):
        key, _, raw = item.partition("=")
        key = key.strip()
        if key not in types:
            raise ValueError(f"unknown chunking option {key!r}")
        kind = types[key]
        if kind in ("int", int):
            values[key] = int(raw)
        elif kind in ("float", float):
            values[key] = float(raw)
        elif kind in ("bool", bool):
            values[key] = raw.strip().lower() in ("1", "true", "yes", "on")
        else:
            values[key] = raw.strip()
    return ChunkingConfig(**values)


def _sizes(arg: str) -> tuple[int, int]:
    size, _, overlap = arg.partition("/")
    return int(size), int(overlap or 0)


def _delinked(chunker: ChunkerFn) -> ChunkerFn:
    import dataclasses

    from bench.chunkeval.delink import without_link_targets

    def chunk(text: str):
        return [dataclasses.replace(c, embed_text=without_link_targets(c.embed_text)) for c in chunker(text)]

    return chunk


def make_chunker(name: str) -> tuple[str, ChunkerFn]:
    """Display name and chunking function for a chunker name (see module docstring)."""
    family, _, arg = name.partition(":")
    family = family.strip().lower()
    if family == "bulkhead":
        # ``pieces=W`` is not a chunking option: bench.transfer_suite re-ranks by the chunks' pieces. ``delink=1``
        # neither (issue 30's eighteenth round, scratch): each chunk's embedded text without link targets.
        # ``bytype=1``: each document parsed as its name's type, as an upload of it is (kb_transfer only).
        # ``atx=0``: the plain parser without Markdown's ``#`` headings (before the twentieth session's candidate E was
        # adopted); ``atx=1``: with them (the parser's default since).
        config = _config_from_spec(",".join(i for i in arg.split(",")
                                            if i and not i.startswith(("pieces=", "delink=", "bytype=", "atx="))))
        label = "bulkhead" + (f" ({arg})" if arg else "")
        if "bytype=1" in arg.split(","):
            return label, baselines.structure_chunker_by_type(config)
        atx = {"atx=0": False, "atx=1": True}
        chunker = baselines.structure_chunker(
            config, markdown_headings=next((atx[i] for i in arg.split(",") if i in atx), None))
        if "delink=1" in arg.split(","):
            return label, _delinked(chunker)
        return label, chunker
    if family == "fixed":
        size, overlap = _sizes(arg or "200/0")
        return f"fixed {size}/{overlap}", baselines.fixed_windows(size, overlap)
    if family == "langchain":
        size, overlap = _sizes(arg or "200/0")
        return f"LangChain {size}/{overlap}", baselines.langchain_recursive(size, overlap)
    if family == "semchunk":
        size = int(arg or 200)
        return f"semchunk {size}", baselines.semchunk_chunker(size)
    if family == "chonkie":
        size = int(arg or 200)
        return f"chonkie {size}", baselines.chonkie_recursive(size)
    raise ValueError(f"unknown chunker {name!r}")


def build_parser() -> argparse.ArgumentParser:
    """Arguments shared by ``python -m bench.chunkeval`` and ``manage.py kb_chunkeval``."""
    parser = argparse.ArgumentParser(prog="kb_chunkeval", description=__doc__.split("\n\n")[0])
    add_arguments(parser)
    return parser


def add_arguments(parser) -> None:
    """Add the evaluation's options to an argparse parser (also used by the Django command)."""
    parser.add_argument("--corpora", required=True, help="directory with one file per corpus id")
    parser.add_argument("--questions", required=True, help="golden set: Chroma questions.csv or JSONL")
    parser.add_argument("--k", default="5,10", help="comma-separated depths (default 5,10)")
    parser.add_argument("--chunker", action="append", default=None, help="chunker name; repeatable")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the results as JSON here")
    parser.add_argument("--cache-dir", default=None, help="embedding cache directory (default .bench-cache)")
    parser.add_argument("--no-cache", action="store_true", help="do not read or write the embedding cache")
    parser.add_argument("--histograms", action="store_true", help="print token histograms")
    parser.add_argument(
        "--pool",
        choices=("document", "genre"),
        default="document",
        help="retrieve among the question's own document (default) or all documents of its genre",
    )
    parser.add_argument(
        "--loo",
        action="store_true",
        help="leave-one-genre-out: per genre, the bulkhead candidate chosen on the other genres (k = first --k)",
    )
    parser.add_argument(
        "--objective",
        choices=("worst", "mean"),
        default="worst",
        help="with --loo: score a candidate by its worst genre (default) or its mean over the genres",
    )


def run(
    *,
    corpora: str,
    questions: str,
    k: str = "5,10",
    chunker: Sequence[str] | None = None,
    json_path: str | None = None,
    cache_dir: str | None = None,
    no_cache: bool = False,
    histograms: bool = False,
    pool: str = "document",
    loo: bool = False,
    objective: str = "worst",
    out=None,
) -> list:
    """Run the evaluation and print the table; returns the results."""
    from bench.chunkeval.chunkeval import evaluate, format_histograms, format_table, load_corpora, to_json
    from bench.chunkeval.embedding_cache import DEFAULT_CACHE_DIR, CachedEmbedder
    from ingestion.chunking.tokens import DEFAULT_MODEL
    from ingestion.golden import load_questions

    out = out or sys.stdout
    ks = [int(x) for x in str(k).split(",") if x.strip()]
    golden = load_questions(questions)
    texts = load_corpora(corpora, [q.corpus_id for q in golden])
    chunkers = dict(make_chunker(name) for name in (chunker or DEFAULT_CHUNKERS))
    cache = None if no_cache else (cache_dir or DEFAULT_CACHE_DIR)
    embedder = CachedEmbedder(DEFAULT_MODEL, cache_dir=cache)
    results = evaluate(texts, golden, chunkers, embedder, ks=ks, pool=pool)
    print(format_table(results), file=out)
    if loo:
        from bench.chunkeval.loo import choose, format_loo, leave_one_out

        candidates = [n for n in chunkers if n.startswith("bulkhead")]
        others = [n for n in chunkers if not n.startswith("bulkhead")]
        scored = "by the worst genre" if objective == "worst" else "by the mean over the genres"
        print(f"\nLeave-one-genre-out (k={ks[0]}, candidates scored {scored}):", file=out)
        print(format_loo(leave_one_out(results, candidates, others, k=ks[0], how=objective), ks[0]), file=out)
        print(f"\nChosen on all genres: {choose(results, candidates, k=ks[0], how=objective)}", file=out)
    if histograms:
        print("\nTokens histograms (embedded text, all corpora):", file=out)
        print(format_histograms(results), file=out)
    if json_path:
        with open(json_path, "w", encoding="utf-8") as fh:
            json.dump(to_json(results), fh, indent=2)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m bench.chunkeval``."""
    args = build_parser().parse_args(argv)
    run(**vars(args))
    return 0
