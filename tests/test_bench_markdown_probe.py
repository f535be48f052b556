"""bench.round18_markdown.raw_offsets: the Markdown parse's characters found again in the file (issue 30 probe)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.evaluation import raw_offsets


@given(st.lists(st.tuples(st.sampled_from("ab c\\n<>-"), st.booleans()), max_size=60))
def test_each_kept_character_maps_to_itself_in_order(chars):
    raw = "".join(c for c, _ in chars)
    parsed = "".join(c for c, kept in chars if kept)
    where = raw_offsets(raw, parsed)
    assert len(where) == len(parsed) + 1 and where[-1] == len(raw)
    assert all(raw[i] == c for i, c in zip(where, parsed, strict=False))
    assert all(a < b for a, b in zip(where, where[1:], strict=False))


def test_a_parse_that_adds_text_is_refused():
    with pytest.raises(ValueError, match="more than delete"):
        raw_offsets("abc", "abxc")
