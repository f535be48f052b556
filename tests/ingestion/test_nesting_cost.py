"""Deep nesting must cost linear work: heading-path prefixes (Security #10) and DOCX tables and styles (#16).

Nothing here measures time (benchmarks are scripts, see docs/benchmarks.md):
each test counts operations -- tokenizer calls and the characters they read,
style lookups, walks up a merged table column -- on inputs of growing depth.
"""

from __future__ import annotations

import io
import random
import zipfile

import docx
import pytest

from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.chunking import chunker as chunker_module
from ingestion.chunking.contextualize import PART_SEPARATOR, build_prefix
from ingestion.parsers import docx as docx_parser
from ingestion.parsers import parse
from ingestion.structure import ParsedDocument, ParseError, Section
from tests.ingestion.limits_helpers import docx_with_body
from tests.ingestion.test_chunk_bad_input import assert_sensible

COUNTER = default_counter()


class CountingCounter:
    """The real tokenizer, counting the calls to ``count`` and the characters they read."""

    def __init__(self, inner=COUNTER):
        self.inner = inner
        self.calls = 0
        self.chars = 0

    def count(self, text: str) -> int:
        self.calls += 1
        self.chars += len(text)
        return self.inner.count(text)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def nested_html(depth: int) -> bytes:
    """``depth`` nested <section>s, each with a heading and a paragraph (the review's reproduction)."""
    opened = "".join(f"<section><h2>Heading number {i} with words</h2><p>Some text about topic {i}.</p>"
                     for i in range(depth))
    return f"<html><body>{opened}{'</section>' * depth}</body></html>".encode()


def _chunk_counting(data: bytes, config: ChunkingConfig | None = None):
    doc = parse(data, content_type="text/html")
    counter = CountingCounter()
    chunks = chunk_document(doc, config or ChunkingConfig(), counter)
    return doc, chunks, counter


def test_prefix_work_grows_linearly_with_nesting_depth():
    # Before: 2,515 tokenizer calls at depth 100 and 68,775 at depth 400 (each re-reading
    # a path of up to 400 headings: cubic).  Now one call per section and per distinct heading.
    small_doc, _, small = _chunk_counting(nested_html(100))
    big_doc, big_chunks, big = _chunk_counting(nested_html(400))
    assert big.calls <= 4 * small.calls + 10
    assert big.calls <= 3 * len(big_doc.sections)
    # Characters read: a bounded prefix per section, not the whole path.
    assert big.chars <= 5 * small.chars  # quadratic would be 16x
    assert big.chars <= 10 * len(big_doc.text) + 200_000
    assert_sensible(big_doc, big_chunks)


def test_a_deep_prefix_keeps_the_nearest_headings_within_budget():
    doc, chunks, _ = _chunk_counting(nested_html(300))
    config = ChunkingConfig()
    budget = config.content_limit - min(chunker_module.MIN_BODY_TOKENS, config.content_limit // 2)
    deepest = chunks[-1]
    prefix = deepest.embed_text[: -len(deepest.text)].removesuffix(PART_SEPARATOR)
    assert prefix.endswith("Heading number 299 with words")
    assert not prefix.startswith("Heading number 0 ")  # the far ancestors were cut
    assert COUNTER.count(prefix + PART_SEPARATOR) <= budget
    assert deepest.token_count + config.special_tokens <= config.max_tokens


def _reference_prefix(path: tuple[str, ...], context: str, config: ChunkingConfig) -> tuple[str, int]:
    """The shortening loop the linear cut replaced (quadratic calls): the expected result."""
    limit = config.content_limit
    prefix = build_prefix(path, context, policy=config.prefix)
    tokens = COUNTER.count(prefix + PART_SEPARATOR) if prefix else 0
    min_body = min(chunker_module.MIN_BODY_TOKENS, limit // 2)
    while prefix and limit - tokens < min_body:
        if len(path) > 1:
            path = path[1:]
            prefix = build_prefix(path, context, policy=config.prefix)
        else:
            words = prefix.split()
            prefix = " ".join(words[: max(1, len(words) // 2)]) if len(words) > 1 else ""
        tokens = COUNTER.count(prefix + PART_SEPARATOR) if prefix else 0
    return prefix, tokens


def test_the_linear_cut_gives_the_same_prefix_as_the_loop_it_replaced():
    rnd = random.Random(10)
    words = ["alpha", "Beta", "δέλτα", "x" * 150, "supercalifragilistic", "a-b", "!!", "   ", "", "\x0c",
             "日本語", "end.", "Straße"]
    configs = [ChunkingConfig(), ChunkingConfig(max_tokens=64, target_tokens=40),
               ChunkingConfig(prefix="none")]
    for _ in range(80):
        path = tuple(
            " ".join(rnd.choice(words) for _ in range(rnd.choice([1, 1, 2, 5, 20])))
            for _ in range(rnd.choice([0, 1, 2, 3, 10, 40, 60]))
        )
        context = rnd.choice(["", "", "import os\nimport sys", " ".join(rnd.choice(words) for _ in range(200))])
        section = Section(key="1", parent="0", title="t", heading_path=path, kind="heading", depth=1, start=0,
                          end=0, context=context)
        for config in configs:
            chunker = chunker_module._Chunker(ParsedDocument(text="body", sections=[section]), config, COUNTER, None)
            assert chunker._prefix(section) == _reference_prefix(path, context, config), (path, context)


def test_a_deep_table_section_is_not_counted_whole():
    # A table under 2,000 headings: the whole-table chunk is skipped without tokenizing the path.
    path = tuple(f"h{i}" for i in range(2000))
    text = "a | b\n1 | 2"
    section = Section(key="1", parent="0", title="T", heading_path=path, kind="table", depth=1, start=0,
                      end=len(text), metadata={"table": {"start": 0, "end": len(text)}})
    counter = CountingCounter()
    chunker = chunker_module._Chunker(ParsedDocument(text=text, sections=[section]), ChunkingConfig(), counter, None)
    assert chunker._whole_table(section, section.metadata["table"]) == []
    assert counter.chars < 100


# --------------------------------------------------------------------------- DOCX


def _merged_table(rows: int, columns: int) -> bytes:
    """A table whose every column is one vertically merged cell over ``rows`` rows."""
    grid = "<w:tblGrid>" + "<w:gridCol/>" * columns + "</w:tblGrid>"
    head = "<w:tr>" + "".join(
        f'<w:tc><w:tcPr><w:vMerge w:val="restart"/></w:tcPr><w:p><w:r><w:t>col {c}</w:t></w:r></w:p></w:tc>'
        for c in range(columns)) + "</w:tr>"
    merged = "<w:tr>" + "<w:tc><w:tcPr><w:vMerge/></w:tcPr><w:p/></w:tc>" * columns + "</w:tr>"
    return docx_with_body("<w:p><w:r><w:t>Intro</w:t></w:r></w:p><w:tbl>" + grid + head + merged * (rows - 1)
                           + "</w:tbl>")


def test_merged_table_cells_are_resolved_without_walking_up_the_column(monkeypatch):
    # python-docx resolves each merged cell by walking up row by row (an XPath query a
    # step): a 38 KB file of 200 rows x 50 merged columns took six minutes.
    from docx.oxml.table import CT_Tc

    small = docx.Document(io.BytesIO(_merged_table(6, 3))).tables[0]
    expected = [[cell._tc for cell in row.cells] for row in small.rows]  # python-docx's own answer
    assert [[cell._tc for cell in cells] for cells in docx_parser._row_cells(small)] == expected

    def refuse(self):
        raise AssertionError("walked up a merged column")

    monkeypatch.setattr(CT_Tc, "_tc_above", property(refuse))
    doc = docx_parser.parse_docx(_merged_table(300, 20))
    table = next(s for s in doc.sections if s.kind == "table")
    assert len(table.blocks) == 299
    assert table.blocks[-1].embed_text.startswith("col 0: col 0 | col 1: col 1")


def test_paragraph_styles_are_resolved_once_per_style(monkeypatch):
    # python-docx scans every style of the document for each paragraph's style (2 ms a
    # paragraph): 100k short paragraphs took minutes.
    calls = []
    resolve = docx_parser._resolve_style_name

    def counting(paragraph):
        calls.append(paragraph._p.style)
        return resolve(paragraph)

    monkeypatch.setattr(docx_parser, "_resolve_style_name", counting)
    d = docx.Document()
    for i in range(500):
        d.add_paragraph(f"Paragraph {i}.")
        if i % 100 == 0:
            d.add_heading(f"Part {i}", level=1)
    out = io.BytesIO()
    d.save(out)
    doc = docx_parser.parse_docx(out.getvalue())
    assert len([s for s in doc.sections if s.kind == "heading"]) == 5
    assert len(calls) == 2 and set(calls) == {None, "Heading1"}


def test_docx_xml_part_over_the_limit_is_refused_before_inflating(monkeypatch):
    monkeypatch.setattr(docx_parser, "MAX_XML_PART_BYTES", 1024 * 1024)
    paragraphs = "".join(f"<w:p><w:r><w:t>word{i} {i * 7919 % 10007}</w:t></w:r></w:p>" for i in range(40_000))
    data = docx_with_body(paragraphs)
    with pytest.raises(ParseError, match=r"'word/document.xml' is .* MB uncompressed \(the limit for one XML part"):
        parse(data, filename="big.docx")


def test_docx_xml_parts_over_the_total_limit_are_refused(monkeypatch):
    monkeypatch.setattr(docx_parser, "MAX_XML_BYTES", 1024 * 1024)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("word/document.xml", "<w:document/>")
        for n in range(3):
            archive.writestr(f"customXml/item{n}.xml", "".join(f"<i>{k}</i>" for k in range(60_000)))
    with pytest.raises(ParseError, match="XML parts hold .* MB uncompressed"):
        parse(out.getvalue(), filename="big.docx")


def test_docx_with_too_many_paragraphs_or_cells_is_refused(monkeypatch):
    monkeypatch.setattr(docx_parser, "MAX_PARAGRAPHS", 1000)
    with pytest.raises(ParseError, match="more than 1,000 paragraphs"):
        parse(docx_with_body("<w:p><w:r><w:t>x</w:t></w:r></w:p>" * 1001), filename="many.docx")
    parse(docx_with_body("<w:p><w:r><w:t>x</w:t></w:r></w:p>" * 999), filename="many.docx")
    monkeypatch.setattr(docx_parser, "MAX_TABLE_CELLS", 100)
    with pytest.raises(ParseError, match="more than 100 table cells"):
        parse(_merged_table(30, 4), filename="cells.docx")


class _CountingStack(list):
    """The HTML re-reader's open-element stack, counting the entries it reads and pops."""

    reads = 0

    def __getitem__(self, index):
        self.reads += 1
        return super().__getitem__(index)

    def pop(self, *args):
        self.reads += 1
        return super().pop(*args)


@pytest.mark.parametrize("n", [1000, 4000])
def test_stray_end_tags_in_html_cost_linear_work(n):
    """Every ``</b>`` that closes nothing searched the whole stack of unclosed ``<p>``: two 560 KB
    uploads held both small-upload workers for the two-minute parse limit (found by an attack)."""
    from ingestion.parsers import html as html_parser

    markup = '<div data-access="internal"><p>a</p></div>' + "<p>x" * n + "</b>" * n + "</p>" * n
    reader = html_parser._AsWritten(markup)
    reader.stack = _CountingStack()
    assert len(reader.read()) == 1
    assert reader.stack.reads <= 3 * n


def test_table_styles_are_merged_once_per_style_not_per_cell(monkeypatch):
    # A table style is read through its w:basedOn chain and its conditional formats (docs/security.md, "Hidden
    # text", the DOCX table-style row): merged once a style, format and part, and once a sequence of formats, so a
    # deep chain of styles that set every format costs the same for 60 cells as for 6,000.
    from ingestion.parsers import docx_hidden

    kinds = ("wholeTable", "firstRow", "lastRow", "firstCol", "lastCol", "band1Vert", "band2Vert", "band1Horz",
             "band2Horz", "nwCell", "neCell", "swCell", "seCell")
    conditional = "".join(f'<w:tblStylePr w:type="{k}"><w:rPr><w:b/><w:color w:val="333333"/></w:rPr><w:tcPr><w:shd '
                          f'w:val="clear" w:fill="EEEEEE"/></w:tcPr></w:tblStylePr>' for k in kinds)
    depth = 60
    styles = "".join(
        f'<w:style w:type="table" w:styleId="T{i}"><w:name w:val="T{i}"/>'
        + (f'<w:basedOn w:val="T{i + 1}"/>' if i + 1 < depth else "")
        + f'<w:rPr><w:sz w:val="{20 + i % 3}"/></w:rPr>{conditional}</w:style>' for i in range(depth))

    def table(rows: int, columns: int) -> str:
        cells = "".join(f"<w:tc><w:p><w:r><w:t>cell {c}</w:t></w:r></w:p></w:tc>" for c in range(columns))
        return (f'<w:tbl><w:tblPr><w:tblStyle w:val="T0"/><w:tblLook w:firstRow="1" w:lastRow="1" w:firstColumn="1" '
                f'w:lastColumn="1"/></w:tblPr><w:tblGrid>{"<w:gridCol/>" * columns}</w:tblGrid>'
                + f"<w:tr>{cells}</w:tr>" * rows + "</w:tbl>")

    calls = []
    merge = docx_hidden._merged

    def counting(*args):
        calls.append(1)
        return merge(*args)

    monkeypatch.setattr(docx_hidden, "_merged", counting)
    counts = []
    for rows in (6, 600):
        calls.clear()
        doc = docx_parser.parse_docx(docx_with_body("<w:p><w:r><w:t>Intro</w:t></w:r></w:p>" + table(rows, 10),
                                                    styles=styles))
        assert "cell 9" in doc.text
        counts.append(len(calls))
    # Five parts a style's format may set (rPr, pPr, tcPr, tblPr and, since the row heights of 2026-12-04, trPr):
    # once a style, format and part, and once a sequence of formats and part.
    assert counts[0] == counts[1] <= depth * (len(kinds) + 1) * 5 + 40 * 4, counts


def _nested_rules(levels: int, selectors: str = ".a") -> bytes:
    rule = f"{selectors} {{ color: #111; "
    return (f"<html><head>\n<style>{rule * levels}{'}' * levels}</style></head>"
            "<body><p class='a'>Visible words</p></body></html>").encode()


def test_style_rules_nested_past_the_bound_fail_with_the_line_of_their_sheet():
    """Fourteenth session: 3,000 nested style rules overflowed the stack (a RecursionError, no line). Past
    ``MAX_RULE_NESTING`` the page fails naming its sheet's line; at the bound it parses."""
    from ingestion.parsers.css_visibility import MAX_RULE_NESTING

    assert "Visible words" in parse(_nested_rules(MAX_RULE_NESTING + 1), content_type="text/html").text
    for levels in (MAX_RULE_NESTING + 2, 3000):
        with pytest.raises(ParseError, match="nested more than") as raised:
            parse(_nested_rules(levels), content_type="text/html")
        assert raised.value.line == 2


def test_nested_selector_lists_cost_at_most_the_bound(monkeypatch):
    """Fourteenth session: a nested rule's selector holds its parent's for each selector of its list, so five-selector
    lists nested twelve deep made 1.3 GB of selectors from 400 characters. The selectors nesting makes are counted:
    past ``MAX_NESTED_SELECTORS`` characters (a small sheet: the bound is more for a large one) the page fails with
    its sheet's line, and what was compiled before stays under the bound."""
    from ingestion.parsers import css_visibility

    compiled = []
    real = css_visibility._compile
    monkeypatch.setattr(css_visibility, "_compile", lambda selector: compiled.append(len(selector)) or real(selector))
    list_of_five = ".a, .b p, .c, .d, .e"  # (one with a combinator: written out for each, not in :is())
    for levels in (12, 30):
        compiled.clear()
        with pytest.raises(ParseError, match="nested style rules make more than") as raised:
            parse(_nested_rules(levels, list_of_five), content_type="text/html")
        assert raised.value.line == 2
        assert sum(compiled) <= css_visibility.MAX_NESTED_SELECTORS
    compiled.clear()
    assert "Visible words" in parse(_nested_rules(4, list_of_five), content_type="text/html").text
    assert 0 < sum(compiled) <= css_visibility.MAX_NESTED_SELECTORS


def _animated_page(elements: int, keyframes: int, distinct: bool = True) -> bytes:
    frames = " ".join(f"{index * 100 / keyframes:.4f}% {{ color: #111 }}" for index in range(keyframes))
    spans = "".join(f'<span style="animation: k 1000s; --i: {index if distinct else 0}">w{index}</span>'
                    for index in range(elements))
    return (f"<html><head>\n<style>@keyframes k {{ {frames} }}</style></head>"
            f"<body><p>Visible words {spans}</p></body></html>").encode()


def test_animated_elements_cost_at_most_the_bound(monkeypatch):
    """Fourteenth session: an animated element is judged in each keyframe it can rest in, so elements times keyframes
    (both from the page's size) would grow as the square of the page. Past ``MAX_ANIMATED_FRAMES`` keyframe states
    the page fails with the line of its first ``@keyframes`` sheet, and what was judged before stays under the bound;
    elements alike (the same styles) are judged once."""
    from ingestion.parsers import css_visibility

    states = []
    real = css_visibility.Visibility._state
    monkeypatch.setattr(css_visibility.Visibility, "_state",
                        lambda self, *args: states.append(1) or real(self, *args))
    keyframes = 300
    elements = css_visibility.MAX_ANIMATED_FRAMES // keyframes + 10
    with pytest.raises(ParseError, match="animations make more than") as raised:
        parse(_animated_page(elements, keyframes), content_type="text/html")
    assert raised.value.line == 2
    assert len(states) <= css_visibility.MAX_ANIMATED_FRAMES + elements + 10
    for distinct, many in ((True, elements // 2), (False, 10 * elements)):
        states.clear()
        assert "Visible words" in parse(_animated_page(many, keyframes, distinct), content_type="text/html").text
        assert len(states) <= (many if distinct else 1) * (keyframes + 1) + 10
