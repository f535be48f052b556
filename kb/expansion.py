"""Authorized expansion of search hits into contexts.

A hit's context is a section seen through the caller's permissions: the text of
that section and of its descendants that the caller may read, in document order,
and nothing of the others -- no text, no title, no placeholder. Heading paths are
computed here too, at query time, from the ancestor chain and the *current*
section policies (permissions can change after ingestion; stored heading paths
cannot be trusted for a given reader).

Every access decision goes through :func:`accounts.policy.can_read` (sections; heading paths
through :func:`accounts.policy.readable_heading_path`) or :func:`accounts.access.readable_q` (chunks).
"""

from __future__ import annotations

import bisect
import json
import re
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from django.db import connection
from django.db.models import Q

from accounts.access import readable_q
from accounts.policy import PathNode, Reader, can_read, readable_heading_path
from kb.joins import JoinPart, JoinScreen
from kb.models import TITLE_SCREENING, Chunk, ScreeningMode
from kb.search_types import SearchContext, SearchHit
from kb.titles import shown_title

# A document's spans that may not enter any context (screening's held chunks, ``kb.screening.Screened.holes``).
Holes = Callable[[uuid.UUID], Sequence[tuple[int, int]]]

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class SectionNode:
    id: uuid.UUID
    document_id: uuid.UUID
    parent_id: uuid.UUID | None
    order: int
    start: int
    title: str
    access_level: int
    access_groups: tuple[int, ...]
    body_spans: tuple[tuple[int, int], ...]
    kind: str
    # The row's version as loaded (PostgreSQL's ``xmin``: the transaction that wrote it), new at every write of the
    # row; its text is read only while the row is still this version (:func:`fetch_texts`). "": never matches.
    version: str = ""


class SectionForest:
    """Parts of the section trees of one tenant's documents, with one reader's view of them.

    Only what a search needs is loaded, never whole documents (a manual can have thousands
    of sections): :meth:`around` loads the hit sections and their ancestors (heading paths,
    expansion roots), :meth:`add_subtrees` the descendants of the expansion roots. Each is
    one recursive query that follows ``parent_id`` inside the tenant.
    """

    def __init__(self, reader: Reader, *, mode: str | None = ScreeningMode.QUARANTINE):
        self.reader = reader
        # The tenant's screening mode, under which titles and headings are shown (``kb.titles.shown_title``:
        # a held one as a placeholder); None: as stored -- the review queue's alone (a reviewer sees what they
        # release). The default is the strictest (fail closed).
        self.mode = mode
        self.nodes: dict[uuid.UUID, SectionNode] = {}
        self.path_nodes: dict[uuid.UUID, PathNode] = {}  # the same sections, as heading paths need them
        self.children: dict[uuid.UUID, list[SectionNode]] = defaultdict(list)
        self.document_titles: dict[uuid.UUID, str] = {}
        self._with_bodies: set[uuid.UUID] = set()
        self._joins: JoinScreen | None = None

    def join_screen(self) -> JoinScreen:
        """The join screening of the read this forest serves (:mod:`kb.joins`): one per forest, so the contexts of
        a search and its budget fill share one bound (:data:`kb.joins.MAX_JOIN_WINDOWS`)."""
        if self._joins is None:
            self._joins = JoinScreen(self.reader.tenant_id, self.mode)
        return self._joins

    @classmethod
    def around(cls, reader: Reader, section_ids: Iterable[uuid.UUID], *, bodies: bool = True,
               mode: str | None = ScreeningMode.QUARANTINE) -> SectionForest:
        """The given sections and all their ancestors. ``bodies=False`` leaves out the body spans
        (enough for heading paths and titles; decoding them was a third of the lookup). ``mode``: see
        the constructor."""
        forest = cls(reader, mode=mode)
        forest._load(_UP, set(section_ids), bodies=bodies)
        return forest

    def add_subtrees(self, root_ids: Iterable[uuid.UUID]) -> None:
        """Every descendant of the given sections, with body spans."""
        self._load(_DOWN, set(root_ids), bodies=True)

    def _load(self, step: str, ids: set[uuid.UUID], *, bodies: bool) -> None:
        if not ids:
            return
        sql = _FOREST_SQL.format(step=step, body="s.body_spans" if bodies else "NULL::jsonb", record=TITLE_SCREENING)
        tenant = self.reader.tenant_id
        with connection.cursor() as cursor:
            cursor.execute(sql, [tenant, list(ids), tenant])
            rows = cursor.fetchall()
        for (sid, doc, parent, order, start, title, level, groups, spans, kind, document_title, record,
             document_record, content_title, candidates, version) in rows:
            if sid in self.nodes and (sid in self._with_bodies or not bodies):
                continue
            # The document's title as this reader is shown it (kb.titles.reader_title): the first title candidate of
            # a section they may read, else the stored one ("untitled", or one the uploader typed).
            if isinstance(candidates, str):
                candidates = json.loads(candidates)
            if content_title:
                document_title = next((str(c[0]) for c in candidates or () if can_read(
                    self.reader, level=int(c[1]), group_ids=tuple(c[2] or ()))), document_title)
            if isinstance(spans, str):  # Django leaves jsonb undecoded on raw cursors
                spans = json.loads(spans)
            if self.mode is not None:
                record, document_record = (json.loads(r) if isinstance(r, str) else r for r in (record, document_record))
                title = shown_title(title or "", record, self.mode)
                document_title = shown_title(document_title, document_record, self.mode)
            self.document_titles[doc] = document_title
            self.nodes[sid] = SectionNode(
                sid, doc, parent, order, start, title or "", level, tuple(groups or ()),
                tuple((int(s), int(e)) for s, e in (spans or ()) if int(e) > int(s)), kind, version,
            )
            self.path_nodes[sid] = PathNode(sid, parent, title or "", level, tuple(groups or ()))
            if bodies:
                self._with_bodies.add(sid)
        self.children = defaultdict(list)
        for node in sorted(self.nodes.values(), key=lambda n: n.order):
            if node.parent_id is not None:
                self.children[node.parent_id].append(node)

    def readable(self, node: SectionNode) -> bool:
        return can_read(self.reader, level=node.access_level, group_ids=node.access_groups)

    def heading_path(self, section_id: uuid.UUID) -> list[str]:
        """Titles of the readable ancestors-or-self of a section, root first."""
        return list(readable_heading_path(self.reader, self.path_nodes, section_id))

    def expansion_root(self, section_id: uuid.UUID, level: str) -> SectionNode:
        """The section a hit expands to: its own (``leaf``) or its nearest titled *readable*
        ancestor (``parent``) -- the parent in the reader's own view of the tree, as the
        sections API shows it.

        A context reports its root's id, so an ancestor the reader may not read is never a
        root: ``parent`` climbs past it (its readable descendants still contribute their own
        text), and stays at the hit's section when no titled ancestor is readable. It never
        climbs to an untitled document root either: that would turn every hit into the whole
        document.
        """
        node = self.nodes[section_id]
        if level == "parent":
            parent = self.nodes.get(node.parent_id) if node.parent_id is not None else None
            while parent is not None and not (parent.title and self.readable(parent)):
                parent = self.nodes.get(parent.parent_id) if parent.parent_id is not None else None
            if parent is not None:
                return parent
        return node

    def readable_pieces(self, root: SectionNode) -> list[Piece]:
        """The root's own body (when readable) and its readable descendants' titles and bodies, in document order.

        An unreadable section contributes nothing of its own -- neither text nor title --
        but its readable descendants still do: their text is governed by their own policy.
        """
        pieces: list[Piece] = []
        stack = [root]  # iterative: an HTML section tree can be nested deeper than Python's recursion limit
        while stack:
            node = stack.pop()
            if self.readable(node):
                if node is not root and node.title:
                    pieces.append(Piece(node.id, None, None, title=node.title, position=node.start))
                for start, end in node.body_spans:
                    pieces.append(Piece(node.id, start, end))
            stack.extend(self.children.get(node.id, ()))
        # Document order: a parent's body may continue after a child (text after a region).
        # A title sits at its section's start, so it stays right before that section's body.
        pieces.sort(key=lambda p: (p.position if p.is_title else p.start, not p.is_title))
        return pieces


_UP = "s.id = t.parent_id"
_DOWN = "s.parent_id = t.id"
_FOREST_SQL = """
WITH RECURSIVE t AS (
    SELECT id, parent_id FROM kb_section WHERE tenant_id = %s AND id = ANY(%s::uuid[])
    UNION
    SELECT s.id, s.parent_id FROM kb_section s JOIN t ON {step} WHERE s.tenant_id = %s
)
SELECT s.id, s.document_id, s.parent_id, s."order", s.start, s.title, s.access_level, s.access_groups,
       {body}, s.kind, d.title, s.metadata -> '{record}', d.metadata -> '{record}',
       d.content_title,
       CASE WHEN d.content_title <> '' THEN (
           SELECT json_agg(json_build_array(c.title_candidate, c.access_level, c.access_groups) ORDER BY c."order")
           FROM kb_section c WHERE c.document_id = d.id AND c.tenant_id = d.tenant_id AND c.title_candidate <> '')
       END,
       s.xmin::text
FROM t JOIN kb_section s ON s.id = t.id
JOIN kb_document d ON d.id = s.document_id AND d.tenant_id = s.tenant_id
"""


@dataclass
class Piece:
    """One part of a context: a span of document text, or a readable descendant's title."""

    section_id: uuid.UUID
    start: int | None
    end: int | None
    title: str = ""
    text: str = ""
    position: int = 0  # where a title piece sorts (its section's start)
    origin: tuple[int, int] | None = None  # the body span a paragraph was cut from
    gone: bool = False  # its section was written after the spans were loaded: no text (fetch_texts)

    @property
    def is_title(self) -> bool:
        return self.start is None


@dataclass
class ContextDraft:
    """A context before its text is fetched and the budget applied."""

    key: tuple
    document_id: uuid.UUID
    section_id: uuid.UUID
    heading_path: list[str]
    pieces: list[Piece]
    hits: list = field(default_factory=list)  # SearchHit, best first

    @property
    def best(self):
        return self.hits[0]


def fetch_texts(forest: SectionForest, pieces: Sequence[tuple[uuid.UUID, Piece]]) -> None:
    """Fill each span piece's text with ``document.text[start:end]``, in one query.

    Only the needed slices leave the database (documents can be megabytes); ``substr``
    counts characters, like Python's string indices.

    The spans were loaded with their sections (``forest``) by an earlier statement. A replacement commits new
    text and new sections together, so a span is read only if its section is still, in this statement's
    snapshot, the very row version it was loaded from (``SectionNode.version``); else the piece is marked
    ``gone``. The old offsets would cut the new text, whatever section sits there now -- found by the load
    harness, docs/reliability.md. The row's existence alone is not enough: the same bytes read another way (as
    Markdown instead of plain text, which leaves an HTML comment out of the text) are new text under sections with
    the *same ids* (keyed by the bytes and the section's place) and other offsets -- found attacking time, twenty-first
    session. A section whose policy changed since is a new version too: no text of it is read under the old one.
    """
    wanted = [(doc, p) for doc, p in pieces if not p.is_title]
    if not wanted:
        return
    sql = (
        "SELECT s.i, substr(d.text, s.start + 1, s.stop - s.start) "
        "FROM unnest(%s::uuid[], %s::uuid[], %s::text[], %s::int[], %s::int[], %s::int[]) "
        "AS s(doc, section, version, i, start, stop) "
        "JOIN kb_document d ON d.id = s.doc AND d.tenant_id = %s "
        "JOIN kb_section sec ON sec.id = s.section AND sec.document_id = d.id AND sec.xmin::text = s.version"
    )
    for _, piece in wanted:
        piece.gone = True
    versions = [getattr(forest.nodes.get(p.section_id), "version", "") for _, p in wanted]
    with connection.cursor() as cursor:
        cursor.execute(
            sql,
            [
                [doc for doc, _ in wanted], [p.section_id for _, p in wanted], versions, list(range(len(wanted))),
                [p.start for _, p in wanted], [p.end for _, p in wanted], forest.reader.tenant_id,
            ],
        )
        for i, text in cursor.fetchall():
            wanted[i][1].text = text or ""
            wanted[i][1].gone = False


def span_less(span: tuple[int, int], holes: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``span`` outside ``holes``, in order: how a held chunk is cut out of what is read
    (:func:`cut_pieces`; ``pipeline.screen`` screens the seams as cut so)."""
    parts = [span]
    for hole_start, hole_end in holes:
        kept = []
        for start, end in parts:
            if hole_end <= start or hole_start >= end:
                kept.append((start, end))
                continue
            if start < hole_start:
                kept.append((start, hole_start))
            if hole_end < end:
                kept.append((hole_end, end))
        parts = kept
    return parts


def cut_pieces(pieces: Sequence[Piece], holes: Sequence[tuple[int, int]]) -> list[Piece]:
    """``pieces`` without the parts inside ``holes`` (document offsets): the spans of chunks that
    screening keeps out (``kb.screening.Screened``). A span piece is split around a hole (its text too, when it
    has one); a title piece at a position inside a hole is dropped (a heading that is part of a held
    chunk). Pieces untouched by any hole are returned as they are."""
    if not holes:
        return list(pieces)
    out: list[Piece] = []
    for piece in pieces:
        if piece.is_title:
            if not any(start <= piece.position < end for start, end in holes):
                out.append(piece)
            continue
        segments = span_less((piece.start, piece.end), holes)
        if segments == [(piece.start, piece.end)]:
            out.append(piece)
            continue
        for start, end in segments:
            text = piece.text[start - piece.start : end - piece.start] if piece.text else ""
            out.append(Piece(piece.section_id, start, end, text=text))
    return out


def titles_over_text(forest: SectionForest, pieces: Sequence[Piece]) -> list[Piece]:
    """``pieces`` without the titles under which no text is left: a descendant's title enters a context
    only with some text of its own section or of one below it.

    A title is screened only as part of the chunks below it (their embedded heading path): a heading with
    no text under it is in no chunk and was never screened, and one whose text was all cut out (held for
    review) was held with it. Either, kept as a bare title line, would reach the model unflagged
    (found attacking the demo)."""
    covered: set[uuid.UUID] = set()
    for piece in pieces:
        if piece.is_title:
            continue
        node = forest.nodes.get(piece.section_id)
        while node is not None and node.id not in covered:
            covered.add(node.id)
            node = forest.nodes.get(node.parent_id) if node.parent_id is not None else None
    return [p for p in pieces if not p.is_title or p.section_id in covered]


def split_paragraphs(piece: Piece) -> list[Piece]:
    """Cut a span piece at blank lines, so a context can be trimmed on paragraph boundaries."""
    if piece.is_title:
        return [piece]
    out: list[Piece] = []
    pos = 0
    for match in [*_PARAGRAPH_BREAK.finditer(piece.text), None]:
        stop = match.start() if match else len(piece.text)
        chunk = piece.text[pos:stop]
        lead = len(chunk) - len(chunk.lstrip())
        body = chunk.strip()
        if body:
            start = piece.start + pos + lead
            out.append(Piece(piece.section_id, start, start + len(body), text=body, origin=(piece.start, piece.end)))
        if match:
            pos = match.end()
    return out


def neighbor_chunks(
    reader: Reader, version_id: uuid.UUID, windows: Sequence[tuple[uuid.UUID, int, int]]
) -> dict[uuid.UUID, list[tuple[uuid.UUID, int, int, int]]]:
    """Readable chunks of the given (section, first ordinal, last ordinal) windows, by section.

    Same section means same policy, but the rule is applied anyway: it costs nothing
    and keeps "every path that returns text goes through the rule" literally true.
    """
    if not windows:
        return {}
    where = Q()
    for section_id, first, last in windows:
        where |= Q(section_id=section_id, ordinal__gte=first, ordinal__lte=last)
    rows = (
        Chunk.objects.filter(readable_q(reader), index_version_id=version_id)
        .filter(where)
        .values_list("section_id", "id", "ordinal", "start", "end")
    )
    out: dict[uuid.UUID, list[tuple[uuid.UUID, int, int, int]]] = defaultdict(list)
    for section_id, cid, ordinal, start, end in rows:
        out[section_id].append((cid, ordinal, start, end))
    for values in out.values():
        values.sort(key=lambda r: r[1])
    return out


def report_spans(pieces: Iterable[Piece]) -> list[tuple[int, int]]:
    """Character spans of a context's text pieces, in order: consecutive paragraphs cut from one
    body span are reported as one span (only whitespace lies between them)."""
    spans: list[list] = []
    for piece in pieces:
        if piece.is_title:
            continue
        origin = piece.origin or (piece.start, piece.end)
        if spans and piece.origin is not None and spans[-1][2] == origin:
            spans[-1][1] = piece.end
        else:
            spans.append([piece.start, piece.end, origin])
    return merge_spans((s, e) for s, e, _ in spans)


def merge_spans(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Union of overlapping or touching spans, in order."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def clip_to(spans: Iterable[tuple[int, int]], allowed: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``spans`` inside ``allowed`` (a section's own body spans): a chunk window
    can then never reach into the text of a child section between two body spans."""
    out = []
    for start, end in spans:
        for a_start, a_end in allowed:
            s, e = max(start, a_start), min(end, a_end)
            if s < e:
                out.append((s, e))
    return merge_spans(out)


def fair_shares(sizes: Sequence[int], budget: int) -> list[int]:
    """Max-min fair split of ``budget`` among contexts of whole sizes ``sizes``.

    Every context gets ``min(size, cap)`` with the one cap that spends the budget: the small
    ones whole, the large ones the same share each (water-filling). So a long first context
    cannot starve the others -- each hit keeps some context of its own. Integer shares; the
    rounding remainder goes to the earliest (best) contexts that can use it.
    """
    shares = [0] * len(sizes)
    left = max(budget, 0)
    open_ = sorted(range(len(sizes)), key=lambda i: (sizes[i], i))
    while open_:
        cap = left // len(open_)
        smallest = open_[0]
        if sizes[smallest] <= cap:  # fits whole: give it all it needs, share the rest again
            shares[smallest] = sizes[smallest]
            left -= sizes[smallest]
            open_.pop(0)
            continue
        extra = left - cap * len(open_)
        for i in sorted(open_):
            shares[i] = cap + (1 if extra > 0 else 0)
            extra -= 1
        break
    return shares


def first_sentences(text: str, counter, budget: int) -> str:
    """The longest prefix of ``text`` made of whole sentences within ``budget`` tokens ("" if none).

    A prefix of the original text (not re-joined sentences), so its span stays exact.
    """
    best = ""
    for match in [*_SENTENCE_END.finditer(text), None]:
        candidate = text[: match.start()] if match else text
        if counter.count(candidate) > budget:
            break
        best = candidate
    return best


# ----------------------------------------------------------------------------- contexts and the budget


def parent_contexts(
    forest: SectionForest, hits: list[SearchHit], level: str, max_contexts: int, budget: int, holes: Holes
) -> list[SearchContext]:
    drafts: dict[uuid.UUID, ContextDraft] = {}
    hits = [hit for hit in hits if hit.section_id in forest.nodes]  # else deleted since the hit was found
    forest.add_subtrees({forest.expansion_root(hit.section_id, level).id for hit in hits})
    for hit in hits:  # best first, so a context's first hit is its best one
        root = forest.expansion_root(hit.section_id, level)
        draft = drafts.get(root.id)
        if draft is None:
            draft = drafts[root.id] = ContextDraft(
                key=(root.id,), document_id=root.document_id, section_id=root.id,
                heading_path=forest.heading_path(root.id), pieces=forest.readable_pieces(root),
            )
        draft.hits.append(hit)
    return _finish(forest, list(drafts.values())[:max_contexts], budget, holes)


def neighbor_contexts(
    forest: SectionForest, version_id: uuid.UUID, hits: list[SearchHit], n: int, max_contexts: int, budget: int,
    holes: Holes,
) -> list[SearchContext]:
    """One context per run of hits whose ±n chunk windows overlap or touch, within one section."""
    by_section: dict[uuid.UUID, list[SearchHit]] = defaultdict(list)
    for hit in hits:
        by_section[hit.section_id].append(hit)
    windows = [(sid, h.ordinal - n, h.ordinal + n) for sid, hs in by_section.items() for h in hs]
    chunks = neighbor_chunks(forest.reader, version_id, windows)
    drafts: list[ContextDraft] = []
    for section_id, section_hits in by_section.items():
        node = forest.nodes.get(section_id)
        if node is None or not forest.readable(node):
            continue
        runs: list[list[SearchHit]] = []
        for hit in sorted(section_hits, key=lambda h: h.ordinal):
            if runs and hit.ordinal - n <= runs[-1][-1].ordinal + n + 1:
                runs[-1].append(hit)
            else:
                runs.append([hit])
        for run in runs:
            first, last = run[0].ordinal - n, run[-1].ordinal + n
            spans = [(s, e) for _, o, s, e in chunks.get(section_id, ()) if first <= o <= last]
            spans += [(h.start, h.end) for h in run]
            spans = clip_to(merge_spans(spans), node.body_spans)
            drafts.append(
                ContextDraft(
                    key=(section_id, first), document_id=node.document_id, section_id=section_id,
                    heading_path=forest.heading_path(section_id),
                    pieces=[Piece(section_id, s, e) for s, e in spans],
                    hits=sorted(run, key=lambda h: h.rank),
                )
            )
    drafts.sort(key=lambda d: d.best.rank)
    return _finish(forest, drafts[:max_contexts], budget, holes)


def _finish(forest: SectionForest, drafts: list[ContextDraft], budget: int, holes: Holes) -> list[SearchContext]:
    """Fetch the texts and apply the token budget; contexts stay in the order of their best hit.

    Budget rule: when every context fits whole, all are whole. Otherwise the budget is split
    max-min fairly (:func:`fair_shares`): contexts under the common share stay
    whole, the others are *truncated* to their share (:func:`_trim`) -- every hit's own chunk text
    first (best hit first), then whole paragraphs (or the rest of one) growing outward around them,
    else the best hit's own text as far as whole sentences fit. What a truncation leaves unused is shared
    again among the contexts after it. A context that cannot keep even one sentence is dropped.
    So one long section (headingless text is one) cannot take the whole budget from the hits
    that follow it.
    """
    from ingestion.chunking.tokens import default_counter

    counter = default_counter()
    for draft in drafts:  # the text of chunks that may not be returned never enters a context
        draft.pieces = cut_pieces(draft.pieces, holes(draft.document_id))
    fetch_texts(forest, [(d.document_id, p) for d in drafts for p in d.pieces])
    whole: list[tuple[ContextDraft, list[Piece], int]] = []
    for draft in drafts:
        if any(p.gone for p in draft.pieces):
            continue  # a section was written since it was loaded (the document replaced, a policy changed)
        pieces = titles_over_text(forest, [p for p in draft.pieces if p.is_title or p.text.strip()])
        if pieces:
            whole.append((draft, pieces, counter.count(_compose(pieces))))
    contexts: list[SearchContext] = []
    remaining = budget
    joins = forest.join_screen()  # one read: one bound (kb.joins)
    for index, (draft, whole_pieces, tokens) in enumerate(whole):
        share = fair_shares([t for _, _, t in whole[index:]], remaining)[0]
        truncated = False
        pieces = whole_pieces
        if tokens > share:
            pieces = _trim(pieces, draft.hits, counter, share)
            if not pieces:
                continue
            truncated = True
            tokens = counter.count(_compose(pieces))
        served, join_reasons = screen_joins(forest, whole_pieces, pieces, joins)
        if served is not pieces:  # a part left out by a flagged join
            pieces = served
            if not pieces:
                continue
            tokens = counter.count(_compose(pieces))
        contexts.append(
            SearchContext(
                section_id=draft.section_id, document_id=draft.document_id, document_title=draft.best.document_title,
                heading_path=draft.heading_path, text=_compose(pieces), chunk_ids=[h.chunk_id for h in draft.hits],
                score=draft.best.score, token_count=tokens,
                spans=report_spans(pieces), truncated=truncated, join_reasons=tuple(join_reasons),
            )
        )
        remaining -= tokens
    return contexts


def fill_contexts(
    forest: SectionForest, contexts: Sequence[SearchContext], spare: Sequence[SearchHit], budget: int, holes: Holes
) -> list[SearchContext]:
    """The budget fill (issue 30, sixteenth round; ``kb.search.search(budget_fill=True)``): while ``contexts`` leave
    part of ``budget`` unused, each of the ``spare`` hits (the ones ranked after the page, best first) adds its own
    chunk's text as one more context -- when a context does not already hold all of that text (its paragraphs, the
    whitespace at their ends aside) and its tokens fit what is left; one that does not fit is passed over and the
    next tried. Only whole chunks, never trimmed; at most one context per spare hit.

    A spare hit is a row the search's retrieval returned (the access rule and the screening mode in its SQL); its
    section is checked readable again here (fail closed), its text is cut by ``holes`` and read through
    :func:`fetch_texts`, and the joins inside it are screened as :func:`_finish` screens a context's."""
    from ingestion.chunking.tokens import default_counter

    counter = default_counter()
    used = sum(c.token_count for c in contexts)
    if used >= budget:
        return []
    covered: dict[uuid.UUID, list[tuple[int, int]]] = defaultdict(list)
    for context in contexts:
        covered[context.document_id].extend(context.spans)
    candidates: list[tuple[SearchHit, SectionNode, list[Piece]]] = []
    for hit in spare:
        node = forest.nodes.get(hit.section_id)
        if node is None or not forest.readable(node):
            continue
        spans = clip_to([(hit.start, hit.end)], node.body_spans)
        candidates.append((hit, node, cut_pieces([Piece(node.id, s, e) for s, e in spans], holes(hit.document_id))))
    fetch_texts(forest, [(hit.document_id, p) for hit, _, pieces in candidates for p in pieces])
    joins = forest.join_screen()  # the same bound as the contexts before
    out: list[SearchContext] = []
    for hit, node, pieces in candidates:
        if used >= budget:
            break
        if any(p.gone for p in pieces):
            continue  # a section was written since it was loaded (the document replaced, a policy changed)
        pieces = [p for p in pieces if p.text.strip()]
        merged = merge_spans(covered[hit.document_id])
        if all(any(s <= start and end <= e for s, e in merged) for start, end in map(_stripped, pieces)):
            continue  # nothing of it that a context does not already hold (none at all: nothing to add)
        served, join_reasons = screen_joins(forest, pieces, pieces, joins)
        if not served:
            continue
        text = _compose(served)
        tokens = counter.count(text)
        if used + tokens > budget:
            continue
        out.append(
            SearchContext(
                section_id=node.id, document_id=hit.document_id, document_title=hit.document_title,
                heading_path=forest.heading_path(node.id), text=text, chunk_ids=[hit.chunk_id], score=hit.score,
                token_count=tokens, spans=report_spans(served), truncated=False, join_reasons=tuple(join_reasons),
            )
        )
        used += tokens
        covered[hit.document_id].extend(report_spans(served))
    return out


def _stripped(piece: Piece) -> tuple[int, int]:
    """A text piece's span without the whitespace at its ends (a context's paragraphs are kept stripped)."""
    lead = len(piece.text) - len(piece.text.lstrip())
    return piece.start + lead, piece.start + len(piece.text.rstrip())


def screen_joins(forest: SectionForest, whole: list[Piece], pieces: list[Piece],
                 joins: JoinScreen) -> tuple[list[Piece], list[str]]:
    """``pieces`` (a context as served: ``whole``, or what :func:`_trim` kept of it) with the joins ingestion never
    screened screened (:mod:`kb.joins`): two text pieces served one after the other were ingestion's neighbours when
    they come from consecutive pieces of ``whole`` (or one), nothing of them left out between; they were screened
    joined when their sections' policies are comparable. Any other join -- windows of a trimmed context, neighbours
    of incomparable policies -- is screened now: a flagged one leaves the later piece out (quarantine; the titles
    left over no text go with it) or is reported (``flag`` mode: the reasons returned)."""
    if not joins.active:
        return pieces, []
    originals = [p for p in whole if not p.is_title]
    starts = [p.start for p in originals]
    texts = [i for i, p in enumerate(pieces) if not p.is_title]
    parts: list[JoinPart] = []
    last_origin: int | None = None
    last: Piece | None = None
    for position, i in enumerate(texts):
        piece = pieces[i]
        at = bisect.bisect_right(starts, piece.start) - 1
        origin = at if at >= 0 and originals[at].section_id == piece.section_id \
            and piece.end <= originals[at].end else None
        neighbour = False
        if last is not None and origin is not None and last_origin is not None:
            before, this = originals[last_origin], originals[origin]
            if origin == last_origin:
                neighbour = not this.text[last.end - this.start:piece.start - this.start].strip()
            elif origin == last_origin + 1:
                neighbour = not before.text[last.end - before.start:].strip() \
                    and not this.text[:piece.start - this.start].strip()
        titled = position > 0 and any(pieces[k].is_title for k in range(texts[position - 1] + 1, i))
        node = forest.nodes.get(piece.section_id)
        parts.append(JoinPart(piece.text, (node.access_level, node.access_groups) if node else None, neighbour,
                              "\n\n## \n\n" if titled else "\n\n"))
        last, last_origin = piece, origin
    dropped, reasons = joins.walk(parts)
    if not dropped:
        return pieces, reasons
    gone = {texts[k] for k in dropped}
    return titles_over_text(forest, [p for i, p in enumerate(pieces) if i not in gone]), reasons


def _compose(pieces: list[Piece]) -> str:
    return "\n\n".join(f"## {p.title}" if p.is_title else p.text for p in pieces)


def cut_at(piece: Piece, cuts: Iterable[int]) -> list[Piece]:
    """A paragraph piece cut again at the given document offsets that fall inside it (whitespace at
    each cut trimmed; the parts keep the paragraph's ``origin``). Titles are returned as they are."""
    if piece.is_title:
        return [piece]
    inner = sorted({c for c in cuts if piece.start < c < piece.end})
    out: list[Piece] = []
    for lo, hi in zip([piece.start, *inner], [*inner, piece.end], strict=True):
        text = piece.text[lo - piece.start : hi - piece.start]
        lead = len(text) - len(text.lstrip())
        body = text.strip()
        if body:
            start = lo + lead
            out.append(Piece(piece.section_id, start, start + len(body), text=body, origin=piece.origin))
    return out


def _trim(pieces: list[Piece], hits: list[SearchHit], counter, budget: int) -> list[Piece]:
    """Whole units around the hits within ``budget`` tokens (see :func:`_finish`).

    The units are the paragraphs, cut again where a hit's chunk starts or ends, so that each hit's
    own text is a run of whole units. Every hit's own text is taken first (best hit first, whole,
    while it fits), before any budget goes to the text around it: the paragraph around a hit can be
    far larger than its chunk (a long one-line paragraph, a table pasted as one block), and a chunk
    can start with a short paragraph (a heading line, a title) that would otherwise stand for it.
    Then every window grows by one unit on each side in turn, best hit's first, while the budget
    allows. When even the best hit's own text does not fit, its leading units and then whole
    leading sentences of the next one. Units of one paragraph that end up next to each other are
    joined again, so the context's text keeps the document's own paragraphs.
    """
    paragraphs = [p for piece in pieces for p in split_paragraphs(piece)]
    cuts = [b for hit in hits for b in (hit.start, hit.end)]
    units: list[Piece] = []
    paragraph_of: list[int] = []
    for index, paragraph in enumerate(paragraphs):
        for unit in cut_at(paragraph, cuts):
            units.append(unit)
            paragraph_of.append(index)
    spans = [i for i, p in enumerate(units) if not p.is_title]
    if not spans:
        return []

    def own(hit: SearchHit) -> list[int]:
        inside = [i for i in spans if units[i].start < hit.end and hit.start < units[i].end]
        return inside or [min(spans, key=lambda i: abs(units[i].start - hit.start))]

    cost = [counter.count(f"## {p.title}" if p.is_title else p.text) + 1 for p in units]
    owned = [own(hit) for hit in hits]
    if sum(cost[i] for i in owned[0]) > budget:
        kept_units: list[Piece] = []
        owners: list[int] = []
        used = 0
        for i in owned[0]:
            unit = units[i]
            if used + cost[i] > budget:
                head = first_sentences(unit.text, counter, budget - used - 1)
                if not head:
                    break
                unit = Piece(unit.section_id, unit.start, unit.start + len(head), text=head, origin=unit.origin)
            kept_units.append(unit)
            owners.append(paragraph_of[i])
            used += cost[i]
            if unit is not units[i]:
                break
        return _rejoin(kept_units, paragraphs, owners)
    kept: set[int] = set()
    used = 0
    windows: list[list[int]] = []  # [lo, hi] per hit, best first
    for own_units in owned:
        need = [i for i in own_units if i not in kept]
        if not need:
            continue
        if used + sum(cost[i] for i in need) <= budget:
            kept.update(need)
            used += sum(cost[i] for i in need)
            windows.append([min(own_units), max(own_units)])
    grown = True
    while grown:
        grown = False
        for window in windows:
            for side, step in ((1, 1), (0, -1)):
                nxt = window[side] + step
                while 0 <= nxt < len(units) and nxt in kept:  # ran into another window: merge
                    window[side] = nxt
                    nxt += step
                if 0 <= nxt < len(units) and used + cost[nxt] <= budget:
                    kept.add(nxt)
                    used += cost[nxt]
                    window[side] = nxt
                    grown = True
    # A title is kept only when text of its window follows: a trailing title says nothing useful.
    chosen: list[int] = []
    text_follows = False
    for i in sorted(kept, reverse=True):
        if i + 1 not in kept:
            text_follows = False  # a gap: a new window (read backwards)
        if not units[i].is_title:
            text_follows = True
        if text_follows:
            chosen.append(i)
    chosen.reverse()
    return _rejoin([units[i] for i in chosen], paragraphs, [paragraph_of[i] for i in chosen])


def _rejoin(units: list[Piece], paragraphs: list[Piece], owners: list[int]) -> list[Piece]:
    """Kept units in document order, the adjacent ones of one paragraph joined again into one piece
    (its text the paragraph's own slice, whitespace included)."""
    out: list[Piece] = []
    last_owner = None
    for unit, owner in zip(units, owners, strict=True):
        if (
            not unit.is_title and out and last_owner == owner and not out[-1].is_title
            and out[-1].end <= unit.start
        ):
            paragraph = paragraphs[owner]
            prev = out[-1]
            gap = paragraph.text[prev.end - paragraph.start : unit.start - paragraph.start]
            if not gap.strip():  # nothing of the paragraph left out between them
                out[-1] = Piece(
                    prev.section_id, prev.start, unit.end,
                    text=paragraph.text[prev.start - paragraph.start : unit.end - paragraph.start], origin=prev.origin,
                )
                continue
        out.append(unit)
        last_owner = owner
    return out


# ----------------------------------------------------------------------------- the ways to expand
#
# Every way of ``kb.search_modes.EXPANDS`` has its row here (tests/test_search_modes.py checks both ways):
# (forest, index version id, hits best first, level, neighbours, max contexts, token budget, holes)
# -> contexts in the order of their best hit.


def _no_contexts(forest, version_id, hits, level, n, max_contexts, budget, holes) -> list[SearchContext]:
    return []


EXPANSIONS: dict[str, Callable[..., list[SearchContext]]] = {
    "parent": lambda forest, version_id, hits, level, n, max_contexts, budget, holes: parent_contexts(
        forest, hits, level, max_contexts, budget, holes
    ),
    "neighbors": lambda forest, version_id, hits, level, n, max_contexts, budget, holes: neighbor_contexts(
        forest, version_id, hits, n, max_contexts, budget, holes
    ),
    "none": _no_contexts,
}


def expand_hits(
    expand: str, forest: SectionForest, version_id: uuid.UUID, hits: list[SearchHit], *, level: str, neighbors: int,
    max_contexts: int, budget: int, holes: Holes,
) -> list[SearchContext]:
    """The contexts of ``hits`` as ``expand`` (a key of :data:`EXPANSIONS`) grows them; none without hits."""
    if not hits:
        return []
    return EXPANSIONS[expand](forest, version_id, hits, level, neighbors, max_contexts, budget, holes)
