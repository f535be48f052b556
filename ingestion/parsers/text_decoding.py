"""Bytes to text for the text formats, failing closed on anything that is not text.

The decoded string *is* the document text for Markdown and plain text, so every
character offset a parser produces is a Python ``str`` index into it.
"""

from __future__ import annotations

import codecs
import re

from ingestion.structure import ParseError

# Control characters other than tab, newline, carriage return and form feed; a text
# file has (almost) none of them, a binary file that happens to be valid UTF-8 has many.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_SNIFF_BYTES = 8192


def decode_text(data: bytes) -> str:
    """Decode a text file as UTF-8 (or UTF-16 when it says so with a BOM).

    A leading byte-order mark is removed: it is an encoding artefact, not text, and
    keeping it would shift every offset by one for no reader-visible character.
    Raises :class:`ParseError` for binary data or invalid UTF-8, naming the byte.
    """
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    elif data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            # The "utf-16" codec consumes the BOM itself.
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ParseError(f"invalid UTF-16 at byte {exc.start}") from None
    nul = data.find(b"\x00")
    if nul >= 0:
        raise ParseError(f"not a text file (NUL byte at byte {nul})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"not a text file: invalid UTF-8 at byte {exc.start}") from None
    sample = text[:_SNIFF_BYTES]
    if sample and len(_CONTROL_RE.findall(sample)) > max(8, len(sample) // 100):
        raise ParseError("not a text file (too many control characters)")
    return text


def looks_like_text(data: bytes) -> bool:
    """True when :func:`decode_text` would accept the first few kilobytes of ``data``."""
    head = data[:_SNIFF_BYTES]
    try:
        decode_text(head)
    except ParseError as exc:
        # A multi-byte character cut at the sniff boundary is not evidence of binary.
        return "invalid UTF-8" in exc.message and len(data) > _SNIFF_BYTES and _cut_at_end(head)
    return True


def _cut_at_end(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3
    return False
