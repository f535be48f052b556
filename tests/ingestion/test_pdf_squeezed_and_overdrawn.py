"""PDF text squeezed to nothing, or painted over, that a viewer does not show (sixteenth session, pdfhide16).

docs/security.md listed two PDF surfaces as not evaluated (or evaluated too leniently): text squeezed narrow by
``Tz`` (or by the text or transformation matrix), and text painted over later in the content stream. Each
``never_reaches_the_model`` case failed on the parser before its fix (the payload reached the model); each
``stays`` case is a reader's ordinary page that must lose nothing.
"""

from __future__ import annotations

import pytest

from tests.ingestion.hidden_payloads import parsed, removed, text_op
from tests.ingestion.test_hidden_text import AFTER, PAYLOAD, VISIBLE, _pdf, assert_hidden

# -- Squeezed text: Tz, the text matrix, the transformation matrix ----------------------------------------------------

# The glyphs' width across their stems under 2 pt -- the height rule's threshold, as HTML's transforms are judged
# (``css_visibility._readable_scale``) -- is a smudge. Before: only under a tenth of that (0.2 pt for the em) was cut,
# so ``1 Tz`` at 12 pt went but ``1 Tz`` at 24 pt, ``2 Tz`` or ``10 Tz`` at 12 pt (a 15-letter word 9 pt wide) stayed.
SQUEEZED = {
    "1-tz-at-24-pt": text_op(PAYLOAD, y=650, size=24, before="1 Tz"),
    "2-tz-at-12-pt": text_op(PAYLOAD, y=650, before="2 Tz"),
    "10-tz-at-12-pt": text_op(PAYLOAD, y=650, before="10 Tz"),
    "16-tz-at-12-pt": text_op(PAYLOAD, y=650, before="16 Tz"),  # the em 1.92 pt wide
    "negative-tz": text_op(PAYLOAD, y=650, before="-5 Tz"),  # mirrored, and squeezed
    "text-matrix": f"BT /F1 12 Tf 0.05 0 0 1 72 650 Tm ({PAYLOAD}) Tj ET\n",
    "transformation-matrix": f"q 0.1 0 0 1 0 0 cm BT /F1 12 Tf 720 650 Td ({PAYLOAD}) Tj ET Q\n",
    "tz-and-text-matrix": f"q BT /F1 12 Tf 40 Tz 0.3 0 0 1 72 650 Tm ({PAYLOAD}) Tj ET Q\n",  # 0.4 x 0.3 of 12 pt
    "rotated-and-squeezed": f"q BT /F1 12 Tf 5 Tz 0 1 -1 0 300 500 Tm ({PAYLOAD}) Tj ET Q\n",
    # Sheared until the letters' axes lie within 25 degrees of one another (css_visibility.MIN_AXES_DEGREES): a band
    # of strokes, though each axis keeps its length (the old tests measured lengths only).
    "sheared-flat": f"BT /F1 12 Tf 1 0 6 1 72 650 Tm ({PAYLOAD}) Tj ET\n",
}


@pytest.mark.parametrize("case", sorted(SQUEEZED))
def test_pdf_text_squeezed_to_a_smudge_never_reaches_the_model(case):
    assert_hidden(parsed(_pdf(SQUEEZED[case]), "report.pdf"))


@pytest.mark.parametrize("content", [
    text_op(PAYLOAD, y=650, before="80 Tz"),  # condensed, as word processors write a character scale
    text_op(PAYLOAD, y=650, before="50 Tz"),
    text_op(PAYLOAD, y=650, before="20 Tz"),  # the em 2.4 pt wide: narrow, still above the threshold
    text_op(PAYLOAD, y=650, size=8, before="30 Tz"),  # fine print condensed: the em 2.4 pt
    text_op(PAYLOAD, y=650, before="200 Tz"),  # expanded
    f"BT /F1 12 Tf 0.5 0 0 1 72 650 Tm ({PAYLOAD}) Tj ET\n",
    f"BT /F1 12 Tf 1 0 0.6 1 72 650 Tm ({PAYLOAD}) Tj ET\n",  # a strong slant (31 degrees)
    f"BT /F1 12 Tf 1 0 -2 1 72 650 Tm ({PAYLOAD}) Tj ET\n",  # 63 degrees: the axes 27 apart
    f"BT /F1 12 Tf 1 0 0 1 72 650 Tm 0 Tz 100 Tz ({PAYLOAD}) Tj ET\n",  # the last Tz before the text counts
], ids=["80-tz", "50-tz", "20-tz", "fine-print-30-tz", "200-tz", "half-width-matrix", "slanted", "slanted-far",
        "tz-reset"])
def test_pdf_condensed_or_slanted_text_stays(content):
    doc = parsed(_pdf(content), "report.pdf")
    assert PAYLOAD in doc.text and VISIBLE in doc.text and AFTER in doc.text and removed(doc) == 0


# -- Painted over from the baseline up: the descenders' tails alone show -----------------------------------------------

# A glyph was covered when a later fill held its whole box, the font's descent to its ascent (less 0.05 em each side):
# a fill from the baseline up hides every letter's body -- only the tails of g, j, p, q, y show below it, and
# those tell no letter -- yet held no box, so the text reached the model. A glyph's body (the baseline to the ascent,
# less the tolerance) is the box now, for the fills painted over text and for those painted under it.
FROM_THE_BASELINE = {
    "white-rectangle": text_op(PAYLOAD, y=650) + "q 1 g 60 650 200 30 re f Q\n",
    "black-rectangle-half-a-point-up": text_op(PAYLOAD, y=650) + "q 0 g 60 650.5 200 30 re f Q\n",
    "red-path": text_op(PAYLOAD, y=650) + "q 1 0 0 rg 60 650 m 260 650 l 260 680 l 60 680 l h f Q\n",
    "thick-stroke": text_op(PAYLOAD, y=650) + "q 1 G 20 w 60 660 m 260 660 l S Q\n",  # 650 to 670
    "in-a-table-cell": "q 0.9 g 60 636 200 30 re f Q " + text_op(PAYLOAD, y=650) + "q 1 g 60 650 200 16 re f Q\n",
}
_FROM_THE_BASELINE_IMAGE = "q 200 0 0 20 60 650 cm /Opaque Do Q\n"


@pytest.mark.parametrize("case", [*sorted(FROM_THE_BASELINE), "image"])
def test_pdf_text_painted_over_from_the_baseline_up_never_reaches_the_model(case):
    from tests.ingestion.test_hidden_text import _images, _layered, _pdf_page_changed

    if case == "image":
        pdf = _pdf_page_changed(_layered(text_op(PAYLOAD, y=650) + _FROM_THE_BASELINE_IMAGE), _images)
    else:
        pdf = _pdf(FROM_THE_BASELINE[case])
    assert_hidden(parsed(pdf, "report.pdf"))


def test_pdf_text_on_a_fill_of_its_colour_from_the_baseline_up_never_reaches_the_model():
    """The same box for what lies under the text: black text on a black band from its baseline up shows only its
    descenders' tails (judged against the white page before: kept)."""
    assert_hidden(parsed(_pdf("q 0 g 60 650 200 30 re f Q " + text_op(PAYLOAD, y=650)), "report.pdf"))


def test_pdf_white_text_on_a_dark_band_from_the_baseline_up_stays():
    """And the other way: white text on a navy band from its baseline up shows every letter's body (cut before as
    white on the white page, its descenders hanging below the band)."""
    doc = parsed(_pdf("q 0 0 0.3 rg 60 650 200 30 re f Q q 1 g " + text_op(PAYLOAD, y=650) + "Q "), "report.pdf")
    assert PAYLOAD in doc.text and VISIBLE in doc.text and AFTER in doc.text and removed(doc) == 0


@pytest.mark.parametrize("content", [
    text_op(PAYLOAD, y=650) + "q 1 g 60 640 200 10 re f Q\n",  # over the descenders only
    text_op(PAYLOAD, y=650) + "q 1 g 60 640 200 16 re f Q\n",  # up to the x-height: ascenders and capitals show
    text_op(PAYLOAD, y=650) + "q 1 g 60 652 200 30 re f Q\n",  # from 2 pt up: the letters' feet show
    text_op(PAYLOAD, y=650) + "q 1 g 60 650 70 30 re f Q\n",  # the first letters: the rest shows
    "q 1 g 60 650 200 30 re f Q " + text_op(PAYLOAD, y=650),  # painted before the text: its background
], ids=["descenders-only", "up-to-the-x-height", "feet-show", "part-of-the-word", "before-the-text"])
def test_pdf_text_a_fill_leaves_readable_stays(content):
    doc = parsed(_pdf(content), "report.pdf")
    if "70 30" in content:  # the letters under the fill go, the rest of the word stays
        assert PAYLOAD not in doc.text and PAYLOAD[-5:] in doc.text and 0 < removed(doc) < len(PAYLOAD)
        return
    assert PAYLOAD in doc.text and VISIBLE in doc.text and AFTER in doc.text and removed(doc) == 0


# -- The glyph box: the cap height, the side bearings -----------------------------------------------------------------


def _tall_font(writer, page):
    """A page change adding ``/FA``: Helvetica (the standard metrics) described as Arial is -- an ascent of 0.905 em
    (room for accents over capitals) above a cap height of 0.716."""
    from pypdf.generic import DictionaryObject, NameObject, NumberObject

    descriptor = DictionaryObject({NameObject("/Type"): NameObject("/FontDescriptor"),
                                   NameObject("/FontName"): NameObject("/Helvetica"),
                                   NameObject("/Ascent"): NumberObject(905), NameObject("/Descent"): NumberObject(-212),
                                   NameObject("/CapHeight"): NumberObject(716)})
    font = DictionaryObject({NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
                             NameObject("/BaseFont"): NameObject("/Helvetica"),
                             NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
                             NameObject("/FontDescriptor"): writer._add_object(descriptor)})
    page["/Resources"]["/Font"][NameObject("/FA")] = writer._add_object(font)


def _in_the_tall_font(content: str) -> bytes:
    from tests.ingestion.test_hidden_text import _layered, _pdf_page_changed

    return _pdf_page_changed(_layered(content), _tall_font)


_TALL = f"BT /FA 12 Tf 72 650 Td ({PAYLOAD}) Tj ET\n"


def test_pdf_text_painted_over_up_to_its_cap_height_never_reaches_the_model():
    """A fill from the baseline to 0.74 em hides every letter of a font whose ascent (0.905 em) leaves room for
    accents: the box's top was the ascent, so it held none."""
    assert_hidden(parsed(_in_the_tall_font(_TALL + "q 1 g 60 650 200 8.9 re f Q\n"), "report.pdf"))


@pytest.mark.parametrize("content", [
    "q 0 0 0.3 rg 60 647 200 12 re f Q q 1 g " + _TALL + "Q ",  # a band as tall as its line (line-height: 1)
    "q 0 g 72.3 645 87.4 15 re f Q q 1 g " + text_op(PAYLOAD, y=650) + "Q ",  # starts 0.3 pt in, ends 1 pt short
], ids=["band-as-tall-as-its-line", "band-a-point-short-of-the-text"])
def test_pdf_white_text_on_a_dark_band_that_holds_its_letters_stays(content):
    """White text on a dark band that holds each letter's body -- though not the ascent's room for accents, nor
    the side bearings of its first and last letters -- shows: it was cut as white on the page."""
    doc = parsed(_in_the_tall_font(content), "report.pdf")
    assert PAYLOAD in doc.text and VISIBLE in doc.text and AFTER in doc.text and removed(doc) == 0


def test_pdf_printed_by_chromium_keeps_pale_text_on_dark_cells_and_cuts_what_a_box_hides():
    """A page chromium printed (tests/fixtures/pdf/chromium-shaded-cells.html): white and pale text on dark cells,
    spans and a banner as tall as its line -- a composite font's whole string was cut where one glyph's advance, or
    the ascent, passed the fill by a pixel -- stays; a line under a white box down to its baseline (its descenders
    show) goes."""
    from pathlib import Path

    data = (Path(__file__).resolve().parents[1] / "fixtures" / "pdf" / "chromium-shaded-cells.pdf").read_bytes()
    doc = parsed(data, "report.pdf")
    for line in ("Tight leading first line gypsy jiggly", "highlight second line quay typing",
                 "green third line glyph query", "dense gjpqy cell", "next cell pq", "white on dark gjpqy",
                 "yellow on navy typing", "Dark banner heading gjpqy", "White text in a dark box with typography",
                 "inverted words gypsy", "pale on dark grey", "Visibleomega closes the page."):
        assert line in doc.text, line
    assert_hidden(doc, "Zanzibarbaseline", "Visibleomega")
    assert removed(doc) == len("Zanzibarbaselineunderaboxdowntoitsbaseline")
