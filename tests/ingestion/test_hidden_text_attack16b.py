"""Hidden text found attacking the formats other than HTML (fifteenth session, attack16b).

Each case failed on the parsers before its fix: the payload reached the model.
"""

from __future__ import annotations

import pytest

from tests.ingestion.hidden_payloads import parsed, reaches_model, removed
from tests.ingestion.limits_helpers import docx_with_body
from tests.ingestion.test_hidden_text import AFTER, PAYLOAD, VISIBLE, assert_hidden


def _run(text: str, properties: str = "") -> str:
    return f'<w:r><w:rPr>{properties}</w:rPr><w:t xml:space="preserve">{text}</w:t></w:r>'


def _field(kind: str) -> str:
    return f'<w:r><w:fldChar w:fldCharType="{kind}"/></w:r>'


def _paragraph(*parts: str) -> str:
    return "<w:p>" + "".join(parts) + "</w:p>"


# -- DOCX: a complex field's code -----------------------------------------------------------------------------------

# Word shows a complex field's result (between fldChar separate and end), never its code (between begin and
# separate: w:instrText, and any w:t written there -- LibreOffice's import appends such text to the field's command
# too). python-docx reads every w:t of a paragraph, so text written in the code reached the model.
FIELD_CODES = {
    "text-in-the-code": _paragraph(_run(f"{VISIBLE} "), _field("begin"), _run(PAYLOAD), _field("separate"),
                                   _run("42"), _field("end"), _run(f" {AFTER}")),
    "after-the-instruction": _paragraph(_run(f"{VISIBLE} "), _field("begin"),
                                        '<w:r><w:instrText xml:space="preserve"> PAGE </w:instrText></w:r>',
                                        _run(PAYLOAD), _field("separate"), _run("3"), _field("end"),
                                        _run(f" {AFTER}")),
    "no-result": _paragraph(_run(f"{VISIBLE} "), _field("begin"), _run(PAYLOAD), _field("end"), _run(f" {AFTER}")),
    "in-the-runs-own-field-char": _paragraph(
        _run(f"{VISIBLE} "), f'<w:r><w:fldChar w:fldCharType="begin"/><w:t>{PAYLOAD}</w:t>'
        '<w:fldChar w:fldCharType="separate"/></w:r>', _run("7"), _field("end"), _run(f" {AFTER}")),
    "a-nested-fields-result-inside-a-code": _paragraph(
        _run(f"{VISIBLE} "), _field("begin"), '<w:r><w:instrText> IF </w:instrText></w:r>', _field("begin"),
        '<w:r><w:instrText> QUOTE </w:instrText></w:r>', _field("separate"), _run(PAYLOAD), _field("end"),
        '<w:r><w:instrText> = 1 "yes" "no" </w:instrText></w:r>', _field("separate"), _run("no"), _field("end"),
        _run(f" {AFTER}")),
    "a-code-across-paragraphs": _paragraph(_run(f"{VISIBLE} "), _field("begin")) + _paragraph(_run(PAYLOAD))
    + _paragraph(_field("separate"), _run("result"), _field("end"), _run(f" {AFTER}")),
    "in-a-hyperlink-inside-the-code": _paragraph(_run(f"{VISIBLE} "), _field("begin"),
                                                 f'<w:hyperlink w:anchor="x">{_run(PAYLOAD)}</w:hyperlink>',
                                                 _field("separate"), _run("x"), _field("end"), _run(f" {AFTER}")),
}


@pytest.mark.parametrize("case", sorted(FIELD_CODES))
def test_docx_text_in_a_fields_code_never_reaches_the_model(case):
    assert_hidden(parsed(docx_with_body(FIELD_CODES[case]), "report.docx"))


def test_docx_a_fields_result_stays():
    body = _paragraph(_run(f"{VISIBLE} "), _field("begin"), '<w:r><w:instrText> PAGE </w:instrText></w:r>',
                      _field("separate"), _run(PAYLOAD), _field("end"), _run(f" {AFTER}"))
    body += _paragraph(_run("a second paragraph after the field"))
    doc = parsed(docx_with_body(body), "report.docx")
    assert PAYLOAD in doc.text and "second paragraph" in doc.text and removed(doc) == 0


def test_docx_a_field_that_never_ends_fails_with_its_place():
    """A field whose end never comes would hide the rest of the document as its code: refused, not guessed."""
    from ingestion.structure import ParseError

    body = _paragraph(_run(f"{VISIBLE} "), _field("begin"), _run(PAYLOAD)) + _paragraph(_run(AFTER))
    with pytest.raises(ParseError, match="paragraph 1.*never ends"):
        parsed(docx_with_body(body), "report.docx")


# -- DOCX: a bidi override (w:bdo) ---------------------------------------------------------------------------------

# w:bdo w:val="rtl" is Word's right-to-left override (U+202E in text): Latin letters in it are drawn backwards, so a
# reader sees "daolyaprabiznaZ" where the model read the stored order. The same rule as the Unicode override
# (docs/security.md, "every format"): a run shown in another order than stored goes.


@pytest.mark.parametrize("direction, text", [("rtl", PAYLOAD), ("rtl", "2026 42"), ("ltr", "\u05d6\u05e0\u05d6")],
                         ids=["rtl-over-latin", "rtl-over-digits", "ltr-over-hebrew"])
def test_docx_text_a_bidi_override_shows_in_another_order_never_reaches_the_model(direction, text):
    body = _paragraph(_run(f"{VISIBLE} "), f'<w:bdo w:val="{direction}">{_run(text)}</w:bdo>', _run(f" {AFTER}"))
    assert_hidden(parsed(docx_with_body(body), "report.docx"), text)


@pytest.mark.parametrize("direction, text", [("rtl", "\u05d6\u05e0\u05d6"), ("ltr", PAYLOAD)],
                         ids=["rtl-over-hebrew", "ltr-over-latin"])
def test_docx_a_bidi_override_in_the_texts_own_direction_stays(direction, text):
    body = _paragraph(_run(f"{VISIBLE} "), f'<w:bdo w:val="{direction}">{_run(text)}</w:bdo>', _run(f" {AFTER}"))
    doc = parsed(docx_with_body(body), "report.docx")
    assert text in doc.text and removed(doc) == 0


# -- DOCX: a table moved off the page ------------------------------------------------------------------------------

def _table(table_properties: str, styles: str = "") -> bytes:
    cell = '<w:tc><w:tcPr><w:tcW w:w="3000" w:type="dxa"/></w:tcPr><w:p>{}</w:p></w:tc>'
    body = (_paragraph(_run(VISIBLE)) + f"<w:tbl><w:tblPr>{table_properties}</w:tblPr>"
            '<w:tblGrid><w:gridCol w:w="3000"/></w:tblGrid>'
            f"<w:tr>{cell.format(_run('Item'))}</w:tr><w:tr>{cell.format(_run(PAYLOAD))}</w:tr></w:tbl>"
            + _paragraph(_run(AFTER)))
    return docx_with_body(body, styles)


_FAR_STYLE = ('<w:style w:type="table" w:styleId="Far"><w:name w:val="Far"/>'
              '<w:tblPr><w:tblInd w:w="-30000" w:type="dxa"/></w:tblPr></w:style>')


@pytest.mark.parametrize("properties, styles", [
    ('<w:tblInd w:w="-30000" w:type="dxa"/>', ""),
    ('<w:tblInd w:w="40000" w:type="dxa"/>', ""),
    ('<w:tblpPr w:tblpX="-30000" w:tblpY="200" w:horzAnchor="page" w:vertAnchor="page"/>', ""),
    ('<w:tblpPr w:tblpX="100" w:tblpY="60000" w:vertAnchor="page"/>', ""),
    ('<w:tblStyle w:val="Far"/>', _FAR_STYLE),
], ids=["indent-back", "indent-forward", "floating-left", "floating-down", "through-its-style"])
def test_docx_a_table_moved_off_the_page_never_reaches_the_model(properties, styles):
    """Listed nowhere before (fifteenth session): a paragraph's indent or frame off the page was removed, a table's
    indent (``w:tblInd``) or floating position (``w:tblpPr``) was not read -- its cells reached the model."""
    assert_hidden(parsed(_table(properties, styles), "report.docx"))


@pytest.mark.parametrize("properties", [
    '<w:tblInd w:w="-108" w:type="dxa"/>', '<w:tblInd w:w="720" w:type="dxa"/>', '<w:tblInd w:w="5" w:type="pct"/>',
    '<w:tblpPr w:tblpX="1440" w:tblpY="200" w:vertAnchor="text"/>',
], ids=["small-negative-indent", "indent", "percent", "floating-near"])
def test_docx_a_table_indented_or_floating_on_the_page_stays(properties):
    doc = parsed(_table(properties), "report.docx")
    assert reaches_model(doc, PAYLOAD) and removed(doc) == 0
