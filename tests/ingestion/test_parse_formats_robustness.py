"""Every format parser, on damaged real files: a well-formed document or a ParseError, nothing else.

The real fixtures are truncated and corrupted at random points; each result must
either raise :class:`ParseError` or satisfy the document-model invariants (blocks
non-empty, trimmed, inside the text and their section, ordered, non-overlapping).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestion.parsers.code import parse_python
from ingestion.parsers.docx import parse_docx
from ingestion.parsers.email import parse_eml, parse_mbox
from ingestion.parsers.pdf import parse_pdf
from ingestion.parsers.tabular import parse_csv
from ingestion.parsers.transcripts import parse_plain_transcript, parse_srt, parse_webvtt
from ingestion.structure import ParseError
from tests.ingestion.doc_invariants import assert_well_formed

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = [
    (parse_pdf, "pdf/pdflatex-outline.pdf", 20),
    (parse_docx, "docx/simple.docx", 40),
    (parse_csv, "csv/ubuntu.csv", 60),
    (parse_python, "code/textwrap.py", 40),
    (parse_webvtt, "transcripts/comments.vtt", 60),
    (parse_srt, "transcripts/sample.srt", 60),
    (parse_plain_transcript, None, 60),
    (parse_eml, "email/talon-gmail.eml", 60),
    (parse_mbox, "email/thread.mbox", 40),
]
PLAIN = b"Ana: Hello there.\nBo: Hi!\nstill Bo\n\n[00:01:00] Ana: Bye.\n"


def _check(parser, data: bytes) -> None:
    try:
        doc = parser(data, filename=None)
    except ParseError as exc:
        assert str(exc)
        return
    assert_well_formed(doc)
    for section in doc.sections:
        for block in section.blocks:
            assert doc.text[block.start : block.end].strip()


@pytest.mark.parametrize("parser, fixture, examples", CASES, ids=[c[1] or "plain" for c in CASES])
def test_damaged_files_parse_or_fail_cleanly(parser, fixture, examples):
    original = (FIXTURES / fixture).read_bytes() if fixture else PLAIN

    @settings(max_examples=examples, deadline=None, suppress_health_check=list(HealthCheck))
    @given(cut=st.integers(0, len(original)), flips=st.lists(st.tuples(st.integers(0, len(original) - 1),
                                                                       st.integers(0, 255)), max_size=4))
    def run(cut, flips):
        damaged = bytearray(original)
        for position, value in flips:
            damaged[position] = value
        _check(parser, bytes(damaged))
        _check(parser, bytes(damaged[:cut]))

    run()


@pytest.mark.parametrize("parser", [c[0] for c in CASES])
def test_empty_and_garbage_input(parser):
    for data in (b"", b"\x00\x01\x02\xff" * 64, b"hello world\n"):
        _check(parser, data)
