"""Headings on a line of their own in plain text (issue 30's thirty-second round's candidate Y, an option of the
plain parser: ``line_headings``; docs/benchmarks.md).

Only where no other rule finds a heading: a short capitalised line alone between blank lines, without final
punctuation or a table's ``|``, followed by a block that is not such a line, at least two of them; a Markdown bold
wrapping is dropped from the title.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.parsers import plaintext
from ingestion.parsers.plaintext import find_headings, parse_text
from tests.ingestion.doc_invariants import assert_well_formed

REPORT = """Crannock Pencils plc: Annual Report 2025

Chair's statement

Revenue rose by 7.5 per cent to 41.8 million, the most in our history, and the board proposes a higher dividend.

The figures of our last five years were these:
Measure | 2024 | 2025
Pencils made, millions | 61 | 64

**Works and sites**

Our slats are sawn, waxed and stained at Holmbeck, in a mill by the river.

CUSTOMERS AND MARKETS

Our largest customer is a chain of stationers.
"""


def parse(text: str, line_headings: bool = True):
    doc = parse_text(text, line_headings=line_headings)
    assert_well_formed(doc)
    assert doc.text == text
    return doc


def titles(doc):
    return [(s.title, s.depth) for s in doc.sections[1:]]


def test_a_reports_line_headings_become_sections_and_the_default_reads_none():
    doc = parse(REPORT)
    assert titles(doc) == [("Chair's statement", 1), ("Works and sites", 1), ("CUSTOMERS AND MARKETS", 1)]
    works = next(s for s in doc.sections if s.title == "Works and sites")
    assert [doc.text[b.start : b.end] for b in works.blocks] == [
        "Our slats are sawn, waxed and stained at Holmbeck, in a mill by the river."]
    # The title line is followed by another heading, so it stays the preamble's paragraph.
    assert [doc.text[b.start : b.end] for b in doc.sections[0].blocks] == ["Crannock Pencils plc: Annual Report 2025"]
    assert plaintext.LINE_HEADINGS is False
    assert titles(parse(REPORT, line_headings=False)) == []
    assert titles(parse_text(REPORT)) == []


def test_not_where_another_rule_finds_headings():
    readme = "# tool\n\nIntro.\n\n**Params**\n\nA list of them.\n\n# API\n\nCalls.\n\n**Example**\n\nCode.\n"
    assert titles(parse(readme)) == [("tool", 1), ("API", 1)]


def test_one_such_line_is_not_a_structure():
    assert titles(parse("Title line\n\nA paragraph follows here.\n\nAnother paragraph.\n")) == []


def test_a_list_of_short_lines_is_not_a_run_of_headings():
    text = "Shopping\n\nApples\n\nPears\n\nPlums\n\nThat is all we need this week.\n"
    # Each of the first three lines is followed by another such line; only Plums is followed by a paragraph.
    assert titles(parse(text)) == []


def test_what_is_not_a_line_heading():
    body = "\n\nA paragraph of text that follows the line.\n\n"
    for line in ["Ends with a full stop.", "Ends with a colon:", "  Indented heading", "lower case start",
                 "Cell | cell | cell", "One two three four five six seven eight nine ten eleven twelve thirteen",
                 "**Bold but** not whole", "X" * 81]:
        text = f"{line}{body}Second heading{body}"
        assert [h.title for h in find_headings(text.split("\n"), line_headings=True)] == [], line
    # Not alone: a line with a neighbour is part of a paragraph.
    assert titles(parse("Heading one\nstill the paragraph\n\nText.\n\nHeading two\n\nText.\n")) == []


_LINES = st.sampled_from(["Heading", "**Bold heading**", "Title Case Line", "A sentence that ends.", "",
                          "lower line", "Cell | cell", "  Indented", "# Alpha", "x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=30))
def test_line_headings_are_lone_capitalised_lines_followed_by_text(lines):
    parse("\n".join(lines))
    found = find_headings(lines, line_headings=True)
    line_found = [h for h in found if h.style[0] == "line"]
    assert len(line_found) != 1
    if line_found:
        assert all(h.style[0] == "line" for h in found)  # only where no other rule found one
    for h in line_found:
        n = h.title_line
        assert lines[n] in ("Heading", "**Bold heading**", "Title Case Line")
        assert n == 0 or lines[n - 1] == ""
        assert n + 1 >= len(lines) or lines[n + 1] == ""
        j = next((m for m in range(n + 1, len(lines)) if lines[m]), None)  # the next block's first line
        assert j is not None
        alone = j + 1 >= len(lines) or lines[j + 1] == ""
        assert not (lines[j] in ("Heading", "**Bold heading**", "Title Case Line") and alone)
        assert h.title in ("Heading", "Bold heading", "Title Case Line")
