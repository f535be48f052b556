"""Where a PDF's left-out text is counted (sixteenth session; docs/security.md, "Hidden text counts of a shared PDF
page").

A page's left-out text is read apart from its shown text, so it has no place on the page; it was counted on the first
section holding the page's text -- with an outline, a section sharing the page with the next one was told (its
``hidden_chars_removed``, shown to its readers) how much was cut from the next, which it may not read, and its change
time moved when that changed. Now a page shared by several sections counts it on none; a page of one section on that
one; a page showing nothing on the section open there.
"""

from __future__ import annotations

import pytest

from tests.ingestion.hidden_payloads import parsed, pdf_bytes, pdf_with_outline, text_op

HIDDEN = "secret planted words"


def _white(text: str, y: float) -> str:
    return "q 1 1 1 rg " + text_op(text, y=y) + "Q "


def _heading(title: str, y: float) -> str:
    return text_op(title, y=y, size=18) + text_op(f"{title}: a paragraph of its own text.", y=y - 30)


def _counts(data: bytes) -> dict[str, int]:
    return {s.title: s.hidden_chars_removed for s in parsed(data, "report.pdf").sections}


@pytest.mark.parametrize("hidden_at", ["under Alpha", "under Bravo"])
def test_a_page_shared_by_two_sections_counts_its_left_out_text_on_neither(hidden_at):
    """Alpha's readers were told the length of what was cut from Bravo (fails with the first holder counted)."""
    y = 690 if hidden_at == "under Alpha" else 600
    page = _heading("Alpha", 740) + _heading("Bravo", 660) + _white(HIDDEN, y)
    counts = _counts(pdf_with_outline([page], [("Alpha", 0), ("Bravo", 0)]))
    assert counts == {"": 0, "Alpha": 0, "Bravo": 0}


def test_a_page_of_one_section_counts_it_there_and_a_page_showing_nothing_on_the_section_open_there():
    """Bravo alone on page 2, and page 3 shows nothing (Bravo runs on): both counted on Bravo, never on the root or
    on Alpha (fails with a page showing nothing counted on the root)."""
    pages = [_heading("Alpha", 740), _heading("Bravo", 740) + _white(HIDDEN, 600), _white(HIDDEN + " again", 600)]
    counts = _counts(pdf_with_outline(pages, [("Alpha", 0), ("Bravo", 1)]))
    assert counts == {"": 0, "Alpha": 0, "Bravo": len((HIDDEN + HIDDEN + " again").replace(" ", ""))}


def test_without_an_outline_each_page_counts_its_own():
    pages = [text_op("One page of text.", y=700) + _white(HIDDEN, 600), _white(HIDDEN, 600)]
    counts = _counts(pdf_bytes(pages))
    n = len(HIDDEN.replace(" ", ""))
    assert counts == {"": 0, "Page 1": n, "Page 2": n}
