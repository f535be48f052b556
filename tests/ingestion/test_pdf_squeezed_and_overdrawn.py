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


# -- Painted over by a shading (sh) ---------------------------------------------------------------------------------


def _shadings(writer, page):
    """A page change adding shadings (black to white) and ExtGStates: ``/Axial`` across the page's width (the band
    x 0 to 612, no ``/Extend``), ``/AxialRight`` (the band x 300 to 612, ``/Extend [false false]``), ``/AxialBoxed`` (extended both ways, its
    ``/BBox`` around the payload's line), ``/Radial`` (a disc of 50 pt round the payload), ``/RadialAway`` (a disc
    of 40 pt at 450, 300), ``/Cone`` (a radial shading extended both ways: it may fill the plane), ``/Function``
    (function-based: the unit square under ``/Matrix`` -- 50 to 350 by 600 to 700) and ``/Mesh`` (a free-form mesh
    under no ``/BBox``: its region is not read); ``/GH`` (opacity 0.5), ``/GS`` (a soft mask), ``/GM`` (Multiply),
    ``/G95`` (opacity 0.95)."""
    from pypdf.generic import (
        ArrayObject,
        BooleanObject,
        DictionaryObject,
        FloatObject,
        NameObject,
        NumberObject,
        StreamObject,
    )

    def numbers(*values):
        return ArrayObject([FloatObject(v) for v in values])

    ramp = DictionaryObject({NameObject("/FunctionType"): NumberObject(2), NameObject("/N"): NumberObject(1),
                             NameObject("/Domain"): numbers(0, 1), NameObject("/C0"): numbers(0),
                             NameObject("/C1"): numbers(1)})
    calculator = StreamObject()
    calculator.set_data(b"{ pop }")
    calculator.update({NameObject("/FunctionType"): NumberObject(4), NameObject("/Domain"): numbers(0, 1, 0, 1),
                       NameObject("/Range"): numbers(0, 1)})

    def shading(kind: int, **entries):
        made = DictionaryObject({NameObject("/ShadingType"): NumberObject(kind),
                                 NameObject("/ColorSpace"): NameObject("/DeviceGray"),
                                 NameObject("/Function"): writer._add_object(calculator) if kind == 1 else ramp})
        made.update({NameObject("/" + key): value for key, value in entries.items()})
        return writer._add_object(made)

    mesh = StreamObject()
    mesh.set_data(b"\x00" * 16)
    mesh.update({NameObject("/ShadingType"): NumberObject(4), NameObject("/ColorSpace"): NameObject("/DeviceGray"),
                 NameObject("/BitsPerCoordinate"): NumberObject(8), NameObject("/BitsPerComponent"): NumberObject(8),
                 NameObject("/BitsPerFlag"): NumberObject(8), NameObject("/Decode"): numbers(0, 612, 0, 792, 0, 1)})
    both = ArrayObject([BooleanObject(True), BooleanObject(True)])
    neither = ArrayObject([BooleanObject(False), BooleanObject(False)])
    page["/Resources"][NameObject("/Shading")] = DictionaryObject({
        NameObject("/Axial"): shading(2, Coords=numbers(0, 0, 612, 0)),
        NameObject("/AxialRight"): shading(2, Coords=numbers(300, 0, 612, 0), Extend=neither),
        NameObject("/AxialBoxed"): shading(2, Coords=numbers(0, 0, 10, 0), Extend=both,
                                           BBox=numbers(60, 640, 260, 670)),
        NameObject("/Radial"): shading(3, Coords=numbers(117, 654, 0, 117, 654, 50), Extend=neither),
        NameObject("/RadialAway"): shading(3, Coords=numbers(450, 300, 0, 450, 300, 40)),
        NameObject("/Cone"): shading(3, Coords=numbers(450, 300, 0, 450, 300, 40), Extend=both),
        NameObject("/Function"): shading(1, Matrix=numbers(300, 0, 0, 100, 50, 600)),
        NameObject("/Mesh"): writer._add_object(mesh),
    })
    page["/Resources"][NameObject("/ExtGState")] = DictionaryObject({
        NameObject("/GH"): DictionaryObject({NameObject("/ca"): FloatObject(0.5)}),
        NameObject("/G95"): DictionaryObject({NameObject("/ca"): FloatObject(0.95)}),
        NameObject("/GM"): DictionaryObject({NameObject("/BM"): NameObject("/Multiply")}),
        NameObject("/GS"): DictionaryObject({NameObject("/SMask"): NameObject("/Luminosity")}),
    })


def _shaded(content: str, form: str | None = None) -> bytes:
    """The page (:func:`_layered` round ``content``) with the shadings, and a form ``/Fm1`` drawing ``form`` (with the
    page's resources: its shadings)."""
    from pypdf.generic import NameObject

    from tests.ingestion.test_hidden_text import _form, _layered, _pdf_page_changed

    def change(writer, page):
        if form is not None:
            _form([0, 0, 612, 792], form)(writer, page)
            page["/Resources"]["/XObject"]["/Fm1"].get_object()[NameObject("/Resources")] = page["/Resources"]
        _shadings(writer, page)
    return _pdf_page_changed(_layered(content + "\n"), change)


# Listed as not evaluated (2026-12-03): a shading painted by ``sh`` after the text fills the clip (or the part of it
# its geometry reaches) with opaque colour -- a viewer shows the gradient, the text reached the model.
SHADED_OVER = {
    "axial-over-the-page": "q /Axial sh Q",
    "axial-in-a-clip": "q 60 640 200 30 re W n /Axial sh Q",
    "axial-scaled": "q 10 0 0 10 0 0 cm 6 64 20 3 re W n /Axial sh Q",
    "axial-by-its-bbox": "q /AxialBoxed sh Q",
    "radial-round-the-text": "q /Radial sh Q",
    "radial-extended": "q 0 0 612 792 re W n /Cone sh Q",
    "function-based": "q /Function sh Q",
    "mesh-in-a-clip": "q 60 640 200 30 re W n /Mesh sh Q",
    "nearly-opaque": "q /G95 gs 60 640 200 30 re W n /Axial sh Q",
}


@pytest.mark.parametrize("case", sorted(SHADED_OVER))
def test_pdf_text_painted_over_by_a_shading_never_reaches_the_model(case):
    doc = parsed(_shaded(text_op(PAYLOAD, y=650) + SHADED_OVER[case]), "report.pdf")
    if case in ("axial-over-the-page", "radial-extended"):  # the whole page, the first line too: only the last shows
        assert_hidden(doc, PAYLOAD, AFTER)
        assert VISIBLE not in doc.text
    else:
        assert_hidden(doc)


def test_pdf_text_painted_over_by_a_shading_in_a_form_never_reaches_the_model():
    pdf = _shaded(text_op(PAYLOAD, y=650) + "q /Fm1 Do Q\n", form="60 640 200 30 re W n /Axial sh")
    assert_hidden(parsed(pdf, "report.pdf"))


@pytest.mark.parametrize("content", [
    "q 60 640 200 30 re W n /Axial sh Q " + text_op(PAYLOAD, y=650),  # the gradient first: the text on it
    text_op(PAYLOAD, y=650) + "q /AxialRight sh Q",  # its band stops at x = 300, right of the text
    text_op(PAYLOAD, y=650) + "q /RadialAway sh Q",  # its disc lies elsewhere
    text_op(PAYLOAD, y=650) + "q 0 0 100 100 re W n /Axial sh Q",  # clipped away from the text
    text_op(PAYLOAD, y=650) + "q 60 640 200 30 re W n /GH gs /Axial sh Q",  # translucent: the text shows through
    text_op(PAYLOAD, y=650) + "q 60 640 200 30 re W n /GS gs /Axial sh Q",  # a soft mask: what it shows is unknown
    text_op(PAYLOAD, y=650) + "q 60 640 200 30 re W n /GM gs /Axial sh Q",  # multiplied: a light part leaves it
    text_op(PAYLOAD, y=650) + "q 60 640 200 30 re W n /Missing sh Q",  # no such shading: nothing is painted
], ids=["before-the-text", "band-beside-the-text", "disc-elsewhere", "clipped-away", "translucent", "soft-mask",
        "multiply", "missing"])
def test_pdf_text_with_a_shading_that_does_not_cover_it_stays(content):
    doc = parsed(_shaded(content), "report.pdf")
    assert PAYLOAD in doc.text and VISIBLE in doc.text and AFTER in doc.text and removed(doc) == 0


def test_pdf_shadings_past_the_work_bound_cover_the_clip(monkeypatch):
    """A shading's region costs work (a radial one's hull: 32 lines, each tested against the polygon's points),
    counted against the page's bound (``MAX_COVER_WORK``) with the fills'. Within it a disc elsewhere covers nothing;
    past it the shadings left are not shaped and paint their clip (here the page): what lies under that goes (fail
    closed). The work done stays within the bound and one shading's worth -- counted, not timed: each point tested
    against a line, 200 shadings of about 535 each."""
    from ingestion.parsers import pdf_hidden

    tested = []
    shaped = pdf_hidden._clip_polygon

    def counting(polygon, normal, limit):
        tested.append(len(polygon))
        return shaped(polygon, normal, limit)

    monkeypatch.setattr(pdf_hidden, "_clip_polygon", counting)
    pdf = _shaded(text_op(PAYLOAD, y=650) + "q /RadialAway sh Q\n" * 200)
    doc = parsed(pdf, "report.pdf")
    assert PAYLOAD in doc.text and removed(doc) == 0
    assert len(tested) == 200 * 32 and sum(tested) > 100_000  # each shading shaped: 32 lines
    monkeypatch.setattr(pdf_hidden, "MAX_COVER_WORK", 20_000)
    tested.clear()
    doc = parsed(pdf, "report.pdf")
    assert PAYLOAD not in doc.text and VISIBLE not in doc.text and removed(doc) > 0
    assert sum(tested) <= 20_000 + 2_000  # (shaded on the first reading only) up to one shading past the bound
