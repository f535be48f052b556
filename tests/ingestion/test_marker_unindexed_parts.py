"""A marker in a part of a DOCX, PDF or e-mail that is not indexed fails the document (never a silent pass).

Formats without markers check their indexed text for marker-like text (the registry), and their hidden text
(``access_markers.reject_hidden_markers``). Text the parser leaves out for another reason was not checked: a
marker in a DOCX header, footer, comment, text box, field code, tracked insertion or document property; in a
PDF's running header, annotation, form field or document information; in an e-mail's other headers, its
alternative not shown, a text attachment, a second inline part, the MIME preamble or epilogue, or quoted
text -- the document was indexed with the upload's access while its author believed part of it protected.

A generator: every position of each format, with an exact marker, a near miss and one with an invisible
character; each must fail. Each failed before its fix (the upload ingested, the marker ignored).
"""

from __future__ import annotations

import io
import zipfile

import pytest

from ingestion.parsers import parse
from ingestion.structure import ParseError

# ASCII markers for every format; one with an invisible character where the format carries Unicode as is (DOCX).
MARKERS = ["<!-- access: restricted -->", "<!-- acess: restricted -->", "<!--access:restricted; groups: sec-->"]


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# -- DOCX --------------------------------------------------------------------------------------------------

def _docx(edit=None, body_xml: str = "") -> bytes:
    import docx

    document = docx.Document()
    document.add_paragraph("Intro")
    document.add_paragraph("The plan.")
    if edit is not None:
        edit(document)
    buffer = io.BytesIO()
    document.save(buffer)
    if not body_xml:
        return buffer.getvalue()
    source, out = zipfile.ZipFile(io.BytesIO(buffer.getvalue())), io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            data = source.read(item.filename)
            if item.filename == "word/document.xml":
                data = data.replace(b"<w:body>", b"<w:body>" + body_xml.encode(), 1)
            target.writestr(item, data)
    return out.getvalue()


def _first_page_header(document, marker):
    document.sections[0].different_first_page_header_footer = True
    document.sections[0].first_page_header.paragraphs[0].text = marker


def _run(inner: str) -> str:
    return f"<w:p><w:r>{inner}</w:r></w:p>"


DOCX_POSITIONS = {
    "header": lambda m: _docx(lambda d: setattr(d.sections[0].header.paragraphs[0], "text", m)),
    "footer": lambda m: _docx(lambda d: setattr(d.sections[0].footer.paragraphs[0], "text", m)),
    "first-page header": lambda m: _docx(lambda d: _first_page_header(d, m)),
    "comment": lambda m: _docx(lambda d: d.add_comment(d.paragraphs[0].runs, text=m, author="a")),
    "core title": lambda m: _docx(lambda d: setattr(d.core_properties, "title", m)),
    "core subject": lambda m: _docx(lambda d: setattr(d.core_properties, "subject", m)),
    "core comments": lambda m: _docx(lambda d: setattr(d.core_properties, "comments", m)),
    "field code": lambda m: _docx(body_xml=_run(f"<w:instrText> {_xml(m)} </w:instrText>")),
    "simple field": lambda m: _docx(body_xml=f'<w:p><w:fldSimple w:instr="{_xml(m)}"><w:r><w:t>x</w:t></w:r>'
                                             "</w:fldSimple></w:p>"),
    "tracked deletion": lambda m: _docx(body_xml=f'<w:p><w:del w:id="1" w:author="a"><w:r><w:delText>{_xml(m)}'
                                                 "</w:delText></w:r></w:del></w:p>"),
    "tracked insertion": lambda m: _docx(body_xml=f'<w:p><w:ins w:id="1" w:author="a"><w:r><w:t>{_xml(m)}</w:t>'
                                                  "</w:r></w:ins></w:p>"),
    "smart tag": lambda m: _docx(body_xml=f'<w:p><w:smartTag w:uri="u" w:element="e"><w:r><w:t>{_xml(m)}</w:t>'
                                          "</w:r></w:smartTag></w:p>"),
    "text box": lambda m: _docx(body_xml=_run('<w:pict><v:shape xmlns:v="urn:schemas-microsoft-com:vml"><v:textbox>'
                                              f"<w:txbxContent><w:p><w:r><w:t>{_xml(m)}</w:t></w:r></w:p>"
                                              "</w:txbxContent></v:textbox></v:shape></w:pict>")),
}


# -- PDF ---------------------------------------------------------------------------------------------------

def _pdf(pages: list[list[str]], extra: tuple[str, ...] = (), *, info: bool = False, annots: str = "",
         catalog: str = "") -> bytes:
    """Pages of text lines; ``extra`` objects numbered from 3 + 2 * len(pages) + 1."""
    objects = [f"<< /Type /Catalog /Pages 2 0 R {catalog} >>", "",
               "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    kids = []
    for lines in pages:
        content = "BT /F1 12 Tf 72 720 Td 14 TL " + " ".join(f"({line}) '" for line in lines) + " ET"
        objects.append(f"<< /Length {len(content)} >>\nstream\n{content}\nendstream")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {len(objects)} 0 R "
                       f"/Resources << /Font << /F1 3 0 R >> >> {annots} >>")
        kids.append(f"{len(objects)} 0 R")
    objects[1] = f"<< /Type /Pages /Kids [{' '.join(kids)}] /Count {len(kids)} >>"
    objects.extend(extra)
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode()
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer_info = f"/Info {len(objects)} 0 R" if info else ""
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R {trailer_info} >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


_BODY = [["Intro text.", "The plan."]]
PDF_POSITIONS = {
    "information title": lambda m: _pdf(_BODY, (f"<< /Title ({m}) >>",), info=True),
    "information keywords": lambda m: _pdf(_BODY, (f"<< /Keywords ({m}) >>",), info=True),
    "text annotation": lambda m: _pdf(_BODY, (f"<< /Type /Annot /Subtype /Text /Rect [0 0 9 9] /Contents ({m}) >>",),
                                      annots="/Annots [6 0 R]"),
    "free text annotation": lambda m: _pdf(_BODY, ("<< /Type /Annot /Subtype /FreeText /Rect [0 0 200 20] "
                                                   f"/Contents ({m}) /DA (/Helv 12 Tf) >>",), annots="/Annots [6 0 R]"),
    "form field": lambda m: _pdf(_BODY, ("<< /Fields [7 0 R] >>", f"<< /FT /Tx /T (f) /V ({m}) /Rect [0 0 9 9] "
                                         "/Subtype /Widget /Type /Annot /P 5 0 R >>"),
                                 catalog="/AcroForm 6 0 R", annots="/Annots [7 0 R]"),
    "running header": lambda m: _pdf([[m, f"Body of page {n}, a different sentence each time: {'x' * n}."]
                                      for n in range(1, 4)]),
}


# -- e-mail ------------------------------------------------------------------------------------------------

_HEAD = "From: a@example.com\nTo: b@example.com\n"
_MIXED = 'Subject: S\nMIME-Version: 1.0\nContent-Type: multipart/{kind}; boundary="b"\n\n'


def _mail(text: str) -> bytes:
    return (_HEAD + text).encode()


EMAIL_POSITIONS = {
    "other header": lambda m: _mail(f"Subject: S\nX-Note: {m}\n\nHello.\n"),
    "plain alternative not shown": lambda m: _mail(
        _MIXED.format(kind="alternative") + f"--b\nContent-Type: text/plain\n\n{m}\nHello.\n--b\n"
        "Content-Type: text/html\n\n<p>Hello.</p>\n--b--\n"),
    "text attachment": lambda m: _mail(
        _MIXED.format(kind="mixed") + "--b\nContent-Type: text/plain\n\nHello.\n--b\nContent-Type: text/markdown\n"
        f'Content-Disposition: attachment; filename="a.md"\n\n{m}\nsecret\n--b--\n'),
    "second inline part": lambda m: _mail(
        _MIXED.format(kind="mixed") + f"--b\nContent-Type: text/plain\n\nHello.\n--b\nContent-Type: text/plain\n\n{m}\n"
        "--b--\n"),
    "preamble": lambda m: _mail(_MIXED.format(kind="mixed") + f"{m}\n--b\nContent-Type: text/plain\n\nHello.\n--b--\n"),
    "epilogue": lambda m: _mail(_MIXED.format(kind="mixed") + f"--b\nContent-Type: text/plain\n\nHello.\n--b--\n{m}\n"),
    "quoted reply": lambda m: _mail(f"Subject: S\n\nHello.\n\nOn Mon, a wrote:\n> {m}\n> old\n"),
    "attachment file name": lambda m: _mail(
        _MIXED.format(kind="mixed") + "--b\nContent-Type: text/plain\n\nHello.\n--b\n"
        f'Content-Type: application/octet-stream\nContent-Disposition: attachment; filename="{m}"\n\nxx\n--b--\n'),
}

CASES = [
    *[pytest.param(build, None, "n.docx", id=f"docx-{name}") for name, build in DOCX_POSITIONS.items()],
    *[pytest.param(build, "application/pdf", None, id=f"pdf-{name}") for name, build in PDF_POSITIONS.items()],
    *[pytest.param(build, "message/rfc822", None, id=f"eml-{name}") for name, build in EMAIL_POSITIONS.items()],
    pytest.param(lambda m: ("From a@x Mon Jan  1 00:00:00 2024\n" + _HEAD + f"Subject: S\nX-Note: {m}\n\nHello.\n")
                 .encode(), "application/mbox", None, id="mbox-other-header"),
]


@pytest.mark.parametrize("marker", MARKERS)
@pytest.mark.parametrize(("build", "content_type", "filename"), CASES)
def test_a_marker_in_text_that_is_not_indexed_fails(build, content_type, filename, marker):
    with pytest.raises(ParseError) as caught:
        parse(build(marker), content_type=content_type, filename=filename)
    assert "looks like an access marker" in caught.value.message


@pytest.mark.parametrize("name", sorted(DOCX_POSITIONS))
def test_a_marker_with_an_invisible_character_in_a_docx_part_fails(name):
    with pytest.raises(ParseError, match="looks like an access marker"):
        parse(DOCX_POSITIONS[name]("<!-- ac\u200bcess: restricted -->"), filename="n.docx")


@pytest.mark.parametrize(("build", "content_type", "filename"), CASES)
def test_the_same_documents_without_a_marker_parse(build, content_type, filename):
    doc = parse(build("Access control applies to everyone: <!-- a plain note -->"), content_type=content_type,
                filename=filename)
    assert doc.text


def test_a_marker_in_the_indexed_text_still_names_its_line():
    import docx

    document = docx.Document()
    document.add_paragraph("Intro")
    document.add_paragraph("<!-- access: restricted -->")
    buffer = io.BytesIO()
    document.save(buffer)
    with pytest.raises(ParseError) as caught:
        parse(buffer.getvalue(), filename="n.docx")
    assert caught.value.line is not None


# -- HTML, Markdown and plain text: places where a marker comment is never read ------------------------------

UNREAD_PLACES = {
    "html-script": ("page.html", "<html><head><script>// {m}\nvar a = 1;</script></head><body><p>Hi.</p></body></html>", 1),
    "html-style": ("page.html", "<html><head>\n<style>/* {m} */ p {{ color: black }}</style></head><body><p>Hi.</p></body></html>", 2),
    "html-title": ("page.html", "<html><head><title>{m}</title></head><body><p>Hi.</p></body></html>", 1),
    "html-attribute": ("page.html", "<html><body>\n\n<p title=\"{m}\">Hi.</p></body></html>", 3),
    "markdown-reference-title": ("notes.md", "# Notes\n\nText.\n\n[x]: /u \"{m}\"\n\nMore text.\n", 5),
    "markdown-reference-destination": ("notes.md", "# Notes\n\nText.\n\n[//]: # ({m})\n", 5),
    "plain-text-concealed": ("notes.txt", "Notes\n\nText \x1b[8m{m}\x1b[0m more.\n", 3),
    "markdown-front-matter-value": ("notes.md", "---\ntitle: \"{m}\"\n---\n# Notes\n\nText.\n", 2),
    "markdown-front-matter-comment": ("notes.md", "---\ntags: [a]\n# {m}\n---\n# Notes\n\nText.\n", 3),
}


@pytest.mark.parametrize("marker", MARKERS[:2])
@pytest.mark.parametrize("place", sorted(UNREAD_PLACES))
def test_a_marker_where_it_is_never_read_fails_with_its_line(place, marker):
    """Found fuzzing the markers (2026-12-03): a marker comment in a script, a style sheet, a title or an attribute
    value of HTML, in a Markdown link reference definition (never shown, cut) or front matter (a value, a YAML
    comment), or in text a terminal conceals was silently ignored -- the document got the upload's access."""
    name, source, line = UNREAD_PLACES[place]
    with pytest.raises(ParseError) as failure:
        parse(source.format(m=marker).encode(), filename=name)
    assert failure.value.line == line, failure.value.message


@pytest.mark.parametrize("place", sorted(UNREAD_PLACES))
def test_the_same_places_without_a_marker_still_parse(place):
    name, source, _ = UNREAD_PLACES[place]
    doc = parse(source.format(m="an ordinary <b> note -- with dashes").encode(), filename=name)
    assert "Hi." in doc.text or "Text" in doc.text
