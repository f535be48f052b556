"""The section bearing a document's title, as each parser names it (``ParsedDocument.title_key``; docs/security.md, "A
title taken from a heading"): a title taken from a heading is borne by that heading's own section, a title from the
file's properties (HTML's ``<title>``, DOCX core properties, a PDF's document information, an mbox's file name) by
the root. Without it the store step took "the first section titled so" -- a hidden section with the title's text,
placed before the heading, was then the bearer, and readers of the heading were shown "untitled": an oracle of a
hidden heading's exact text.
"""

from __future__ import annotations

import io
from types import SimpleNamespace

import docx
import pytest

from ingestion.parsers import parse
from ingestion.parsers.docx import DOCX_CONTENT_TYPE
from kb.models import Document
from kb.services import document_title_follow


def _bearer(parsed):
    """The section the store step records as bearing the title (``kb.services.document_title_follow``)."""
    rows = [SimpleNamespace(id=s.key, key=s.key, order=n, title=s.title, parent_id=s.parent)
            for n, s in enumerate(parsed.sections)]
    document = Document(title="untitled", metadata={})
    document_title_follow(document, rows, content_title=parsed.title, title_key=parsed.title_key)
    return document.content_title, next(s for s in parsed.sections if s.key == document.title_section)


HIDDEN_FIRST = b"""<html><body>
<h2 data-access="restricted">Kestrel handbook</h2><p>LEDGERBODY the buyout terms.</p>
<h1>Kestrel handbook</h1><p>Opening words for all staff.</p>
</body></html>"""


def test_html_a_hidden_heading_titled_as_the_first_h1_before_it_does_not_bear_the_title():
    parsed = parse(HIDDEN_FIRST, content_type="text/html")
    hidden = next(s for s in parsed.sections if s.policy is not None)
    assert hidden.title == "Kestrel handbook"  # the restricted section, first in document order
    title, bearer = _bearer(parsed)
    assert title == "Kestrel handbook"
    assert bearer.key != hidden.key and bearer.policy is None and "Opening words" in parsed.text[bearer.start:bearer.end]


def test_html_a_first_h1_folded_into_its_section_element_bears_the_title_there():
    parsed = parse(b"<html><body><h2 data-access='restricted'>Plan</h2><p>x</p>"
                   b"<section><h1>Plan</h1><p>Opening.</p></section></body></html>", content_type="text/html")
    title, bearer = _bearer(parsed)
    assert (title, bearer.policy, bearer.title) == ("Plan", None, "Plan")
    assert "Opening." in parsed.text[bearer.start:bearer.end]


def test_html_a_head_title_is_borne_by_the_root():
    parsed = parse(b"<html><head><title>Plan</title></head><body><h1 data-access='restricted'>Plan</h1><p>x</p>"
                   b"</body></html>", content_type="text/html")
    assert parsed.title_key == parsed.sections[0].key


def _docx(properties_title: str = "") -> bytes:
    d = docx.Document()
    d.core_properties.title = properties_title
    d.add_heading("Kestrel handbook", level=1)  # a section an admin may restrict (the API) -- before the title
    d.add_paragraph("LEDGERBODY the buyout terms.")
    d.add_paragraph("Kestrel handbook", style="Title")
    d.add_paragraph("Opening words for all staff.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


@pytest.mark.parametrize("properties", ["", "Kestrel handbook"], ids=["title-paragraph", "core-properties"])
def test_docx_names_the_title_paragraphs_section_or_the_root(properties):
    parsed = parse(_docx(properties), content_type=DOCX_CONTENT_TYPE)
    title, bearer = _bearer(parsed)
    assert title == "Kestrel handbook"
    if properties:
        assert bearer.parent is None  # the file's properties: the root
    else:
        assert bearer.parent is not None and "Opening words" in parsed.text[bearer.start:bearer.end]
        assert "LEDGERBODY" not in parsed.text[bearer.start:bearer.end]


def test_an_email_subject_is_borne_by_its_message_and_an_mbox_name_by_the_root():
    eml = parse(b"From: a@example.com\r\nSubject: Plan\r\n\r\nBody.\r\n", content_type="message/rfc822")
    title, bearer = _bearer(eml)
    assert (title, bearer.kind) == ("Plan", "message")
    mbox = parse(b"From a@example.com Thu Jan  1 00:00:00 2026\nFrom: a@example.com\nSubject: x.mbox\n\nBody.\n",
                 content_type="application/mbox", filename="x.mbox")
    assert mbox.title == "x.mbox" and mbox.title_key == mbox.sections[0].key
