"""E-mail parser (.eml, .mbox): real messages (golden), quoted replies, threads, broken MIME.

Golden files are regenerated only with ``BULKHEAD_REGENERATE_GOLDEN=1`` (see golden_files.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ingestion.parsers import parse
from ingestion.parsers.email import html_to_text, parse_eml, parse_mbox, strip_quoted
from ingestion.structure import ParseError
from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.golden_files import assert_matches_golden

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "email"
REAL = ["talon-gmail.eml", "talon-outlook.eml", "talon-android.eml", "thread.mbox"]


@pytest.mark.parametrize("name", REAL)
def test_real_mail_matches_golden_and_invariants(name):
    doc = parse((FIXTURES / name).read_bytes(), filename=name)
    assert_well_formed(doc)
    assert_matches_golden(doc, FIXTURES / name)


@pytest.mark.parametrize(("name", "body"), [
    ("talon-gmail.eml", "Hello"), ("talon-android.eml", "Hello"),
    # Its plain part says "Hello", its HTML part -- what Outlook shows -- "Allo! Follow up MIME!" (twenty-first
    # session: the plain part passed only because "Hello" is a word of the HTML's quoted text).
    ("talon-outlook.eml", "Allo! Follow up MIME!"),
])
def test_quoted_replies_are_not_indexed_again(name, body):
    doc = parse_eml((FIXTURES / name).read_bytes(), filename=name)
    bodies = [doc.text[b.start : b.end] for s in doc.sections for b in s.blocks]
    assert bodies == [body]
    assert "wrote:" not in doc.text and "> Hi" not in doc.text and "Original" not in doc.text


def test_message_section_headers_in_metadata_and_context():
    doc = parse((FIXTURES / "talon-gmail.eml").read_bytes(), content_type="message/rfc822")
    message = doc.sections[1]
    assert (message.kind, message.title, message.heading_path) == ("message", "Re: Test", ("Re: Test",))
    assert message.metadata["from"] == "Megan One <xxx@gmail.com>"
    assert message.metadata["message_id"].startswith("<CAKsfaBW4hj0")
    assert message.context == "From: Megan One <xxx@gmail.com>\nDate: Mon, 02 Apr 2012 20:21:52 +0400\nSubject: Re: Test"
    # The header lines open the section's text but are in no block.
    assert doc.text[message.start :].startswith("From: Megan One")


def test_mbox_threads_by_references_and_subject():
    doc = parse_mbox((FIXTURES / "thread.mbox").read_bytes(), filename="thread.mbox")
    threads = [s for s in doc.sections if s.depth == 1]
    assert [(t.title, t.metadata["messages"]) for t in threads] == [
        ("Limiting Perl CPU Utilization...", 2), ("Test", 5), ("This is a test message", 1)]
    messages = [s for s in doc.sections if s.kind == "message"]
    assert len(messages) == 8 and all(m.depth == 2 for m in messages)
    assert messages[2].heading_path == ("Test", "From Megan One, 2012-04-02 20:21")
    assert messages[2].metadata["subject"] == "Re: Test"
    assert doc.metadata == {"format": "mbox", "messages": 8, "threads": 3}


def test_html_only_message_is_converted_and_quotes_dropped():
    raw = (b"From: Ana <ana@example.com>\r\nSubject: Re: plan\r\nMIME-Version: 1.0\r\n"
           b"Content-Type: text/html; charset=utf-8\r\n\r\n"
           b"<html><head><style>p{color:red}</style></head><body><p>New plan is <b>fine</b>.</p>"
           b"<p>Second paragraph.</p><div class='gmail_quote'>On Mon, Bo wrote:<blockquote>old plan</blockquote>"
           b"</div></body></html>")
    doc = parse_eml(raw)
    bodies = [doc.text[b.start : b.end] for b in doc.sections[1].blocks]
    assert bodies == ["New plan is fine.", "Second paragraph."]


def test_strip_quoted_rules():
    assert strip_quoted("Yes.\n\nOn Tue, 3 Apr 2012 at 10:00, Bo <bo@x.org>\nwrote:\n> old\n> text\n") == "Yes."
    assert strip_quoted("Sure\n-----Original Message-----\nFrom: x\nold") == "Sure"
    assert strip_quoted("Fine\n\nFrom: Bo\nSent: Monday\nTo: Ana\n\nold") == "Fine"
    # A colon line that introduces the writer's own list is kept.
    assert strip_quoted("Agenda for 3 May:\n- budget\n- hiring") == "Agenda for 3 May:\n- budget\n- hiring"
    assert html_to_text("<p>a<br>b</p>").split() == ["a", "b"]


def test_a_multipart_whose_parts_a_client_may_read_otherwise_is_refused_with_its_line():
    """Read best-effort before the twenty-second session (its parts' raw lines, scaffolding dropped, were the body);
    a client shows no part of it, and an HTML part's hidden text reached the model that way (test_attack22m.py)."""
    with pytest.raises(ParseError, match="boundary that never appears") as error:
        parse_eml((FIXTURES / "cpython-msg_31-wrong-boundary.eml").read_bytes())
    assert error.value.line == 3
    # A part inside another with the same boundary: Python takes its delimiters as the outer part's (its alternatives
    # were siblings of the mixed part), Thunderbird as its own. Read best-effort before, now refused.
    with pytest.raises(ParseError, match="boundary of a part around it") as error:
        parse_eml((FIXTURES / "cpython-msg_15-nested-same-boundary.eml").read_bytes())
    assert error.value.line == 16
    with pytest.raises(ParseError, match="boundary of a part around it"):
        parse_eml(b"Subject: deep\nContent-Type: multipart/mixed; boundary=A\n\n"
                  + b"--A\nContent-Type: multipart/mixed; boundary=A\n\n" * 200)


@pytest.mark.parametrize("data", [
    b"From: a@b.c\nContent-Type: multipart/mixed; boundary=X\n\n--X\nContent-Type: text/plain\n\nunterminated",
    b"From: a@b.c\nContent-Type: text/plain; charset=no-such-charset\n\nbody \xff\xfe text\n",
    b"From: a@b.c\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n!!!not base64!!!\n",
    b"From: =?utf-8?q?broken\nSubject: =?x-unknown?b?AAAA?=\nDate: not a date\n\nstill text\n",
])
def test_broken_mime_never_crashes(data):
    doc = parse_eml(data)
    assert_well_formed(doc)


def test_bytes_without_mail_headers_are_refused():
    with pytest.raises(ParseError, match="not an e-mail message"):
        parse_eml(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    with pytest.raises(ParseError, match="not an mbox"):
        parse_mbox(b"Subject: x\n\nbody\n")


def test_an_html_body_nested_deeper_than_html_documents_may_be_is_refused():
    """Its text was read by tree walks whose cost grows with the square of the depth: 300 KB of
    nested <div>s held a worker for the whole parse limit (found by an attack). The HTML parser's
    own limit now applies."""
    def mail(depth: int) -> bytes:
        return ("From: a@example.com\nSubject: s\nMIME-Version: 1.0\nContent-Type: text/html\n\n"
                + "<div>" * depth + "deep text").encode()

    assert "deep text" in parse(mail(1000), content_type="message/rfc822").text
    with pytest.raises(ParseError, match="nested too deeply"):
        parse(mail(40_000), content_type="message/rfc822")


def test_thousands_of_nested_multiparts_are_a_parse_error():
    parts = "".join(f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n' for i in range(5000))
    data = f"From: a@example.com\nSubject: s\nMIME-Version: 1.0\n{parts}Content-Type: text/plain\n\nhi\n".encode()
    with pytest.raises(ParseError, match="nested too deeply"):
        parse(data, content_type="message/rfc822")
