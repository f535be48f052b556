"""Packing a run of atomic pieces (sentences, lines, words) into chunk ranges.

Pure index arithmetic, no text: the chunker turns a run of blocks into pieces
with token counts and boundary strengths, and this module decides where to cut.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

# Strength of the boundary *before* a piece: the packer prefers to cut on the
# strongest boundary available, and overlap may only start on a sentence or better.
FORCED = -1  # never join with the previous piece (two halves of one split word)
TOKEN = 0  # inside a word (a word longer than the limit)
WORD = 1  # between words of one overlong sentence
CLAUSE = 2  # after a comma, semicolon, colon or dash inside a sentence (``boundaries`` "clause" / "line")
LINE = 3  # a line break inside a sentence (``boundaries`` "clause"), or any line break ("line")
SENTENCE = 4  # between sentences, or lines of code
BLOCK = 5  # between blocks (paragraphs, list items)
TOPIC = 6  # a sentence or block boundary where the topic changes (semantic splitting only)

# A cut on a weaker boundary is only taken when no stronger one leaves the chunk
# at least this fraction of the balanced goal size.
MIN_FILL = 0.5


def pack(
    tokens: Sequence[int],
    strengths: Sequence[int],
    *,
    target: int,
    overlap: int = 0,
    balance: bool = True,
) -> list[tuple[int, int]]:
    """Cut ``len(tokens)`` pieces into ranges ``[i, j)`` of at most ``target`` tokens.

    A single piece larger than ``target`` gets a range of its own (the caller
    guarantees every piece fits the hard limit).  With ``balance`` the run is cut
    into ``ceil(total / target)`` near-equal chunks instead of full chunks plus a
    small remainder, and cuts prefer strong boundaries (topic > block > sentence > line > clause > word).
    ``overlap`` (tokens) starts each next range on an earlier sentence boundary so
    that up to ``overlap`` tokens repeat.
    """
    n = len(tokens)
    if n == 0:
        return []
    prefix = [0] * (n + 1)
    for idx, count in enumerate(tokens):
        prefix[idx + 1] = prefix[idx] + count
    # Forced cuts are rare: their positions, bisected, stand in for scanning the pieces
    # (a 5 MB one-sentence text has ~800,000 word pieces).
    forced = [k for k, s in enumerate(strengths) if s == FORCED]
    ranges: list[tuple[int, int]] = []
    i = 0
    while i < n:
        remaining = prefix[n] - prefix[i]
        next_forced = forced[f] if (f := bisect_right(forced, i)) < len(forced) else n
        if remaining <= target and next_forced == n:
            ranges.append((i, n))
            break
        # Largest end that fits the target (at least one piece), stopping at a forced cut.
        fits = bisect_right(prefix, prefix[i] + target) - 1
        jmax = max(i + 1, min(n, fits, next_forced))
        if jmax == n or not balance:
            j = jmax
        else:
            parts = max(1, math.ceil(remaining / target))
            goal = remaining / parts
            j = _best_cut(prefix, strengths, i, jmax, goal)
        ranges.append((i, j))
        if j >= n:
            break
        nxt = j
        if overlap > 0:
            # Walk back over whole sentences while the repeated part fits the overlap.
            k = j - 1
            while k > i and prefix[j] - prefix[k] <= overlap:
                if strengths[k] >= SENTENCE:
                    nxt = k
                k -= 1
        i = nxt
    return ranges


def _best_cut(prefix: list[int], strengths: Sequence[int], i: int, jmax: int, goal: float) -> int:
    """End in ``(i, jmax]``: the strongest boundary that fills ``MIN_FILL`` of the goal, nearest the goal.

    The caller guarantees ``jmax < len(strengths)``.  Ties go to the earliest end.
    """
    floor = MIN_FILL * goal
    window = strengths[i + 1 : jmax + 1]
    if min(window) == max(window):
        # All boundaries equal (the words of one overlong sentence): the end nearest
        # the goal is found by bisection instead of a scan.
        base = prefix[i]
        p = bisect_left(prefix, base + goal, i + 1, jmax + 1)
        below = p - 1
        if below > i + 1:
            # Pieces of no tokens leave equal sizes: the scan would take the earliest.
            below = bisect_left(prefix, prefix[below], i + 1, below)
        candidates = [j for j in (below, p) if i + 1 <= j <= jmax and (prefix[j] - base >= floor or j == jmax)]
        if not candidates:
            return jmax
        return min(candidates, key=lambda j: (abs(prefix[j] - base - goal), j))
    best_j = jmax
    best_key: tuple[int, float] | None = None
    for j in range(i + 1, jmax + 1):
        size = prefix[j] - prefix[i]
        if size < floor and j != jmax:
            continue
        key = (strengths[j], -abs(size - goal))
        if best_key is None or key > best_key:
            best_key = key
            best_j = j
    return best_j
