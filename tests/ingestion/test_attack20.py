"""Attacking titles, heading paths and title candidates for hidden text (twentieth session, attack20).

Each test builds a file that hides PAYLOAD where a title comes from and checks that it reaches no title, heading
path, title candidate, context or chunk; each found one failed on the parsers before (see the docstrings). The last
ones keep the most plausible attacks that found nothing.
"""

from __future__ import annotations

import pytest

from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.hidden_payloads import docx_bytes, html_mail, model_texts, parsed, reaches_model

PAYLOAD = "Zanzibarpayload"
VISIBLE = "Visiblealpha"


def tags(text: str) -> str:
    return "".join(chr(0xE0000 + ord(char)) for char in text)


# What the registry's Unicode pass removes (visible_text.strip_invisible): (the text smuggled, what of it must reach
# no title, the words a reader sees of the title).
SMUGGLED = {
    "tag-characters": (tags(PAYLOAD), "\U000e005a", [VISIBLE]),
    "bidi-override": (f"\u202e{PAYLOAD[::-1]}\u202c", PAYLOAD[::-1], [VISIBLE]),
    "zero-width-split": ("\u200b".join(PAYLOAD), "\u200b", [VISIBLE, PAYLOAD]),  # the word a reader sees, joined
}


def _markdown(smuggled: str) -> bytes:
    return f"# First title\n\nBody one.\n\n# {VISIBLE} {smuggled}\n\nBody two.\n".encode()


def _html(smuggled: str) -> bytes:
    return (f"<html><body><h1>First title</h1><p>Body one.</p><h1>{VISIBLE} {smuggled}</h1><p>Body two.</p>"
            "</body></html>").encode()


def _docx(smuggled: str) -> bytes:
    def build(document):
        document.add_heading("First title", 0)
        document.add_paragraph("Body one.")
        document.add_heading(f"{VISIBLE} {smuggled}", 0)
        document.add_paragraph("Body two.")

    return docx_bytes(build)


def _front_matter(smuggled: str) -> bytes:
    return f"---\ntitle: {VISIBLE} {smuggled}\n---\n\n# First title\n\nBody one.\n".encode()


TITLED = {"second-h1.md": _markdown, "second-h1.html": _html, "second-title.docx": _docx,
          "front-matter.md": _front_matter}


@pytest.mark.parametrize("how", sorted(SMUGGLED))
@pytest.mark.parametrize("name", sorted(TITLED))
def test_invisible_characters_never_reach_a_title_candidate(name, how):
    """Found in the twentieth session (attack20): ``ParsedDocument.title_candidates`` -- every title a member may be
    shown as the document's (a front matter's on the root, each H1 or Title paragraph on its own section; the first
    of a section they may read, ``kb.titles.reader_title``) -- was the one string of a parse that the registry's
    Unicode pass (``visible_text.strip_invisible``) left alone: a second H1 of tag characters reached the section's
    ``title_candidate`` and so the document title that a reader of that section (and the model) is given, while the
    heading's own title, the text and the chunks lost it. A front matter's candidate differed from the cleaned title,
    so every candidate after it was dropped."""
    smuggled, hidden, shown = SMUGGLED[how]
    doc = parsed(TITLED[name](smuggled), name.split("-", 1)[1])
    assert_well_formed(doc)
    assert not any(hidden in title for _, title in doc.title_candidates), doc.title_candidates
    assert not reaches_model(doc, hidden)
    titles = [title for _, title in doc.title_candidates]
    assert any(title.split() == shown for title in titles), titles  # the visible words stay
    by_key = {section.key: section for section in doc.sections}
    for key, title in doc.title_candidates:  # an H1's candidate is its section's own (cleaned) title
        if by_key[key].kind == "heading":
            assert title == by_key[key].title
    if name == "front-matter.md":
        assert doc.title_candidates[0] == (doc.sections[0].key, doc.title)  # the first is the document's title


def test_the_model_texts_of_the_hidden_text_tests_hold_the_title_candidates():
    """The helpers every hidden-text test checks with (``model_texts``, ``reaches_model``) read the title candidates
    too (they did not: the finding above passed every one of them)."""
    doc = parsed("# First\n\nBody.\n\n# Second\n\nBody.\n", "note.md")
    assert not reaches_model(doc, VISIBLE)
    doc.title_candidates.append((doc.sections[0].key, VISIBLE))  # a candidate no other string of the parse holds
    assert VISIBLE in model_texts(doc) and reaches_model(doc, VISIBLE)


# -- Python: a definition's name as a terminal shows it ---------------------------------------------------------

_PADDING = "# An ordinary comment of visible words that a terminal shows as it is written.\n" * 20 + "\nimport os\n\n"
_AFTER = "\n\ndef shown_function(x):\n    return os.sep\n"

HIDDEN_DEFINITIONS = {
    # a run concealed from a comment above the definition to a comment below it: cat shows none of the definition
    "conceal-across-lines": f"# note \x1b[8m\ndef {PAYLOAD}(x):\n    return os.sep\n# \x1b[0m\n",
    "black-on-black-across-lines": f"# note \x1b[30;40m\nclass {PAYLOAD}:\n    x = os.sep\n# \x1b[0m\n",
    # a control string opened in a comment and ended in a later one (a terminal draws nothing of it)
    "osc-across-lines": f"# note \x1b]0;\ndef {PAYLOAD}(x):\n    return os.sep\n# \x07\n",
    # the definition's line erased by a comment at its end, or written over from its first column
    "erased-line": f"def {PAYLOAD}(x):  # \x1b[2K\n    return os.sep\n",
    "written-over": f"def {PAYLOAD}(x):  # \x1b[1Gdef other_name_written_over_it(x):  #\n    return os.sep\n",
    "method-concealed": f"class Holder:\n    # \x1b[8m\n    def {PAYLOAD}(self):\n        return os.sep\n    # \x1b[0m\n",
}


@pytest.mark.parametrize("name", sorted(HIDDEN_DEFINITIONS))
def test_python_a_definition_a_terminal_does_not_show_never_reaches_a_title(name):
    """Found in the twentieth session (attack20): the code parser titled each function and class section, and every
    heading path under it, with the ``ast`` node's name, found on the file as written; only the text, the spans and
    the context lines (signatures, imports) were cut of what a terminal hides. A definition concealed from a comment
    above it to one below (``ESC[8m`` ... ``ESC[0m``, a colour its background's, a control string), erased
    (``ESC[2K``) or written over (``ESC[1G``) by a comment on its line: ``cat`` shows none of its name, the title and
    the heading paths under it kept it -- text the model reads."""
    doc = parsed(_PADDING + HIDDEN_DEFINITIONS[name] + _AFTER, "module.py")
    assert_well_formed(doc)
    assert not reaches_model(doc, PAYLOAD), [t for t in model_texts(doc) if PAYLOAD in t]
    assert [s.title for s in doc.sections if s.kind in ("function", "class")][-1] == "shown_function"
    hidden = [s for s in doc.sections if s.line is not None and s.kind in ("function", "class")
              and s.title != "shown_function"]
    assert hidden and all(PAYLOAD not in s.title for s in hidden)  # the section stays, its name is not shown


def test_python_a_name_partly_written_over_keeps_what_a_terminal_shows_of_it():
    """The part of a name a terminal still shows is the title (``ESC[1G`` then 7 columns: ``def Zan`` written over)."""
    doc = parsed(_PADDING + f"def {PAYLOAD}(x):  # \x1b[1Gdef Vis\n    return os.sep\n" + _AFTER, "module.py")
    (section, _) = [s for s in doc.sections if s.kind == "function"]
    assert section.title == PAYLOAD[3:] and section.heading_path == ("module.py", PAYLOAD[3:])


@pytest.mark.parametrize("source", [
    "def café(x):{c}\n    return x\n",
    "def \uff46\uff55\uff4e(x):{c}\n    return x\n",  # full-width letters: Python reads the name "fun" (NFKC)
    "async def fetch(x):{c}\n    return x\n",
    "@decorator(\n    1,\n)\ndef decorated(x):{c}\n    return x\n",
    "class Spread({c}\n    Base,\n):\n    x = 1\n",
    "def \\\n    continued(x):{c}\n    return x\n",
    "def one_liner(x): return x{c}\n",
])
def test_python_titles_stay_the_names_when_a_terminal_hides_something_else(source):
    """With a terminal's colour on the definition's own line (so the hidden ranges are looked at there), every name
    is its ``ast`` name, as before."""
    plain = parsed(source.format(c=""), "module.py")
    doc = parsed(source.format(c="  # \x1b[31mred\x1b[0m comment"), "module.py")
    assert [(s.title, s.heading_path) for s in doc.sections] == [(s.title, s.heading_path) for s in plain.sections]
    assert len(doc.sections) == 2 and doc.sections[1].title


# -- attacks that found nothing, kept as regressions -------------------------------------------------------------


@pytest.mark.parametrize(("text", "shown"), [
    # a # line inside a fence the plain parser could read as closed (a shorter run, the other character): code,
    # shown, never a title
    ("```\ncode\n``\n# Not a heading {p}\n```\n\n# One\n\nBody.\n\n# Two\n\nBody.\n", True),
    ("~~~\ncode\n```\n# Not a heading {p}\n~~~\n\n# One\n\nBody.\n\n# Two\n\nBody.\n", True),
    # CRLF line endings and a concealed run in the title
    ("# One \x1b[8m{p}\x1b[0m\r\n\r\nBody.\r\n\r\n# Two\r\n\r\nBody.\r\n", False),
    # a carriage return alone: the title written over by the words after it
    ("# {p}\rSo many visible words written over\n\nBody.\n\n# Two\n\nBody.\n", False),
    # a concealed run opened on the line before the heading, closed inside it
    ("Body \x1b[8m\n# {p}\x1b[0m One\n\nBody.\n\n# Two\n\nBody.\n", False),
], ids=["fence-shorter-run", "fence-other-character", "crlf-conceal", "carriage-return", "conceal-from-line-before"])
def test_plain_text_hash_headings_take_no_hidden_text_into_a_title(text, shown):
    doc = parsed(text.format(p=PAYLOAD), "notes.txt")
    assert_well_formed(doc)
    assert not any(PAYLOAD in title for s in doc.sections for title in (s.title, *s.heading_path))
    assert [s.title for s in doc.sections if s.kind == "heading"][-1] == "Two"
    assert (PAYLOAD in doc.text) if shown else not reaches_model(doc, PAYLOAD)


@pytest.mark.parametrize("void", ["embed", "source", "track", "wbr", "keygen", "bgsound", "image"])
def test_text_after_a_void_element_is_kept_where_a_browser_shows_it(void):
    """Found in the twentieth session (attack20, the opposite of a leak): libxml2 does not close these void elements
    and nested the text after them inside them; after an ``embed`` (whose content the extractor drops) the visible
    words were lost, in a heading's title too. What follows them is still hidden where its container is."""
    doc = parsed(f"<html><body><h2>Title <{void} src=x> {VISIBLE} after</h2><p>Body <{void} src=y> more <b>bold</b> "
                 f"words.</p><p>kept <span hidden>se<{void}>{PAYLOAD}</span> end</p></body></html>".encode(),
                 "page.html")
    assert_well_formed(doc)
    (heading,) = [s for s in doc.sections if s.kind == "heading"]
    assert heading.title == f"Title {VISIBLE} after"
    assert "Body more bold words." in doc.text and "kept end" in " ".join(doc.text.split())
    assert not reaches_model(doc, PAYLOAD), [t for t in model_texts(doc) if PAYLOAD in t]


def test_text_after_an_embed_in_an_html_mail_is_kept():
    """The same in an HTML e-mail's body (read by the HTML parser's rules, another entry point; a hidden ``embed``
    hides nothing after it)."""
    doc = parsed(html_mail(f"<p>Body <embed hidden src=y> {VISIBLE} words.</p><p><span hidden>x<embed>{PAYLOAD}</span></p>"),
                 "mail.eml")
    assert f"Body {VISIBLE} words." in " ".join(doc.text.split())
    assert not reaches_model(doc, PAYLOAD), [t for t in model_texts(doc) if PAYLOAD in t]
