"""``ChunkingConfig.table_row_labels`` (issue 30, fourteenth round): a table inside plain text embeds each row
with its column labels and without its header line; the spans and the split into chunks stay those without it;
a labelled text over the model input falls back to the plain one; on by default since the fourteenth round, off --
left out of the hash -- in configs stored before."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.chunking.config import ADDED_OFF
from ingestion.chunking.textables import labelled_rows
from ingestion.parsers import parse

COUNTER = default_counter()
RECORD = (
    "Year | Revenue £m | Operating profit £m | Right time %\n"
    "2021 | 168.2 | 9.6 | 84.1\n2022 | 181.5 | 11.8 | 85.3\n2023 | 187.9 | 10.4 | 83.7\n"
)
TEXT = "The company ran more trains than ever. Our five-year record is as follows:\n" + RECORD


def _chunks(text: str, **options):
    options.setdefault("table_row_labels", False)
    return chunk_document(parse(text.encode(), content_type="text/plain"), ChunkingConfig(**options), COUNTER)


def test_labelled_rows_writes_each_row_with_its_labels():
    header, body = RECORD.split("\n", 1)
    assert labelled_rows(header, body.rstrip("\n")).split("\n") == [
        "2021: Revenue £m 168.2; Operating profit £m 9.6; Right time % 84.1",
        "2022: Revenue £m 181.5; Operating profit £m 11.8; Right time % 85.3",
        "2023: Revenue £m 187.9; Operating profit £m 10.4; Right time % 83.7",
    ]
    # a Markdown header's delimiter row is ignored, empty cells are left out, a group label is kept as it is
    md = labelled_rows("| Backend | Locks | Share |\n|---|---|---|", "Local\n| file | 12 |  |\n| redis | 9 | 30% |")
    assert md.split("\n") == ["Local", "file: Locks 12", "redis: Locks 9; Share 30%"]
    # a row of another width, and a header that is no table line, leave the text alone
    assert labelled_rows("a | b | c", "x | y") == "x | y"
    assert labelled_rows("no table here", "1 | 2") == "1 | 2"


def test_the_whole_table_embeds_labelled_rows_and_keeps_its_span():
    plain, labelled = _chunks(TEXT), _chunks(TEXT, table_row_labels=True)
    assert [(c.start, c.end, c.kind) for c in plain] == [(c.start, c.end, c.kind) for c in labelled]
    (table,) = [c for c in labelled if c.kind == "table"]
    assert table.text == RECORD.rstrip("\n")
    assert "2022: Revenue £m 181.5; Operating profit £m 11.8; Right time % 85.3" in table.embed_text
    assert "Our five-year record is as follows:" in table.embed_text  # the lead-in stays
    assert "Year | Revenue" not in table.embed_text  # the header line is left out
    assert table.token_count == COUNTER.count(table.embed_text)
    (before,) = [c for c in plain if c.kind == "table"]
    assert "Year | Revenue £m" in before.embed_text


def test_row_chunks_of_a_large_table_embed_their_row_labelled():
    rows = "".join(f"Site {i} | Depot number {i} in the valley | {100 + i} | {i}.5 | Open since {1990 + i}\n" for i in range(14))
    text = "Our sites at the year end were as follows:\n" + "Site | Where | Staff | Area (ha) | Notes\n" + rows
    plain, labelled = _chunks(text), _chunks(text, table_row_labels=True)
    assert [(c.start, c.end) for c in plain] == [(c.start, c.end) for c in labelled]
    row_chunks = [c for c in labelled if c.kind == "table_row"]
    assert len(row_chunks) == 14
    assert row_chunks[3].embed_text.endswith(
        "Site 3: Where Depot number 3 in the valley; Staff 103; Area (ha) 3.5; Notes Open since 1993"
    )
    assert all("Site | Where" not in c.embed_text for c in row_chunks)
    assert all(c.embed_text.startswith("Our sites at the year end were as follows:") for c in row_chunks)


def test_a_labelled_text_over_the_model_input_falls_back_to_the_plain_one():
    # a small table kept whole (its plain text is under table_rows_over) whose labels, repeated on every row,
    # would take it past the model input: it embeds the plain text
    labels = [f"measure {i} of the long wordy table" for i in range(6)]
    text = "The record is as follows:\n" + "Year | " + " | ".join(labels) + "\n" + "".join(
        f"{2020 + y} | " + " | ".join(f"{y}{d}.5" for d in range(6)) + "\n" for y in range(4))
    config = ChunkingConfig(table_row_labels=True)
    (plain,) = [c for c in _chunks(text) if c.kind == "table"]
    (table,) = [c for c in _chunks(text, table_row_labels=True) if c.kind == "table"]
    assert plain.token_count <= config.table_rows_over
    header, rows = text.split("\n", 2)[1:]
    assert COUNTER.count(labelled_rows(header, rows)) > config.content_limit  # what labels would have made
    assert table.embed_text == plain.embed_text and table.token_count <= config.content_limit


def test_on_by_default_and_off_in_configs_stored_before():
    assert ChunkingConfig().table_row_labels is True and ADDED_OFF["table_row_labels"] is False
    # a config stored before the option has no key: it reads as off and keeps the thirteenth round's hash
    stored = {k: v for k, v in ChunkingConfig().as_dict().items() if k != "table_row_labels"}
    assert ChunkingConfig.from_dict(stored) == ChunkingConfig(table_row_labels=False)
    assert ChunkingConfig.from_dict(stored).config_hash().startswith("65c18ffca265")
    assert ChunkingConfig().config_hash() != ChunkingConfig(table_row_labels=False).config_hash()
    (table,) = [c for c in chunk_document(parse(TEXT.encode(), content_type="text/plain"), ChunkingConfig(), COUNTER)
                if c.kind == "table"]
    assert table.embed_text.endswith("2023: Revenue £m 187.9; Operating profit £m 10.4; Right time % 83.7")


_cell = st.text(alphabet="abcxyz019.,% ", min_size=0, max_size=8).map(str.strip)


@settings(max_examples=60, deadline=None)
@given(width=st.integers(2, 5), rows=st.lists(st.lists(_cell, min_size=5, max_size=5), min_size=3, max_size=12))
def test_labels_never_change_spans_and_every_row_value_stays_embedded(width, rows):
    header = " | ".join(f"Col{i}" for i in range(width))
    body = "".join(" | ".join([f"r{k}"] + [c or "0" for c in row[1:width]]) + "\n" for k, row in enumerate(rows))
    text = "Figures by item are as follows:\n" + header + "\n" + body
    plain, labelled = _chunks(text), _chunks(text, table_row_labels=True)
    assert [(c.start, c.end, c.text) for c in plain] == [(c.start, c.end, c.text) for c in labelled]
    embedded = "\n".join(c.embed_text for c in labelled)
    for k, row in enumerate(rows):
        assert f"r{k}" in embedded
        for cell in row[1:width]:
            assert (cell or "0") in embedded
