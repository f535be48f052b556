"""Fast, offline sentence and line segmentation with character offsets.

A careful regular expression rather than a library: the candidates on PyPI are
either slow (pysbd is ~100x slower than the tokenizer, which would dominate the
chunking time) or bring native binaries we would have to vet (blingfire).  The
chunker only needs *safe* cut points: a missed boundary costs a slightly less
even chunk, a false boundary costs a cut inside a sentence, so the rules lean
towards not splitting (abbreviations, initials, decimals, lowercase continuations).
"""

from __future__ import annotations

import re

Span = tuple[int, int]

# Terminal punctuation, optional closing quotes/brackets, then whitespace.  CJK
# full stops need no whitespace after them.  Linear time: a run of terminal punctuation is
# tried from its first character only (the lookbehind) and never given back (possessive), so a
# long run with no whitespace after it ("....." x 100,000, in a heading the screening reads
# whole) fails once, not once per character of the run -- the greedy form was quadratic.
_BOUNDARY = re.compile(
    r"""(?:(?<![.!?\u2026])[.!?\u2026]++["'\u201d\u2019)\]]*+\s+|[\u3002\uff01\uff1f]+["'\u201d\u2019)\]]*\s*)"""
)

# Words after which a period usually does not end a sentence (lower-cased, without the dot).
_ABBREVIATIONS = frozenset(
    """
    mr mrs ms dr prof sr jr st mt ft vs v e.g eg i.e ie cf al approx ca inc ltd corp
    gen col lt sgt capt cmdr adm gov sen rep pres hon messrs mme mlle
    jan feb mar apr jun jul aug sep sept oct nov dec u.s u.k u.n a.m p.m dept univ assn bros viz
    """.split()
)
# Abbreviations that only count as such before a number ("No. 5", "pp. 12"): "no." alone
# can end a sentence.
_NUMBER_ABBREVIATIONS = frozenset("no nos vol vols p pp fig figs eq eqs op ch sec art para ed".split())
_WORD_BEFORE = re.compile(r"([\w.'\u2019-]+)\s*$")
_SPACE = re.compile(r"\s+")
_NONSPACE = re.compile(r"\S+")


def _strip(text: str, start: int, end: int) -> Span | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _is_false_boundary(text: str, match: re.Match[str], next_pos: int) -> bool:
    punct = match.group(0).lstrip()[:1]
    if punct in "\u3002\uff01\uff1f":
        return False
    if next_pos < len(text):
        nxt = text[next_pos]
        # A lowercase continuation ("approx. five", "e.g. the") is not a new sentence.
        if nxt.islower():
            return True
    if punct != ".":
        return False
    # Look at the word the period closes (up to 20 chars back is plenty).
    head = text[max(0, match.start() - 20) : match.start()]
    found = _WORD_BEFORE.search(head)
    if not found:
        return False
    word = found.group(1).lower().rstrip(".")
    if word in _ABBREVIATIONS:
        return True
    if word in _NUMBER_ABBREVIATIONS and next_pos < len(text) and text[next_pos].isdigit():
        return True
    # A single letter ("J. R. R. Tolkien") is an initial.
    if len(word) == 1 and word.isalpha():
        return True
    return False


def split_sentences(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentence spans of ``text[start:end]``, whitespace-trimmed, in order.

    The spans partition the non-whitespace content of the range: every
    non-space character lies in exactly one span.
    """
    if end is None:
        end = len(text)
    spans: list[Span] = []
    cursor = start
    for match in _BOUNDARY.finditer(text, start, end):
        cut = match.end()
        if cut >= end:
            break
        if _is_false_boundary(text, match, cut):
            continue
        span = _strip(text, cursor, cut)
        if span:
            spans.append(span)
        cursor = cut
    span = _strip(text, cursor, end)
    if span:
        spans.append(span)
    return spans


def split_lines(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Non-blank line spans of ``text[start:end]`` (trailing whitespace trimmed, indentation kept)."""
    if end is None:
        end = len(text)
    spans: list[Span] = []
    pos = start
    while pos < end:
        nl = text.find("\n", pos, end)
        line_end = end if nl < 0 else nl
        stop = line_end
        while stop > pos and text[stop - 1].isspace():
            stop -= 1
        if stop > pos:
            first = pos
            # Keep indentation inside the line but never start a span on a newline.
            while first < stop and text[first] in "\r\n":
                first += 1
            spans.append((first, stop))
        pos = line_end + 1
    return spans


def split_words(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Whitespace-separated word spans of ``text[start:end]``."""
    if end is None:
        end = len(text)
    return [m.span() for m in _NONSPACE.finditer(text, start, end)]
