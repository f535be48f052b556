"""Markdown's ``#`` headings in plain text (issue 30's candidate E, the plain parser's rule since the twentieth
session; ``markdown_headings=False`` is the reading before).

A Markdown text posted as plain text gets sections under its ATX headings -- outside fenced code, never a block of
``#`` lines (shell comments), and only when there are at least two of them.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.parsers.plaintext import find_headings, parse_plaintext, parse_text
from tests.ingestion.doc_invariants import assert_well_formed


def parse(text: str, markdown_headings: bool = True):
    doc = parse_text(text, markdown_headings=markdown_headings)
    assert_well_formed(doc)
    assert doc.text == text
    return doc


def titles(doc):
    return [(s.title, s.depth) for s in doc.sections[1:]]


README = """# cookies

A library of cookie jars.

## Install

    npm install cookies

## API ##

### new Cookies(request, response)

Creates a jar.
"""


def test_headings_levels_and_closing_hashes():
    doc = parse(README)
    assert titles(doc) == [("cookies", 1), ("Install", 2), ("API", 2), ("new Cookies(request, response)", 3)]
    api = next(s for s in doc.sections if s.title == "new Cookies(request, response)")
    assert api.heading_path == ("cookies", "API", "new Cookies(request, response)")
    assert [doc.text[b.start : b.end] for b in api.blocks] == ["Creates a jar."]


def test_the_upload_parser_reads_them_and_the_reading_before_does_not():
    doc = parse_plaintext(README.encode())
    assert_well_formed(doc)
    assert titles(doc) == titles(parse(README))
    assert titles(parse(README, markdown_headings=False)) == []


def test_a_hash_line_in_fenced_code_is_not_a_heading():
    text = "# Usage\n\nRun it:\n\n```sh\n# install first\nmake\n```\n\n~~~~\n# also code\n~~~\n# still code\n~~~~\n\n# End\n"
    assert titles(parse(text)) == [("Usage", 1), ("End", 1)]


def test_an_unclosed_fence_runs_to_the_end():
    text = "# One\n\ntext\n\n```\n# Two\n\n# Three\n"
    # Only "One" is outside the fence: one heading is not a structure.
    assert titles(parse(text)) == []
    assert titles(parse("# One\n\ntext\n\n# Two\n\n```\n# Three\n")) == [("One", 1), ("Two", 1)]


def test_backticks_with_a_backtick_after_them_open_no_fence():
    text = "# One\n\n``` not `a fence\n\n# Two\n"
    assert titles(parse(text)) == [("One", 1), ("Two", 1)]


def test_a_block_of_hash_lines_is_not_a_run_of_headings():
    text = "# Config\n\n# the port\n# the host\nport = 80\n\n# Notes\n\nnone\n"
    assert titles(parse(text)) == [("Config", 1), ("Notes", 1)]
    # A `#` line that is no heading (no letter or digit) still keeps its neighbour from being one.
    assert titles(parse("# A\n\n# B\n# ---\n\n# C\n")) == [("A", 1), ("C", 1)]


def test_one_heading_is_not_a_structure():
    assert titles(parse("# Title\n\nSome text.\n")) == []


def test_what_is_not_an_atx_heading():
    text = "#hashtag\n\n#!/bin/sh\n\n    # indented code\n\n####### seven\n\n# \n\n# A\n\nx\n\n# B\n"
    assert titles(parse(text)) == [("A", 1), ("B", 1)]


_LINES = st.sampled_from(
    ["# Alpha", "## Beta ##", "### Gamma", "#no", "```", "~~~", "```py", "    # code", "text line.", "", "# ---", "#"]
)
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, max_size=30))
def test_headings_are_lone_atx_lines_outside_fences(lines):
    parse("\n".join(lines))
    heading_lines = [h.title_line for h in find_headings(lines, markdown_headings=True) if h.style[0] == "atx"]
    assert len(heading_lines) != 1
    for n in heading_lines:
        assert re.match(r"#{1,6}[ \t]", lines[n])
        for m in (n - 1, n + 1):  # no ATX-shaped line next to a heading
            assert not (0 <= m < len(lines) and re.match(r"#{1,6}[ \t]", lines[m]))
        opened = None  # a fence open before the line makes it code
        for line in lines[:n]:
            match = _FENCE.match(line)
            if match and opened is None and not (match[1][0] == "`" and "`" in line[match.end():]):
                opened = match[1]
            elif (match and opened and match[1][0] == opened[0] and len(match[1]) >= len(opened)
                  and not line[match.end():].strip()):
                opened = None
        assert opened is None


def test_a_heading_that_reads_as_an_access_marker_still_fails_the_document():
    from ingestion.parsers import parse as parse_upload
    from ingestion.structure import ParseError

    text = "# Handbook\n\nIntro.\n\n# access: internal; groups: a\n\nSecret.\n\n# End\n\nx\n"
    try:
        parse_upload(text.encode(), content_type="text/plain")
    except ParseError as error:
        assert "line 5" in str(error), str(error)
    else:
        raise AssertionError("a marker-like heading in plain text was read as a title")
