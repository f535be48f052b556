"""Builders of documents that hide a payload, shared by the hidden-text tests (small, in memory)."""

from __future__ import annotations

import io

from accounts.policy import Policy
from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.parsers import parse
from ingestion.structure import ParsedDocument, resolve_policies

COUNTER = default_counter()
CONFIG = ChunkingConfig()


def parsed(data: bytes | str, filename: str) -> ParsedDocument:
    """Parse through the registry (as ingestion does) with policies resolved under ``internal``."""
    raw = data.encode() if isinstance(data, str) else data
    return resolve_policies(parse(raw, filename=filename), Policy("internal"))


def model_texts(doc: ParsedDocument) -> list[str]:
    """Everything of ``doc`` that reaches the model or the keyword index: each chunk's embed text (the
    keyword index is built from it), the document text (contexts are cut from it), titles and paths, and every title
    a member may be shown as the document's (``title_candidates``: twentieth session, attack20)."""
    texts = [chunk.embed_text for chunk in chunk_document(doc, CONFIG, COUNTER)]
    texts.append(doc.text)
    texts.append(doc.title or "")
    texts.extend(title for _, title in doc.title_candidates)
    for section in doc.sections:
        texts.append(section.title)
        texts.extend(section.heading_path)
        texts.append(section.context)
    return texts


def unflagged_texts(doc: ParsedDocument) -> list[str]:
    """:func:`model_texts` without those of chunks whose section flags kept hidden text."""
    flagged = {section.key for section in doc.sections if section.hidden_text_flags}
    texts = [chunk.embed_text for chunk in chunk_document(doc, CONFIG, COUNTER) if chunk.section_key not in flagged]
    if not flagged:
        texts.append(doc.text)
    texts.append(doc.title or "")
    texts.extend(title for _, title in doc.title_candidates)
    for section in doc.sections:
        if section.key not in flagged:
            texts.extend([section.title, *section.heading_path, section.context])
    return texts


def reaches_model(doc: ParsedDocument, payload: str) -> bool:
    return any(payload in text for text in unflagged_texts(doc))


def removed(doc: ParsedDocument) -> int:
    return sum(section.hidden_chars_removed for section in doc.sections)


# -- DOCX -----------------------------------------------------------------------------------------------


def docx_bytes(build) -> bytes:
    """A .docx made by ``build(document)`` (python-docx)."""
    import docx

    document = docx.Document()
    build(document)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def set_run_property(run, name: str, **attributes: str) -> None:
    """Add ``<w:name w:attr=...>`` to a run's properties."""
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    element = OxmlElement(f"w:{name}")
    for key, value in attributes.items():
        element.set(qn(f"w:{key}"), value)
    run._r.get_or_add_rPr().append(element)


# -- PDF ------------------------------------------------------------------------------------------------


def pdf_bytes(streams: list[str], *, image: bool = False, graphics: dict | None = None,
              widths: dict[str, tuple[int, list[int], int | None]] | None = None, shading: bool = False) -> bytes:
    """A PDF with one page per content stream (Helvetica as /F1; an image /Im1, ExtGStates -- a number, or a name
    such as ``"/Multiply"``, by key -- and an axial shading /Sh1, black to white across the page, on request).
    ``widths`` adds Helvetica again under other names with the glyph widths a hostile editor chose: name ->
    (``/FirstChar``, ``/Widths`` in thousandths of an em, the descriptor's ``/MissingWidth`` or None)."""
    from pypdf import PdfWriter
    from pypdf.generic import ArrayObject, DictionaryObject, FloatObject, NameObject, NumberObject, StreamObject

    writer = PdfWriter()
    for content in streams:
        page = writer.add_blank_page(width=612, height=792)
        font = DictionaryObject({
            NameObject("/Type"): NameObject("/Font"), NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"), NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
        })
        fonts = DictionaryObject({NameObject("/F1"): writer._add_object(font)})
        for name, (first, glyph_widths, missing) in (widths or {}).items():
            sized = DictionaryObject(font)
            sized[NameObject("/FirstChar")] = NumberObject(first)
            sized[NameObject("/LastChar")] = NumberObject(first + len(glyph_widths) - 1)
            sized[NameObject("/Widths")] = ArrayObject([NumberObject(w) for w in glyph_widths])
            descriptor = DictionaryObject({NameObject("/Type"): NameObject("/FontDescriptor"),
                                           NameObject("/FontName"): NameObject("/Helvetica")})
            if missing is not None:
                descriptor[NameObject("/MissingWidth")] = NumberObject(missing)
            sized[NameObject("/FontDescriptor")] = writer._add_object(descriptor)
            fonts[NameObject(name)] = writer._add_object(sized)
        resources = DictionaryObject({NameObject("/Font"): fonts})
        if image:
            picture = StreamObject()
            picture.set_data(b"\x00")
            picture.update({
                NameObject("/Type"): NameObject("/XObject"), NameObject("/Subtype"): NameObject("/Image"),
                NameObject("/Width"): NumberObject(1), NameObject("/Height"): NumberObject(1),
                NameObject("/ColorSpace"): NameObject("/DeviceGray"), NameObject("/BitsPerComponent"): NumberObject(8),
            })
            resources[NameObject("/XObject")] = DictionaryObject({NameObject("/Im1"): writer._add_object(picture)})
        if shading:
            ramp = DictionaryObject({
                NameObject("/FunctionType"): NumberObject(2), NameObject("/N"): NumberObject(1),
                NameObject("/Domain"): ArrayObject([FloatObject(0), FloatObject(1)]),
                NameObject("/C0"): ArrayObject([FloatObject(0)]), NameObject("/C1"): ArrayObject([FloatObject(1)])})
            axial = DictionaryObject({
                NameObject("/ShadingType"): NumberObject(2), NameObject("/ColorSpace"): NameObject("/DeviceGray"),
                NameObject("/Coords"): ArrayObject([FloatObject(v) for v in (0, 0, 612, 0)]),
                NameObject("/Function"): ramp})
            resources[NameObject("/Shading")] = DictionaryObject({NameObject("/Sh1"): writer._add_object(axial)})
        if graphics:
            resources[NameObject("/ExtGState")] = DictionaryObject({
                NameObject(name): DictionaryObject({NameObject(key): NameObject(value) if isinstance(value, str)
                                                    else FloatObject(value) for key, value in state.items()})
                for name, state in graphics.items()
            })
        page[NameObject("/Resources")] = resources
        stream = StreamObject()
        stream.set_data(content.encode("latin-1"))
        page[NameObject("/Contents")] = writer._add_object(stream)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_with_outline(streams: list[str], outline: list[tuple[str, int]], **kwargs) -> bytes:
    """:func:`pdf_bytes` with an outline: each (title, 0-based page) an entry, in order (the parser's sections)."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(streams, **kwargs))))
    for title, page in outline:
        writer.add_outline_item(title=title, page_number=page)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def text_op(text: str, *, x: float = 72, y: float = 700, size: float = 12, before: str = "") -> str:
    """One line of Helvetica text at ``(x, y)``; ``before`` (``3 Tr``) is put inside the text object first,
    with the graphics state saved around it (text state outlives ``ET``)."""
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    line = f"BT /F1 {size} Tf {before} {x} {y} Td ({escaped}) Tj ET"
    return f"q {line} Q\n" if before else line + "\n"


# -- e-mail ---------------------------------------------------------------------------------------------


def html_mail(body: str) -> bytes:
    return (
        "From: Ann <ann@example.com>\nTo: bob@example.com\nSubject: Quarterly numbers\n"
        "Date: Mon, 2 Apr 2012 20:21:00 +0000\nMIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n"
        f"<html><body>{body}</body></html>\n"
    ).encode()
