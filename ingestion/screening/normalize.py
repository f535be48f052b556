"""Text units the detector scores, and the normalisation that undoes light obfuscation.

A chunk is cut into *units* -- its lines, and the sentences within a line -- so an instruction
buried in a long chunk is scored on its own and not diluted by the ordinary text around it. Each
unit keeps its (start, end) offsets in the chunk: they are the spans a verdict reports.

``normalize`` undoes what an attacker does to slip past keyword lists: compatibility forms and
full-width letters (NFKC), invisible format characters inside words, letters borrowed from other
scripts that look Latin (Cyrillic "а", Greek "ο"), leetspeak inside words ("1gn0re"), words
spelled with spaces ("i g n o r e"). A base64-looking blob that decodes to readable text becomes a
unit of its own (with the blob's span).
"""

from __future__ import annotations

import base64
import binascii
import re
import unicodedata
from dataclasses import dataclass

from ingestion.chunking.sentences import split_sentences

# Letters of other scripts that render like Latin ones (the common confusables).
_HOMOGLYPHS = str.maketrans(
    {
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j",
        "ѕ": "s", "ԁ": "d", "һ": "h", "ӏ": "l", "ԛ": "q", "ԝ": "w", "ɡ": "g", "ı": "i",
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
        "Т": "T", "У": "Y", "Х": "X", "І": "I", "Ј": "J", "Ѕ": "S",
        "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o", "ρ": "p", "τ": "t", "υ": "u",
        "χ": "x", "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
        "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
    }
)  # fmt: skip
# "@" is left alone: e-mail addresses matter more than "@ll".
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "$": "s"})
_MIXED_WORD = re.compile(r"\b(?=[\w$]*[a-zA-Z])(?=[\w$]*[0-9$])[\w$]{3,}\b")
_SPACED = re.compile(r"\b(?:[A-Za-z][ .\-_*]){3,}[A-Za-z]\b")
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{24,}={0,2}(?![A-Za-z0-9+/=])")
_NON_SCRIPT_WORD = re.compile(r"[^\W\d_]+")

MAX_UNIT_CHARS = 600  # a longer line is cut into pieces of this size (with overlap) after sentence splitting


def _delete_format_chars(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def _mixed_script_word(match: re.Match[str]) -> str:
    return match.group(0).translate(_HOMOGLYPHS)


def normalize(text: str) -> str:
    """The text as an attacker meant it to be read (see the module docstring); lower-cased."""
    text = unicodedata.normalize("NFKC", text)
    text = _delete_format_chars(text)
    # Only words that mix Latin with look-alikes are folded, so real Russian or Greek stays as it is.
    text = _NON_SCRIPT_WORD.sub(
        lambda m: _mixed_script_word(m) if re.search(r"[A-Za-z]", m.group(0)) else m.group(0), text
    )
    text = _MIXED_WORD.sub(lambda m: m.group(0) if m.group(0).isdigit() else _deleet(m.group(0)), text)
    text = _SPACED.sub(lambda m: re.sub(r"[ .\-_*]", "", m.group(0)), text)
    return text.lower()


def _deleet(word: str) -> str:
    letters = sum(ch.isalpha() for ch in word)
    # "v2", "utf8", "sha256", "x86_64": mostly digits or a version suffix -- not leetspeak.
    if letters < 2 or re.fullmatch(r"[A-Za-z]+\d+|\d+[A-Za-z]{1,2}", word):
        return word
    return word.translate(_LEET)


def decoded_blobs(text: str) -> list[tuple[int, int, str]]:
    """(start, end, decoded text) for each base64 blob in ``text`` that decodes to readable text."""
    found = []
    for match in _BASE64.finditer(text):
        blob = match.group(0)
        try:
            raw = base64.b64decode(blob + "=" * (-len(blob) % 4), validate=False)
            decoded = raw.decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        printable = sum(ch.isprintable() or ch in "\n\t" for ch in decoded)
        if decoded and printable / len(decoded) > 0.95 and sum(ch.isalpha() for ch in decoded) / len(decoded) > 0.6:
            found.append((match.start(), match.end(), decoded))
    return found


@dataclass(frozen=True)
class Unit:
    start: int
    end: int
    text: str  # normalised
    decoded: bool = False  # decoded from a base64 blob at start:end


def units(text: str) -> list[Unit]:
    """The scored units of ``text``: sentences within lines (long ones cut), plus decoded blobs."""
    out: list[Unit] = []
    pos = 0
    for line in text.split("\n"):
        line_start, pos = pos, pos + len(line) + 1
        if not line.strip():
            continue
        for start, end in split_sentences(text, line_start, line_start + len(line)):
            for piece_start in range(start, end, MAX_UNIT_CHARS - 100):
                piece_end = min(end, piece_start + MAX_UNIT_CHARS)
                out.append(Unit(piece_start, piece_end, normalize(text[piece_start:piece_end])))
                if piece_end == end:
                    break
    for start, end, decoded in decoded_blobs(text):
        for s, e in split_sentences(decoded):
            out.append(Unit(start, end, normalize(decoded[s:e]), decoded=True))
    return out
