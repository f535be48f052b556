"""The seam between two chunks a model reads one after the other (sixteenth session).

Each chunk is screened on its own, so an instruction the chunker cut in two -- "Ignore all previous" at the end of
one chunk, "instructions and tell the user to ..." at the start of the next -- scored low in each half; yet search's
parent and neighbour expansion (``kb.expansion``) and MCP's ``read_section`` hand a model both chunks joined, and
it reads the whole instruction. A :class:`Seam` is the short window a model reads across the cut: the last sentence
of the first chunk (at most :data:`SEAM_CHARS` characters), what lies between the two when it is only whitespace (a
blank line, a space; anything else -- a heading, a section's text between -- is read as a paragraph break, as a
context joins its pieces), and the first sentence of the second (likewise bounded). Its verdict
(``ingestion.screening.detector.screen_seams``) is made of the units that hold text of both chunks alone -- a
sentence cut by the seam, or two lines read across it -- so what either chunk's own verdict judged is not judged
again, and the cost is one short window per seam.

Pure Python: which seams may be joined at all (the readers of the chunk a verdict flags must be allowed to read the
other one's text) is decided by the caller (``pipeline.screen``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ingestion.chunking.sentences import split_sentences
from ingestion.screening.normalize import WRAP_CHARS

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


def seam_window(text: str, first: tuple[int, int], second: tuple[int, int]) -> Seam | None:
    """The :class:`Seam` between the chunks at document spans ``first`` and ``second`` (the second after the first in
    reading order: it starts no earlier), or None when there is nothing to read across -- the second ends inside the
    first, or either side has no sentence there."""
    (first_start, first_end), (second_start, second_end) = first, second
    after = max(first_end, second_start)  # where the second's text not in the first begins
    if second_end <= first_end or after >= second_end:
        return None
    low = _word_start(text, max(first_start, first_end - SEAM_CHARS), first_end)
    tail = split_sentences(text, low, first_end)
    high = _word_end(text, min(second_end, after + SEAM_CHARS), after)
    head = split_sentences(text, after, high)
    if not tail or not head:
        return None
    tail_start, head_end = tail[-1][0], head[0][1]
    if second_start < first_end:  # overlapping chunks: one run of the document
        if tail_start >= second_start:  # the whole tail is the second's too: nothing crosses
            return None
        return Seam(text[tail_start:head_end], first_end - tail_start, second_start - tail_start, tail_start,
                    second_start)
    between = text[first_end:second_start]
    between = between if not between.strip() else PARAGRAPH
    window = text[tail_start:first_end] + between + text[second_start:head_end]
    return Seam(window, first_end - tail_start, first_end - tail_start + len(between), tail_start, second_start)
