"""Tables inside plain text: runs of pipe- or tab-delimited lines.

A report pasted as text keeps its tables as lines such as ``Revenue | 2023 | 2024``
or tab-separated cells.  Cut like prose, a table loses its header after the first
chunk and mixes rows with the paragraph around it; recognised, it becomes one
chunk when it fits the model input, else groups of whole rows that each embed the
header line.  Detection errs towards "not a table": at least ``MIN_ROWS`` lines in
a row with the same delimiter, each with at least two non-empty cells; a short
line without the delimiter (a group label such as ``**Week**``) may sit between
rows.

A Markdown (GFM) pipe table's delimiter row (``|---|:---:|``) is part of its header when
``delimiter_rows`` is asked for: without it that row, whose pipes have no space around them,
ends the run, so the table was found from its first data row on (that row read as the header)
and its real header line was left with the prose above it.
"""

from __future__ import annotations

import re

MIN_ROWS = 3
MAX_LABEL_CHARS = 40
MAX_LABEL_RUN = 3  # group labels in a row that ``label_columns`` looks past for the next row (a bounded look)
# A numeric cell: a number with optional sign, currency, thousands separators, decimals,
# percent sign or accounting brackets ("1,234.5", "-3%", "(12.0)", "EUR 40", "n/a" is not).
_NUMBER = re.compile(r"[-+\u2212(]?(?:[$\u20ac\u00a3]|[A-Z]{3} )?\d[\d,.\u2009 ]*%?\)?")
# A pipe separates cells only with space around it (``a | b``) or at a line's edge
# (``| a | b |``): ``{{ value|date }}`` is template code, not a table.
_PIPE = re.compile(r"\s\|(?=\s)")
# A GFM delimiter row (matched on the stripped line): cells of hyphens with optional alignment
# colons. No two whitespace runs are adjacent in the pattern, so it runs in linear time on any line
# (a document's text is the uploader's).
_DELIMITER_ROW = re.compile(r"\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?")


def is_delimiter_row(line: str) -> bool:
    """Whether ``line`` is a Markdown pipe table's delimiter row (``|---|:--:|``, ``--- | ---``); it
    needs a pipe (``---`` alone is a thematic break, not a table)."""
    stripped = line.strip()
    return "|" in stripped and bool(_DELIMITER_ROW.fullmatch(stripped))


def compact_delimiter_row(line: str) -> str:
    """A delimiter row with each cell's run of hyphens shortened to three, alignment colons kept
    (``|:-----:|------|`` -> ``|:---:|---|``); a padded table's row can hold hundreds of hyphens."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    return "|" + "|".join(c[:1].replace("-", "") + "---" + c[-1:].replace("-", "") for c in cells) + "|"


def _cells(line: str, delimiter: str) -> int:
    stripped = line.strip()
    if delimiter == "|":
        stripped = " " + stripped.strip("|") + " "
        parts = _PIPE.split(stripped)
    else:
        parts = stripped.split("\t")
    if len(parts) < 2:
        return 0
    return sum(1 for cell in parts if cell.strip())


def _parts(line: str, delimiter: str) -> list[str]:
    stripped = line.strip()
    if delimiter == "|":
        return [p.strip() for p in _PIPE.split(" " + stripped.strip("|") + " ")]
    return [p.strip() for p in stripped.split("\t")]


def is_data_table(text: str, start: int, end: int, *, delimiter_rows: bool = False) -> bool:
    """Whether the table on the lines of ``text[start:end]`` is a table of records with numbers.

    Bare rows (``Segment | 2023 | 2024``, no leading pipe or separator line needed): every line
    has the same number of cells as the header line, no line is a group label, and at least half
    of the rows below the header hold a numeric cell. Such a table is looked up one row at a time
    (a company's value in one year), so each row can stand on its own with the header.
    """
    lines = [text[s:e] for s, e in _line_spans(text, start, end) if text[s:e].strip()]
    if len(lines) < MIN_ROWS:
        return False
    delimiter = _delimiter(lines[0])
    if delimiter is None:
        return False
    width = len(_parts(lines[0], delimiter))
    # A Markdown delimiter row (``delimiter_rows``, see find_tables) is part of the header, not a record.
    rows = [_parts(line, delimiter) for line in lines[1:] if not (delimiter_rows and is_delimiter_row(line))]
    if not rows:
        return False
    if any(len(cells) != width or sum(1 for c in cells if c) < 2 for cells in rows):
        return False
    numeric = sum(1 for cells in rows if any(_NUMBER.fullmatch(c) for c in cells[1:]))
    return 2 * numeric >= len(rows)


def labelled_rows(header: str, body: str) -> str:
    """The lines of ``body`` with each row of the table whose header is ``header`` written with its column
    labels: ``2021 | 168.2 | 9.6`` under ``Year | Revenue | Profit`` reads ``2021: Revenue 168.2; Profit 9.6``
    (empty cells left out). ``header`` may hold a Markdown delimiter row under its first line (ignored); a
    line that is not a row of the header's width (a group label) is kept as it is. Used for the text a
    table's chunks embed (``ChunkingConfig.table_row_labels``); a row's numbers alone say little to the model
    about which measure they are."""
    head = next((line for line in header.split("\n") if line.strip() and not is_delimiter_row(line)), "")
    delimiter = _delimiter(head)
    if delimiter is None:
        return body
    labels = _parts(head, delimiter)
    out = []
    for line in body.split("\n"):
        if is_delimiter_row(line):
            continue
        cells = _parts(line, delimiter) if _cells(line, delimiter) >= 2 else []
        if len(cells) != len(labels):
            out.append(line)
            continue
        pairs = "; ".join(f"{label} {cell}".strip() for label, cell in zip(labels[1:], cells[1:], strict=True) if cell)
        out.append(f"{cells[0]}: {pairs}" if cells[0] else pairs)
    return "\n".join(out)


def _line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    out = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        line_end = end if nl < 0 else nl
        out.append((pos, line_end))
        pos = line_end + 1
    return out


def is_row(line: str, header: str) -> bool:
    """Whether ``line`` is a row of the table whose header line is ``header`` (else a group label)."""
    delimiter = _delimiter(header)
    return delimiter is not None and _cells(line, delimiter) >= 2


def _delimiter(line: str) -> str | None:
    for delimiter in ("|", "\t"):
        if _cells(line, delimiter) >= 2:
            return delimiter
    return None


def _label_inside(text: str, lines: list[tuple[int, int]], at: int, delimiter: str, columns: int) -> bool:
    """Whether the label line ``lines[at]`` is followed by a row with ``columns`` columns (at most
    ``MAX_LABEL_RUN`` labels may follow one another; a line that is neither a label nor a row ends the look)."""
    for ls, le in lines[at + 1 : at + 1 + MAX_LABEL_RUN]:
        line = text[ls:le]
        if _cells(line, delimiter) >= 2:
            return len(_parts(line, delimiter)) == columns
        if not (line.strip() and len(line.strip()) <= MAX_LABEL_CHARS and delimiter not in line):
            return False
    return False


def find_tables(
    text: str, start: int, end: int, *, delimiter_rows: bool = False, label_columns: bool = False
) -> list[tuple[int, int, int]]:
    """Tables in ``text[start:end]`` as ``(table_start, header_end, table_end)``, in order.

    ``header_end`` is the end of the first line (the header row); spans are trimmed
    to the table's lines (no trailing newline).

    With ``delimiter_rows``, a header line followed by a Markdown delimiter row with its cell
    count (``| a | b |`` then ``|---|---|``) starts a table whose header is both lines
    (``header_end`` is the delimiter row's end): every row group then repeats a valid Markdown
    header. The delimiter row makes it a table with a single data row too (it cannot be prose).

    A short line without the delimiter between rows (``MAX_LABEL_CHARS``) is a group label inside the
    table. With ``label_columns``, only when the row after it has the header's columns: otherwise it is
    the lead-in of another table (``Projects under way:`` between a four-column and a six-column table),
    and the table ends before it.
    """
    lines = _line_spans(text, start, end)
    out: list[tuple[int, int, int]] = []
    i = 0
    while i < len(lines):
        s, e = lines[i]
        delimiter = _delimiter(text[s:e])
        if delimiter is None:
            i += 1
            continue
        j = i + 1
        rows = 1
        last = i
        header_end = e
        if delimiter_rows and delimiter == "|" and j < len(lines):
            ds, de = lines[j]
            line = text[ds:de]
            # The delimiter row's pipes need no space around them: its cells are counted on their own.
            if is_delimiter_row(line) and len(line.strip().strip("|").split("|")) == len(_parts(text[s:e], "|")):
                rows += 1  # header + delimiter row: a table as soon as one data row follows
                last = j
                header_end = de
                j += 1
        while j < len(lines):
            ls, le = lines[j]
            line = text[ls:le]
            if _cells(line, delimiter) >= 2:
                rows += 1
                last = j
            elif not (line.strip() and len(line.strip()) <= MAX_LABEL_CHARS and delimiter not in line):
                break
            elif label_columns and not _label_inside(text, lines, j, delimiter, len(_parts(text[s:e], delimiter))):
                break
            j += 1
        if rows >= MIN_ROWS:
            out.append((lines[i][0], header_end, lines[last][1]))
            i = last + 1
        else:
            i += 1
    return out
