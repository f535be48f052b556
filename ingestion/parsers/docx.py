"""DOCX (Word) documents via python-docx: heading styles make the section tree.

* ``Title`` and ``Heading 1`` .. ``Heading 9`` paragraphs open sections (Title is
  level 0, above Heading 1).  The style is read by name, falling back to the raw
  style id (``Heading1``) when the file's styles part does not define it.
* Other paragraphs become ``prose`` blocks; list paragraphs (a ``List ...`` style
  or numbering properties) become ``list_item`` blocks.
* Each table becomes a ``table`` section (a child of the current heading) whose
  blocks are its rows: ``table_row``, ``joinable=False``, with ``embed_text``
  ``"Column: value | ..."`` built from the first row as header.  The section's
  ``metadata["table"]`` gives the whole table's span for the whole-table chunk.
  A caption paragraph (style ``Caption``) right before a table names it.
* Content controls (``w:sdt``) are looked into; headers, footers, footnotes,
  comments and text boxes are not indexed (running matter, not body text).  Their text,
  and every other text of the package that is not indexed (field codes, tracked
  insertions and deletions, the document properties), is still checked for access
  markers (:func:`_unindexed_text`): leaving it out must not make a marker a silent pass.

The document text is the extracted text (see
:mod:`ingestion.parsers.extracted_text`).  The zip container is checked before
anything is decompressed: a file that would inflate past :data:`MAX_UNCOMPRESSED_BYTES`
or with a member compressed more than :data:`MAX_COMPRESSION_RATIO` times is refused
as a likely zip bomb, and so is one whose XML parts (which become in-memory trees)
exceed :data:`MAX_XML_PART_BYTES` each or :data:`MAX_XML_BYTES` together.  A body
with more than :data:`MAX_PARAGRAPHS` paragraphs or :data:`MAX_TABLE_CELLS` table
cells is refused before it is walked.  Whatever these limits miss, the worker's
per-document memory and time budget (:mod:`ingestion.limits`) stops.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator

from ingestion import costs
from ingestion.parsers.access_markers import reject_hidden_markers, reject_unread_markers
from ingestion.parsers.docx_hidden import RunVisibility
from ingestion.parsers.extracted_text import CELL_SEPARATOR, ExtractedText
from ingestion.parsers.registry import register
from ingestion.parsers.visible_text import counted
from ingestion.structure import ParsedDocument, ParseError

DOCX_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
MAX_UNCOMPRESSED_BYTES = 200 * 1024 * 1024
# Ordinary DOCX XML compresses 5-20x; a member inflating over 100x and over 1 MiB is
# not a document.  Small members are exempt: a tiny repetitive XML part may exceed
# the ratio harmlessly.
MAX_COMPRESSION_RATIO = 100
RATIO_CHECK_MIN_BYTES = 1024 * 1024
MAX_MEMBERS = 10_000
# python-docx parses the XML parts into lxml trees (10-20x their size in memory) and
# walks the body in Python (~150 us a paragraph): within the ratio above, a 14 MB
# file inflating to 199 MB of document.xml took two minutes and 3.7 GB.  The largest
# real documents (a thousand pages) hold a few MB of XML and tens of thousands of
# paragraphs.
MAX_XML_PART_BYTES = 32 * 1024 * 1024
MAX_XML_BYTES = 64 * 1024 * 1024
MAX_PARAGRAPHS = 100_000
MAX_TABLE_CELLS = 100_000

_HEADING_RE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)


def check_zip_container(data: bytes) -> zipfile.ZipFile:
    """Open ``data`` as a zip and refuse it before inflating anything suspicious.

    The sizes checked are the ones the central directory declares; zipfile stops
    reading a member at its declared size, so a member cannot inflate past them.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, OSError, EOFError, NotImplementedError):
        raise ParseError("not a DOCX file (not a zip archive, or a truncated one)") from None
    members = archive.infolist()
    if len(members) > MAX_MEMBERS:
        raise ParseError(f"refusing DOCX: {len(members)} zip members (over {MAX_MEMBERS}); likely a zip bomb")
    total = 0
    xml_total = 0
    for member in members:
        total += member.file_size
        if member.filename.lower().endswith((".xml", ".rels")):
            xml_total += member.file_size
            if member.file_size > MAX_XML_PART_BYTES:
                raise ParseError(
                    f"refusing DOCX: {member.filename!r} is {_mb(member.file_size)} uncompressed "
                    f"(the limit for one XML part is {_mb(MAX_XML_PART_BYTES)})"
                )
        if member.file_size >= RATIO_CHECK_MIN_BYTES:
            ratio = member.file_size / max(member.compress_size, 1)
            if ratio > MAX_COMPRESSION_RATIO:
                raise ParseError(
                    f"refusing DOCX: member {member.filename!r} inflates {ratio:.0f}x "
                    f"(over {MAX_COMPRESSION_RATIO}x); likely a zip bomb"
                )
    if total > MAX_UNCOMPRESSED_BYTES:
        raise ParseError(
            f"refusing DOCX: {total} bytes uncompressed (over {MAX_UNCOMPRESSED_BYTES}); likely a zip bomb"
        )
    if xml_total > MAX_XML_BYTES:
        raise ParseError(
            f"refusing DOCX: its XML parts hold {_mb(xml_total)} uncompressed (the limit is {_mb(MAX_XML_BYTES)})"
        )
    costs.charge("docx_xml_bytes", xml_total, subject="this DOCX", detail="uncompressed")  # the lane's budget
    return archive


def _mb(size: int) -> str:
    return f"{size / (1024 * 1024):.1f} MB"


def check_body_size(body) -> None:
    """Refuse a body with more paragraphs or table cells than a document has, before walking it in Python."""
    from docx.oxml.ns import qn

    paragraph_tag, cell_tag = qn("w:p"), qn("w:tc")
    paragraphs = cells = 0
    for element in body.iter(paragraph_tag, cell_tag):
        if element.tag == paragraph_tag:
            paragraphs += 1
            if paragraphs > MAX_PARAGRAPHS:
                raise ParseError(f"refusing DOCX: more than {MAX_PARAGRAPHS:,} paragraphs")
        else:
            cells += 1
            if cells > MAX_TABLE_CELLS:
                raise ParseError(f"refusing DOCX: more than {MAX_TABLE_CELLS:,} table cells")


def _style_name(paragraph, cache: dict[str | None, str] | None = None) -> str:
    """The paragraph style's name, or its raw id when the styles part lacks it.

    The name depends only on the paragraph's style id, and python-docx resolves it
    by scanning every style of the document (every enum attribute of each, for the
    default style), so ``cache`` maps the ids already resolved: without it a page
    of short paragraphs costs milliseconds each.
    """
    if cache is None:
        return _resolve_style_name(paragraph)
    style_id = paragraph._p.style
    name = cache.get(style_id)
    if name is None:
        name = cache[style_id] = _resolve_style_name(paragraph)
    return name


def _resolve_style_name(paragraph) -> str:
    try:
        style = paragraph.style
        name = style.name if style is not None else None
    except (KeyError, ValueError, AttributeError):
        name = None
    return name or paragraph._p.style or ""


def _heading_level(style: str) -> int | None:
    """0 for Title, 1..9 for Heading N, None for anything else."""
    if style.strip().lower() == "title":
        return 0
    match = _HEADING_RE.fullmatch(style.strip())
    return int(match.group(1)) if match else None


def _list_level(paragraph, style: str) -> int | None:
    """Nesting level (0-based) of a list paragraph, None when it is not one."""
    ppr = paragraph._p.pPr
    num_pr = ppr.numPr if ppr is not None else None
    if num_pr is not None:
        ilvl = num_pr.ilvl
        return int(ilvl.val) if ilvl is not None and ilvl.val is not None else 0
    if "list" in style.lower():
        return 0
    return None


def _iter_body(parent_element, parent) -> Iterator:
    """Paragraphs and tables in document order, looking inside content controls."""
    from docx.oxml.ns import qn
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    paragraph_tag, table_tag = qn("w:p"), qn("w:tbl")
    containers = {qn("w:sdt"): qn("w:sdtContent"), qn("w:customXml"): None}
    for child in parent_element.iterchildren():
        if child.tag == paragraph_tag:
            yield Paragraph(child, parent)
        elif child.tag == table_tag:
            yield Table(child, parent)
        elif child.tag in containers:
            inner_tag = containers[child.tag]
            inner = child.find(inner_tag) if inner_tag else child
            if inner is not None:
                yield from _iter_body(inner, parent)


def _cell_text(cell, visibility: RunVisibility, hidden: list[str]) -> str:
    """A cell's paragraphs, and the rows of any table nested in it, as one string (what a reader sees)."""
    from docx.table import Table

    parts = []
    for item in _iter_body(cell._tc, cell):
        if isinstance(item, Table):
            rows = (CELL_SEPARATOR.join(text for _, text in _grid_runs(cells, visibility, hidden))
                    for cells in _row_cells(item))
            parts.append("; ".join(rows))
        else:
            parts.append(visibility.paragraph_text(item._p, cell._tc, hidden))
    return " ".join(" ".join(p.split()) for p in parts if p.strip())


def _row_cells(table) -> Iterator[list]:
    """Each row's cells, one per grid column it covers, as python-docx's ``row.cells`` gives them.

    A cell continuing a vertical merge (``w:vMerge`` without ``restart``) is the
    merge's first cell, with that cell's span.  python-docx finds it by walking up
    one row at a time, with an XPath query per step and per cell offset: cubic in
    the rows of a merged column (a 38 KB file of 200 merged rows by 50 columns took
    six minutes).  Here each row remembers where its cells start and which cell
    each one stands for, so the row below looks its cell up in one step.
    """
    from docx.table import _Cell

    above: dict[int, object] | None = None  # grid offset -> the first cell that a cell starting there stands for
    for tr in table._tbl.tr_lst:
        here: dict[int, object] = {}
        cells: list = []
        offset = tr.grid_before
        reach = None  # the largest offset seen so far: python-docx stops looking past it
        for tc in tr.tc_lst:
            if tc.vMerge == "continue":
                if above is None:
                    raise ValueError("no tr above topmost tr in w:tbl")
                if offset not in above:
                    raise ValueError(f"no `tc` element at grid_offset={offset}")
                root = above[offset]
            else:
                root = tc
            if offset not in here and (reach is None or offset >= reach):
                here[offset] = root
            reach = offset if reach is None else max(reach, offset)
            cell = _Cell(root, table)
            cells.extend([cell] * root.grid_span)
            offset += tc.grid_span
        above = here
        yield cells


def _grid_runs(cells: list, visibility: RunVisibility, hidden: list[str]) -> list[tuple[list[int], str]]:
    """The row's cells as (grid columns covered, text): a merged cell is one run over several columns.

    ``cells`` (from :func:`_row_cells`) repeats a merged cell once per grid column
    it covers (and a vertically merged cell in every row it spans), so runs of the
    same cell are folded back into one.
    """
    runs: list[tuple[list[int], str]] = []
    previous = None
    for column, cell in enumerate(cells):
        if runs and cell._tc is previous:
            runs[-1][0].append(column)
            continue
        previous = cell._tc
        runs.append(([column], _cell_text(cell, visibility, hidden)))
    return runs


def _table_rows(table, visibility: RunVisibility,
                hidden: list[str]) -> tuple[list[str], list[list[str]], list[list[str]], list[int]]:
    """Header line cells, data rows, each data row's column names, and each data row's 1-based number.

    Column names follow the grid: a data cell spanning two header columns ``A`` and
    ``B`` is named ``A / B``.  A table of one row has no header to spare: its row is
    data and its columns get generic names.
    """
    grid = [_grid_runs(cells, visibility, hidden) for cells in _row_cells(table)]
    grid = [runs for runs in grid if any(text.strip() for _, text in runs)]
    if not grid:
        return [], [], [], []
    if len(grid) == 1:
        header_runs: list[tuple[list[int], str]] = []
        data = grid
    else:
        header_runs, data = grid[0], grid[1:]
    names_by_column: dict[int, str] = {}
    for columns, text in header_runs:
        for column in columns:
            names_by_column[column] = text
    rows, row_columns = [], []
    for runs in data:
        values, names = [], []
        for columns, text in runs:
            labels = []
            for column in columns:
                label = names_by_column.get(column) or f"Column {column + 1}"
                if label not in labels:
                    labels.append(label)
            values.append(text)
            names.append(" / ".join(labels))
        rows.append(values)
        row_columns.append(names)
    header = [text for _, text in header_runs]
    return header, rows, row_columns, list(range(1, len(rows) + 1))


def _load(data: bytes):
    import docx
    from docx.opc.exceptions import PackageNotFoundError

    archive = check_zip_container(data)
    names = set(archive.namelist())
    if "word/document.xml" not in names and not any(n.endswith("/document.xml") for n in names):
        raise ParseError("not a DOCX file: the archive has no word/document.xml")
    try:
        return docx.Document(io.BytesIO(data))
    except PackageNotFoundError:
        raise ParseError("not a DOCX file (no Word document package found)") from None
    except (KeyError, ValueError, zipfile.BadZipFile, zlib.error, OSError, EOFError, SyntaxError, NotImplementedError,
            AttributeError, TypeError, IndexError, RecursionError) as exc:
        # lxml's XMLSyntaxError is a SyntaxError; KeyError: a missing part; zlib.error and
        # BadZipFile (bad CRC): a damaged member; the rest: XML that is not the expected shape.
        raise ParseError(f"not a readable DOCX file: {exc}") from None


@register(content_types=[DOCX_CONTENT_TYPE], extensions=[".docx"], priced=True)
def parse_docx(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a Word .docx file into headings, paragraphs, list items and table sections."""
    from docx.table import Table

    document = _load(data)
    check_body_size(document.element.body)
    visibility = RunVisibility(document)
    hidden: list[str] = []  # the text of every run a reader does not see, left out
    out = ExtractedText()
    table_count = 0
    style_names: dict[str | None, str] = {}
    pending_caption: str | None = None
    doc_title = ""
    try:
        doc_title = (document.core_properties.title or "").strip()
    except (KeyError, ValueError, AttributeError):
        doc_title = ""
    title_heading = None  # the Title paragraph the title is taken from, when the file's properties name none
    titles: list = []
    try:
        items = list(_iter_body(document.element.body, document._body))
        for item in items:
            if isinstance(item, Table):
                table_count += 1
                first_hidden = len(hidden)
                header, rows, row_columns, numbers = _table_rows(item, visibility, hidden)
                table_hidden = sum(counted(piece) for piece in hidden[first_hidden:])
                caption = pending_caption
                pending_caption = None
                if not rows:
                    if caption:
                        out.block(caption)
                    out.hidden(table_hidden)
                    continue
                out.table(title=caption or f"Table {table_count}", header=header, rows=rows, caption=caption,
                          row_metadata=[{"row": n} for n in numbers], row_columns=row_columns, hidden=table_hidden)
                continue
            first_hidden = len(hidden)
            text = visibility.paragraph_text(item._p, None, hidden).strip()
            paragraph_hidden = sum(counted(piece) for piece in hidden[first_hidden:])
            if not text:
                out.hidden(paragraph_hidden)
                continue
            style = _style_name(item, style_names)
            if pending_caption is not None:
                # The caption was not followed by a table: it is an ordinary paragraph.
                out.block(pending_caption)
                pending_caption = None
            level = _heading_level(style)
            if level is not None:
                # Title is level 0; shift so the builder's levels start at 1.
                heading = out.heading(level=level + 1, title=text)
                if level == 0 and not doc_title:
                    doc_title, title_heading = text, heading
                if level == 0 and text.strip():
                    titles.append((heading, text))  # each Title paragraph (ParsedDocument.title_candidates)
                out.hidden(paragraph_hidden)
                continue
            out.hidden(paragraph_hidden)
            if style.strip().lower() == "caption":
                pending_caption = text
                continue
            list_level = _list_level(item, style)
            if list_level is not None:
                out.block(text, "list_item", metadata={"list_level": list_level})
            else:
                out.block(text)
        if pending_caption is not None:
            out.block(pending_caption)
    except RecursionError:
        raise ParseError("DOCX nesting too deep to read") from None
    except (ValueError, KeyError, AttributeError, TypeError, IndexError) as exc:
        # python-docx assumes well-formed WordprocessingML (e.g. a table grid that matches its rows).
        raise ParseError(f"not a readable DOCX file: malformed document structure ({exc})") from None
    reject_hidden_markers(hidden, where="hidden text of the DOCX (a run Word does not show)")
    text, sections = out.finish()
    reject_unread_markers(text)  # the registry does too; first here, so a marker in the indexed text names its line
    reject_hidden_markers(_unindexed_text(document), where="text of the DOCX that is not indexed (a header, footer, "
                          "footnote, comment, text box, field code, tracked change or document property)")
    # The section bearing the title: the Title paragraph's own, or the root for the file's properties' title.
    title_key = title_heading.key if title_heading is not None else sections[0].key
    candidates = [*([(sections[0].key, doc_title)] if doc_title and title_heading is None else []),
                  *((heading.key, title) for heading, title in titles)]
    return ParsedDocument(text=text, sections=sections, title=doc_title or None, title_key=title_key,
                          title_candidates=candidates,
                          metadata={"format": "docx", "tables": table_count})


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
# Elements whose text Word shows or keeps as text: runs, field codes, deleted (tracked) runs.
_TEXT_TAGS = frozenset(f"{_W}{name}" for name in ("t", "instrText", "delText", "delInstrText"))
# Attributes holding text: a simple field's code, a hyperlink's tooltip, a drawing's alt text and title.
_TEXT_ATTRIBUTES = (f"{_W}instr", f"{_W}tooltip", "descr", "title")


def _unindexed_text(document) -> Iterator[str]:
    """The text of every XML part of the package, one piece per paragraph (runs joined, so a marker split over
    runs is whole) and one per other text-bearing element or attribute: headers, footers, footnotes, endnotes,
    comments, text boxes, fields, tracked changes, the core and custom properties. The body's indexed text comes
    again; the registry checks it anyway. Linear: one walk of each part, a buffer per open paragraph."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    for part in document.part.package.iter_parts():
        root = getattr(part, "_element", None)
        if root is None:
            if not str(part.partname).endswith(".xml") and "xml" not in str(part.content_type):
                continue
            try:
                root = etree.fromstring(part.blob, parser)
            except (etree.XMLSyntaxError, ValueError):
                continue
        paragraphs: list[list[str]] = []
        for event, element in etree.iterwalk(root, events=("start", "end")):
            if not isinstance(element.tag, str):
                continue
            if element.tag == f"{_W}p":
                if event == "start":
                    paragraphs.append([])
                else:
                    yield "".join(paragraphs.pop())
                continue
            if event != "start":
                continue
            for name in _TEXT_ATTRIBUTES:
                value = element.get(name)
                if value:
                    yield value
            if element.tag in _TEXT_TAGS:
                (paragraphs[-1] if paragraphs else [""]).append(element.text or "")
                if not paragraphs:
                    yield element.text or ""
            elif element.tag in (f"{_W}tab", f"{_W}br", f"{_W}cr") and paragraphs:
                paragraphs[-1].append("\t" if element.tag == f"{_W}tab" else "\n")
            elif not element.tag.startswith(_W) and element.text and element.text.strip() and len(element) == 0:
                yield element.text  # a document property (title, subject, comments, a custom property)
