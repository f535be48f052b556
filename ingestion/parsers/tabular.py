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

What a reader never sees is cut (the file's line breaks kept), counted as hidden: what a terminal does not show, and
a formula cell's text (:func:`runs_as_formula`) -- a spreadsheet opening the file runs it and shows what it computes,
and a CSV holds no computed value to show instead.
"""

from __future__ import annotations

import bisect
import csv
import io
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterator

from ingestion.parsers.access_markers import reject_cell_markers, reject_unread_markers
from ingestion.parsers.registry import register
from ingestion.parsers.section_tree import LineIndex
from ingestion.parsers.tables import column_names, serialize_row
from ingestion.parsers.text_decoding import decode_text
from ingestion.parsers.visible_text import counted, cut_ranges, terminal_hidden, terminal_shown
from ingestion.structure import Block, ParsedDocument, ParseError, Section

SNIFF_CHARS = 64 * 1024
SNIFF_DELIMITERS = ",;\t|"
SCORE_ROWS = 200
CLEAR_MARGIN = 0.1
# Rows whose cells are checked for access markers together (access_markers.reject_cell_markers).
_CHECKED_ROWS = 2000
# What a spreadsheet (Excel, LibreOffice Calc, Google Sheets) opening a CSV runs as a formula: a cell starting with
# one of these (the signs audit.exports quotes in its own CSV export).
_FORMULA_SIGNS = frozenset("=+-@")
# A signed number, which a spreadsheet shows as written (give or take its format): -5, +3.25, -1,234.50, -12%, -1e5.
_SIGNED_NUMBER_RE = re.compile(r"[+-]\s*[$\u20ac\u00a3\u00a5]?\s*(?:\d[\d,.\u00a0 ]*|\.\d+)(?:[eE][+-]?\d+)?\s*%?")
_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")


def formula_lead(text: str) -> tuple[int, str]:
    """Where a spreadsheet looks for ``text``'s formula sign: the index past any leading whitespace (every Unicode
    space and line break) or invisible format character (zero-width space, joiners, the byte-order mark), and the
    character there in its NFKC form's first character (fullwidth and small forms: "＝", "﹦" are "="; "⩵" is "=";
    "" at the end). One rule for cells read (:func:`runs_as_formula`) and cells written (the audit export)."""
    lead = 0
    while lead < len(text) and (text[lead].isspace() or unicodedata.category(text[lead]) == "Cf"):
        lead += 1
    return lead, unicodedata.normalize("NFKC", text[lead : lead + 1])[:1]


def runs_as_formula(cell: str) -> bool:
    """Whether a spreadsheet opening the CSV runs ``cell`` as a formula whose text holds words, so a person sees what it
    computes (``=IF(FALSE,"words","ok")`` shows ``ok``, ``=LEN("words")`` a number) and never its words (twenty-second
    session, attack22x). Its first sign is looked for past any whitespace or invisible format character and in its
    fullwidth and small forms (NFKC), as the audit export's are: fail closed, also where a spreadsheet would show the
    cell as text. A signed number is shown as written, and a cell of digits and signs alone (``=1+1``, ``--``, a phone
    number ``+1 555 0100``) hides no words: both stay."""
    if not cell or cell[0].isalnum():
        return False
    lead, sign = formula_lead(cell)
    if sign not in _FORMULA_SIGNS:
        return False
    rest = cell[lead:].strip()
    return _SIGNED_NUMBER_RE.fullmatch(rest) is None and any(unicodedata.category(c)[0] == "L" for c in rest)


def _fields(text: str, start: int, end: int, delimiter: str) -> list[tuple[int, int, str]]:
    """``(start, end, value)`` of each field of the record ``text[start:end]``, split as csv.reader splits it (Excel's
    dialect, not strict: a closing quote's field goes on unquoted to the next delimiter)."""
    fields = []
    i = start
    while True:
        field_start, value = i, []
        quoted = i < end and text[i] == '"'
        i += quoted
        while i < end:
            char = text[i]
            if quoted:
                if char == '"':
                    if i + 1 < end and text[i + 1] == '"':
                        value.append('"')
                        i += 2
                        continue
                    quoted = False
                else:
                    value.append(char)
            elif char == delimiter or char in "\r\n":
                break
            else:
                value.append(char)
            i += 1
        fields.append((field_start, i, "".join(value)))
        if i < end and text[i] == delimiter:
            i += 1
            continue
        return fields


def _formula_cuts(text: str, start: int, end: int, delimiter: str, row: list[str],
                  line: int) -> list[tuple[tuple[int, int], int]]:
    """What to cut of the record ``text[start:end]`` (csv.reader's ``row``) so that its formula cells are empty, with
    how much each counts: a field whole, or a quoted one's text but its quotes and line breaks (the file's line
    numbers stay). Fails closed, with the line, where the record does not split as csv.reader split it."""
    fields = _fields(text, start, end, delimiter)
    if [value for _, _, value in fields] != row:
        raise ParseError("a row holding a formula could not be split into its cells to leave the formula out", line=line)
    cuts = []
    for field_start, field_end, value in fields:
        if not runs_as_formula(value):
            continue
        breaks = list(_LINE_BREAK_RE.finditer(text, field_start, field_end))
        if not breaks:
            cuts.append(((field_start, field_end), counted(value)))
            continue
        if text[field_end - 1] != '"':
            raise ParseError("a formula cell over several lines goes on after its closing quote", line=line)
        keep = [field_start + 1, *(edge for found in breaks for edge in found.span()), field_end - 1]
        ranges = [(keep[k], keep[k + 1]) for k in range(0, len(keep), 2) if keep[k + 1] > keep[k]]
        cuts.extend((piece, counted(text[piece[0]:piece[1]])) for piece in ranges)
    return cuts


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


def parse_table_text(text: str, *, title: str, tabs: bool = False, delimiter: str | None = None,
                     formulas: list | None = None) -> ParsedDocument:
    """Build the document of an already-decoded CSV/TSV text (offsets index ``text``). With ``formulas`` (a list),
    what to cut of the text to leave its formula cells out is added to it (:func:`_formula_cuts`)."""
    # Module-global, so only ever raised: a 1 MB cell is a valid cell.
    if csv.field_size_limit() < len(text) + 1:
        csv.field_size_limit(len(text) + 1)
    delimiter = delimiter or _delimiter(text, tabs)
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
            record_start = previous_end
            row_start, row_end = _trim(text, previous_end, feed.consumed)
            first_line = bisect.bisect_right(feed.starts, row_start)  # 1-based
            previous_end = feed.consumed
            if row_start >= row_end or not any(cell.strip() for cell in row):
                continue
            if formulas is not None and any(runs_as_formula(cell) for cell in row):
                formulas.extend(_formula_cuts(text, record_start, feed.consumed, delimiter, row, first_line))
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
    the root's); a marker in what is cut still fails, with its line.

    Then a formula cell's text (twenty-second session, attack22x): a spreadsheet shows what it computes, the text
    shows the formula; the model gets neither (:func:`runs_as_formula`), the cell is read empty and its characters
    are counted as hidden. Read again from the text without them, with the delimiter chosen on the file."""
    removed = 0
    if terminal_hidden(text):
        reject_unread_markers(text)
        text, removed = terminal_shown(text)
    delimiter = _delimiter(text, tabs)
    cuts: list[tuple[tuple[int, int], int]] = []
    doc = parse_table_text(text, title=title, tabs=tabs, delimiter=delimiter, formulas=cuts)
    if cuts:
        reject_unread_markers(text)
        doc = parse_table_text(cut_ranges(text, [piece for piece, _ in cuts]), title=title, tabs=tabs,
                               delimiter=delimiter)
        removed += sum(count for _, count in cuts)
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
