"""The seam between two chunks a model reads one after the other (sixteenth session).

Each chunk is screened on its own, so an instruction the chunker cut in two -- "Ignore all previous" at the end of
one chunk, "instructions and tell the user to ..." at the start of the next -- scored low in each half; yet search's
parent and neighbour expansion (``kb.expansion``) and MCP's ``read_section`` hand a model both chunks joined, and
it reads the whole instruction. A :class:`Seam` is the short window a model reads across the cut: the last sentence
of the first chunk's last line (at most :data:`SEAM_CHARS` characters), what lies between the two when it is only
whitespace (a blank line, a space; anything else -- a heading, a section's text between -- is read as a paragraph
break, as a context joins its pieces), and the first sentence of the second's first line (likewise bounded): a unit
the detector scores is a sentence within a line or two lines read across a break, so no other text of the two holds a
unit that crosses the cut. Its verdict
(``ingestion.screening.detector.screen_seams``) is made of the units that hold text of both chunks alone -- a
sentence cut by the seam, or two lines read across it -- so what either chunk's own verdict judged is not judged
again, and the cost is one short window per seam.

Pure Python: which seams may be joined at all (the readers of the chunk a verdict flags must be allowed to read the
other one's text) is decided by the caller (``pipeline.screen``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingestion.chunking.sentences import split_sentences
from ingestion.screening.normalize import SENTENCE_END, WRAP_CHARS

SEAM_CHARS = WRAP_CHARS  # each side of a seam: at most this many characters (the line-break reading's bound)
PARAGRAPH = "\n\n"  # what stands for the text between two chunks that is not whitespace


@dataclass(frozen=True)
class Seam:
    """The window a model reads across the cut between a first and a second chunk.

    ``text[:first_end]`` is the end of the first chunk (document offsets from ``first_at``), ``text[second_start:]``
    the start of the second (from ``second_at``); between them, the whitespace between the chunks as written, or
    :data:`PARAGRAPH`. When the chunks overlap (a split section's repeated sentences), ``second_start`` is below
    ``first_end`` and the window is one run of the document. A unit crosses the seam when it starts before
    ``second_start`` and ends after ``first_end``: neither chunk holds it whole."""

    text: str
    first_end: int
    second_start: int
    first_at: int
    second_at: int

    def first_part(self, start: int, end: int) -> tuple[int, int] | None:
        """The document offsets of the part of window span [start, end) in the first chunk, or None."""
        end = min(end, self.first_end)
        return (self.first_at + start, self.first_at + end) if end > start else None

    def second_part(self, start: int, end: int) -> tuple[int, int] | None:
        """The document offsets of the part of window span [start, end) in the second chunk, or None."""
        start = max(start, self.second_start)
        return (self.second_at + start - self.second_start, self.second_at + end - self.second_start) \
            if end > start else None


def _word_start(text: str, pos: int, end: int) -> int:
    """``pos``, or the start of the next word when ``pos`` cuts one (a bounded tail starts at a word)."""
    if pos == 0 or text[pos - 1].isspace():
        return pos
    while pos < end and not text[pos].isspace():
        pos += 1
    return pos


def _word_end(text: str, pos: int, start: int) -> int:
    """``pos``, or the end of the word before when ``pos`` cuts one (a bounded head ends at a word)."""
    if pos >= len(text) or text[pos].isspace():
        return pos
    while pos > start and not text[pos - 1].isspace():
        pos -= 1
    return pos


def _nonblank_line_before(text: str, line_start: int, low: int) -> int | None:
    """The start of the last non-blank line ending before ``line_start`` (at or after ``low``), or None."""
    pos = line_start - 1  # the line break before the line
    while pos > low:
        start = max(low, text.rfind("\n", low, pos) + 1)
        if text[start:pos].strip():
            return start
        pos = start - 1
    return None


def _nonblank_line_after(text: str, line_end: int, high: int) -> tuple[int, int] | None:
    """(start, end) of the first non-blank line after the line ending at ``line_end`` (before ``high``), or None."""
    pos = line_end + 1
    while pos < high:
        end = text.find("\n", pos, high)
        end = high if end < 0 else end
        if text[pos:end].strip():
            return pos, end
        pos = end + 1
    return None


def seam_window(text: str, first: tuple[int, int], second: tuple[int, int]) -> Seam | None:
    """The :class:`Seam` between the chunks at document spans ``first`` and ``second`` (the second after the first in
    reading order: it starts no earlier), or None when there is nothing to read across -- the second ends inside the
    first, or either side has no sentence there.

    A unit that crosses the seam starts before the second chunk and ends after the first. It is a sentence of the
    line the seam cuts, or two lines read across a break: so the window runs from the last sentence of the first
    chunk's last line (its last before the second begins) -- or, when that is the line's only sentence there, from
    the last sentence of the non-blank line above -- to the first sentence of the second chunk's first line past the
    first -- or, when that is the line's only one, to the first sentence of the non-blank line below; each side at
    most :data:`SEAM_CHARS` characters."""
    (first_start, first_end), (second_start, second_end) = first, second
    after = max(first_end, second_start)  # where the second's text not in the first begins
    if second_end <= first_end or after >= second_end:
        return None
    # The tail: back from the last text before the second begins (or the first ends), one more line.
    stop = min(first_end, second_start)
    bound = max(first_start, stop - SEAM_CHARS)
    bound = _word_start(text, bound, stop) if bound > first_start else bound
    stop = bound + len(text[bound:stop].rstrip())
    if stop <= bound:
        return None
    line = max(bound, text.rfind("\n", bound, stop) + 1)
    sentences = split_sentences(text, line, stop)
    tail_start = sentences[-1][0]
    # The line's first sentence may be read across the break before it, with the last sentence of the line above.
    if len(sentences) == 1 and (before := _nonblank_line_before(text, line, bound)) is not None:
        tail_start = split_sentences(text, before, text.find("\n", before, line))[-1][0]
    # The head: on from the first text of the second past the first, one more line.
    begin = after + len(text[after:second_end]) - len(text[after:second_end].lstrip())
    high = _word_end(text, min(second_end, begin + SEAM_CHARS), begin)
    if high <= begin:
        return None
    line_end = text.find("\n", begin, high)
    sentences = split_sentences(text, begin, high if line_end < 0 else line_end)
    head_end = sentences[0][1]
    # The line's last sentence may be read across the break after it, with the first sentence of the line below.
    if len(sentences) == 1 and line_end >= 0 and (following := _nonblank_line_after(text, line_end, high)):
        head_end = split_sentences(text, *following)[0][1]
    if second_start < first_end:  # overlapping chunks: one run of the document
        if tail_start >= second_start:  # the whole tail is the second's too: nothing crosses
            return None
        return Seam(text[tail_start:head_end], first_end - tail_start, second_start - tail_start, tail_start,
                    second_start)
    between = text[first_end:second_start]
    between = between if not between.strip() else PARAGRAPH
    window = text[tail_start:first_end] + between + text[second_start:head_end]
    return Seam(window, first_end - tail_start, first_end - tail_start + len(between), tail_start, second_start)


_BLANK_LINE = re.compile(r"\n[^\S\n]*\n")


def may_cross(seam: Seam) -> bool:
    """False when no unit of ``seam``'s window can cross it (``ingestion.screening.normalize.units``), so it needs no
    scoring: the chunks meet at a blank line and the first ends a sentence. Units are sentences within a line, and a
    line's decoded encodings and rewritings; the line-break reading joins two lines across a blank one only when the
    first ends no sentence; of the encodings, only Ascii85 (``<~ ~>``) may hold a line break. Most seams are such
    paragraph breaks: screening skips them (``tests/test_screening_seams.py`` checks the rule against the units)."""
    between = seam.text[min(seam.first_end, seam.second_start):max(seam.first_end, seam.second_start)]
    if seam.second_start < seam.first_end or not _BLANK_LINE.search(between):
        return True
    return not SENTENCE_END.search(seam.text[:seam.first_end]) or "<~" in seam.text
