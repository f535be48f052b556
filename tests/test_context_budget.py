"""The context budget's fair split (kb.expansion.fair_shares): a property test, no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from kb.expansion import fair_shares


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
