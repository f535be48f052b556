"""CSV export cells (audit.exports._csv_cell): what a spreadsheet would run as a formula is quoted as text.

Searched text is a member's own words, so an export an admin opens must not run ``=HYPERLINK(...)``
typed into a search box, nor its fullwidth or space-led variants.
"""

from __future__ import annotations

import pytest

from audit.exports import _csv_cell


@pytest.mark.parametrize(
    "value",
    ["=HYPERLINK(\"http://x\")", "+1+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx", "  =1+1", "\u3000=1+1",
     "\uff1dcmd|' /C calc'!A0", "\uff0b1", "\uff0d1", "\uff20SUM(A1)", "\ufe66cmd",
     # after any Unicode space, line break or invisible format character (found attacking the export)
     "\n=1+1", "\xa0=1+1", "\u2003=1+1", "\u200b=1+1", "\ufeff=1+1", "\u2060\u00a0+1",
     # a sign NFKC folds into several ("⩵" is "==", "⩶" "===")
     "\u2a75HYPERLINK(\"http://x\")", "\u00a0\u2a76cmd"],
)
def test_a_cell_a_spreadsheet_would_run_is_quoted(value):
    assert _csv_cell(value) == "'" + value


@pytest.mark.parametrize("value", ["search terms", "a=b", "1-2", "email@example.org", "", None, 42, "«=»"])
def test_an_ordinary_cell_is_left_as_it_is(value):
    assert _csv_cell(value) == ("" if value is None else str(value))


def test_lists_and_dicts_are_written_as_text():
    assert _csv_cell(["a", "b"]) == "a b"
    assert _csv_cell({"b": 1, "a": "=x"}) == '{"a": "=x", "b": 1}'  # starts with "{": not a formula
