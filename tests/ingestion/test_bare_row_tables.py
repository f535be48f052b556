"""Bare-row tables inside prose and long one-line paragraphs (issue 30).

Properties over generated reports: a table of records written as ``cell | cell | cell`` lines right
after the paragraph that introduces it is found (with or without blank lines in the file), and
becomes one chunk per row that embeds the header row and the introducing sentence; a table whose
rows disagree on their cell count, or hold no numbers, is not a data table; a long one-line
paragraph is cut between sentences, and ``topic_sentence`` changes only what is embedded.

Every config here has ``table_row_labels`` off (the default since issue 30's fourteenth round), so that the
embedded text holds the header line these properties look for; the option changes no span or cut
(tests/ingestion/test_table_row_labels.py).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.chunking import ChunkingConfig, chunk_document
from ingestion.chunking.sentences import split_sentences
from ingestion.chunking.textables import is_data_table
from ingestion.chunking.tokens import default_counter
from ingestion.parsers.plaintext import parse_text

COUNTER = default_counter()
WORDS = "alpha beta gamma delta harbour valley revenue margin plant office review board audit river".split()
NAMES = ["North District", "Harbour Works", "Valley Foods", "Brevik Marine", "Corvan Steel", "Lakeside"]

word = st.sampled_from(WORDS)
sentence = st.lists(word, min_size=6, max_size=16).map(lambda ws: " ".join(ws).capitalize() + ".")
number = st.one_of(
    st.integers(0, 99999).map(lambda n: f"{n:,}"),
    st.floats(0, 5000, allow_nan=False).map(lambda x: f"{x:.1f}"),
    st.integers(-99, 99).map(lambda n: f"{n}%"),
)


@st.composite
def data_tables(draw):
    columns = draw(st.integers(2, 5))
    names = draw(st.lists(st.sampled_from(NAMES), min_size=2, max_size=6, unique=True))
    header = " | ".join(["Unit"] + [str(2019 + c) for c in range(columns)])
    rows = [" | ".join([name] + [draw(number) for _ in range(columns)]) for name in names]
    return header, rows


@st.composite
def reports(draw):
    """(text, introducing sentence, header, rows, blank lines between paragraphs?)"""
    header, rows = draw(data_tables())
    before = draw(st.lists(sentence, min_size=3, max_size=30))
    intro = "The figures for each unit are set out below for these years."
    after = draw(st.lists(sentence, min_size=1, max_size=10))
    blank = draw(st.booleans())
    sep = "\n\n" if blank else "\n"
    text = " ".join(before + [intro]) + "\n" + "\n".join([header] + rows) + sep + " ".join(after) + "\n"
    return text, intro, header, rows, blank


@settings(max_examples=40, deadline=None)
@given(reports())
def test_a_bare_row_table_after_its_paragraph_is_one_chunk_per_row_with_header_and_introduction(report):
    """Rows mode (``table_rows_over=0``: every data table cut per row, as configs stored before the tenth
    round of issue 30 and tables too large for the default's threshold are)."""
    text, intro, header, rows, _blank = report
    doc = parse_text(text)
    chunks = chunk_document(doc, ChunkingConfig(table_row_labels=False, table_rows_over=0), COUNTER)
    row_chunks = [c for c in chunks if c.kind == "table_row"]
    assert len(row_chunks) == len(rows)
    table_start = text.index(header)
    for chunk, row in zip(row_chunks, rows, strict=True):
        assert chunk.text.endswith(row)
        assert header in chunk.embed_text and intro in chunk.embed_text and row in chunk.embed_text
        # Only this row's line in the span (the first row's span also holds the header line).
        assert chunk.text == (header + "\n" + row if chunk is row_chunks[0] else row)
        assert chunk.start >= table_start
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.token_count + 2 <= 256
        if chunk.kind != "table_row":
            assert not any(row in chunk.text for row in rows), "a row was left in a prose chunk"


@settings(max_examples=40, deadline=None)
@given(reports(), st.integers(0, 24))
def test_the_default_keeps_a_small_table_whole_with_its_introduction_and_cuts_a_large_one_per_row(report, more):
    """``table_rows_over=192`` (the default since issue 30's tenth round): a table whose whole text with its
    introducing sentence embeds in at most 192 tokens is one chunk holding exactly the table; a larger one
    (``more`` extra rows) is one chunk per row as in rows mode; no row is left in a prose chunk."""
    text, intro, header, rows, blank = report
    extra = [f"{NAMES[i % len(NAMES)]} {i} | " + " | ".join(["1,234.5"] * header.count("|")) for i in range(more)]
    text = text.replace("\n".join([header, *rows]), "\n".join([header, *rows, *extra]), 1)
    rows = rows + extra
    chunks = chunk_document(parse_text(text), ChunkingConfig(table_row_labels=False), COUNTER)
    tables = [c for c in chunks if c.kind == "table"]
    row_chunks = [c for c in chunks if c.kind == "table_row"]
    whole = "\n".join([header, *rows])
    if tables:
        (table,) = tables
        assert table.text == whole and not row_chunks
        assert intro in table.embed_text and header in table.embed_text
        assert table.token_count <= 192
    else:
        assert len(row_chunks) == len(rows)
        assert COUNTER.count(intro + "\n\n" + whole) > 192 - 8  # too large to keep whole (the prefix aside)
    for chunk in chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        if chunk.kind not in ("table", "table_row"):
            assert not any(row in chunk.text for row in rows), "a row was left in a prose chunk"


@settings(max_examples=40, deadline=None)
@given(reports())
def test_the_previous_config_keeps_the_table_whole_or_in_row_groups(report):
    text, _intro, _header, rows, _blank = report
    chunks = chunk_document(parse_text(text), ChunkingConfig(table_row_labels=False, table_rows=False), COUNTER)
    assert not [c for c in chunks if c.kind == "table_row"]


@settings(max_examples=60, deadline=None)
@given(data_tables(), st.data())
def test_data_table_detection_needs_equal_cell_counts_and_numbers(table, data):
    header, rows = table
    text = "\n".join([header] + rows)
    assert is_data_table(text, 0, len(text))
    # One row with a cell more (or less): no longer a table of records.
    k = data.draw(st.integers(0, len(rows) - 1))
    changed = rows[k] + " | 7" if data.draw(st.booleans()) else rows[k].rsplit(" | ", 1)[0]
    if changed.count(" | ") != rows[k].count(" | ") and changed.count(" | ") >= 1:
        ragged = "\n".join([header] + rows[:k] + [changed] + rows[k + 1 :])
        assert not is_data_table(ragged, 0, len(ragged))
    # The same shape in words only: a reference table, not records.
    words = "\n".join([header] + [" | ".join(["x"] * (header.count(" | ") + 1)) for _ in rows])
    assert not is_data_table(words, 0, len(words))


@settings(max_examples=30, deadline=None)
@given(st.lists(sentence, min_size=25, max_size=80))
def test_a_long_one_line_paragraph_is_cut_between_sentences_and_the_topic_is_only_embedded(sentences):
    text = " ".join(sentences) + "\n"
    doc = parse_text(text)
    plain = chunk_document(doc, ChunkingConfig(table_row_labels=False), COUNTER)
    topical = chunk_document(doc, ChunkingConfig(table_row_labels=False, topic_sentence=True), COUNTER)
    bounds = split_sentences(text)
    starts, ends = {s for s, _ in bounds}, {e for _, e in bounds}
    assert len(plain) > 1
    for chunk in plain:
        assert chunk.start in starts and chunk.end in ends, "a cut fell inside a sentence"
        assert chunk.token_count + 2 <= 256
    # Every sentence is in some chunk.
    assert all(any(c.start <= s and e <= c.end for c in plain) for s, e in bounds)
    topic = text[bounds[0][0] : bounds[0][1]]
    assert topical[0].embed_text == plain[0].embed_text
    for chunk in topical[1:]:
        assert chunk.embed_text.startswith(topic + "\n\n") and chunk.embed_text.endswith(chunk.text)
        assert chunk.token_count + 2 <= 256
    # The spans stay sentence-aligned and cover the paragraph.
    assert all(c.start in starts and c.end in ends for c in topical)
    assert all(any(c.start <= s and e <= c.end for c in topical) for s, e in bounds)


def test_a_row_chunk_never_embeds_text_of_another_section():
    # Sections carry the access policy: the introducing sentence must come from the table's own
    # section, even when the sentence right above the table (across a heading) would fit.
    text = (
        "Restricted figures are summarised in the following table below.\n\n"
        "Pricing\n=======\n"
        "Unit | 2023 | 2024\nNorth | 1.5 | 2.5\nSouth | 3.0 | 4.0\nEast | 5.0 | 6.0\n"
    )
    doc = parse_text(text)
    assert len([s for s in doc.sections if s.blocks]) == 2
    rows = [c for c in chunk_document(doc, ChunkingConfig(table_row_labels=False, table_rows_over=0), COUNTER) if c.kind == "table_row"]
    assert len(rows) == 3
    assert not any("Restricted" in c.embed_text for c in rows)
    # The default keeps this small table whole: the same rule for the whole table's chunk.
    (whole,) = [c for c in chunk_document(doc, ChunkingConfig(table_row_labels=False), COUNTER) if c.kind == "table"]
    assert whole.text.startswith("Unit | 2023") and "Restricted" not in whole.embed_text


# Issue 30, twelfth round (found reading its waste-management report): a short lead-in line between two bare-row
# tables with no blank line around it was read as a group label inside the first, so the second table's rows were
# chunked under the first table's lead-in and header (a six-column project list embedded "Revenue by segment:" and
# "Segment | 2025 £m | 2024 £m | Change %").
SEGMENTS = ("Revenue by segment:\nSegment | 2025 £m | 2024 £m | Change %\nMunicipal collection | 96.4 | 91.2 | 5.7\n"
            "Commercial collection | 71.8 | 68.3 | 5.1\nEnergy from waste | 44.9 | 42.0 | 6.9\n")
PROJECTS_HEADER = "Project | Site | Budget £m | Spent £m | Due | Status"
PROJECT_ROWS = [f"{name} | {site} | {budget} | {spent} | {due} | {status}" for name, site, budget, spent, due, status in [
    ("Replacement sorting plant", "Marlpit", "38.5", "6.2", "Late 2027", "Planning granted in August 2025 after a long inquiry"),
    ("Heat network", "Thornbeck", "14.8", "14.1", "Finished", "Heat flowing to the hospital since November 2025"),
    ("Biomethane upgrade", "Brockley Cross", "7.6", "3.9", "Spring 2026", "Grid connection agreed with the network"),
    ("Carbon capture study", "Thornbeck", "2.3", "0.8", "Late 2026", "With the university; a pilot decided next year"),
    ("Composting hall", "Fenwold", "6.4", "0.3", "2028", "Permit application to be made in the coming year"),
    ("Electric lorries", "All depots", "12.9", "1.1", "June 2026", "Thirty ordered in November 2025; deposit paid"),
]]
TWO_TABLES = ("Finance\nThe year's revenue grew in every segment of the business. " * 3 + "\n" + SEGMENTS
              + "Projects under way in 2025:\n" + PROJECTS_HEADER + "\n" + "\n".join(PROJECT_ROWS) + "\n"
              + "People\nWe employed more people at the end of the year than at its start.\n")


def test_a_lead_in_between_two_tables_of_other_columns_starts_the_second_table():
    chunks = chunk_document(parse_text(TWO_TABLES), ChunkingConfig(table_row_labels=False), COUNTER)
    rows = [c for c in chunks if any(row in c.text for row in PROJECT_ROWS)]
    assert rows and all("Segment | 2025" not in c.embed_text and "Revenue by segment" not in c.embed_text for c in rows)
    assert all(PROJECTS_HEADER in c.embed_text and "Projects under way in 2025:" in c.embed_text for c in rows)
    assert not any("Municipal collection" in c.text and PROJECT_ROWS[0] in c.text for c in chunks)
    # Configs stored before the field (it reads as off) keep their chunks: the lead-in as a group label.
    before = chunk_document(parse_text(TWO_TABLES), ChunkingConfig(table_row_labels=False, table_label_columns=False), COUNTER)
    assert any("Segment | 2025" in c.embed_text for c in before if PROJECT_ROWS[-1] in c.text)


def test_a_group_label_followed_by_rows_of_the_tables_columns_stays_inside_it():
    header, rows = "Unit | 2024 | 2025", ["North | 1,200 | 1,350", "South | 900 | 1,010", "East | 640 | 700",
                                         "West | 520 | 610", "Harbour | 300 | 340"]
    text = ("The units' output is shown below.\n" + header + "\n" + "\n".join(rows[:2]) + "\nCoastal units\n"
            + "\n".join(rows[2:]) + "\nThat closes the table.\n")
    for config in (ChunkingConfig(table_row_labels=False), ChunkingConfig(table_row_labels=False, table_label_columns=False)):
        chunks = chunk_document(parse_text(text), config, COUNTER)
        holding = [c for c in chunks if any(row in c.text for row in rows)]
        assert all(header in c.embed_text for c in holding), config.table_label_columns
        assert all(any(row in c.text for c in holding) for row in rows)
