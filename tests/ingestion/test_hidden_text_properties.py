"""Property (Hypothesis): for every format, a document that hides a payload -- by each vector of its
format, anywhere in its structure (a paragraph, a heading, a list item, a table cell, a quote),
inside visible markup or around it -- never yields a chunk whose embedded text (which the keyword
index is built from), nor a document text, title or heading path, that holds the payload unflagged;
and every visible word still reaches the chunks.

Before hidden text was handled, every format but CSV/code/transcripts embedded the payload (and
those embedded it as tag characters or a reordered override run; WebVTT embedded its NOTE comments and
the cue text its STYLE blocks hide until 2026-12-03).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestion.chunking import chunk_document
from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.hidden_payloads import (
    CONFIG,
    COUNTER,
    docx_bytes,
    html_mail,
    parsed,
    pdf_bytes,
    reaches_model,
    set_run_property,
    text_op,
)

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Every hiding style of every format runs on every run (2026-12-04: ~30 examples drawn from ~28 styles left a style
# undrawn on most runs, so a regression in one passed most runs): the tests below are parametrized over their styles,
# and Hypothesis draws the payload, the document around it and its place, a few times per style.
PER_STYLE = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PER_SLOW_STYLE = settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])  # DOCX


def style_ids(styles) -> list[str]:
    """Readable test ids: the style's number and its markup, squeezed to letters and digits."""
    return [f"{number}-" + re.sub(r"[^a-z0-9]+", "-", str(style).lower()).strip("-")[:48]
            for number, style in enumerate(styles)]

words = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=4, max_size=8).map(lambda w: "v" + w)
payloads = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=5, max_size=8).map(lambda w: f"Zq{w}payload")
KINDS = ("paragraph", "heading", "item", "cell", "quote")


@st.composite
def layouts(draw):
    """Blocks of visible words, and where the payload goes: (block index, word index, kind per block)."""
    blocks = draw(st.lists(st.lists(words, min_size=1, max_size=5), min_size=1, max_size=5))
    kinds = [draw(st.sampled_from(KINDS)) for _ in blocks]
    target = draw(st.integers(0, len(blocks) - 1))
    position = draw(st.integers(0, len(blocks[target])))
    return blocks, kinds, target, position


def check(doc, payload: str, blocks) -> None:
    assert_well_formed(doc)
    assert not reaches_model(doc, payload)
    # Nothing visible lost: each word is in a chunk, or (a heading with no body under it) the text.
    seen = " ".join(chunk.embed_text for chunk in chunk_document(doc, CONFIG, COUNTER)) + doc.text
    for block in blocks:
        for word in block:
            assert word in seen, word


# -- HTML and e-mail ------------------------------------------------------------------------------------

HTML_HIDING = [
    ('<span style="display:none">', "</span>"), ('<span style="Display: None !important">', "</span>"),
    ('<span style="visibility:hidden">', "</span>"), ("<span hidden>", "</span>"),
    ('<span aria-hidden="true">', "</span>"), ('<span style="font-size:0">', "</span>"),
    ('<span style="opacity:0.01">', "</span>"), ('<span style="color:#FFFFFF">', "</span>"),
    ('<span style="color:rgb(255, 255, 255)">', "</span>"), ('<font color="white">', "</font>"),
    ('<span style="position:absolute;left:-10000px">', "</span>"), ('<span class="gone">', "</span>"),
    ('<span id="away">', "</span>"), ('<span class="imported">', "</span>"), ("<template>", "</template>"),
    ('<span style="padding-left:10000px">', "</span>"), ('<span style="line-height:5000px">', "</span>"),
    ('<span style="font-size-adjust:0">', "</span>"), ('<span class="screen-white">', "</span>"),
    ('<span class="dark-white">', "</span>"),
    ("<!-- ", " -->"),
    ('<span style="visibility:hidden"><span style="visibility:inherit">', "</span></span>"),
    ('<span style="display:-webkit-box;-webkit-box-orient:vertical;-webkit-line-clamp:1;overflow:hidden"><br><i>',
     "</i></span>"),
    ('<span style="mask:linear-gradient(#000,#000) 0 0/0 0">', "</span>"),
    ('<span style="color: env(unset-name, #fff)">', "</span>"), ('<span data-o="0" style="opacity: attr(data-o type'
                                                                 '(<number>), 1)">', "</span>"),
    # <mark>'s own yellow behind text of nearly its colour (2026-12-04: judged against the white page, it stayed)
    ('<mark style="color:#eeee00">', "</mark>"),
    # fourteenth session: a level-4 media query, an unlayered rule over a layer, an @scope, a registered property
    ('<span class="or-white">', "</span>"), ('<span class="layered">', "</span>"),
    ('<span class="scoped">', "</span>"), ('<span class="registered">', "</span>"),
    # ... and an animation paused on a transparent keyframe
    ('<span class="animated">', "</span>"),
]
HTML_VISIBLE = [("", ""), ("<em>", "</em>"), ("<b>", "</b>"), ('<span style="color:#333">', "</span>")]
HTML_STYLE = ('<style>@import url("data:text/css,.imported%7Bdisplay%3Anone%7D"); .gone{display:none} '
              "#away{ color : white } @media screen and (min-width: 600px) { .screen-white { color: #fff } } "
              "@media (prefers-color-scheme: dark) { .dark-white { color: #fff } } "
              "@media (max-width: 600px) or (not (hover: none)) { .or-white { color: #fff } } "
              ".layered { display: none } @layer base { .layered { display: inline } } "
              "@scope (body) { .scoped { color: #fff } } .registered { color: var(--reg) } "
              "@property --reg { syntax: '<color>'; inherits: true; initial-value: #fff } "
              "@keyframes fade { from { opacity: 0 } to { opacity: 1 } } .animated { animation: fade 1s paused }</style>")


def html_document(blocks, kinds, target, position, payload, hiding, wrapper) -> str:
    open_hidden, close_hidden = hiding
    open_visible, close_visible = wrapper
    parts = []
    for index, (block, kind) in enumerate(zip(blocks, kinds, strict=True)):
        items = list(block)
        if index == target:
            items.insert(position, f"{open_visible}{open_hidden}{payload}{close_hidden}{close_visible}")
        text = " ".join(items)
        if kind == "heading":
            parts.append(f"<h2>{text}</h2>")
        elif kind == "item":
            parts.append(f"<ul><li>{text}</li></ul>")
        elif kind == "cell":
            parts.append(f"<table><tr><th>Name</th><th>Note</th></tr><tr><td>x</td><td>{text}</td></tr></table>")
        elif kind == "quote":
            parts.append(f"<blockquote><p>{text}</p></blockquote>")
        else:
            parts.append(f"<p>{text}</p>")
    return "".join(parts)


@pytest.mark.parametrize("hiding", HTML_HIDING, ids=style_ids(HTML_HIDING))
@PER_STYLE
@given(layout=layouts(), payload=payloads, wrapper=st.sampled_from(HTML_VISIBLE))
def test_html_hidden_payloads_never_reach_a_chunk(layout, payload, hiding, wrapper):
    body = html_document(*layout, payload, hiding, wrapper)
    doc = parsed(f"<html><head>{HTML_STYLE}</head><body>{body}</body></html>", "page.html")
    check(doc, payload, layout[0])


@pytest.mark.parametrize("hiding", HTML_HIDING, ids=style_ids(HTML_HIDING))
@PER_STYLE
@given(layout=layouts(), payload=payloads, wrapper=st.sampled_from(HTML_VISIBLE))
def test_email_html_hidden_payloads_never_reach_a_chunk(layout, payload, hiding, wrapper):
    blocks, kinds, target, position = layout
    kinds = ["paragraph" if kind == "quote" else kind for kind in kinds]  # a quote is a reply: dropped
    doc = parsed(html_mail(HTML_STYLE + html_document(blocks, kinds, target, position, payload, hiding, wrapper)),
                 "mail.eml")
    check(doc, payload, blocks)


# Random equivalence (2026-12-04): colour rules written under a condition that holds on a desktop screen hide exactly
# what they hide written plainly (the second cascade pass), whatever the colours, the classes and the nesting.
COLOURS = ["white", "#fefefe", "black", "#777", "rgb(0 0 0)", "yellow"]


@st.composite
def colour_rules(draw) -> list[str]:
    rules = []
    for name in ("a", "b", "c"):
        declarations = []
        if draw(st.booleans()):
            declarations.append(f"color: {draw(st.sampled_from(COLOURS))}")
        if draw(st.booleans()):
            declarations.append(f"background: {draw(st.sampled_from(COLOURS))}")
        if declarations:
            rules.append(f".{name} {{ {'; '.join(declarations)} }}")
    return rules


@SETTINGS
@given(colour_rules(), st.lists(words, min_size=3, max_size=3),
       st.sampled_from(["@media screen and (min-width: 600px)", "@media (prefers-color-scheme: light)",
                        "@supports (color: red)", "@media all",
                        # fourteenth session: the level-4 syntax, @supports selector(), a layer, a scope
                        "@media (width >= 0) or (hover: none)", "@media not (max-width: 600px)",
                        "@media ((min-width: 1px) and (not (monochrome)))", "@supports selector(p > span)",
                        "@supports not (foo: bar)", "@layer x", "@scope (body)"]))
def test_colours_under_a_condition_that_holds_hide_what_they_hide_unconditionally(rules, texts, condition):
    body = (f'<div class="a"><p>{texts[0]}</p><div class="b"><p>{texts[1]} <span class="c">{texts[2]}</span></p>'
            "</div></div>")
    plain = parsed(f"<html><head><style>{' '.join(rules)}</style></head><body><h1>Title</h1>{body}</body></html>"
                   .encode(), "page.html")
    wrapped = parsed(f"<html><head><style>{condition} {{ {' '.join(rules)} }}</style></head><body><h1>Title</h1>"
                     f"{body}</body></html>".encode(), "page.html")
    assert wrapped.text == plain.text


# -- Markdown -------------------------------------------------------------------------------------------

MARKDOWN_INLINE = [
    ('<span style="display:none">', "</span>"), ("<span hidden>", "</span>"), ("<!-- ", " -->"),
    ('<span style="font-size: 0px">', "</span>"), ('<i style="color:#fff">', "</i>"),
    ('<span class="gone">', "</span>"), ('<span aria-hidden="true">', "</span>"),
]
MARKDOWN_VISIBLE = [("", ""), ("**", "**"), ("_", "_"), ("[", "](https://example.com)")]


def markdown_block(kind: str, text: str) -> str:
    return {"heading": f"## {text}", "item": f"- {text}", "quote": f"> {text}",
            "cell": f"| Name | Note |\n|---|---|\n| x | {text} |"}.get(kind, text)


@pytest.mark.parametrize("hiding", MARKDOWN_INLINE, ids=style_ids(MARKDOWN_INLINE))
@PER_STYLE
@given(layout=layouts(), payload=payloads, wrapper=st.sampled_from(MARKDOWN_VISIBLE), as_block=st.booleans())
def test_markdown_hidden_payloads_never_reach_a_chunk(layout, payload, hiding, wrapper, as_block):
    blocks, kinds, target, position = layout
    parts = ["<style>.gone { visibility: hidden }</style>", "# Title"]
    for index, (block, kind) in enumerate(zip(blocks, kinds, strict=True)):
        items = list(block)
        if index == target and not as_block:
            items.insert(position, f"{wrapper[0]}{hiding[0]}{payload}{hiding[1]}{wrapper[1]}")
        parts.append(markdown_block(kind, " ".join(items)))
        if index == target and as_block:
            # A hidden HTML block around Markdown of the same kind: its text is hidden too.
            parts.append(f'<div style="display:none">\n\n{markdown_block(kind, payload)}\n\n</div>')
    doc = parsed("\n\n".join(parts) + "\n", "note.md")
    check(doc, payload, blocks)


# -- Unicode, in the formats whose text is the file -------------------------------------------------------

UNICODE_FILES = {
    "note.txt": lambda rows: "\n\n".join(rows) + "\n",
    # Each row a Markdown heading of plain text over a body (twentieth session: a hidden run in a heading line
    # reached its title and heading paths).
    "headed.txt": lambda rows: "".join(f"## {row}\n\nThe body under it.\n\n" for row in rows) + "## End\n\nx\n",
    "table.csv": lambda rows: "name,note\n" + "".join(f"r{i},{row}\n" for i, row in enumerate(rows)),
    "module.py": lambda rows: "".join(f"def f{i}():\n    return '{row}'\n\n\n" for i, row in enumerate(rows)),
    "talk.vtt": lambda rows: "WEBVTT\n\n" + "".join(
        f"00:00:{i:02d}.000 --> 00:00:{i:02d}.500\n{row}\n\n" for i, row in enumerate(rows)),
    "talk.transcript": lambda rows: "".join(f"Ann: {row}\n" for row in rows),
}


def smuggled(payload: str, how: str) -> str:
    if how == "tags":
        return "".join(chr(0xE0000 + ord(char)) for char in payload)
    if how == "rlo":
        return "\u202e" + payload[::-1] + "\u202c"
    return "\U0001f600" + "".join(chr(0xE0100 + byte) for byte in payload.encode())  # variation selectors


@pytest.mark.parametrize("how", ["tags", "rlo", "selectors"])
@pytest.mark.parametrize("filename", sorted(UNICODE_FILES))
@PER_STYLE
@given(layout=layouts(), payload=payloads)
def test_unicode_smuggled_payloads_never_reach_a_chunk(layout, payload, filename, how):
    blocks, _, target, position = layout
    rows = []
    for index, block in enumerate(blocks):
        items = list(block)
        if index == target:
            items.insert(position, smuggled(payload, how))
        rows.append(" ".join(items))
    doc = parsed(UNICODE_FILES[filename](rows), filename)
    hidden = {"tags": smuggled(payload, "tags")[:3], "rlo": payload[::-1][:6], "selectors": "\U000e0100"}[how]
    check(doc, hidden, blocks)
    assert not reaches_model(doc, payload)


# A terminal's control strings (2026-12-04): OSC, DCS, SOS, PM, APC, 7-bit or C1, each up to one of its terminators;
# a body of words, numbers and the separators of OSC parameters, never a terminator, an ESC or a C1 control (which
# end it: an ESC [ there starts a CSI of its own, as a terminal reads it).
# Not in a Python file: there a string's ``ESC \`` terminator escapes the quote after it, another program.
CONTROL_INTRODUCERS = ["\x1b]", "\x9d", "\x1bP", "\x90", "\x1bX", "\x98", "\x1b^", "\x9e", "\x1b_", "\x9f"]
string_bodies = st.text("abcdefghijklmnopqrstuvwxyzZ0123456789 ;=./?$éß", max_size=30)


@st.composite
def control_strings(draw) -> str:
    introducer = draw(st.sampled_from(CONTROL_INTRODUCERS))
    osc = introducer in ("\x1b]", "\x9d")
    terminator = draw(st.sampled_from(["\x1b\\", "\x9c", "\x18", "\x1a"] + (["\x07"] if osc else [])))
    return introducer + draw(string_bodies) + terminator


@SETTINGS
@given(layouts(), st.lists(control_strings(), min_size=1, max_size=4), st.randoms(use_true_random=False),
       st.sampled_from(sorted(set(UNICODE_FILES) - {"module.py"})))
def test_terminal_control_strings_change_nothing_a_reader_sees(layout, strings, random, filename):
    """Random equivalence: a file with control strings put anywhere between its words parses to the same document
    text as the file without them (a terminal draws none of a string, nor does it change what comes after)."""
    blocks = layout[0]
    rows = [" ".join(block) for block in blocks]
    padding = ["ordinary words of a long first row " * 150]  # (a short file of many controls is no text file)
    plain = parsed(UNICODE_FILES[filename](padding + rows), filename)
    marked = []
    for row in rows:
        words_of = row.split(" ")
        for control in strings:
            if random.random() < 0.5:
                at = random.randint(0, len(words_of) - 1)
                words_of[at] = (words_of[at] + control) if random.random() < 0.5 else (control + words_of[at])
        marked.append(" ".join(words_of))
    doc = parsed(UNICODE_FILES[filename](padding + marked), filename)
    assert_well_formed(doc)
    assert doc.text == plain.text
    assert [b.embed_text for s in doc.sections for b in s.blocks] == \
        [b.embed_text for s in plain.sections for b in s.blocks]
    assert [(s.title, s.heading_path) for s in doc.sections] == [(s.title, s.heading_path) for s in plain.sections]


# -- WebVTT -----------------------------------------------------------------------------------------------

# (a STYLE rule or None, what opens the hidden text, what closes it)
VTT_HIDING = [
    ("::cue(.g) { color: transparent }", "<c.g>", "</c>"), ("::cue(.g) { display: none }", "<i.g>", "</i>"),
    ('::cue(v[voice="Ghost"]) { opacity: 0 }', "<v Ghost>", "</v>"), ("::cue(b.g) { font-size: 0 }", "<b.g>", "</b>"),
    ("::cue(c:future) { visibility: hidden }", "<09:00:00.000><c>", "</c>"),
    (None, "<c.", ">x</c>"), (None, "<lang ", ">x</lang>"), (None, "<", " and more>"),
]
VTT_VISIBLE = [("", ""), ("<b>", "</b>"), ("<c.seen>", "</c>"), ("<i>", "</i>")]


@pytest.mark.parametrize("hiding", VTT_HIDING, ids=style_ids(VTT_HIDING))
@PER_STYLE
@given(layout=layouts(), payload=payloads, wrapper=st.sampled_from(VTT_VISIBLE), in_a_note=st.booleans())
def test_webvtt_hidden_payloads_never_reach_a_chunk(layout, payload, hiding, wrapper, in_a_note):
    blocks, _, target, position = layout
    style, open_hidden, close_hidden = hiding
    parts = ["WEBVTT", "STYLE\n::cue(.seen) { color: yellow }" + (f"\n{style}" if style else "")]
    for index, block in enumerate(blocks):
        items = list(block)
        if index == target and not in_a_note:
            items.insert(position, f"{wrapper[0]}{open_hidden}{payload}{close_hidden}{wrapper[1]}")
        parts.append(f"00:00:{index:02d}.000 --> 00:00:{index:02d}.900\n" + " ".join(items))
        if index == target and in_a_note:
            parts.append(f"NOTE {payload}")
    doc = parsed("\n\n".join(parts) + "\n", "talk.vtt")
    check(doc, payload, blocks)


# -- DOCX -------------------------------------------------------------------------------------------------

DOCX_HIDING = ["vanish", "white", "theme", "tiny", "style"]


def hide_run(run, how: str) -> None:
    from docx.shared import Pt, RGBColor

    if how == "vanish":
        run.font.hidden = True
    elif how == "white":
        run.font.color.rgb = RGBColor(0xFF, 0xFF, 0xFF)
    elif how == "theme":
        set_run_property(run, "color", val="112233", themeColor="background1")
    elif how == "tiny":
        run.font.size = Pt(1)
    else:
        run.style = "Ghost"


@pytest.mark.parametrize("how", DOCX_HIDING)
@PER_SLOW_STYLE
@given(layout=layouts(), payload=payloads)
def test_docx_hidden_payloads_never_reach_a_chunk(layout, payload, how):
    blocks, kinds, target, position = layout

    def build(document):
        document.styles.add_style("Ghost", 2).font.hidden = True
        document.add_heading("Report", 1)
        for index, (block, kind) in enumerate(zip(blocks, kinds, strict=True)):
            if kind == "cell":
                paragraph = document.add_table(rows=2, cols=2).cell(1, 1).paragraphs[0]
            elif kind == "heading":
                paragraph = document.add_heading("", 2)
            else:
                paragraph = document.add_paragraph("", style="List Bullet" if kind == "item" else None)
            items = list(block)
            for number, word in enumerate(items + [None]):
                if index == target and number == position:
                    hide_run(paragraph.add_run(payload), how)
                if word is not None:
                    paragraph.add_run(f"{word} ")

    doc = parsed(docx_bytes(build), "report.docx")
    check(doc, payload, blocks)


# -- PDF --------------------------------------------------------------------------------------------------

PDF_HIDING = {
    "mode-3": lambda text, y: text_op(text, y=y, before="3 Tr"),
    "white": lambda text, y: "q 1 1 1 rg " + text_op(text, y=y) + "Q ",
    "tiny": lambda text, y: text_op(text, y=y, size=0.4),
    # Squeezed by Tz: the em 1.2 pt wide (sixteenth session; only under 0.2 pt was cut before).
    "squeezed": lambda text, y: text_op(text, y=y, before="10 Tz"),
    "off-page": lambda text, y: text_op(text, x=-4000, y=y),
    "transparent": lambda text, y: "q /G0 gs " + text_op(text, y=y) + "Q ",
    # Painted over by a rectangle drawn after it (its line between two blocks' lines: the fill covers no other).
    "painted-over": lambda text, y: text_op(text, y=y) + f"q 0 g 60 {y - 4} 540 14 re f Q ",
    # ... from its baseline up, in white: the descenders' tails alone show (sixteenth session).
    "painted-over-from-the-baseline": lambda text, y: text_op(text, y=y) + f"q 1 g 60 {y} 540 10 re f Q ",
    # ... by a shading clipped to a band round its line (sixteenth session; a shading covered nothing before).
    "painted-over-by-a-shading": lambda text, y: text_op(text, y=y) + f"q 60 {y - 4} 540 14 re W n /Sh1 sh Q ",
}


@pytest.mark.parametrize("how", sorted(PDF_HIDING))
@PER_STYLE
@given(layout=layouts(), payload=payloads)
def test_pdf_hidden_payloads_never_reach_a_chunk(layout, payload, how):
    blocks, _, target, position = layout
    content = []
    y = 740
    for index, block in enumerate(blocks):
        if index == target:
            content.append(PDF_HIDING[how](payload, y - 20 if how.startswith("painted-over") else y - 10 * position))
        content.append(text_op(" ".join(block) + ".", y=y))
        y -= 40
    doc = parsed(pdf_bytes(["".join(content)], graphics={"/G0": {"/ca": 0.0}}, shading=True), "report.pdf")
    check(doc, payload, blocks)


# -- hiding never changes the policy of what stays visible --------------------------------------------------

LEVELS = [None, None, "internal", "confidential", "restricted"]


@st.composite
def marked_outlines(draw):
    """Headings (level 2 or 3, a marker level or none, hidden or not), each with words, some of them hidden."""
    count = draw(st.integers(1, 5))
    outline = []
    for index in range(count):
        words_here = [f"w{index}x{n}" for n in range(draw(st.integers(1, 4)))]
        outline.append({
            "level": draw(st.sampled_from([2, 3])), "marker": draw(st.sampled_from(LEVELS)),
            "hidden_heading": draw(st.booleans()), "words": words_here,
            "hidden_words": {word for word in words_here if draw(st.booleans())},
        })
    return outline


def _policies(doc, words) -> dict[str, str]:
    """The effective level of the block holding each word."""
    found = {}
    for section in doc.sections:
        for block in section.blocks:
            body = doc.text[block.start:block.end]
            for word in words:
                if word in body.split() or f"{word}." in body:
                    found[word] = section.effective.level
    return found


def _outcome(text: str, filename: str, words):
    try:
        doc = parsed(text, filename)
    except Exception as error:  # noqa: BLE001 -- the same error, or none, in both versions
        return ("error", type(error).__name__, getattr(error, "line", None))
    return ("ok", _policies(doc, words))


@SETTINGS
@given(marked_outlines(), st.sampled_from(["note.md", "page.html"]))
def test_hiding_text_never_changes_the_policy_of_visible_text(outline, filename):
    """The same document with and without its hiding (same structure, same markers): every word that
    stays visible is in a section of the same policy; a marker error is the same error at the same line."""
    def render(hide: bool) -> str:
        parts = ["# Title", "Opening words."] if filename == "note.md" else ["<h1>Title</h1><p>Opening words.</p>"]
        for item in outline:
            words = [f"<span{' hidden' if hide and w in item['hidden_words'] else ''}>{w}</span>"
                     if w in item["hidden_words"] else w for w in item["words"]]
            if filename == "note.md":
                marker = f" <!-- access: {item['marker']} -->" if item["marker"] else ""
                heading = f"{'#' * item['level']} Heading {item['words'][0]}{marker}"
                if item["hidden_heading"]:
                    heading = f"<div{' hidden' if hide else ''}>\n\n{heading}\n\n</div>"
                parts += [heading, " ".join(words) + "."]
            else:
                marker = f' data-access="{item["marker"]}"' if item["marker"] else ""
                style = ' style="display:none"' if hide and item["hidden_heading"] else ""
                parts.append(f"<h{item['level']}{marker}{style}>Heading {item['words'][0]}</h{item['level']}>"
                             f"<p>{' '.join(words)}.</p>")
        return ("\n\n" if filename == "note.md" else "").join(parts) + "\n"

    visible_words = [w for item in outline for w in item["words"] if w not in item["hidden_words"]]
    hidden, shown = _outcome(render(True), filename, visible_words), _outcome(render(False), filename, visible_words)
    assert hidden == shown
    if hidden[0] == "ok":
        assert set(hidden[1]) == set(visible_words)
