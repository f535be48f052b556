"""DOCX parser: real files (golden section trees), a generated document with headings and tables, bad input.

Golden files are regenerated only with ``BULKHEAD_REGENERATE_GOLDEN=1`` (see golden_files.py).
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import docx
import pytest

from ingestion.parsers import docx as docx_parser
from ingestion.parsers import parse
from ingestion.parsers.docx import DOCX_CONTENT_TYPE, parse_docx
from ingestion.structure import ParseError
from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.golden_files import assert_matches_golden

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "docx"
REAL = ["simple.docx", "headers_with_full_line_styles.docx", "has_title.docx", "table_col_row_span.docx",
        "python-docx-test.docx"]


@pytest.mark.parametrize("name", REAL)
def test_real_docx_files_match_golden_and_invariants(name):
    doc = parse_docx((FIXTURES / name).read_bytes(), filename=name)
    assert_well_formed(doc)
    assert_matches_golden(doc, FIXTURES / name)


def _generated() -> bytes:
    """A document as Word users write them: title, nested headings, lists, a captioned table."""
    d = docx.Document()
    d.add_paragraph("Refund handbook", style="Title")
    d.add_paragraph("How refunds work at ACME.")
    d.add_heading("Billing", level=1)
    d.add_paragraph("Invoices go out monthly.")
    d.add_heading("Refunds", level=2)
    d.add_paragraph("Ask within 30 days.", style="List Bullet")
    d.add_paragraph("Keep the receipt.", style="List Number")
    d.add_paragraph("Refund limits by plan", style="Caption")
    table = d.add_table(rows=3, cols=3)
    for row, values in zip(table.rows, [("Plan", "Limit", "Approver"), ("Basic", "100 EUR", ""),
                                        ("Enterprise", "unlimited", "CFO")], strict=True):
        for cell, value in zip(row.cells, values, strict=True):
            cell.text = value
    d.add_paragraph("After the table, still Refunds.")
    d.add_heading("Support", level=1)
    d.add_paragraph("Call us.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def test_generated_docx_headings_lists_and_table():
    doc = parse(_generated(), content_type=DOCX_CONTENT_TYPE)
    assert_well_formed(doc)
    assert doc.title == "Refund handbook"
    by_title = {s.title: s for s in doc.sections}
    assert by_title["Billing"].heading_path == ("Refund handbook", "Billing")
    refunds = by_title["Refunds"]
    assert refunds.heading_path == ("Refund handbook", "Billing", "Refunds")
    assert [b.kind for b in refunds.blocks] == ["list_item", "list_item", "prose"]
    table = by_title["Refund limits by plan"]
    assert table.kind == "table" and table.parent == refunds.key
    assert table.heading_path == ("Refund handbook", "Billing", "Refunds", "Refund limits by plan")
    rows = [(doc.text[b.start : b.end], b.embed_text, b.kind, b.joinable) for b in table.blocks]
    assert rows == [
        ("Basic | 100 EUR |", "Plan: Basic | Limit: 100 EUR", "table_row", False),
        ("Enterprise | unlimited | CFO", "Plan: Enterprise | Limit: unlimited | Approver: CFO", "table_row", False),
    ]
    meta = table.metadata["table"]
    assert meta["columns"] == ["Plan", "Limit", "Approver"] and meta["caption"] == "Refund limits by plan"
    whole = doc.text[meta["start"] : meta["end"]]
    assert whole.startswith("Refund limits by plan\nPlan | Limit | Approver\nBasic")
    assert whole.endswith("Enterprise | unlimited | CFO")
    assert by_title["Support"].heading_path == ("Refund handbook", "Support")


def test_every_row_block_is_a_whole_row_with_column_names():
    doc = parse_docx((FIXTURES / "table_col_row_span.docx").read_bytes())
    tables = [s for s in doc.sections if s.kind == "table"]
    assert len(tables) == 2
    for table in tables:
        columns = table.metadata["table"]["columns"]
        for block in table.blocks:
            line = doc.text[block.start : block.end]
            assert "\n" not in line and doc.text[block.end : block.end + 1] in ("", "\n")
            assert all(f"{name}:" in block.embed_text or name.startswith("Column") for name in columns[:1])
    # A cell spanning header columns 2 and 3 is named by both.
    assert tables[1].blocks[0].embed_text == "1: 5 | 2 / 3: 6 | 4: 7"


def test_numbered_paragraphs_without_list_style_are_list_items():
    doc = parse_docx((FIXTURES / "simple.docx").read_bytes())
    items = [doc.text[b.start : b.end] for b in doc.root.blocks if b.kind == "list_item"]
    assert items == ["one", "two", "three"]


def test_not_a_zip_is_refused():
    with pytest.raises(ParseError, match="not a DOCX file"):
        parse_docx(b"%PDF-1.4 this is no docx")
    with pytest.raises(ParseError, match="not a DOCX file"):
        parse_docx(_generated()[:500])  # truncated zip


def test_zip_without_document_xml_is_refused():
    with pytest.raises(ParseError, match="no word/document.xml"):
        parse_docx((FIXTURES / "missing_relationships.docx").read_bytes())
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
    with pytest.raises(ParseError, match="no word/document.xml"):
        parse_docx(out.getvalue())


def test_zip_bomb_disguised_as_docx_is_refused_before_inflating():
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", b"\0" * (8 * 1024 * 1024))  # ~1000x ratio
    assert len(out.getvalue()) < 100_000
    with pytest.raises(ParseError, match="zip bomb"):
        parse_docx(out.getvalue())


def test_docx_over_the_total_size_limit_is_refused(monkeypatch):
    monkeypatch.setattr(docx_parser, "MAX_UNCOMPRESSED_BYTES", 1024 * 1024)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", "<w:document/>")
        archive.writestr("word/media/image1.png", os.urandom(2 * 1024 * 1024))  # incompressible: ratio 1
    with pytest.raises(ParseError, match="uncompressed"):
        parse_docx(out.getvalue())


def test_broken_document_xml_is_a_parse_error():
    source = zipfile.ZipFile(io.BytesIO(_generated()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for item in source.infolist():
            data = source.read(item)
            archive.writestr(item, data[: len(data) // 2] if item.filename == "word/document.xml" else data)
    with pytest.raises(ParseError, match="DOCX"):
        parse_docx(out.getvalue())


def test_runs_inside_insertions_content_controls_smart_tags_and_fields_are_read_and_checked():
    """Found fuzzing the markers (2026-12-03): only a paragraph's own runs and its hyperlinks' were read, so the
    text Word shows of a tracked insertion, an inline content control, a smart tag or a simple field's result was
    missing from what the model reads. Deleted text stays out; a hidden run inside an insertion stays hidden."""
    from docx.oxml import parse_xml

    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    tracked = 'w:id="1" w:author="a" w:date="2026-01-01T00:00:00Z"'
    document = docx.Document()
    paragraph = document.add_paragraph("Before ")
    for xml in (f'<w:ins {w} {tracked}><w:r><w:t>Insertedword </w:t></w:r></w:ins>',
                f'<w:del {w} {tracked}><w:r><w:delText>Deletedword</w:delText></w:r></w:del>',
                f'<w:smartTag {w} w:element="place"><w:r><w:t>Smarttagword </w:t></w:r></w:smartTag>',
                f'<w:sdt {w}><w:sdtContent><w:r><w:t>Controlword </w:t></w:r></w:sdtContent></w:sdt>',
                f'<w:fldSimple {w} w:instr="DATE"><w:r><w:t>Fieldresultword</w:t></w:r></w:fldSimple>',
                f'<w:ins {w} {tracked}><w:r><w:rPr><w:vanish/></w:rPr><w:t>Hiddeninsertion</w:t></w:r></w:ins>'):
        paragraph._p.append(parse_xml(xml))
    buffer = io.BytesIO()
    document.save(buffer)
    doc = parse(buffer.getvalue(), filename="changes.docx")
    for word in ("Insertedword", "Smarttagword", "Controlword", "Fieldresultword"):
        assert word in doc.text, word
    assert "Deletedword" not in doc.text and "Hiddeninsertion" not in doc.text
    assert sum(s.hidden_chars_removed for s in doc.sections) >= len("Hiddeninsertion")
