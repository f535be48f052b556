"""PDF via pypdf: text in reading order, running headers/footers removed, outline as sections.

* Text comes from pypdf's ``extract_text()`` page by page (content-stream order,
  which for ordinary single-column documents is reading order).
* **Running headers and footers** -- lines that recur in the top or bottom
  :data:`ZONE_LINES` lines of at least half of the pages, compared modulo digits
  (``"Page 3 of 9"`` ~ ``"Page 4 of 9"``; a bare page number ``"12"`` ~ ``"13"``;
  roman numerals count as numbers) -- are removed from every page.  They would
  otherwise repeat in many chunks and split paragraphs that run across pages.
* **Sections**: when the PDF has an outline (bookmarks), each outline entry is a
  heading section at its outline depth, placed at the line of its target page
  that carries its title (else at the top of that page); text before the first
  entry belongs to the root.  Without an outline, each page is a ``page``
  section titled ``Page N``.
* **Blocks** are paragraphs, guessed from line lengths (a line well short of the
  usual width that ends a sentence closes a paragraph) and bullets; a paragraph
  that runs on across a page break stays one block.  ``Block.metadata["pages"]``
  lists the 1-based pages a block comes from.

The document text is the extracted text: heading lines and paragraphs separated by
blank lines, a paragraph's lines kept as they were.

Refused with a :class:`ParseError`: not a PDF, truncated or corrupt, encrypted
with a password (an owner-only password, which any viewer opens, is accepted), no
text layer (a scan: OCR is not supported).
"""

from __future__ import annotations

import io
import logging
import math
import re
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from ingestion import costs
from ingestion.parsers.access_markers import reject_hidden_markers, reject_unread_markers
from ingestion.parsers.extracted_text import ExtractedText
from ingestion.parsers.pdf_cost import price_pages
from ingestion.parsers.pdf_hidden import OCR_FLAG, PageText, page_text
from ingestion.parsers.registry import register
from ingestion.parsers.visible_text import counted
from ingestion.structure import ParsedDocument, ParseError

ZONE_LINES = 2  # lines at the top/bottom of a page that may be running headers/footers
MAX_PAGES = 5000
# A line at most this fraction of the usual line width that ends like a sentence ends a paragraph.
SHORT_LINE_FRACTION = 0.8

_DIGITS_RE = re.compile(r"\d+")
_ROMAN_RE = re.compile(r"[ivxlcdm]+", re.IGNORECASE)
_WS_RE = re.compile(r"\s+")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BULLET_RE = re.compile(r"[•◦▪▫‣⁃●○■□–—*-]\s|\(?[0-9a-zA-Z]{1,3}[.)]\s")
_SENTENCE_END = tuple(".:!?;)\"'’”")
_NON_ALNUM_RE = re.compile(r"[\W_]+")
# "2.13. Title", "A.1 Title", "IV Title": a section number, then the title.
_NUMBERED_RE = re.compile(r"(?:[0-9]{1,3}|[A-Z]|[IVXLC]{1,6})(?:\.[0-9]{1,3})*\.?\s+(\S.*)")


@dataclass
class _Line:
    page: int  # 1-based
    text: str


@dataclass
class _Entry:
    title: str
    depth: int  # 0 = top level
    page: int  # 0-based page index
    line: int = 0  # index into the page's kept lines where the section starts
    matched: bool = False  # the title was found on that line (it is the heading line)


@dataclass
class _Paragraph:
    lines: list[str] = field(default_factory=list)
    pages: list[int] = field(default_factory=list)


def _normalize(line: str) -> str:
    """A line compared modulo digits, case and spacing (for running header detection)."""
    line = _WS_RE.sub(" ", line.strip().lower())
    if _ROMAN_RE.fullmatch(line):
        return "#"
    return _DIGITS_RE.sub("#", line)


def running_lines(pages: list[list[str]]) -> tuple[set[str], set[str]]:
    """Normalized lines that recur at the top (headers) and bottom (footers) of many pages."""
    count = len(pages)
    if count < 2:
        return set(), set()
    threshold = max(2, math.ceil(count * 0.5))
    top: Counter[str] = Counter()
    bottom: Counter[str] = Counter()
    for lines in pages:
        top.update({_normalize(line) for line in lines[:ZONE_LINES]})
        bottom.update({_normalize(line) for line in lines[-ZONE_LINES:]})
    return ({n for n, c in top.items() if c >= threshold and n},
            {n for n, c in bottom.items() if c >= threshold and n})


def strip_running_lines(pages: list[list[str]]) -> list[list[str]]:
    """Each page's lines without its running header and footer lines."""
    headers, footers = running_lines(pages)
    kept = []
    for lines in pages:
        lines = list(lines)
        removed = 0
        while lines and removed < ZONE_LINES and _normalize(lines[0]) in headers:
            lines.pop(0)
            removed += 1
        removed = 0
        while lines and removed < ZONE_LINES and _normalize(lines[-1]) in footers:
            lines.pop()
            removed += 1
        kept.append(lines)
    return kept


def _open(data: bytes):
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, FileNotDecryptedError, PdfReadError, PdfStreamError

    if b"%PDF-" not in data[:1024]:
        raise ParseError("not a PDF file (no %PDF- header)")
    if b"%%EOF" not in data[-4096:]:
        raise ParseError("this PDF is truncated (its %%EOF end marker is missing); upload the complete file")
    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        encrypted = reader.is_encrypted
    except DependencyError:
        # pypdf needs the optional cryptography package for AES; we do not decrypt PDFs anyway.
        raise ParseError("this PDF is encrypted (AES); remove the password and upload it again") from None
    except (PdfReadError, PdfStreamError, ValueError, KeyError, TypeError, AttributeError, IndexError,
            RecursionError, OSError, EOFError) as exc:
        raise ParseError(f"this PDF is corrupt or truncated and cannot be read ({exc})") from None
    if encrypted:
        try:
            opened = reader.decrypt("")
        except (DependencyError, NotImplementedError, FileNotDecryptedError, PdfReadError, ValueError, KeyError):
            opened = 0
        if not opened:
            raise ParseError("this PDF is encrypted (password-protected); remove the password and upload it again")
    return reader


def _page_lines(reader, hidden: dict[int, PageText] | None = None) -> list[list[str]]:
    """Each page's lines of text as a reader sees it (:mod:`ingestion.parsers.pdf_hidden`); the pages
    with text left out or kept flagged go into ``hidden`` (by 0-based page index)."""
    from pypdf.errors import PdfReadError

    try:
        page_count = len(reader.pages)
    except (PdfReadError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        raise ParseError(f"this PDF is corrupt and its pages cannot be read ({exc})") from None
    if page_count == 0:
        raise ParseError("this PDF has no pages")
    if page_count > MAX_PAGES:
        raise ParseError(f"this PDF has {page_count} pages; at most {MAX_PAGES} are supported")
    price_pages(reader)  # what extracting every page costs, before any is (ingestion.costs)
    pages = []
    extracted = 0
    fonts: dict = {}  # glyph widths by font, read once for the document (ingestion.parsers.pdf_hidden)
    for index in range(page_count):
        try:
            shown = page_text(reader.pages[index], fonts)
            raw = shown.text
        except Exception as exc:  # noqa: BLE001 -- pypdf raises many types on broken content streams
            raise ParseError(f"this PDF is corrupt: text of page {index + 1} cannot be extracted ({exc})") from None
        extracted += len(raw)
        costs.charge("text_chars", extracted, subject="this PDF", detail=f"in its first {index + 1:,} pages")
        lines = [_WS_RE.sub(" ", _CONTROL_RE.sub("", line)).strip() for line in raw.splitlines()]
        pages.append([line for line in lines if line])
        if hidden is not None and (shown.hidden.strip() or shown.ocr_layer):
            hidden[index] = shown
    return pages


def _outline_entries(reader) -> list[_Entry]:
    """Outline entries in outline order with their depth and 0-based target page (invalid ones dropped)."""
    try:
        outline = reader.outline
    except Exception:  # noqa: BLE001 -- a broken outline is no reason to refuse the document
        return []
    entries: list[_Entry] = []
    stack: list[tuple[list, int, int]] = [(outline, 0, 0)]
    while stack:
        items, position, depth = stack.pop()
        if position >= len(items):
            continue
        stack.append((items, position + 1, depth))
        item = items[position]
        if isinstance(item, list):
            # A nested list holds the children of the entry just before it.
            stack.append((item, 0, depth + 1))
            continue
        try:
            title = " ".join(str(item.title or "").split())
            page = reader.get_destination_page_number(item)
        except Exception:  # noqa: BLE001 -- invalid destination: skip the entry
            continue
        if title and page is not None and page >= 0:
            entries.append(_Entry(title=title, depth=depth, page=page))
    return entries


def _match_key(text: str) -> str:
    """Letters and digits only: outline titles and page lines differ in hyphens, spaces, quotes."""
    return _NON_ALNUM_RE.sub("", text.lower())


def _title_matches(title: str, line: str) -> bool:
    """True when ``line`` is the heading line of ``title``, with or without a section number before it."""
    title_key, line_key = _match_key(title), _match_key(line)
    if not title_key or not line_key:
        return False
    if title_key == line_key:
        return True
    numbered_line = _NUMBERED_RE.fullmatch(line.strip())
    if numbered_line and _match_key(numbered_line.group(1)) == title_key:
        return True
    numbered_title = _NUMBERED_RE.fullmatch(title.strip())
    return bool(numbered_title and _match_key(numbered_title.group(1)) == line_key)


def _place_entries(entries: list[_Entry], pages: list[list[str]]) -> list[_Entry]:
    """Give each entry a line on its page, keeping positions in document order."""
    placed: list[_Entry] = []
    cursor = (0, 0)
    for entry in entries:
        if entry.page >= len(pages):
            continue
        lines = pages[entry.page]
        first = cursor[1] if entry.page == cursor[0] else 0
        if entry.page < cursor[0]:
            # Out-of-order outline: the section starts where the previous one did.
            entry.page, entry.line = cursor
        else:
            entry.line = first
            for index in range(first, len(lines)):
                if _title_matches(entry.title, lines[index]):
                    entry.line, entry.matched = index, True
                    break
        cursor = (entry.page, entry.line + (1 if entry.matched else 0))
        placed.append(entry)
    return placed


def _usual_width(pages: list[list[str]]) -> int:
    lengths = sorted(len(line) for lines in pages for line in lines)
    if not lengths:
        return 0
    return lengths[int(len(lengths) * 0.8)]


def _ends_paragraph(line: str, width: int) -> bool:
    return line.endswith(_SENTENCE_END) and len(line) < SHORT_LINE_FRACTION * width


class _Emitter:
    """Turns a stream of lines (with headings in between) into paragraph blocks."""

    def __init__(self, out: ExtractedText, width: int) -> None:
        self.out = out
        self.width = width
        self.current = _Paragraph()

    def flush(self) -> None:
        if self.current.lines:
            pages = sorted(set(self.current.pages))
            self.out.block("\n".join(self.current.lines), metadata={"pages": pages})
        self.current = _Paragraph()

    def line(self, line: _Line) -> None:
        if self.current.lines and _BULLET_RE.match(line.text):
            self.flush()
        self.current.lines.append(line.text)
        self.current.pages.append(line.page)
        if _ends_paragraph(line.text, self.width):
            self.flush()


def _metadata_title(reader) -> str | None:
    try:
        meta = reader.metadata
        return (str(meta.title).strip() or None) if meta is not None and meta.title else None
    except Exception:  # noqa: BLE001 -- metadata is optional; a broken info dictionary is no reason to refuse
        return None


# Entries of an annotation or form field that hold text a viewer shows (a note, its author and subject, a
# field's value and tooltip, a widget's caption).
_ANNOTATION_TEXT_KEYS = ("/Contents", "/T", "/TU", "/Subj", "/RC", "/V", "/DV", "/CA")


def _unindexed_text(reader) -> Iterator[str]:
    """Text of the PDF that is not indexed: the document information (title, subject, keywords...), and each
    page's annotations (notes, free text, widgets) and the form's fields. Checked for access markers:
    leaving it out must not make a marker a silent pass."""
    from pypdf.generic import TextStringObject

    info = reader.metadata
    for value in (info.values() if info is not None else ()):
        if isinstance(value, str):
            yield str(value)
    for page in reader.pages:
        for annotation in page.get("/Annots") or ():
            annotation = annotation.get_object()
            yield from _text_entries(annotation, TextStringObject)
            characteristics = annotation.get("/MK")
            if characteristics is not None:
                yield from _text_entries(characteristics.get_object(), TextStringObject)
    for form_field in (reader.get_fields() or {}).values():
        yield from (str(form_field[key]) for key in ("/V", "/DV", "/TU", "/T") if isinstance(form_field.get(key), str))


def _text_entries(dictionary, text_type) -> Iterator[str]:
    for key in _ANNOTATION_TEXT_KEYS:
        value = dictionary.get(key)
        value = value.get_object() if hasattr(value, "get_object") else value
        if isinstance(value, str | text_type):
            yield str(value)


def _mark_hidden(sections, hidden_pages: dict[int, PageText]) -> None:
    """Count each page's left-out text on the one section the page's text belongs to, and flag the sections
    holding text of an OCR layer; fail on a marker in left-out text.

    The left-out text has no place on its page (it is read apart from the shown text), so it is counted only where
    the page belongs to one section: the one whose heading or text is alone on it, or, a page showing none, the
    section open there (the last heading before it, else the root). A page shared by several sections -- a heading
    part way down, text of two -- counts it on none: the count is shown to the readers of the section it is on
    (``Section.hidden_chars_removed``), and on the first section holding the page (as before) it told them how much
    was cut from a section they may not read, and, moving that section's change time (``kb.changed``), when
    (found attacking change times, sixteenth session). Under-counting tells nothing; the text is cut all the same."""
    if not hidden_pages:
        return
    reject_hidden_markers((page.hidden for page in hidden_pages.values()),
                          where="text of the PDF that a reader does not see")
    holders: dict[int, list] = {}
    for section in sections:
        numbers = {number for block in section.blocks for number in block.metadata.get("pages", ())}
        if isinstance((section.metadata or {}).get("page"), int):
            numbers.add(section.metadata["page"])  # its heading is on that page
        for number in numbers:
            holders.setdefault(number - 1, [])
            if section not in holders[number - 1]:
                holders[number - 1].append(section)
    for index, page in sorted(hidden_pages.items()):
        if page.ocr_layer:
            for section in holders.get(index, ()):
                if OCR_FLAG not in section.hidden_text_flags:
                    section.hidden_text_flags += (OCR_FLAG,)
        if page.hidden:
            owners = holders.get(index) or [_open_at(sections, index)]
            if len(owners) == 1:
                owners[0].hidden_chars_removed += counted(page.hidden)


def _open_at(sections, index: int):
    """The section open at page ``index`` (0-based) that shows nothing: the last whose heading is on an earlier
    page, else the root."""
    earlier = [s for s in sections if isinstance((s.metadata or {}).get("page"), int) and s.metadata["page"] <= index]
    return earlier[-1] if earlier else sections[0]


@register(content_types=["application/pdf"], extensions=[".pdf"], priced=True)
def parse_pdf(data: bytes, *, filename: str | None = None) -> ParsedDocument:
    """Parse a PDF with a text layer (see the module docstring)."""
    # pypdf logs and warns about every recoverable oddity of real-world files; the
    # parse either succeeds or raises ParseError, so the noise says nothing.
    logging.getLogger("pypdf").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            reader = _open(data)
            hidden_pages: dict[int, PageText] = {}
            raw_pages = _page_lines(reader, hidden_pages)
            if not any(raw_pages):
                raise ParseError("this PDF has no text layer (scanned?); OCR is not supported")
            entries = _outline_entries(reader)
            title = _metadata_title(reader)
            unindexed = ["\n".join(lines) for lines in raw_pages] + list(_unindexed_text(reader))
        except ParseError:
            raise
        except Exception as exc:  # noqa: BLE001
            # pypdf parses lazily and, on a damaged file, raises whatever its code meets
            # (LimitReachedError, KeyError, zlib.error, ...) from any access; at this
            # boundary every one of them means the same thing to the uploader.
            raise ParseError(f"this PDF is corrupt or truncated and cannot be read ({type(exc).__name__}: {exc})") \
                from None
    pages = strip_running_lines(raw_pages)
    placed = _place_entries(entries, pages)
    out = ExtractedText()
    emitter = _Emitter(out, _usual_width(pages))
    by_position: dict[tuple[int, int], list[_Entry]] = {}
    for entry in placed:
        by_position.setdefault((entry.page, entry.line), []).append(entry)

    for page_index, lines in enumerate(pages):
        if not placed:
            emitter.flush()
            out.heading(level=1, title=f"Page {page_index + 1}", kind="page",
                        metadata={"page": page_index + 1})
        for line_index in range(len(lines) + 1):
            skip = False
            for entry in by_position.get((page_index, line_index), []):
                emitter.flush()
                # The outline's title names the section; the page's own heading line is its text.
                heading_text = lines[line_index] if entry.matched else entry.title
                out.heading(level=entry.depth + 1, title=entry.title, text=heading_text,
                            metadata={"page": page_index + 1})
                skip = skip or entry.matched
            if line_index < len(lines) and not skip:
                emitter.line(_Line(page_index + 1, lines[line_index]))
        if not placed:
            emitter.flush()
    emitter.flush()
    text, sections = out.finish()
    _mark_hidden(sections, hidden_pages)
    reject_unread_markers(text)  # the registry does too; first here, so a marker in the indexed text names its line
    reject_hidden_markers(unindexed, where="text of the PDF that is not indexed (a running header or footer, an "
                          "annotation, a form field or the document information)")
    # The document information's title: the root bears it.
    return ParsedDocument(text=text, sections=sections, title=title, title_key=sections[0].key,
                          metadata={"format": "pdf", "pages": len(pages), "outline": bool(placed)})
