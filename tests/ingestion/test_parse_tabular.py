"""CSV/TSV parser: a real file (golden), whole rows with column names, ragged rows, huge cells.

Golden files are regenerated only with ``BULKHEAD_REGENERATE_GOLDEN=1`` (see golden_files.py).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ingestion.parsers import parse
from ingestion.parsers.tabular import parse_csv, parse_tsv
from ingestion.structure import ParseError
from tests.ingestion.doc_invariants import assert_well_formed
from tests.ingestion.golden_files import assert_matches_golden

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "csv"


@pytest.mark.parametrize("name", ["ubuntu.csv", "sample.csv"])
def test_real_csv_matches_golden_and_invariants(name):
    doc = parse_csv((FIXTURES / name).read_bytes(), filename=name)
    assert_well_formed(doc)
    assert_matches_golden(doc, FIXTURES / name)


def test_real_ragged_csv_rows_carry_column_names():
    doc = parse((FIXTURES / "ubuntu.csv").read_bytes(), filename="ubuntu.csv")
    table = doc.sections[1]
    assert table.kind == "table" and table.heading_path == ("ubuntu.csv",)
    columns = table.metadata["table"]["columns"]
    assert columns[:3] == ["version", "codename", "series"]
    for block in table.blocks:
        raw = doc.text[block.start : block.end]
        (cells,) = list(csv.reader(io.StringIO(raw)))  # exactly one whole row
        for name, cell in zip(columns, cells, strict=False):
            if cell:
                assert f"{name}: {cell}" in block.embed_text
        assert block.kind == "table_row" and not block.joinable
    whole = doc.text[table.metadata["table"]["start"] : table.metadata["table"]["end"]]
    assert whole.startswith("version,codename") and whole.count("\n") == len(table.blocks)


def test_ragged_rows_get_column_n_names_and_never_fail():
    doc = parse_csv(b"a,b\n1,2,3,4\n5\n\n,,\n6,7\n")
    rows = [b.embed_text for b in doc.sections[1].blocks]
    assert rows == ["a: 1 | b: 2 | Column 3: 3 | Column 4: 4", "a: 5", "a: 6 | b: 7"]


def test_quoted_multiline_cells_keep_their_row_in_one_block():
    data = b'id,note\n1,"first line\nsecond line"\n2,plain\r\n3,"a ""quoted"", word"\n'
    doc = parse_csv(data, filename="notes.csv")
    assert_well_formed(doc)
    blocks = doc.sections[1].blocks
    assert [doc.text[b.start : b.end] for b in blocks] == [
        '1,"first line\nsecond line"', "2,plain", '3,"a ""quoted"", word"']
    assert blocks[0].embed_text == "id: 1 | note: first line second line"
    assert [b.metadata["line"] for b in blocks] == [2, 4, 5]


def test_a_one_megabyte_cell_works():
    big = "word " * 200_000
    doc = parse_csv(f"name,body\nhuge,{big}\nsmall,x\n".encode())
    blocks = doc.sections[1].blocks
    assert len(blocks) == 2
    assert doc.text[blocks[0].start : blocks[0].end].startswith("huge,word word")
    assert blocks[0].embed_text.startswith("name: huge | body: word word")
    assert blocks[0].kind == "table_row"  # the chunker splits an over-long row on its raw text


def test_tsv_by_content_type_and_extension():
    data = b"plan\tseats\nBasic\t5\nEnterprise\tunlimited\n"
    for doc in (parse(data, content_type="text/tab-separated-values"), parse(data, filename="plans.tsv"),
                parse_tsv(data)):
        assert [b.embed_text for b in doc.sections[1].blocks] == ["plan: Basic | seats: 5",
                                                                 "plan: Enterprise | seats: unlimited"]


def test_semicolon_dialect_is_sniffed():
    doc = parse_csv(b"Name;City\nAda;London\nGrace;Arlington\n")
    assert doc.sections[1].blocks[0].embed_text == "Name: Ada | City: London"


def test_empty_and_header_only_files():
    assert len(parse_csv(b"").sections) == 1
    doc = parse_csv(b"just,a,header\n")
    assert [b.kind for b in doc.sections[1].blocks] == ["prose"]


def test_non_utf8_is_a_parse_error():
    with pytest.raises(ParseError, match="UTF-8"):
        parse_csv(b"name\n\xff\xfe\xfa\n")


# Cells as people write them: words, now and then a comma, a quote, a semicolon or a line break.
_cell = st.text(alphabet=st.sampled_from(list("abcdefgh  xyz0,\";\n")), max_size=12)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(header=st.lists(st.text(alphabet="abcdef", min_size=1, max_size=5), min_size=2, max_size=4, unique=True),
       data=st.data())
def test_no_block_holds_a_partial_row(header, data):
    rows = data.draw(st.lists(st.lists(_cell, min_size=len(header), max_size=len(header)), max_size=8))
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)  # quoted: the sniffer sees an unambiguous comma dialect
    writer.writerow(header)
    writer.writerows(rows)
    doc = parse_csv(out.getvalue().encode())
    assert_well_formed(doc)
    kept = [r for r in rows if any(c.strip() for c in r)]
    blocks = doc.sections[1].blocks if len(doc.sections) > 1 else []
    blocks = [b for b in blocks if b.kind == "table_row"]
    assert len(blocks) == len(kept)
    for block, row in zip(blocks, kept, strict=True):
        (parsed,) = list(csv.reader(io.StringIO(doc.text[block.start : block.end], newline="")))
        assert [c.strip() for c in parsed] == [c.strip() for c in row]
        for name, cell in zip(header, row, strict=False):
            if " ".join(cell.split()):
                assert f"{name}: " in block.embed_text
