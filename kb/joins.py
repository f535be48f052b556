"""The joins a reader is served that ingestion never screened, screened when they are read (seventeenth session).

Ingestion screens the seam between every two chunks a model may read one after the other
(``ingestion.screening.seams``, ``pipeline.screen.SeamWalks``): consecutive chunks every reader of one of them may
read with the other, walking past the chunks that may be held. Two kinds of join that a reader is served are in no
such pair, and were never screened:

* **a trimmed context** (``kb.expansion._trim``): a parent context over its token budget keeps windows around its
  hits and joins them -- paragraphs side by side that were never neighbours; half an instruction at the end of one
  paragraph and the other half at the start of a far one reached a model joined;
* **neighbours whose policies neither implies** (group sets neither within the other, e.g. ``{legal}`` and
  ``{hr}``): a reader in both groups reads them joined, and ingestion may flag neither by their seam (that would
  tell the readers of one about text they may not read).

Here every join of what a reader is served -- two text parts (``JoinPart``) one after the other, with only headings,
whitespace or cut text between them -- that is not such a pair is screened with the same detector and the same
window (``ingestion.screening.seam_window``: the end of the one and the start of the other, only the units that
cross, bounded), scored against the two parts' words. Its verdict depends on those two texts alone, all of which
the reader is served -- no oracle of anything else -- so it is cached by a digest of them, per tenant
(:class:`_Verdicts`: no tenant's reads make another's faster). A join ingestion screened needs nothing: two parts
that were ingestion's neighbours (nothing of the document the reader may read left out between them) of sections
one of whose policies implies the other's (``accounts.policy.policy_implies``). Most joins are paragraph breaks
after a finished sentence, which no unit crosses (``ingestion.screening.seams.may_cross``): not scored either.

A flagged join fails closed for that reader, as a flagged chunk does under the tenant's mode
(``kb.screening.returnable_q``): in quarantine (and an unknown mode) the later part is left out of what is served,
and the part after it is joined -- and screened -- in turn; in ``flag`` mode both are served and the join's verdict
is reported (a context's ``screening``: flagged, its reasons); ``off`` screens nothing. Bounded: at most
:data:`MAX_JOIN_WINDOWS` windows scored per read (each join at most once; joins are fewer than the parts served);
past it a join that needs scoring is taken as flagged, reason :data:`UNSCREENED_JOIN` (fail closed).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from accounts.policy import policy_implies
from ingestion.screening import screen_seams, seam_window
from ingestion.screening.seams import PARAGRAPH, may_cross
from kb.models import ScreeningMode

MAX_JOIN_WINDOWS = 64  # windows scored (or found in the cache) per read; past it a join is flagged unscreened
UNSCREENED_JOIN = "unscreened"
JOIN_REASON = "join"  # added to a flagged join's reasons where it is reported (flag mode): not a chunk's verdict

Policy = tuple[int, tuple[int, ...]]


def comparable(first: Policy | None, second: Policy | None) -> bool:
    """Whether every reader of one policy may read the other (either way): ingestion joined such neighbours."""
    if first is None or second is None:
        return False
    return policy_implies(first[0], first[1], second[0], second[1]) or \
        policy_implies(second[0], second[1], first[0], first[1])


@dataclass(frozen=True)
class JoinPart:
    """A text part as served, in order: ``text`` (as served), ``policy`` (its section's effective access level and
    group ids), ``neighbour`` (it was ingestion's neighbour of the part served before it: nothing of the document
    the reader may read was left out between them -- cut text, unreadable text, headings and whitespace aside) and
    ``between`` (what is served between the part before and this one: a blank line when they are separate
    pieces)."""

    text: str
    policy: Policy | None
    neighbour: bool
    between: str = "\n\n"


@dataclass(frozen=True)
class JoinVerdict:
    flagged: bool
    score: float = 0.0
    reasons: tuple[str, ...] = ()


_CLEAN = JoinVerdict(False)


class _Verdicts:
    """A bounded LRU of join verdicts by (tenant id, digest of the two texts and what is between): content-keyed
    and scoped to one tenant, as ``kb.serializers._error_flagged`` is -- a cache shared by tenants would answer one
    tenant's read faster when another's held the same text."""

    def __init__(self, size: int = 4096):
        self.size = size
        self._entries: OrderedDict[tuple[int, str], JoinVerdict] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[int, str]) -> JoinVerdict | None:
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple[int, str], verdict: JoinVerdict) -> None:
        with self._lock:
            self._entries[key] = verdict
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


VERDICTS = _Verdicts()


@dataclass
class JoinScreen:
    """One read's join screening: the tenant, its mode, and the bound (:data:`MAX_JOIN_WINDOWS`) over the read."""

    tenant_id: int
    mode: str | None
    scored: int = 0

    @property
    def active(self) -> bool:
        return self.mode != ScreeningMode.OFF

    @property
    def holds(self) -> bool:
        """Whether a flagged join leaves the later part out (every mode but ``flag``; fail closed)."""
        return self.mode != ScreeningMode.FLAG

    def verdict(self, first: str, between: str, second: str) -> JoinVerdict:
        """The verdict of the window a model reads across ``first`` + ``between`` + ``second``."""
        between = between if not between.strip() else PARAGRAPH
        text = first + between + second
        seam = seam_window(text, (0, len(first)), (len(first) + len(between), len(text)))
        if seam is None or not may_cross(seam):
            return _CLEAN
        self.scored += 1
        if self.scored > MAX_JOIN_WINDOWS:
            return JoinVerdict(True, 0.0, (UNSCREENED_JOIN,))
        digest = hashlib.sha256("\x00".join((first, between, second)).encode("utf-8", "surrogatepass")).hexdigest()
        key = (self.tenant_id, digest)
        found = VERDICTS.get(key)
        if found is None:
            made = screen_seams([seam], document_text=f"{first}\n\n{second}")[0]
            found = JoinVerdict(bool(made.flagged), round(float(made.score), 4), tuple(made.reasons)) \
                if made.flagged else _CLEAN
            VERDICTS.put(key, found)
        return found

    def walk(self, parts: Sequence[JoinPart]) -> tuple[set[int], list[str]]:
        """Screen the joins of ``parts`` (served in this order) that ingestion did not: the indices of the parts to
        leave out (quarantine), and the reasons of the flagged joins kept joined (``flag`` mode; with
        :data:`JOIN_REASON`). A part left out is no part of the next join: the one before it is joined with the one
        after, and that join screened in turn."""
        dropped: set[int] = set()
        flags: list[JoinVerdict] = []
        if not self.active:
            return dropped, []
        previous: int | None = None
        for index, part in enumerate(parts):
            if previous is None:
                previous = index
                continue
            before = parts[previous]
            adjacent = previous == index - 1
            if not (adjacent and part.neighbour and comparable(before.policy, part.policy)):
                found = self.verdict(before.text, part.between if adjacent else "\n\n", part.text)
                if found.flagged:
                    if self.holds:
                        dropped.add(index)
                        continue
                    flags.append(found)
            previous = index
        return dropped, sorted({JOIN_REASON, *(r for v in flags for r in v.reasons)}) if flags else []
