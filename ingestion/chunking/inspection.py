"""``kb_chunk``: show how files are chunked (what gets embedded, with which access).

``python -m ingestion.chunking.inspection FILE... [--jsonl] [--target-tokens N]``;
the Django command ``manage.py kb_chunk`` calls :func:`main` with the same arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

from accounts.policy import Policy
from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.structure import ParseError, resolve_policies

JSONL_FIELDS = (
    "path", "start", "end", "heading_path", "access_level", "groups", "token_count", "embed_text", "screening",
)  # fmt: skip


def chunk_file(path: str | Path, config: ChunkingConfig) -> Iterator[dict]:
    """One record per chunk of the file at ``path`` (fields :data:`JSONL_FIELDS`).

    The access level and groups are the section's effective policy with the
    upload default (``internal``, no groups) where the file sets none. ``screening`` is the
    verdict of :func:`ingestion.screening.screen_chunks` on the embedded text (the document's
    text standing for its topic), as the pipeline stores it.
    """
    from ingestion.parsers import parse
    from ingestion.screening import screen_chunks

    data = Path(path).read_bytes()
    doc = resolve_policies(parse(data, filename=str(path)), Policy())
    sections = {s.key: s for s in doc.sections}
    chunks = chunk_document(doc, config, default_counter())
    verdicts = screen_chunks([chunk.embed_text for chunk in chunks], document_text=doc.text)
    for chunk, verdict in zip(chunks, verdicts, strict=True):
        policy = sections[chunk.section_key].effective or Policy()
        yield {
            "path": str(path),
            "start": chunk.start,
            "end": chunk.end,
            "heading_path": list(chunk.heading_path),
            "access_level": policy.level,
            "groups": list(policy.groups),
            "token_count": chunk.token_count,
            "embed_text": chunk.embed_text,
            "screening": verdict.as_dict(),
        }


def format_record(record: dict) -> str:
    """Human-readable block for one chunk."""
    path = " > ".join(record["heading_path"]) or "(document)"
    groups = ", ".join(record["groups"]) or "-"
    header = (
        f"{record['path']} [{record['start']}:{record['end']}] {path} | "
        f"access {record['access_level']} groups {groups} | {record['token_count']} tokens"
    )
    screening = record.get("screening")
    if screening and screening["flagged"]:
        header += f"\n  SCREENING: flagged ({', '.join(screening['reasons'])}; score {screening['score']:.2f})"
    return header + "\n" + "\n".join("    " + line for line in record["embed_text"].splitlines()) + "\n"


def add_arguments(parser) -> None:
    """Options shared with the Django command."""
    parser.add_argument("files", nargs="+", help="files to chunk")
    parser.add_argument("--jsonl", action="store_true", help="one JSON object per chunk and line")
    parser.add_argument("--target-tokens", type=int, default=None, help="override the target chunk size")


def run(*, files: Sequence[str], jsonl: bool = False, target_tokens: int | None = None, out=None, err=None) -> int:
    """Print the chunks of every file; returns the number of files that failed to parse."""
    out = out or sys.stdout
    err = err or sys.stderr
    config = ChunkingConfig()
    if target_tokens is not None:
        config = replace(config, target_tokens=target_tokens)
    failures = 0
    for path in files:
        try:
            for record in chunk_file(path, config):
                out.write(json.dumps(record, ensure_ascii=False) + "\n" if jsonl else format_record(record) + "\n")
        except (ParseError, OSError) as exc:
            failures += 1
            err.write(f"{path}: {exc}\n")
    return failures


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m ingestion.chunking.inspection``."""
    parser = argparse.ArgumentParser(prog="kb_chunk", description="Show how files are chunked.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    return 1 if run(files=args.files, jsonl=args.jsonl, target_tokens=args.target_tokens) else 0


if __name__ == "__main__":
    raise SystemExit(main())
