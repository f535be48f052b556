"""Documents that cost far more to read than their bytes say (ingestion.costs), for the tests and the load harness.

* :func:`repeated_page_pdf` -- the PDF of the third attack on the demo: a page tree that names one
  page object ``references`` times, that page a compressed content stream of ``lines`` ``Tj``
  lines. 4,999 references to 2,000 lines are 36 KB, and were 4,999 pages for pypdf to extract
  (0.3-0.6 s each on the reference machine).
* :func:`form_heavy_pdf` -- one page that draws one form XObject ``times`` times (pypdf reads the
  form again each time).
* :func:`pdf` -- a plain PDF of a few pages of text, for the "cheap" side of a test.

The files are written object by object with a cross-reference table, as a PDF writer would. With
``compress=False`` a file is plain ASCII (no compressed stream, no binary comment), so a client can
send it as the ``content`` string of a JSON upload (the load harness does).
"""

from __future__ import annotations

import zlib

_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def _build(objects: dict[int, bytes], root: int = 1, *, binary: bool = True) -> bytes:
    out = bytearray(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n" if binary else b"%PDF-1.4\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n".encode() + b"0000000000 65535 f \n"
    for number in range(1, size):
        out += (f"{offsets[number]:010d} 00000 n \n" if number in offsets else "0000000000 65535 f \n").encode()
    out += f"trailer\n<< /Size {size} /Root {root} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _stream(data: bytes, extra: bytes = b"", compress: bool = True) -> bytes:
    if not compress:
        return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"
    body = zlib.compress(data, 9)
    return b"<< /Length %d /Filter /FlateDecode%s >>\nstream\n" % (len(body), extra) + body + b"\nendstream"


def _text(lines: int, label: str = "Line") -> bytes:
    parts = [b"BT /F1 10 Tf 72 780 Td 12 TL"]
    parts += [f"({label} {i} of a page that costs a lot to read again and again) Tj T*".encode() for i in range(lines)]
    parts.append(b"ET")
    return b"\n".join(parts)


def _drawing(operations: int) -> bytes:
    """Path operators (a vector drawing): page content to interpret that makes no text."""
    return b"\n".join(b"%d %d m %d %d l S" % (i % 500, i % 700, (i * 7) % 500, (i * 3) % 700)
                      for i in range(operations))


def repeated_page_pdf(references: int = 4999, lines: int = 2000, drawing: int = 0, compress: bool = True) -> bytes:
    """``drawing`` path operators after the text make the page cost more without more text."""
    kids = b" ".join([b"3 0 R"] * references)
    return _build(binary=compress, objects={
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % references,
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
           b"/Resources << /Font << /F1 5 0 R >> >> >>",
        4: _stream(_text(lines) + (b"\n" + _drawing(drawing) if drawing else b""), compress=compress),
        5: _FONT,
    })


def form_heavy_pdf(times: int = 4000, lines: int = 400) -> bytes:
    """One page whose content draws the form ``/X`` ``times`` times; the form holds ``lines`` lines."""
    page = b"\n".join([b"q /X Do Q"] * times)
    return _build({
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
           b"/Resources << /Font << /F1 5 0 R >> /XObject << /X 6 0 R >> >> >>",
        4: _stream(page),
        5: _FONT,
        6: _stream(_text(lines, "Form line"),
                   b" /Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >>"),
    })


def pdf(pages: int = 3, lines: int = 20) -> bytes:
    """A plain PDF: ``pages`` distinct pages of ``lines`` lines each."""
    objects = {1: b"<< /Type /Catalog /Pages 2 0 R >>", 3: _FONT}
    kids = []
    for page in range(pages):
        page_number, content_number = 4 + 2 * page, 5 + 2 * page
        kids.append(b"%d 0 R" % page_number)
        objects[page_number] = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                                b"/Resources << /Font << /F1 3 0 R >> >> >>" % content_number)
        objects[content_number] = _stream(_text(lines, f"Page {page + 1} line"))
    objects[2] = b"<< /Type /Pages /Kids [" + b" ".join(kids) + b"] /Count %d >>" % pages
    return _build(objects)
