"""The fill's spare hits in vector's order (``KeywordFusion.spare_order``, issue 30's candidate Z): pure."""

import pytest

from kb.retrieval import KeywordFusion, spare_in_vector_order


def entry(name: str, vector_rank: int | None, keyword_rank: int | None):
    return (name, 0.0, vector_rank, keyword_rank)


def test_the_spare_hits_follow_the_vector_ranks_then_the_keyword_only_ones_in_fused_order():
    rest = [entry("k1", None, 1), entry("v9", 9, 2), entry("v2", 2, None), entry("k2", None, 3), entry("v6", 6, 4)]
    assert [e[0] for e in spare_in_vector_order(rest)] == ["v2", "v6", "v9", "k1", "k2"]


def test_nothing_is_lost_or_repeated():
    rest = [entry(f"c{i}", (7 * i) % 11 or None, i) for i in range(1, 12)]
    assert sorted(spare_in_vector_order(rest)) == sorted(rest)


def test_the_option_names_only_the_two_orders():
    assert KeywordFusion().spare_order == "fused"
    assert KeywordFusion(spare_order="vector").spare_order == "vector"
    with pytest.raises(ValueError, match="spare_order"):
        KeywordFusion(spare_order="keyword")
