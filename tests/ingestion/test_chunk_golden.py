"""Golden chunks of real documents: parse + ``chunk_document`` with the default config.

To regenerate the golden files on purpose (after a deliberate chunking or parser
change), run

    BULKHEAD_REGENERATE_GOLDEN=1 .venv/bin/python -m pytest tests/ingestion/test_chunk_golden.py -p no:django

and review ``git diff tests/fixtures/chunks``: every moved cut, changed prefix or
token count shows up there.  Without the flag the tests only compare, and a
missing golden file is a failure.

Each fixture ``DIR/NAME`` under tests/fixtures/ has ``tests/fixtures/chunks/NAME.chunks.json``:
the config hash, then per chunk its section key, ordinal, span, heading path,
kind, token count, content hash and (for reading the diff) its embed text.
Licences: see tests/fixtures/chunks/README.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingestion.chunking import Chunk, ChunkingConfig, chunk_document, default_counter
from ingestion.parsers import parse
from tests.ingestion.golden_files import REGENERATE, _dump

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GOLDEN_DIR = FIXTURES / "chunks"

# One real document per parser family, each with a licence note in its folder.
CASES = [
    "parsers/pgvector-python-README.md",
    "parsers/markdown-it-py-README.html",
    "parsers/wikitexts-excerpt.txt",
    "pdf/shared-mime-info-spec.pdf",
    "docx/table_col_row_span.docx",
    "code/textwrap.py",
    "csv/ubuntu.csv",
    "transcripts/comments.vtt",
    "transcripts/youtube_dl.vtt",
    "email/thread.mbox",
]


def chunk_view(chunk: Chunk) -> dict:
    """The fields a reviewer needs to see a chunking change, in a stable order."""
    return {
        "section_key": chunk.section_key,
        "ordinal": chunk.ordinal,
        "start": chunk.start,
        "end": chunk.end,
        "heading_path": list(chunk.heading_path),
        "kind": chunk.kind,
        "token_count": chunk.token_count,
        "content_hash": chunk.content_hash,
        "embed_text": chunk.embed_text,
    }


@pytest.mark.parametrize("relative", CASES)
def test_chunks_match_golden(relative: str) -> None:
    source = FIXTURES / relative
    config = ChunkingConfig()
    doc = parse(source.read_bytes(), filename=source.name)
    chunks = chunk_document(doc, config, default_counter())
    assert chunks, f"{relative} gave no chunks"
    for chunk in chunks:  # the invariants hold on real documents too, not only in the golden file
        assert doc.text[chunk.start : chunk.end] == chunk.text
        assert chunk.token_count + config.special_tokens <= config.max_tokens
    view = {
        "fixture": relative,
        "config_hash": config.config_hash(),
        "chunks": [chunk_view(c) for c in chunks],
    }
    golden = GOLDEN_DIR / f"{source.name}.chunks.json"
    if REGENERATE:
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(_dump(view), encoding="utf-8")
        return
    if not golden.exists():
        pytest.fail(f"{golden.name} is missing; create it with BULKHEAD_REGENERATE_GOLDEN=1 and review it")
    expected = json.loads(golden.read_text(encoding="utf-8"))
    assert view["config_hash"] == expected["config_hash"], "the default ChunkingConfig changed"
    for got, want in zip(view["chunks"], expected["chunks"], strict=False):
        assert got == want, f"{relative}: first differing chunk (BULKHEAD_REGENERATE_GOLDEN=1 to accept)"
    assert len(view["chunks"]) == len(expected["chunks"]), f"{relative}: chunk count changed"
