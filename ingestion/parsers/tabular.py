"""CSV and TSV: one table section, one ``table_row`` block per data row.

The document text is the decoded file itself (UTF-8), so every row block's span is
the row's raw line(s) in the file -- a quoted cell with line breaks in it keeps its
row in one block.  The delimiter (``, ; tab |``) is chosen on the first 64 KiB: csv.Sniffer's guess
and the usual candidates are scored by how consistently they split the rows, and
must clearly beat the default (comma; tab for TSV).  Quoting is the csv module's
(Excel's) double quote.

Structure: the root (titled with the file name) holds one ``table`` section whose
heading line is the header row (the first non-blank row; CSV has no way to say it
has none, and a header-less file still gets readable ``Column: value`` text).  Each
data row is a block of kind ``table_row``, ``joinable=False``, with ``embed_text``
``"Name: value | ..."`` from :func:`ingestion.parsers.tables.serialize_row`.
``metadata["table"]`` spans header and rows for the whole-table chunk.

Never fatal: ragged rows (extra cells get ``Column N`` names, missing cells are
left out), huge cells (the csv field size limit is raised to the file size).  A
row too long for the embedding model stays one ``table_row`` block; the chunker
splits such a row on its raw text.  Only text that is not UTF-8 and a quote the
csv module cannot parse raise :class:`ParseError`.
"""

from __future__ import annotations

import bisect
import csv
import io
import os
from collections import Counter
from collections.abc import Iterator

from ingestion.parsers.access_markers import reject_cell_markers, reject_unread_markers
from ingestion.parsers.registry import register
from ingestion.parsers.section_tree import LineIndex
from ingestion.parsers.tables import column_names, serialize_row
from ingestion.parsers.text_decoding import decode_text
from ingestion.parsers.visible_text import terminal_hidden, terminal_shown
from ingestion.structure import Block, ParsedDocument, ParseError, Section

SNIFF_CHARS = 64 * 1024
SNIFF_DELIMITERS = ",;\t|"
SCORE_ROWS = 200
CLEAR_MARGIN = 0.1
# Rows whose cells are checked for access markers together (access_markers.reject_cell_markers).
_CHECKED_ROWS = 2000


class _LineFeed:
    """The text's lines (with their line breaks) for csv.reader, remembering how far it has read.

    csv.reader pulls exactly the lines one record needs, so right after it yields a
    row, :attr:`consumed` is the offset just past that row's last line.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = LineIndex(text).starts
        self.consumed = 0
        self.line = 0  # 0-based index of the next line to hand out

    def __iter__(self) -> Iterator[str]:
        starts, text = self.starts, self.text
        while self.line < len(starts) and starts[self.line] < len(text):
            start = starts[self.line]
            end = starts[self.line + 1] if self.line + 1 < len(starts) else len(text)
            self.line += 1
            self.consumed = end
            yield text[start:end]


def _consistency(sample: str, delimiter: str) -> float:
    """Share of the sample's rows that have the most common field count (0 when that count is 1)."""
    try:
        rows = [row for row in csv.reader(io.StringIO(sample, newline=""), delimiter=delimiter) if row]
    except csv.Error:
        return 0.0
    rows = rows[:SCORE_ROWS]
    if not rows:
        return 0.0
    # The most common field count; on a tie the wider one (ragged rows are usually short rows).
    frequency, width = max((n, w) for w, n in Counter(len(row) for row in rows).items())
    return frequency / len(rows) if width > 1 else 0.0


def _delimiter(text: str, tabs: bool) -> str:
    """The delimiter that splits the first rows most consistently.

    csv.Sniffer proposes one, but alone it is easily fooled (a quoted cell full of
    semicolons); each candidate is scored by how consistently it splits the sample,
    and a candidate must beat the format's default (comma; tab for TSV) clearly.
    """
    sample = text[:SNIFF_CHARS]
    if len(text) > SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]
    candidates = ["\t", ","] if tabs else [","]
    try:
        candidates.append(csv.Sniffer().sniff(sample, delimiters=SNIFF_DELIMITERS).delimiter)
    except csv.Error:
        pass
    candidates.extend(SNIFF_DELIMITERS)
    best, best_score = candidates[0], _consistency(sample, candidates[0])
    for candidate in dict.fromkeys(candidates[1:]):
        score = _consistency(sample, candidate)
        if score > best_score + CLEAR_MARGIN:
            best, best_score = candidate, score
    return best


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def parse_table_text(text: str, *, title: str, tabs: bool = False) -> ParsedDocument:
    """Build the document of an already-decoded CSV/TSV text (offsets index ``text``)."""
    # Module-global, so only ever raised: a 1 MB cell is a valid cell.
    if csv.field_size_limit() < len(text) + 1:
        csv.field_size_limit(len(text) + 1)
    delimiter = _delimiter(text, tabs)
    feed = _LineFeed(text)
    reader = csv.reader(feed, delimiter=delimiter)
    root = Section(key="0", parent=None, title=title, heading_path=(), kind="document", depth=0,
                   start=0, end=len(text))
    header: list[str] | None = None
    names: list[str] = []
    header_span = (0, 0)
    header_line = 1
    blocks: list[Block] = []
    previous_end = 0
    row_number = 0
    checked: list[tuple[int, list[str]]] = []  # rows whose cells are not checked for markers yet
    try:
        for row in reader:
            row_start, row_end = _trim(text, previous_end, feed.consumed)
            first_line = bisect.bisect_right(feed.starts, row_start)  # 1-based
            previous_end = feed.consumed
            if row_start >= row_end or not any(cell.strip() for cell in row):
                continue
            checked.append((first_line, row))
            if len(checked) >= _CHECKED_ROWS:
                reject_cell_markers(checked)
                checked.clear()
            if header is None:
                header, header_span, header_line = row, (row_start, row_end), first_line
                names = column_names(header, len(header))
                continue
            row_number += 1
            embed = serialize_row(column_names(header, max(len(header), len(row))), row)
            blocks.append(Block(start=row_start, end=row_end, kind="table_row", embed_text=embed, joinable=False,
                                metadata={"row": row_number, "line": first_line}))
    except csv.Error as exc:
        raise ParseError(f"malformed CSV: {exc}", line=reader.line_num or None) from None
    reject_cell_markers(checked)
    if header is None:
        return ParsedDocument(text=text, sections=[root], title=title or None, metadata={"format": "csv"})
    table_start = header_span[0]
    table_end = blocks[-1].end if blocks else header_span[1]
    if not blocks:
        # A header and nothing else: still text worth finding.
        blocks.append(Block(start=header_span[0], end=header_span[1], kind="prose"))
    table = Section(
        key="1", parent="0", title=title, heading_path=(title,) if title else (), kind="table", depth=1,
        start=table_start, end=table_end, blocks=blocks, line=header_line,
        metadata={"table": {"start": table_start, "end": table_end, "columns": names, "caption": None,
                            "rows": row_number, "delimiter": delimiter}},
    )
    return ParsedDocument(text=text, sections=[root, table], title=title or None,
                          metadata={"format": "tsv" if delimiter == "\t" else "csv"})


def _title(filename: str | None) -> str:
    return os.path.basename(filename) if filename else ""


def _parse_shown(text: str, *, title: str, tabs: bool = False) -> ParsedDocument:
    """:func:`parse_table_text` of what a terminal shows of ``text`` (2026-12-03): a cell hiding words from a
    terminal reader (``cat``, ``less -R``: ANSI conceal, a colour its background's, characters a backspace
    overstrikes -- :func:`~ingestion.parsers.visible_text.terminal_hidden`, as for plain text) never reaches the
    model. A spreadsheet shows that text; the model gets only what every reader sees. The rows and cells are read
    from the text shown (a row's embed text is built from its cells), the count of what went is the table's (or
    the root's); a marker in what is cut still fails, with its line."""
    if not terminal_hidden(text):
        return parse_table_text(text, title=title, tabs=tabs)
    reject_unread_markers(text)
    shown, removed = terminal_shown(text)
    doc = parse_table_text(shown, title=title, tabs=tabs)
    doc.sections[-1].hidden_chars_removed += removed
    return doc


@register(content_types=["text/csv", "application/csv", "text/comma-separated-values"], extensions=[".csv"])
def parse_csv(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a CSV file (dialect sniffed) into one table section of row blocks."""
    return _parse_shown(decode_text(data), title=_title(filename))


@register(content_types=["text/tab-separated-values"], extensions=[".tsv", ".tab"])
def parse_tsv(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a TSV file (tab-delimited unless the sniffer is sure otherwise) into one table section."""
    return _parse_shown(decode_text(data), title=_title(filename), tabs=True)
