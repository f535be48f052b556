"""Tables inside plain text and the headingless-prose target (issue #15).

Unit tests of the table detection, and Hypothesis properties of the chunker on
generated plain text with pipe/tab tables and headings: spans exact, token
counts exact, within the model input, inside one section, every character
covered, row groups of a table repeat its header.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.chunking.textables import find_tables
from ingestion.parsers import parse

COUNTER = default_counter()
WORDS = "revenue margin quarter growth tenant billing refund café Zürich 42 3.14 net loss (note) über".split()


def test_pipe_table_inside_a_paragraph():
    text = "Results were strong.\nItem | 2023 | 2024\nRevenue | 10 | 12\nCosts | 4 | 5\nAfter the table.\n"
    (s, h, e), = find_tables(text, 0, len(text))
    assert text[s:h] == "Item | 2023 | 2024"
    assert text[s:e].endswith("Costs | 4 | 5")


def test_tab_table_and_group_labels():
    text = "Name\tValue\nDEBUG\t10\n**Group**\nINFO\t20\n"
    (s, h, e), = find_tables(text, 0, len(text))
    assert text[s:e] == "Name\tValue\nDEBUG\t10\n**Group**\nINFO\t20"


def test_template_pipes_and_short_runs_are_not_tables():
    code = "{{ value|date }}\n{{ value|time }}\n{{ value|lower }}\n"
    assert find_tables(code, 0, len(code)) == []
    two = "a | b\nc | d\n"
    assert find_tables(two, 0, len(two)) == []
    bordered = "| a | b |\n| c | d |\n| e | f |\n"
    assert len(find_tables(bordered, 0, len(bordered))) == 1


def _sentence(draw) -> str:
    words = draw(st.lists(st.sampled_from(WORDS), min_size=3, max_size=30))
    return "The " + " ".join(words) + "."


@st.composite
def documents(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["prose", "prose", "pipe", "tab", "heading"]))
        if kind == "prose":
            parts.append(" ".join(_sentence(draw) for _ in range(draw(st.integers(1, 25)))))
        elif kind == "heading":
            title = "Section " + draw(st.sampled_from(WORDS)).capitalize()
            parts.append(title + "\n" + "=" * len(title))
        else:
            sep = " | " if kind == "pipe" else "\t"
            width = draw(st.integers(2, 5))
            rows = draw(st.integers(3, 60))
            cell = st.lists(st.sampled_from(WORDS), min_size=1, max_size=draw(st.integers(1, 12)))
            lines = [sep.join(f"Col{c}" for c in range(width))]
            lines += [sep.join(" ".join(draw(cell)) for _ in range(width)) for _ in range(rows)]
            lead = _sentence(draw) + "\n" if draw(st.booleans()) else ""
            parts.append(lead + "\n".join(lines))
    return "\n\n".join(parts) + "\n"


CONFIGS = [
    ChunkingConfig(),
    ChunkingConfig(text_tables=True, target_tokens=192, prose_target_tokens=160),
    ChunkingConfig(text_tables=True, target_tokens=64, prose_target_tokens=32, max_tokens=128),
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.sampled_from(CONFIGS))
def test_plain_text_with_tables_keeps_every_guarantee(text, config):
    doc = parse(text.encode(), content_type="text/plain")
    chunks = chunk_document(doc, config, COUNTER)
    sections = {s.key: s for s in doc.sections}
    covered = bytearray(len(text))
    for c in chunks:
        assert doc.text[c.start : c.end] == c.text
        assert c.token_count == COUNTER.count(c.embed_text)
        assert c.token_count + config.special_tokens <= config.max_tokens
        sec = sections[c.section_key]
        assert any(b.start <= c.start and c.end <= b.end for b in sec.blocks) or (
            min(b.start for b in sec.blocks) <= c.start and c.end <= max(b.end for b in sec.blocks)
        )
        for i in range(c.start, c.end):
            covered[i] = 1
        if c.kind == "table_rows":
            header = c.embed_text.split("\n")
            assert any(line.startswith("Col0") for line in header)
    for s in doc.sections:
        for b in s.blocks:
            for i in range(b.start, b.end):
                assert covered[i] or text[i].isspace(), (i, text[max(0, i - 20) : i + 20])


def test_headingless_prose_uses_the_prose_target():
    text = " ".join(f"The quarter number {n} had revenue growth and a net margin." for n in range(300))
    doc = parse(text.encode(), content_type="text/plain")
    big = chunk_document(doc, ChunkingConfig(target_tokens=192), COUNTER)
    small = chunk_document(doc, ChunkingConfig(target_tokens=192, prose_target_tokens=96), COUNTER)
    assert len(small) > len(big)
    assert max(c.token_count for c in small) <= 96 + 2
