"""The context budget (no database): the fair split among contexts (kb.expansion.fair_shares), and
what a context over its share keeps (kb.expansion._trim)."""

from __future__ import annotations

import re
import uuid

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ingestion.chunking.tokens import default_counter
from kb.expansion import Piece, _trim, fair_shares, merge_spans
from kb.search_types import SearchHit


@given(st.lists(st.integers(min_value=0, max_value=5000), max_size=12), st.integers(min_value=0, max_value=20_000))
def test_fair_shares_spend_the_budget_max_min_fairly(sizes, budget):
    shares = fair_shares(sizes, budget)
    assert len(shares) == len(sizes)
    assert all(0 <= share <= size for share, size in zip(shares, sizes, strict=True))
    if sum(sizes) <= budget:
        assert shares == sizes  # everything fits: everything whole
        return
    assert sum(shares) == budget  # nothing wasted
    # Max-min fair: a context cut short gets at least as much as any other context gets (to rounding).
    cut = [share for share, size in zip(shares, sizes, strict=True) if share < size]
    assert cut and min(cut) + 1 >= max(shares)


def test_a_long_first_context_leaves_room_for_the_others():
    assert fair_shares([3000, 200, 200], 1500) == [1100, 200, 200]
    assert fair_shares([3000, 3000, 3000], 1500) == [500, 500, 500]
    assert fair_shares([100, 100], 1500) == [100, 100]
    assert fair_shares([10, 10, 10], 4) == [2, 1, 1]


# ----------------------------------------------------------------------------- a truncated context keeps its hits
#
# kb.expansion._trim cuts a context that is over its share. The hits' own chunks come first (issue 30's
# diagnosis: a hit whose chunk started on a title line, or sat inside a paragraph of 500 tokens, was
# represented by that title line or left out while the budget went to other hits' whole paragraphs).

COUNTER = default_counter()
SECTION = uuid.UUID(int=1)
WORDS = "order backlog site fire agreement revenue grew unit district plant capital spending rose".split()


def _hit(start: int, end: int, rank: int) -> SearchHit:
    return SearchHit(
        chunk_id=uuid.UUID(int=100 + rank), document_id=uuid.UUID(int=2), document_title="t", section_id=SECTION,
        heading_path=[], text="", score=1.0 / rank, distance=None, start=start, end=end, rank=rank,
    )


def _context(text: str, hits: list[SearchHit], budget: int) -> list[Piece]:
    return _trim([Piece(SECTION, 0, len(text), text=text)], hits, COUNTER, budget)


def _covered(pieces: list[Piece]) -> set[int]:
    return {i for p in pieces if not p.is_title for i in range(p.start, p.end)}


def _own(text: str, hit: SearchHit) -> set[int]:
    return {i for i in range(hit.start, hit.end) if not text[i].isspace()}


def test_a_hit_that_starts_on_a_title_line_keeps_its_own_text():
    title = "Annual report of the group"
    fire = "A fire at the Ghent site halted work there for 40 days."
    long_one = " ".join(f"The {w} rose by {n} percent in the year." for n, w in enumerate(WORDS * 12))
    text = f"{title}\n\n{fire} {long_one}\n\n{long_one}\n\n{long_one}"
    # The best hit is a chunk that starts on the title line and ends with the sentence asked about;
    # the others lie inside the long paragraphs after it and take most of the budget.
    second = text.index(long_one, len(title) + len(fire) + 10)
    third = text.index(long_one, second + 1)
    hits = [_hit(0, text.index(fire) + len(fire), 1), _hit(second, second + 600, 2), _hit(third + 300, third + 900, 3)]
    budget = sum(COUNTER.count(text[h.start : h.end]) for h in hits) + 8
    pieces = _context(text, hits, budget)
    for piece in pieces:
        assert text[piece.start : piece.end] == piece.text
    covered = _covered(pieces)
    for hit in hits:
        assert _own(text, hit) <= covered, f"hit {hit.rank}'s own text is not in the context"
    assert COUNTER.count("\n\n".join(p.text for p in pieces)) <= budget


def test_a_hit_inside_a_paragraph_over_the_budget_keeps_its_own_sentences():
    sentences = [f"The {w} of unit {n} rose by {n} percent." for n, w in enumerate(WORDS * 20)]
    text = " ".join(sentences)
    start = text.index(sentences[150])
    end = text.index(sentences[153]) + len(sentences[153])
    pieces = _context(text, [_hit(start, end, 1)], 60)
    assert _own(text, _hit(start, end, 1)) <= _covered(pieces)  # not the paragraph's leading sentences


@st.composite
def _documents(draw):
    paragraphs = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(1, 40))
        paragraphs.append(" ".join(f"The {draw(st.sampled_from(WORDS))} {i} rose." for i in range(n)))
    text = "\n\n".join(paragraphs)
    bounds = sorted({0, len(text), *(m.end() + 1 for m in re.finditer(r"\.(?= )", text))})  # sentence starts
    hits = []
    for rank in range(1, draw(st.integers(1, 5)) + 1):
        a = draw(st.integers(0, len(bounds) - 2))
        b = draw(st.integers(a + 1, min(a + 6, len(bounds) - 1)))
        hits.append(_hit(bounds[a], bounds[b], rank))
    return text, hits, draw(st.integers(5, 600))


@given(_documents())
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_truncated_context_is_exact_within_budget_and_holds_the_hits_that_fit(case):
    text, hits, budget = case
    pieces = _context(text, hits, budget)
    for piece in pieces:
        assert text[piece.start : piece.end] == piece.text  # spans exact: the document's own text
    assert COUNTER.count("\n\n".join(p.text for p in pieces)) <= budget
    # Hits are taken best first while their own text fits: when all of them fit together (with a token
    # of slack for each place a hit's text is cut: a paragraph break, another hit's boundary), every one
    # of them is in the context.
    runs = [text[s:e] for s, e in merge_spans((h.start, h.end) for h in hits)]
    parts = [part for run in runs for part in run.split("\n\n") if part.strip()]
    need = sum(COUNTER.count(part) + 1 for part in parts) + 2 * len(hits)
    if need <= budget:
        event("every hit fits")
        assert set().union(*(_own(text, h) for h in hits)) <= _covered(pieces)
    # Exactly that much: nothing may go to the text around a hit before every hit is in.
    assert set().union(*(_own(text, h) for h in hits)) <= _covered(_context(text, hits, need))
