"""The parser registry: choosing a parser by content type, extension, or the bytes."""

from __future__ import annotations

import pytest

from ingestion import parsers
from ingestion.parsers import SUPPORTED_CONTENT_TYPES, detect_content_type, parse, register
from ingestion.parsers.registry import _EXTENSIONS, _PARSERS
from ingestion.structure import ParsedDocument, ParseError, Section


def test_text_formats_are_registered():
    assert {"text/plain", "text/markdown", "text/html"} <= set(SUPPORTED_CONTENT_TYPES)


@pytest.mark.parametrize(
    ("filename", "content_type", "kind"),
    [
        ("a.md", None, "heading"),
        ("a.markdown", None, "heading"),
        ("a.bin", "text/markdown", "heading"),
        ("a.txt", None, None),
        ("a.rst", None, None),
        (None, "text/plain", None),
    ],
)
def test_markdown_versus_text(filename, content_type, kind):
    doc = parse(b"# Title\n\nBody\n", filename=filename, content_type=content_type)
    assert (doc.sections[1].kind if len(doc.sections) > 1 else None) == kind


@pytest.mark.parametrize(("filename", "content_type"), [("page.HTML", None), ("page.htm", None), (None, "text/html")])
def test_html_by_type_or_extension(filename, content_type):
    doc = parse(b"<h1>T</h1><p>Body</p>", filename=filename, content_type=content_type)
    assert doc.text == "T\n\nBody"


@pytest.mark.parametrize(
    ("filename", "data", "expected"),
    [
        ("notes.txt", b"hi", "text/plain"),
        ("README.RST", b"hi", "text/plain"),
        ("unknown.xyz", b"just text", "text/plain"),
        (None, b"just text", "text/plain"),
        (None, b"  <!DOCTYPE html><html></html>", "text/html"),
        (None, b"%PDF-1.7 ...", "application/pdf"),
        (None, b"\x00\x01\x02garbage", None),
    ],
)
def test_detect_content_type(filename, data, expected):
    assert detect_content_type(filename, data) == expected


def test_parse_by_content_type_ignores_parameters():
    doc = parse(b"Hello.", content_type="text/plain; charset=utf-8")
    assert doc.text == "Hello."


def test_parse_by_extension_when_type_is_generic():
    doc = parse(b"Hello.", content_type="application/octet-stream", filename="a.txt")
    assert doc.text == "Hello."


def test_unknown_text_subtype_is_plain_text():
    assert parse(b"Hello.", content_type="text/x-log").text == "Hello."


def test_unsupported_content_type():
    with pytest.raises(ParseError, match="unsupported content type 'image/png'"):
        parse(b"\x89PNG\r\n\x1a\n\x00", content_type="image/png", filename="a.png")


def test_sniffed_binary_is_unsupported():
    with pytest.raises(ParseError, match="unsupported content type"):
        parse(b"\x00\x01\x02", filename="blob")


def test_register_a_new_format():
    def fake(data: bytes, *, filename: str | None) -> ParsedDocument:
        text = data.decode()
        root = Section(key="0", parent=None, title="", heading_path=(), kind="document", depth=0, start=0,
                       end=len(text))
        return ParsedDocument(text=text, sections=[root], metadata={"filename": filename})

    try:
        register(content_types=["application/x-fake"], extensions=["fake"])(fake)
        assert "application/x-fake" in SUPPORTED_CONTENT_TYPES
        assert parse(b"x", filename="thing.FAKE").metadata == {"filename": "thing.FAKE"}
        assert parse(b"x", content_type="Application/X-Fake").text == "x"
    finally:
        _PARSERS.pop("application/x-fake", None)
        _EXTENSIONS.pop(".fake", None)


def test_every_listed_parser_module_is_imported():
    import sys

    assert "plaintext" in parsers.PARSER_MODULES
    assert all(f"ingestion.parsers.{name}" in sys.modules for name in parsers.PARSER_MODULES)


def test_a_missing_parser_module_is_an_error():
    with pytest.raises(parsers.MissingParserModule, match="ingestion.parsers.no_such_format, which does not exist"):
        parsers.import_parser_modules(("plaintext", "no_such_format"))


def test_a_file_named_as_a_format_no_parser_reads_is_never_read_as_text():
    from ingestion.parsers import detect_content_type, parser_for, unsupported_advice
    from ingestion.structure import ParseError

    # Eight bytes of text named .xlsx: not a spreadsheet, and not plain text either.
    assert detect_content_type("fake.xlsx", b"12345678") is None
    with pytest.raises(ParseError):
        parser_for(None, "fake.xlsx", b"12345678")
    assert "export the sheet as CSV" in unsupported_advice("fake.xlsx", b"12345678")[1]
    assert unsupported_advice("scan", b"\x89PNG\r\n\x1a\n")[0] == "a PNG image"  # by its bytes
    assert unsupported_advice("notes.md", b"# Notes") is None
