"""bench.round18_markdown.raw_offsets: the Markdown parse's characters found again in the file (issue 30 probe)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.chunkeval.baselines import raw_offsets


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


def test_the_by_type_chunker_parses_markdown_and_keeps_spans_on_the_files_characters():
    from bench.chunkeval.baselines import structure_chunker, structure_chunker_by_type

    text = "# Guide\n\nIntro words here.\n\n<!-- a hidden note -->\n\n## Install\n\nRun pip install thing.\n"
    by_type = structure_chunker_by_type()
    chunks = by_type(text, "pkg/README.md")
    assert all(0 <= c.start < c.end <= len(text) for c in chunks)
    assert not any("hidden note" in c.embed_text for c in chunks)
    install = [c for c in chunks if "Run pip install thing." in text[c.start:c.end]]
    assert install and install[0].embed_text.startswith("Guide > Install")
    plain = [(c.start, c.end, c.embed_text) for c in structure_chunker()(text)]
    assert [(c.start, c.end, c.embed_text) for c in by_type(text, "pkg/notes.txt")] == plain
