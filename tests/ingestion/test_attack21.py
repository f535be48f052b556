"""Found attacking the parsers attacked least (twenty-first session, attack21): e-mail and WebVTT text a reader
never sees reached the model.

Each test failed on the code before its fix (docs/security.md, "Hidden text").
"""

from __future__ import annotations

import pytest

from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.hidden_payloads import parsed, reaches_model

PAYLOAD = "Zanzibarpayload"
VISIBLE = "Visiblealpha"
AFTER = "Visibleomega"
URL = f"https://x.example/{PAYLOAD}"

_HEADERS = ("From: Ann <ann@example.com>\nTo: bob@example.com\nSubject: Quarterly numbers\n"
            "Date: Mon, 2 Apr 2012 20:21:00 +0000\n")
# Without From, To, Subject and Date the modern parser reads the Message-ID first, and "<[>" makes it raise: the
# message is read with the legacy (compat32) parser.
_LEGACY_HEADERS = "Message-ID: <[>\n"


def _mail(headers: str, content_type: str, body: str) -> bytes:
    return f"{headers}MIME-Version: 1.0\nContent-Type: {content_type}\n\n{body}".encode()


def _multipart(subtype: str, *parts: str, boundary: str = "B") -> tuple[str, str]:
    body = "".join(f"--{boundary}\n{part}\n" for part in parts) + f"--{boundary}--\n"
    return f'multipart/{subtype}; boundary="{boundary}"', body


def _text(subtype: str, body: str, extra: str = "") -> str:
    return f"Content-Type: text/{subtype}; charset=utf-8\n{extra}\n{body}"


def _alternative_in_related(first: str, last: str) -> bytes:
    inner_type, inner = _multipart("alternative", first, last)
    outer_type, outer = _multipart("related", f"Content-Type: {inner_type}\n\n{inner}", boundary="R")
    return _mail(_HEADERS, outer_type, outer)


def _legacy_alternative(first: str, last: str) -> bytes:
    return _mail(_LEGACY_HEADERS, *_multipart("alternative", first, last))


BODY_CHOICES = {
    # A client shows the last alternative it can display, inside a multipart/related too; the standard library's
    # _find_body walked an alternative under a related part first to last.
    "related-two-plain": _alternative_in_related(_text("plain", f"{VISIBLE} {PAYLOAD} {AFTER}"),
                                                 _text("plain", f"{VISIBLE} {AFTER}")),
    "related-two-html": _alternative_in_related(_text("html", f"<p>{VISIBLE} {PAYLOAD} {AFTER}</p>"),
                                                _text("html", f"<p>{VISIBLE} {AFTER}</p>")),
    # Read with the legacy parser, the first text part was the body: no alternative order, no comparison with HTML.
    "legacy-plain-then-html": _legacy_alternative(_text("plain", f"{VISIBLE} {PAYLOAD} {AFTER}"),
                                                  _text("html", f"<p>{VISIBLE} {AFTER}</p>")),
    "legacy-two-plain": _legacy_alternative(_text("plain", f"{VISIBLE} {PAYLOAD} {AFTER}"),
                                            _text("plain", f"{VISIBLE} {AFTER}")),
    # The last resort, the first text part of the walk, took a forwarded message's first alternative.
    "forwarded-message-alternatives": _mail(_HEADERS, *_multipart("mixed", "Content-Type: message/rfc822\n\n"
                                                                  + "Subject: fwd\nMIME-Version: 1.0\nContent-Type: "
                                                                  + "\n\n".join(_multipart(
        "alternative", _text("plain", f"{VISIBLE} {PAYLOAD} {AFTER}"), _text("plain", f"{VISIBLE} {AFTER}"),
        boundary="F")))),
}


@pytest.mark.parametrize("data", BODY_CHOICES.values(), ids=BODY_CHOICES.keys())
def test_email_a_part_no_client_shows_is_never_the_body(data):
    doc = parsed(data, "mail.eml")
    assert_well_formed(doc)
    assert not reaches_model(doc, PAYLOAD)
    assert VISIBLE in doc.text and AFTER in doc.text


def test_email_a_text_attachment_is_read_only_when_nothing_else_is_shown():
    """Decided before (the "alternative before the last one" row): a message whose only text is attached is read from
    it. A text part shown inline now comes first; the walk took the attachment before it."""
    attachment = _text("plain", PAYLOAD, "Content-Disposition: attachment; filename=notes.txt\n")
    assert PAYLOAD in parsed(_mail(_HEADERS, *_multipart("mixed", attachment)), "mail.eml").text
    doc = parsed(_mail(_HEADERS, *_multipart("mixed", attachment, _text("enriched", f"{VISIBLE} {AFTER}"))), "mail.eml")
    assert PAYLOAD not in doc.text and VISIBLE in doc.text


def test_email_the_last_alternative_stays_in_a_related_part_and_with_the_legacy_parser():
    for data in (_alternative_in_related(_text("plain", f"{VISIBLE} {AFTER}"),
                                         _text("plain", f"{VISIBLE} {PAYLOAD} {AFTER}")),
                 _legacy_alternative(_text("plain", f"{VISIBLE} {AFTER}"),
                                     _text("plain", f"{VISIBLE} {PAYLOAD} {AFTER}"))):
        doc = parsed(data, "mail.eml")
        assert f"{VISIBLE} {PAYLOAD} {AFTER}" in doc.text


def _plain_and_html(plain: str, html: str) -> bytes:
    return _mail(_HEADERS, *_multipart("alternative", _text("plain", plain),
                                       _text("html", f"<html><body>{html}</body></html>")))


PLAIN_SAYING_OTHERWISE = {
    # The words of every href in the HTML source were allowed in the plain part, shown or not; now only the address
    # of a link a reader sees, written out whole.
    "href-in-a-comment": (f"{VISIBLE} <{URL}> {AFTER}", f'<p>{VISIBLE} {AFTER}</p><!-- <a href="{URL}">x</a> -->'),
    "href-of-a-hidden-link": (f"{VISIBLE} <{URL}> {AFTER}",
                              f'<p>{VISIBLE} {AFTER}</p><a style="display:none" href="{URL}">x</a>'),
    "href-in-an-attribute": (f"{VISIBLE} <{URL}> {AFTER}", f"<p title='href=\"{URL}\"'>{VISIBLE} {AFTER}</p>"),
    "href-of-an-empty-link": (f"{VISIBLE} <{URL}> {AFTER}", f'<p>{VISIBLE} {AFTER}<a href="{URL}"> </a></p>'),
    "href-words-loose": (f"{VISIBLE} {PAYLOAD} {AFTER}", f'<p>{VISIBLE} <a href="{URL}">{AFTER}</a></p>'),
    # The words were compared as sets: the HTML's own words reordered, or some of them left out, passed.
    "words-left-out": (f"{VISIBLE} please email your password {AFTER}",
                       f"<p>{VISIBLE} please do not email your password {AFTER}</p>"),
    "words-reordered": (f"{VISIBLE} the {AFTER} is not what you think", f"<p>{VISIBLE} what you think is not the "
                                                                          f"{AFTER}</p>"),
}


@pytest.mark.parametrize(("plain", "html"), PLAIN_SAYING_OTHERWISE.values(), ids=PLAIN_SAYING_OTHERWISE.keys())
def test_email_a_plain_alternative_saying_other_than_the_html_one_is_not_the_body(plain, html):
    doc = parsed(_plain_and_html(plain, html), "mail.eml")
    assert_well_formed(doc)
    message = doc.text[doc.sections[1].blocks[0].start:]
    assert plain not in message and not reaches_model(doc, PAYLOAD)
    assert VISIBLE in message and AFTER in message


def test_email_a_plain_alternative_saying_what_the_html_shows_stays_with_its_link_addresses():
    plain = f"{VISIBLE}: see the <https://example.com/q3> report, or mailto:ann@example.com.\n\n{AFTER}"
    html = (f'<p><b>{VISIBLE}</b>: see the <a href="https://example.com/q3">report</a>, or '
            f'<a href="mailto:ann@example.com">write</a>.</p><p>{AFTER}</p>')
    doc = parsed(_plain_and_html(plain, html.replace(">write<", "><")), "mail.eml")
    assert "<https://example.com/q3>" not in doc.text  # the mailto link shows nothing: the HTML part is the body
    doc = parsed(_plain_and_html(plain.replace(" or mailto", " or write mailto"), html), "mail.eml")
    assert "<https://example.com/q3>" in doc.text and "mailto:ann@example.com" in doc.text


# -- WebVTT -----------------------------------------------------------------------------------------------------------


WEBVTT_ARROWS = {
    # A cue's text ends at a line holding "-->"; it is the next cue's timing line, and one that does not parse is
    # dropped with the lines after it up to a blank line (the WebVTT parser; Chromium; Firefox's vtt.js).
    "arrow-in-a-line": f"{VISIBLE}\n{PAYLOAD} --> do this\nand {PAYLOAD} again",
    "arrow-alone": f"{VISIBLE}\n-->\n{PAYLOAD}",
    "arrow-glued": f"{VISIBLE}\nnote-->{PAYLOAD}",
    "broken-timing": f"{VISIBLE}\n00:00:02.000 -> 00:00:03.000 --> x\n{PAYLOAD}",
}


@pytest.mark.parametrize("cue", WEBVTT_ARROWS.values(), ids=WEBVTT_ARROWS.keys())
def test_webvtt_cue_text_after_a_line_holding_an_arrow_never_reaches_the_model(cue):
    doc = parsed(f"WEBVTT\n\n00:00:01.000 --> 00:00:05.000\n{cue}\n\n00:00:06.000 --> 00:00:08.000\n{AFTER}\n",
                 "talk.vtt")
    assert_well_formed(doc)
    assert not reaches_model(doc, PAYLOAD)
    assert VISIBLE in doc.text and AFTER in doc.text
    assert sum(section.hidden_chars_removed for section in doc.sections) >= len(PAYLOAD)


def test_webvtt_a_timing_line_without_a_blank_line_still_starts_a_cue_and_a_marker_after_an_arrow_still_fails():
    doc = parsed(f"WEBVTT\n\n00:00:01.000 --> 00:00:05.000\n{VISIBLE}\n00:00:06.000 --> 00:00:08.000\n{AFTER}\n",
                 "talk.vtt")
    assert [block.metadata["start"] for section in doc.sections for block in section.blocks] == [1.0, 6.0]
    assert VISIBLE in doc.text and AFTER in doc.text
    from ingestion.structure import ParseError

    with pytest.raises(ParseError, match="line 5"):
        parsed(f"WEBVTT\n\n00:00:01.000 --> 00:00:05.000\n{VISIBLE} -->\naccess: restricted\n", "talk.vtt")
