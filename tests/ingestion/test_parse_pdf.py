"""PDF parser: real files (golden section trees), running header/footer removal, bad input.

Golden files are regenerated only with ``BULKHEAD_REGENERATE_GOLDEN=1`` (see golden_files.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingestion.parsers import parse
from ingestion.parsers.pdf import parse_pdf, strip_running_lines
from ingestion.structure import ParseError
from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.golden_files import assert_matches_golden

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pdf"
SPEC = FIXTURES / "shared-mime-info-spec.pdf"  # 17 pages, outline, running header + page-number footer


def _parse(name: str):
    path = FIXTURES / name
    return parse_pdf(path.read_bytes(), filename=name)


@pytest.mark.parametrize("name", ["shared-mime-info-spec.pdf", "pdflatex-outline.pdf", "crazyones.pdf"])
def test_real_pdfs_match_golden_and_invariants(name):
    doc = _parse(name)
    assert_well_formed(doc)
    assert_matches_golden(doc, FIXTURES / name)


def test_registry_routes_pdf_by_type_extension_and_magic():
    data = SPEC.read_bytes()
    for kwargs in ({"content_type": "application/pdf"}, {"filename": "spec.pdf"}, {}):
        assert parse(data, **kwargs).metadata["format"] == "pdf"


def test_running_header_and_page_numbers_never_reach_a_block():
    doc = _parse(SPEC.name)
    blocks = [b for s in doc.sections for b in s.blocks]
    assert len(blocks) > 17, "the 17 pages' body text is in blocks"
    # The title itself stays in the text (in running prose): only the header lines are removed.
    assert "Shared MIME-info Database" in doc.text
    for section in doc.sections:
        for block in section.blocks:
            lines = doc.text[block.start : block.end].splitlines()
            assert "Shared MIME-info Database" not in lines, (section.title, lines[:3])
            # The page-number footer: a line that is just a number.
            assert not any(re.fullmatch(r"\d{1,2}", line.strip()) for line in lines), (section.title, lines)


def test_outline_titles_are_heading_paths_with_their_nesting():
    doc = _parse(SPEC.name)
    paths = [s.heading_path for s in doc.sections[1:]]
    assert ("1. Introduction",) in paths
    assert ("1. Introduction", "1.2. What is this spec?") in paths
    assert ("2. Unified system", "2.5. The magic files") in paths
    assert ("3. Contributors", "References") in paths
    assert all(s.kind == "heading" for s in doc.sections[1:])
    # The heading line found on the page (spelled "Non-regular" there) opens its section.
    nonregular = next(s for s in doc.sections if s.title == "2.13. Nonregular files")
    assert doc.text[nonregular.start :].startswith("2.13. Non-regular files")
    assert doc.text[nonregular.blocks[0].start :].startswith("Sometimes it is useful")


def test_blocks_carry_their_pages_and_paragraphs_run_across_page_breaks():
    doc = _parse(SPEC.name)
    blocks = [b for s in doc.sections for b in s.blocks]
    assert all(b.metadata["pages"] and all(1 <= p <= 17 for p in b.metadata["pages"]) for b in blocks)
    assert any(len(b.metadata["pages"]) == 2 for b in blocks)


def test_pdf_without_outline_gets_one_section_per_page():
    doc = _parse("crazyones.pdf")
    assert [s.title for s in doc.sections[1:]] == ["Page 1"]
    assert doc.sections[1].kind == "page"
    assert "The Crazy Ones" in doc.text


def test_strip_running_lines_modulo_digits():
    bodies = [["Alpha begins.", "It ends."], ["Beta goes on", "and on."], ["Gamma closes.", "Done."]]
    pages = [["ACME report", *body, f"Page {n} of 3"] for n, body in enumerate(bodies, 1)]
    assert strip_running_lines(pages) == bodies
    # A single page has nothing to recur against.
    assert strip_running_lines([["Title", "Body", "1"]]) == [["Title", "Body", "1"]]


def test_scanned_pdf_without_text_layer_is_refused():
    with pytest.raises(ParseError, match="no text layer"):
        _parse("imagemagick-CCITTFaxDecode.pdf")


def test_truncated_pdf_is_refused():
    data = (FIXTURES / "pdflatex-outline.pdf").read_bytes()
    for cut in (len(data) // 2, len(data) - 10, 400):
        with pytest.raises(ParseError, match="truncated"):
            parse_pdf(data[:cut], filename="cut.pdf")


def test_corrupt_pdf_is_refused():
    with pytest.raises(ParseError, match="corrupt|no pages"):
        parse_pdf(b"%PDF-1.4\n" + b"garbage " * 100 + b"\n%%EOF\n", filename="bad.pdf")
    with pytest.raises(ParseError, match="not a PDF"):
        parse_pdf(b"hello", filename="x.pdf")


def test_encrypted_pdf_says_so():
    with pytest.raises(ParseError, match="encrypted"):
        _parse("encrypted-r4-user-password.pdf")
