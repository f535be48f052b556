"""Which parser handles which file: a small, format-agnostic registry.

Parser modules register themselves with :func:`register`; :func:`parse` picks one
by content type, else by filename extension, else by sniffing the bytes.

Only parsers registered with ``reads_markers=True`` (Markdown, HTML) read access
markers.  Every other parser is wrapped so that a document whose text holds
something that looks like a marker fails with a :class:`ParseError` naming the
line, instead of being indexed with the upload's policy while the author believes
part of it is protected (a Markdown file uploaded as text/plain, say).

Every parser, whatever its format, is also wrapped so that its result passes
:func:`~ingestion.parsers.visible_text.strip_invisible` (after the marker check, which
sees the invisible characters): no tag characters, zero-width characters or reordering
bidi overrides reach a chunk (docs/security.md, "Hidden text").

Every parse is priced (:mod:`ingestion.costs`): a parser registered with ``priced=True`` (PDF,
DOCX) charges the measures its work grows with itself; every other format's work is linear in
its bytes, which :func:`parse` charges before it parses. The text and the sections a parse made
are charged after it.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Protocol

from ingestion import costs
from ingestion.parsers.access_markers import reject_unread_markers
from ingestion.parsers.text_decoding import looks_like_text
from ingestion.parsers.visible_text import strip_invisible
from ingestion.structure import ParsedDocument, ParseError


class Parser(Protocol):
    def __call__(self, data: bytes, *, filename: str | None) -> ParsedDocument: ...


_PARSERS: dict[str, Parser] = {}
_PRICED: set[int] = set()  # ids of the parsers that charge their own costs
_EXTENSIONS: dict[str, str] = {}  # ".md" -> "text/markdown"
# Content types that say nothing about the format: fall through to the filename.
_GENERIC_TYPES = {"application/octet-stream", "binary/octet-stream", "application/unknown"}
PLAIN_TEXT = "text/plain"

# A live view: it grows as parser modules register.
SUPPORTED_CONTENT_TYPES = _PARSERS.keys()


def register(
    *, content_types: list[str], extensions: list[str], reads_markers: bool = False, priced: bool = False
) -> Callable[[Parser], Parser]:
    """Decorator registering ``func(data, *, filename) -> ParsedDocument`` for the given types.

    The first content type is the canonical one an extension maps to.  Extensions
    are given with or without the dot, case-insensitive.

    Without ``reads_markers`` the parser's format has no access markers: the
    decorator returns (and registers) a wrapper that rejects a parsed text holding
    anything marker-like (:func:`~ingestion.parsers.access_markers.reject_unread_markers`).
    Every registered parser strips invisible characters from its result
    (:func:`~ingestion.parsers.visible_text.strip_invisible`).
    With ``priced`` the parser charges its own costs (:mod:`ingestion.costs`); else :func:`parse`
    charges its bytes.
    """
    if not content_types:
        raise ValueError("register() needs at least one content type")

    def decorator(func: Parser) -> Parser:
        parser = _visible_only(func if reads_markers else _rejecting_unread_markers(func))
        if priced:
            _PRICED.add(id(parser))
        for content_type in content_types:
            _PARSERS[_normalize_type(content_type)] = parser
        for extension in extensions:
            _EXTENSIONS[_normalize_extension(extension)] = _normalize_type(content_types[0])
        return parser

    return decorator


def _rejecting_unread_markers(func: Parser) -> Parser:
    @functools.wraps(func)
    def parser(data: bytes, *, filename: str | None = None) -> ParsedDocument:
        doc = func(data, filename=filename)
        reject_unread_markers(doc.text)
        return doc

    return parser


def _visible_only(func: Parser) -> Parser:
    @functools.wraps(func)
    def parser(data: bytes, *, filename: str | None = None) -> ParsedDocument:
        return strip_invisible(func(data, filename=filename))

    return parser


def _normalize_type(content_type: str) -> str:
    return content_type.split(";", 1)[0].strip().lower()


def _normalize_extension(extension: str) -> str:
    extension = extension.lower()
    return extension if extension.startswith(".") else f".{extension}"


def _extension_type(filename: str | None) -> str | None:
    if not filename:
        return None
    extension = os.path.splitext(filename)[1].lower()
    return _EXTENSIONS.get(extension)


def _sniff(data: bytes) -> str | None:
    head = data[:1024].lstrip().lower()
    if head.startswith(b"%pdf-"):
        return "application/pdf"
    if head.startswith((b"<!doctype html", b"<html")):
        return "text/html"
    if looks_like_text(data):
        return PLAIN_TEXT
    return None


# Formats people upload that no parser reads: (what it is, what to do), by file extension and by the
# bytes' signature. A file named like one of these is refused even when its bytes look like text: an
# ".xlsx" that is a few bytes of text is not a spreadsheet, and reading it as plain text would index
# something other than what its author meant.
_EXPORT_CSV = "export the sheet as CSV (Save as › CSV) and upload the .csv file"
_EXPORT_PDF = "export it as PDF (or save it as .docx) and upload that"
_IMAGE = "Bulkhead reads text, not pictures: upload the document the image comes from, or its text"
_UNREAD_EXTENSIONS: dict[str, tuple[str, str]] = {
    ".xlsx": ("an Excel workbook (.xlsx)", _EXPORT_CSV), ".xlsm": ("an Excel workbook (.xlsm)", _EXPORT_CSV),
    ".xls": ("an old Excel workbook (.xls)", _EXPORT_CSV), ".ods": ("a spreadsheet (.ods)", _EXPORT_CSV),
    ".numbers": ("a Numbers spreadsheet", _EXPORT_CSV),
    # Text that a spreadsheet or word processor opens as a document, showing none of its comments, formulas or hidden
    # sheets (twenty-second session, attack22x: read as plain text, all of them reached the model).
    ".fods": ("a flat OpenDocument spreadsheet (.fods)", _EXPORT_CSV), ".slk": ("a SYLK spreadsheet", _EXPORT_CSV),
    ".fodt": ("a flat OpenDocument text (.fodt)", "save it as .docx (or PDF) and upload that"),
    ".fodp": ("a flat OpenDocument presentation (.fodp)", _EXPORT_PDF),
    ".fodg": ("a flat OpenDocument drawing (.fodg)", _EXPORT_PDF),
    ".pptx": ("a PowerPoint presentation (.pptx)", _EXPORT_PDF), ".ppt": ("an old PowerPoint file (.ppt)", _EXPORT_PDF),
    ".key": ("a Keynote presentation", _EXPORT_PDF), ".doc": ("an old Word document (.doc)",
                                                               "save it as .docx (or PDF) and upload that"),
    ".odt": ("an OpenDocument text (.odt)", "save it as .docx (or PDF) and upload that"),
    ".png": ("a PNG image", _IMAGE), ".jpg": ("a JPEG image", _IMAGE), ".jpeg": ("a JPEG image", _IMAGE),
    ".gif": ("a GIF image", _IMAGE), ".webp": ("a WebP image", _IMAGE), ".heic": ("a HEIC image", _IMAGE),
    ".zip": ("a ZIP archive", "unpack it and upload the documents inside"),
}
_SIGNATURES: tuple[tuple[bytes, str, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image", _IMAGE), (b"\xff\xd8\xff", "a JPEG image", _IMAGE),
    (b"GIF8", "a GIF image", _IMAGE), (b"\xd0\xcf\x11\xe0", "an old Office file (.doc, .xls or .ppt)",
                                        "save it in the current format (.docx; a sheet as CSV) and upload that"),
    (b"PK\x03\x04", "a ZIP archive (or an Office file other than .docx)",
     "upload a .docx, PDF or CSV (a spreadsheet: export the sheet as CSV)"),
)


def unsupported_advice(filename: str | None, data: bytes) -> tuple[str, str] | None:
    """What a file no parser reads is, and what to do about it -- ``("a PNG image", "…")`` -- when its
    name or its bytes say so; None otherwise."""
    extension = os.path.splitext(filename or "")[1].lower()
    if extension in _UNREAD_EXTENSIONS and extension not in _EXTENSIONS:
        return _UNREAD_EXTENSIONS[extension]
    for signature, what, advice in _SIGNATURES:
        if data.startswith(signature):
            return what, advice
    return None


def detect_content_type(filename: str | None, data: bytes) -> str | None:
    """Best guess of a content type: the filename's registered extension, else the bytes.

    May return a type no parser is registered for (e.g. ``application/pdf`` when the
    PDF parser is not installed); :func:`parse` reports that as unsupported.
    """
    if _extension_type(filename) is None and unsupported_advice(filename, b"") is not None:
        return None  # named as a format no parser reads: never guessed from bytes that look like text
    return _extension_type(filename) or _sniff(data)


def parser_for(content_type: str | None = None, filename: str | None = None, data: bytes = b"") -> Parser:
    """The registered parser :func:`parse` would use; raises :class:`ParseError` if none."""
    return _PARSERS[content_type_read(content_type, filename, data)]


def content_type_read(content_type: str | None = None, filename: str | None = None, data: bytes = b"") -> str:
    """The registered content type the bytes are read by (the key of :func:`parser_for`'s parser): the declared one
    when a parser is registered for it, else the filename's extension's, else (no type, or a generic one) the bytes'
    sniffed one, else -- an unknown flavour of text -- plain text. Raises :class:`ParseError` if none.

    One of a closed set of names the server registers, never the caller's string: a document stores this, and it
    is listed to every reader and their agents (docs/security.md, "A declared content type")."""
    declared = _normalize_type(content_type) if content_type else None
    if declared in _PARSERS:
        return declared
    by_extension = _extension_type(filename)
    if by_extension in _PARSERS:
        return by_extension
    if declared is None or declared in _GENERIC_TYPES:
        if unsupported_advice(filename, b"") is not None:  # named as a format no parser reads
            raise ParseError(f"unsupported content type {content_type!r} (filename {filename!r})")
        sniffed = _sniff(data)
        if sniffed in _PARSERS:
            return sniffed
    elif declared.startswith("text/") and PLAIN_TEXT in _PARSERS:
        # Unknown flavours of text (text/x-log, text/x-rst ...) are still text.
        return PLAIN_TEXT
    raise ParseError(f"unsupported content type {content_type!r} (filename {filename!r})")


def parse(data: bytes, *, content_type: str | None = None, filename: str | None = None) -> ParsedDocument:
    """Parse ``data`` with the parser for its content type, else its filename extension.

    Without either (or with a generic type such as ``application/octet-stream``)
    the bytes are sniffed.  Raises :class:`ParseError` for unsupported types and for
    anything the chosen parser rejects.
    """
    parser = parser_for(content_type, filename, data)
    if id(parser) not in _PRICED:
        costs.charge("input_bytes", len(data))
    document = parser(data, filename=filename)
    costs.charge("text_chars", len(document.text))
    costs.charge("sections", len(document.sections))
    return document
