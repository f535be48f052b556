"""Tables inside plain text: runs of pipe- or tab-delimited lines.

A report pasted as text keeps its tables as lines such as ``Revenue | 2023 | 2024``
or tab-separated cells.  Cut like prose, a table loses its header after the first
chunk and mixes rows with the paragraph around it; recognised, it becomes one
chunk when it fits the model input, else groups of whole rows that each embed the
header line.  Detection errs towards "not a table": at least ``MIN_ROWS`` lines in
a row with the same delimiter, each with at least two non-empty cells; a short
line without the delimiter (a group label such as ``**Week**``) may sit between
rows.
"""

from __future__ import annotations

import re

MIN_ROWS = 3
MAX_LABEL_CHARS = 40
# A pipe separates cells only with space around it (``a | b``) or at a line's edge
# (``| a | b |``): ``{{ value|date }}`` is template code, not a table.
_PIPE = re.compile(r"\s\|(?=\s)")


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


def is_row(line: str, header: str) -> bool:
    """Whether ``line`` is a row of the table whose header line is ``header`` (else a group label)."""
    delimiter = _delimiter(header)
    return delimiter is not None and _cells(line, delimiter) >= 2


def _delimiter(line: str) -> str | None:
    for delimiter in ("|", "\t"):
        if _cells(line, delimiter) >= 2:
            return delimiter
    return None


def find_tables(text: str, start: int, end: int) -> list[tuple[int, int, int]]:
    """Tables in ``text[start:end]`` as ``(table_start, header_end, table_end)``, in order.

    ``header_end`` is the end of the first line (the header row); spans are trimmed
    to the table's lines (no trailing newline).
    """
    lines: list[tuple[int, int]] = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        line_end = end if nl < 0 else nl
        lines.append((pos, line_end))
        pos = line_end + 1
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
        while j < len(lines):
            ls, le = lines[j]
            line = text[ls:le]
            if _cells(line, delimiter) >= 2:
                rows += 1
                last = j
            elif not (line.strip() and len(line.strip()) <= MAX_LABEL_CHARS and delimiter not in line):
                break
            j += 1
        if rows >= MIN_ROWS:
            out.append((lines[i][0], lines[i][1], lines[last][1]))
            i = last + 1
        else:
            i += 1
    return out
