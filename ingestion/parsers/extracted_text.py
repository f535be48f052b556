"""Building the *extracted* text of a binary format (PDF, DOCX, e-mail) with its section tree.

For these formats there is no file text to point into: the parser builds the
document text itself, and every span points into that built text.  A parser
records what it meets in document order -- headings, body blocks, tables -- and
:meth:`ExtractedText.finish` lays them out as plain text (a heading on its own
line, blocks separated by a blank line, table rows one per line) and replays them
into the shared :class:`~ingestion.parsers.section_tree.SectionTreeBuilder`, so
keys, depths, heading paths and section ends follow exactly the same rules as for
the text formats.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ingestion.parsers.section_tree import SectionTreeBuilder
from ingestion.parsers.tables import clean_cell, column_names, serialize_row
from ingestion.structure import Block, Section

BLOCK_SEPARATOR = "\n\n"
ROW_SEPARATOR = "\n"
CELL_SEPARATOR = " | "


@dataclass
class Heading:
    level: int
    title: str
    text: str  # what goes into the document text (may be several lines, e.g. mail headers)
    kind: str
    line: int | None
    metadata: dict
    context: str
    key: str | None = None  # its section's key, once :meth:`ExtractedText.finish` built the tree


@dataclass
class _Body:
    text: str
    kind: str
    embed_text: str | None
    joinable: bool
    metadata: dict


@dataclass
class _Hidden:
    """Characters of text a reader does not see, left out here: counted on the section open there."""

    count: int


@dataclass
class _Table:
    title: str
    caption: str | None
    header: list[str]
    rows: list[list[str]]
    row_metadata: list[dict]
    # Column names per row when they differ from ``header`` (merged cells in DOCX).
    row_columns: list[list[str]] | None = None
    hidden: int = 0  # characters of the table a reader does not see, left out


class ExtractedText:
    """Collects headings, blocks and tables in document order; builds text and sections once."""

    def __init__(self) -> None:
        self._items: list[Heading | _Body | _Table | _Hidden] = []

    def heading(self, *, level: int, title: str, text: str | None = None, kind: str = "heading",
                line: int | None = None, metadata: dict | None = None, context: str = "") -> Heading:
        """Open a section at heading ``level`` (1 = top); ``text`` is its heading line(s) in the text. Returns the
        heading, whose ``key`` names its section after :meth:`finish` (a parser's ``ParsedDocument.title_key``)."""
        title = " ".join(title.split())
        heading = Heading(level, title, (text if text is not None else title).strip(), kind, line, metadata or {},
                           context)
        self._items.append(heading)
        return heading

    def block(self, text: str, kind: str = "prose", *, embed_text: str | None = None, joinable: bool = True,
              metadata: dict | None = None) -> None:
        """A body block of the innermost open heading; blank text is ignored."""
        if text.strip():
            self._items.append(_Body(text.strip(), kind, embed_text, joinable, metadata or {}))

    def hidden(self, count: int) -> None:
        """``count`` characters of text a reader does not see were left out here (see ``Section.hidden_chars_removed``)."""
        if count:
            self._items.append(_Hidden(count))

    def table(self, *, title: str, header: Sequence[str], rows: Sequence[Sequence[str]], caption: str | None = None,
              row_metadata: Sequence[dict] | None = None,
              row_columns: Sequence[Sequence[str]] | None = None, hidden: int = 0) -> None:
        """A table section (child of the innermost heading): one ``table_row`` block per data row.

        ``row_columns`` optionally names the columns of each row separately (a row whose
        merged cells span several header columns); by default every row uses ``header``.
        """
        width = max([len(header), *(len(r) for r in rows)] or [0])
        names = column_names(header, width)
        cleaned_rows = [[clean_cell(c) for c in row] for row in rows]
        metas = list(row_metadata) if row_metadata is not None else [{} for _ in rows]
        per_row = [list(c) for c in row_columns] if row_columns is not None else None
        self._items.append(_Table(title, caption, names, cleaned_rows, metas, per_row, hidden))

    @property
    def empty(self) -> bool:
        return not any(isinstance(i, _Body | _Table) for i in self._items)

    def finish(self) -> tuple[str, list[Section]]:
        """Lay the items out as text and build the section tree over it."""
        pieces: list[str] = []
        length = 0
        spans: list[tuple[int, int] | list[tuple[int, int]]] = []

        def put(piece: str) -> tuple[int, int]:
            nonlocal length
            if pieces:
                pieces.append(BLOCK_SEPARATOR)
                length += len(BLOCK_SEPARATOR)
            start = length
            pieces.append(piece)
            length += len(piece)
            return start, length

        for item in self._items:
            if isinstance(item, _Table):
                # Caption line (if any) and header line, then one line per row.
                row_spans: list[tuple[int, int]] = []
                lines = []
                if item.caption:
                    lines.append(" ".join(item.caption.split()))
                lines.append(CELL_SEPARATOR.join(item.header))
                head = "\n".join(lines)
                head_span = put(head)
                row_spans.append(head_span)
                for row in item.rows:
                    line = CELL_SEPARATOR.join(row).strip()
                    pieces.append(ROW_SEPARATOR)
                    length += len(ROW_SEPARATOR)
                    start = length
                    pieces.append(line)
                    length += len(line)
                    row_spans.append((start, length))
                spans.append(row_spans)
            elif isinstance(item, _Hidden):
                spans.append((length, length))
            else:
                spans.append(put(item.text) if item.text else (length, length))
        text = "".join(pieces)

        builder = SectionTreeBuilder(text)
        for item, span in zip(self._items, spans, strict=True):
            if isinstance(item, _Hidden):
                builder.current.hidden_chars_removed += item.count
            elif isinstance(item, Heading):
                start, end = span  # type: ignore[misc]
                section = builder.open_heading(level=item.level, title=item.title, start=start, heading_end=end,
                                               line=item.line)
                section.kind = item.kind
                section.metadata = item.metadata
                section.context = item.context
                item.key = section.key
            elif isinstance(item, _Body):
                start, end = span  # type: ignore[misc]
                builder.add_block(start, end, item.kind, embed_text=item.embed_text, joinable=item.joinable,
                                  metadata=item.metadata)
            else:
                row_spans = span  # type: ignore[assignment]
                table_start, table_end = row_spans[0][0], row_spans[-1][1]
                blocks = []
                columns = item.row_columns or [item.header] * len(item.rows)
                for (start, end), row, meta, names in zip(row_spans[1:], item.rows, item.row_metadata, columns,
                                                          strict=True):
                    embed = serialize_row(names, row)
                    if start < end and embed:
                        blocks.append(Block(start=start, end=end, kind="table_row", embed_text=embed,
                                            joinable=False, metadata=meta))
                leaf = builder.add_leaf(kind="table", title=item.title, start=table_start, end=table_end,
                                        blocks=blocks, line=None,
                                        metadata={"table": {"start": table_start, "end": table_end,
                                                            "columns": list(item.header), "caption": item.caption,
                                                            "rows": len(blocks)}})
                leaf.hidden_chars_removed += item.hidden
        return text, builder.finish()
