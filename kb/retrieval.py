"""Retrieval: the candidates of a search, one entry per mode in :data:`RETRIEVAL_MODES`.

Each mode turns (reader, index version, filters, query, query vector, ``top_k``) into ranked
candidate rows; :func:`kb.search.search` looks the mode up here and hands the rows to
:mod:`kb.expansion`. The access rule is applied inside every SQL query, before ranking
(``accounts.access.readable_q``, in :func:`readable_chunks`); nothing here re-states the rule.
This module imports neither :mod:`kb.expansion` nor :mod:`kb.search` (the shared values are in
:mod:`kb.search_types`); ``scripts/check_architecture.py`` holds it to that.

Vector search and under-filled pages
------------------------------------
An HNSW scan finds the nearest neighbours of the *whole* index and the WHERE clause
then throws most of them away, so "HNSW + WHERE" returns fewer than ``top_k`` rows for
a member who reads a small part of a shared index. pgvector 0.8's iterative scan
(``hnsw.iterative_scan = relaxed_order``) keeps scanning until the page is full, which
works while the readable part of the index is not tiny; for small readable sets an exact
scan over the access index is both faster and exact. So the plan is chosen per query
from the number of rows the member may read (capped count, cached briefly), compared
with the size of the HNSW index that would serve the query: the tenant's own partial
index when it has one (:mod:`kb.tenant_indexes`), else the index shared by all tenants.

* ``count <= exact_threshold(index rows)`` (the larger of 2,000 rows and 20% of that
  index, at most 50,000) -> exact: index scans are disabled for the statement so the planner
  cannot use an HNSW index; it reads the readable rows through the access btree
  (bitmap scan) and sorts by distance. Exact by construction.
* otherwise -> HNSW (plan ``tenant-hnsw`` or ``hnsw``) with ``relaxed_order`` iterative
  scan, ``ef_search`` 300, at least 20 rows fetched; rows are re-sorted by distance
  (relaxed order is only approximately ordered) and the nearest ``depth`` kept.
* safety net: if the HNSW path returns fewer rows than ``min(depth, count)``, the exact
  plan runs instead. A page is never under-filled.

Ranking
-------
``vector``: cosine distance (score = 1 - distance). ``keyword``: the query parsed by
:data:`KEYWORD` (``parser``: ``websearch`` = ``websearch_to_tsquery``, ``plain`` =
``plainto_tsquery``, ``or`` = the lexemes of ``plainto_tsquery`` joined by OR) over the stored
``search_vector``, ranked by ``ts_rank_cd`` or ``ts_rank`` with a normalisation bitmask.
``hybrid``: both lists fused (:func:`fuse`), each fetched to ``max(4 * top_k, 20)``: by default a convex
combination of the two sides' scores (``KeywordFusion.convex`` = 0.8: 0.8 x cosine similarity + 0.2 x keyword
rank over the first keyword hit's), else weighted reciprocal rank fusion. The keyword side is chosen on the
evaluation suite (docs/benchmarks.md, "Hybrid vs vector through the real search"), the fusion on issue 30's
transfer suite (docs/benchmarks.md, "Eleventh round"; convex 0.7 was the default for one round before and
was reversed by the rule registered for the next, "Eighth round").

Pieces (issue 30, ``ChunkingConfig.piece_weight``)
--------------------------------------------------
On a version whose config has ``piece_weight`` w > 0 every chunk stores its pieces (its sentences' and lines'
vectors, :mod:`ingestion.pieces`), and each candidate's cosine similarity s becomes
(1 - w) x s + w x its best piece's (:func:`by_pieces`): ``vector`` fetches ``max(4 * top_k, 20)`` candidates,
re-scores and keeps the best ``top_k``; ``hybrid`` re-scores every candidate of both lists (a keyword hit
carries its distance) before :func:`fuse`, and the vector list's order (its ranks) follows. The pieces are
read for the candidates' ids only, through :func:`readable_chunks` (a candidate that query no longer returns
is dropped). A re-scored row's ``distance`` is 1 - its re-scored similarity: an answer says no more about the
pieces than its score does. ``keyword`` has no query vector and is unchanged. w = 0.5 in the default config
since issue 30's thirteenth round (docs/benchmarks.md); versions stored before have no pieces (w = 0).
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

import numpy as np
from django.conf import settings
from django.contrib.postgres.search import SearchQuery, SearchRank
from django.db import connection, transaction
from django.db.models import Count, F, FloatField, Q, QuerySet, Value
from pgvector.django import CosineDistance

from accounts.access import readable_q
from accounts.policy import Reader
from ingestion.pieces import best_piece, piece_score, unpack_pieces
from kb.changed import documents_updated
from kb.models import EMBEDDING_DIMENSIONS, Chunk
from kb.screening import returnable_q
from kb.search_types import SearchFilters
from kb.tenant_indexes import tenant_index_rows
from kb.titles import TAGS_HELD, shown_source_sql, shown_tags_sql

RRF_K = 60


@dataclass(frozen=True)
class KeywordFusion:
    """How the keyword list is built and fused (``kb_eval --fusion`` varies these).

    ``parser``: websearch | plain | or.  ``rank``: ts_rank_cd | ts_rank, with ``normalization``
    (PostgreSQL's bitmask; 0 = none).  Fusion: score = 1 / (rrf_k + vector rank) +
    keyword_weight / (rrf_k + keyword rank), where only the first ``keyword_top`` keyword hits
    count (0 = all of them).

    ``keyword_gate`` (issue 30: hybrid must not lose to vector on text it was not tuned on) keeps
    keyword evidence the embedding does not back from outvoting it: 0 = off; 1 = only keyword
    hits that the vector side also retrieved (at the hybrid depth) are fused, so hybrid re-orders
    vector's candidates and never brings in one the embedding finds unrelated; 2 = the keyword
    weight is scaled by the share of the first ``GATE_TOP`` keyword hits that the vector side
    also retrieved (weak agreement, a weak keyword side; none, vector alone) -- with ``convex`` the keyword
    term of the score, (1 - alpha) x strength, is scaled so (issue 30, thirty-first round's W2).

    ``keyword_idf`` (issue 30, sixth round's losses; 0 = off): the keyword rank weighs each of the
    query's terms by how selective it is where the search looks. ``ts_rank`` has no document
    frequency: a term in every item of a list (``oauth`` in an RFC link list, ``prompt`` in a prompt
    library's README) counts as much as one found once, so long chunks that repeat the common terms
    outrank the one that holds the rare one. With 1 the rank is sum over terms t of
    idf(t) * rank(chunk, t), idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5)) (BM25's), where N is the
    number of chunks the reader may read under the search's filters and n_t how many of them hold
    t -- counted inside the same access rule, so the weights say nothing about rows the reader
    cannot read. The terms are the operands of the query's ``plainto_tsquery`` (a hyphenated word's
    phrase stays one term); which chunks match is still the parser's query.
    With 2 (issue 30, twenty-eighth round's candidate Q; hybrid only) the keyword rows are the same rows
    as with 0 (chosen by the same rank, at the same depth), then re-scored and re-ordered by the same sum,
    with N and n_t counted over the search's candidate pool instead of the tenant: the union of the vector
    side's and the keyword side's candidates for this query, so the cost is bounded by the pool, not by the
    readable rows. Computed (twenty-ninth round's R) without a statement of its own: the terms come with the
    keyword side's parse (:func:`parsed_query_and_terms`), each term's match and rank as columns of the two
    candidate queries the hybrid search runs anyway (:func:`_with_term_columns`, inside the same access rule),
    the weights and ranks in Python (:func:`pool_rescored`); Q's two-statement form
    (``bench.keyword_idf_same.pool_weighted``) gives the same rows and ranks. Keyword mode, which has no vector
    side, ranks as with 0.

    ``keyword_relative`` (issue 30, sixth round's losses; 0 = off): reciprocal rank fusion reads only
    positions, so a keyword hit whose rank is a small fraction of the first hit's (a badge URL that
    matches ``code`` once, behind the one chunk that holds the question's rare words) counts as much
    as a strong one and pushes the vector side's next candidates off the page. With 1 each keyword
    hit's term is scaled by its rank over the first keyword hit's rank (1 for the first; the same
    for hits as strong as it): keyword_weight * (rank / first rank) / (rrf_k + position).

    ``convex`` (issue 30, seventh round; 0 = reciprocal rank fusion): fuse the two sides' scores, not
    their positions: alpha * cosine similarity + (1 - alpha) * keyword rank / the first keyword hit's
    rank, alpha = ``convex``, over every candidate of either list (a keyword hit carries its cosine
    distance; a vector candidate the keyword side did not match scores 0 there). Positions throw away
    how far apart two candidates are: a vector candidate far more similar than the next, or a keyword
    hit far stronger than the next, counts as one step, while a list of near-equal hits (common terms
    repeated in every item of a link list) counts as much as a list with one clear match.

    ``keyword_peak`` (with ``convex``; 0 = off): the keyword side's weight is scaled, per query, by how
    far its first hit stands above the hit at this position, (1 - alpha) * (1 - rank_at / first rank): a
    flat keyword list (the query's terms common in every chunk) leaves the vector side's order; fewer
    hits than the position, the whole weight.
    """

    parser: str = "websearch"
    rank: str = "ts_rank_cd"
    normalization: int = 0
    rrf_k: int = RRF_K
    keyword_weight: float = 1.0
    keyword_top: int = 0
    keyword_gate: int = 0
    keyword_idf: int = 0
    keyword_relative: int = 0
    convex: float = 0.0
    keyword_peak: int = 0

    def __post_init__(self):
        if self.parser not in ("websearch", "plain", "or"):
            raise ValueError(f"parser must be websearch, plain or or; got {self.parser!r}")
        if self.rank not in ("ts_rank_cd", "ts_rank"):
            raise ValueError(f"rank must be ts_rank_cd or ts_rank; got {self.rank!r}")
        if not 0 <= self.normalization <= 63 or self.rrf_k < 1 or self.keyword_weight < 0 or self.keyword_top < 0:
            raise ValueError("normalization 0-63, rrf_k >= 1, keyword_weight >= 0, keyword_top >= 0")
        if self.keyword_gate not in (0, 1, 2):
            raise ValueError(f"keyword_gate must be 0, 1 or 2; got {self.keyword_gate!r}")
        if self.keyword_idf not in (0, 1, 2):
            raise ValueError(f"keyword_idf must be 0, 1 or 2; got {self.keyword_idf!r}")
        if self.keyword_relative not in (0, 1):
            raise ValueError(f"keyword_relative must be 0 or 1; got {self.keyword_relative!r}")
        if not 0.0 <= self.convex < 1.0:
            raise ValueError(f"convex must be 0 (reciprocal rank fusion) or in (0, 1); got {self.convex!r}")
        if self.keyword_peak < 0 or (self.keyword_peak and not self.convex):
            raise ValueError("keyword_peak must be 0 or a position >= 1, and needs convex")


GATE_TOP = 5


# The keyword side, chosen leave-one-genre-out on the evaluation suite (docs/benchmarks.md, "Hybrid vs
# vector through the real search"): an AND of every question word rarely matches one chunk, so the keyword
# list was mostly empty; OR of the lexemes ranked by ts_rank (term frequency, not cover density, which
# rewards only chunks holding the terms close together) and k = 20 (the top of each list counts more).
# Fusion (issue 30, docs/benchmarks.md, "Eleventh round"): the convex combination with alpha 0.8, chosen
# leave-one-source-out by the worst source's hybrid-minus-vector margin (R@5 and context recall) on 56 sources
# and adopted by the rule registered before the eleventh round's six new sources were run. Before it:
# reciprocal rank fusion (k = 20; ``rrf_k`` still applies when ``convex`` is 0); convex 0.7 was the default
# after the seventh round and reversed by the eighth's rule. Keyword weights (issue 30, "Twenty-ninth round"):
# the keyword side's rows re-scored by BM25's idf over the search's candidate pool (``keyword_idf=2``, candidate R),
# qualified on 869 development questions (+1.8 [+0.7, +2.9] hybrid context recall, +3% p50) and adopted by the
# rule registered before the twenty-ninth round's three new sources were read (at least the default there).
CHOSEN_FUSION = KeywordFusion(parser="or", rank="ts_rank", rrf_k=20, convex=0.8, keyword_idf=2)
KEYWORD = CHOSEN_FUSION

# Plan choice, on the member's readable share of the HNSW index that would serve the query (the
# tenant's own partial index when it has one, kb.tenant_indexes, else the shared one): exact up to
# EXACT_MAX_ROWS readable rows or below HNSW_MIN_FRACTION of the index, never above EXACT_CEILING
# rows (an exact scan grows linearly); HNSW above. Why: below ~20% of an index a filtered HNSW scan
# loses recall and is no faster than the exact scan. The measurements behind these values and
# HNSW_EF_SEARCH: docs/benchmarks.md, "Tuning history".
EXACT_MAX_ROWS = getattr(settings, "BULKHEAD_SEARCH_EXACT_MAX_ROWS", 2000)
HNSW_MIN_FRACTION = getattr(settings, "BULKHEAD_SEARCH_HNSW_MIN_FRACTION", 0.20)
EXACT_CEILING = getattr(settings, "BULKHEAD_SEARCH_EXACT_CEILING", 50_000)
HNSW_EF_SEARCH = getattr(settings, "BULKHEAD_SEARCH_EF_SEARCH", 300)
HNSW_MIN_FETCH = 20  # the HNSW path fetches at least this many rows and keeps the nearest `depth`
HNSW_MAX_SCAN_TUPLES = getattr(settings, "BULKHEAD_SEARCH_MAX_SCAN_TUPLES", 40000)
COUNT_CACHE_SECONDS = 30.0


# ----------------------------------------------------------------------------- candidate rows


@dataclass
class Row:
    id: uuid.UUID
    document_id: uuid.UUID
    section_id: uuid.UUID
    ordinal: int
    start: int
    end: int
    text: str
    screening: dict = field(default_factory=dict)
    review: str = ""
    distance: float | None = None
    rank: float | None = None
    # ``keyword_idf=2`` only: per query term, (whether the row's ``search_vector`` matches it, ts_rank of the row
    # for it), read by the candidate query itself (:func:`_with_term_columns`); () on every other path.
    terms: tuple[tuple[bool, float], ...] = ()


# Chunk columns only: a join to documents gets planned as a loop over every document of the tenant
# (docs/benchmarks.md, "Tuning history"); titles come from the section forest search builds anyway.
_ROW_FIELDS = ("id", "document_id", "section_id", "ordinal", "start", "end", "text", "screening", "review")


def readable_chunks(reader: Reader, version_id: uuid.UUID, filters: SearchFilters) -> QuerySet[Chunk]:
    """The chunks of one index version that ``reader`` may read, narrowed by ``filters``.

    Every search query starts here, so tenant, version and the access rule are always
    in the WHERE clause of the statement that ranks.
    """
    qs = Chunk.objects.filter(
        readable_q(reader), returnable_q(filters.screening_mode, exclude_flagged=filters.exclude_flagged),
        index_version_id=version_id,
    )
    if filters.document_ids:
        qs = qs.filter(document_id__in=list(filters.document_ids))
    if filters.tags:  # the tags as shown to the reader: a held list never matches by its stored words, the content's
        # (a front matter's) only for a reader of the root (kb.titles.shown_tags_sql); the stored columns narrow first
        tags = list(filters.tags)
        stored = Q() if TAGS_HELD in filters.tags else (Q(document__tags__overlap=tags)
                                                        | Q(document__content_tags__overlap=tags))
        qs = qs.alias(document_tags_shown=shown_tags_sql(filters.screening_mode, "document__", reader=reader)).filter(
            stored, document_tags_shown__overlap=tags)
    if filters.content_types:
        qs = qs.filter(document__content_type__in=list(filters.content_types))
    if filters.source_prefix:  # the source as shown: a held one never matches by its stored words (kb.titles)
        qs = qs.alias(document_source_shown=shown_source_sql(filters.screening_mode, "document__")).filter(
            document_source_shown__startswith=filters.source_prefix)
    if filters.updated_after is not None or filters.updated_before is not None:
        # The document's time as this reader may know it (kb.changed), never ``updated_at``: that moves with
        # sections hidden from them, and the filter would tell them when those changed.
        qs = qs.filter(document_id__in=documents_updated(
            reader, after=filters.updated_after, before=filters.updated_before))
    return qs


@contextmanager
def local_settings(**values: str) -> Iterator[None]:
    """``SET LOCAL`` for the duration of a block (``hnsw__ef_search`` names ``hnsw.ef_search``).

    Outside a transaction the block is its own and the settings end with it (one round
    trip to set them). Inside the caller's transaction (ATOMIC_REQUESTS, a test) a SET
    LOCAL would outlive the block, so the previous values are read and put back.
    """
    names = [name.replace("__", ".") for name in values]
    pairs = [v for name, value in zip(names, values.values(), strict=True) for v in (name, str(value))]
    nested = connection.in_atomic_block
    with transaction.atomic(), connection.cursor() as cursor:
        previous = None
        if nested:
            cursor.execute("SELECT " + ", ".join(["current_setting(%s, true)"] * len(names)), names)
            previous = cursor.fetchone()
        cursor.execute("SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(names)), pairs)
        try:
            yield
        finally:
            restore = [(n, p) for n, p in zip(names, previous or (), strict=False) if p is not None]
            if restore and not connection.needs_rollback:
                cursor.execute(
                    "SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(restore)),
                    [v for pair in restore for v in pair],
                )


class _CountCache:
    """Capped readable-row counts per (tenant, version, reader, filters), kept a few seconds.

    Only the plan choice reads it; a stale count cannot cause a leak or an under-filled
    page (the exact plan is exact, and the HNSW path falls back to it when short).
    """

    def __init__(self, ttl: float):
        self.ttl = ttl
        self._data: dict[tuple, tuple[float, int]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple) -> int | None:
        with self._lock:
            hit = self._data.get(key)
        if hit is None or hit[0] < time.monotonic():
            return None
        return hit[1]

    def put(self, key: tuple, value: int) -> None:
        with self._lock:
            if len(self._data) > 10_000:
                self._data.clear()
            self._data[key] = (time.monotonic() + self.ttl, value)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


count_cache = _CountCache(COUNT_CACHE_SECONDS)


def readable_count(reader: Reader, version_id: uuid.UUID, filters: SearchFilters, *, cap: int) -> int:
    """How many chunks the reader may read, counted up to ``cap + 1`` (enough to choose a plan)."""
    key = (reader, str(version_id), filters.cache_key(), cap)  # a Reader (and its bound) is hashable
    cached = count_cache.get(key)
    if cached is not None:
        return cached
    count = readable_chunks(reader, version_id, filters)[: cap + 1].count()
    count_cache.put(key, count)
    return count


def vector_exact(qs: QuerySet[Chunk], vector, depth: int, terms: TermColumns | None = None) -> list[Row]:
    """Exact nearest neighbours among ``qs``: index scans off, so the HNSW index cannot be used;
    the readable rows come through a bitmap scan of the access index (or a seq scan) and a top-N sort.
    With ``terms``, each row's term columns too, in the same statement (:func:`_with_term_columns`)."""
    with local_settings(enable_indexscan="off"):
        return _ranked_rows(nearest(qs, vector, depth, tiebreak=True, terms=terms is not None), terms)


def vector_hnsw(qs: QuerySet[Chunk], vector, depth: int, *, ef_search: int, iterative: bool = True,
                terms: TermColumns | None = None) -> list[Row]:
    """Approximate nearest neighbours through the HNSW index with the filter inside the scan.

    With ``iterative`` (relaxed_order) the index scan continues past ``ef_search`` until the
    page is full or ``hnsw.max_scan_tuples`` is reached. Sorting explicitly is disabled for
    the statement so the planner prefers the ordered index scan.
    """
    with local_settings(**hnsw_settings(depth, ef_search=ef_search, iterative=iterative)):
        return _ranked_rows(nearest(qs, vector, depth, terms=terms is not None), terms)


def nearest(qs: QuerySet[Chunk], vector, depth: int, *, tiebreak: bool = False, terms: bool = False):
    """The ``depth`` rows of ``qs`` nearest to ``vector``: chunk columns and distance (the
    ranking statement of both plans; ``.explain()`` under :func:`hnsw_settings` shows which
    HNSW index serves it); with ``terms``, ``search_vector`` last (:func:`_with_term_columns`)."""
    order = ("distance", "id") if tiebreak else ("distance",)
    return (
        qs.annotate(distance=CosineDistance("embedding", vector))
        .order_by(*order)
        .values_list(*_ROW_FIELDS, "distance", *((TERM_SOURCE,) if terms else ()))[:depth]
    )


def _ranked_rows(ranked, terms: TermColumns | None = None) -> list[Row]:
    rows = [Row(*values) for values in ranked] if terms is None else _with_term_columns(ranked, terms)
    rows.sort(key=lambda r: (r.distance, r.id))  # relaxed_order is only approximately ordered
    return rows


def hnsw_settings(depth: int, *, ef_search: int = HNSW_EF_SEARCH, iterative: bool = True) -> dict[str, str]:
    options = {"hnsw__ef_search": str(max(ef_search, depth)), "enable_sort": "off", "enable_seqscan": "off"}
    if iterative:
        options |= {"hnsw__iterative_scan": "relaxed_order", "hnsw__max_scan_tuples": str(HNSW_MAX_SCAN_TUPLES)}
    else:
        options |= {"hnsw__iterative_scan": "off"}
    return options


def index_rows() -> int:
    """Rows in the chunk table (all tenants share the HNSW index), from the planner's statistics."""
    cached = count_cache.get(("index_rows",))
    if cached is not None:
        return cached
    with connection.cursor() as cursor:
        cursor.execute("SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'kb_chunk'::regclass")
        rows = int(cursor.fetchone()[0])
    count_cache.put(("index_rows",), rows)
    return rows


def serving_tenant_index_rows(tenant_id: int) -> int | None:
    """Rows of the tenant's own vector index (None without one), cached like the counts.

    A stale answer is harmless: it only steers the plan choice, and every plan filters by
    the full access rule (an index dropped meanwhile makes the planner use the shared one).
    """
    cached = count_cache.get(("tenant_index", tenant_id))
    if cached is None:
        rows = tenant_index_rows(tenant_id)
        cached = -1 if rows is None else rows
        count_cache.put(("tenant_index", tenant_id), cached)
    return None if cached < 0 else cached


def exact_threshold(total_rows: int) -> int:
    """Readable-row count up to which the exact plan is chosen (see HNSW_MIN_FRACTION)."""
    return max(EXACT_MAX_ROWS, min(int(HNSW_MIN_FRACTION * total_rows), EXACT_CEILING))


def vector_candidates(
    reader: Reader, version_id: uuid.UUID, filters: SearchFilters, vector, depth: int,
    terms: TermColumns | None = None,
) -> tuple[list[Row], str]:
    """The ``depth`` nearest readable chunks and the plan that found them (see module docstring); with
    ``terms`` (``keyword_idf=2``), each row's term columns, read by the same statement."""
    qs = readable_chunks(reader, version_id, filters)
    tenant_rows = serving_tenant_index_rows(reader.tenant_id)
    scanned = "hnsw" if tenant_rows is None else "tenant-hnsw"
    threshold = exact_threshold(index_rows() if tenant_rows is None else tenant_rows)
    count = readable_count(reader, version_id, filters, cap=threshold)
    if count <= threshold:
        return (vector_exact(qs, vector, depth, terms) if count else []), "exact"
    # Over-fetching and keeping the nearest (exactly re-sorted) lifts recall of the relaxed scan.
    rows = vector_hnsw(qs, vector, max(depth, HNSW_MIN_FETCH), ef_search=HNSW_EF_SEARCH, terms=terms)[:depth]
    # Short: refill exactly. (``count`` is capped at the threshold, so it cannot say how many rows
    # exist; a short page from a small threshold -- tests set it to 0 -- must still be refilled.)
    if len(rows) < depth:
        return vector_exact(qs, vector, depth, terms), f"{scanned}+exact"
    return rows, scanned


class _ParsedTsQuery(SearchQuery):
    """A tsquery in its text form, as PostgreSQL printed it (lexemes already normalised)."""

    template = "%(expressions)s::tsquery"

    def __init__(self, text: str):
        super().__init__(text, search_type="raw")


_PARSERS = {"websearch": "websearch_to_tsquery", "plain": "plainto_tsquery", "or": "plainto_tsquery"}


def or_query(tsquery_text: str) -> str:
    """The top-level AND of a parsed tsquery turned into OR: ``'a' & 'b' <-> 'c'`` ->
    ``'a' | 'b' <-> 'c'`` (phrases from hyphenated words stay phrases). Lexemes are quoted and
    cannot contain spaces, so `` & `` only ever is the operator."""
    return tsquery_text.replace(" & ", " | ")


def parsed_query(query: str, parser: str) -> str:
    """The query as tsquery text under ``parser`` ('' when it has no lexemes, e.g. stop words only)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT q::text, numnode(q) FROM {_PARSERS[parser]}('english', %s) AS q", [query])
        text, nodes = cursor.fetchone()
    if not nodes:
        return ""
    return or_query(text) if parser == "or" else text


def query_terms(query: str) -> list[str]:
    """The query's terms as tsquery texts: the operands of ``plainto_tsquery``'s AND (lexemes already
    normalised; a hyphenated word's ``'a-b' <-> ...`` phrase stays one operand). [] without lexemes."""
    return _operands(parsed_query(query, "plain"))


def _operands(plain: str) -> list[str]:
    return list(dict.fromkeys(term for term in plain.split(" & ") if term)) if plain else []


def parsed_query_and_terms(query: str, parser: str) -> tuple[str, list[str]]:
    """:func:`parsed_query` and :func:`query_terms` of ``query`` from one statement (``keyword_idf=2``: the
    terms come with the keyword side's own parse, no statement of their own)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT q::text, numnode(q), p::text, numnode(p) FROM {_PARSERS[parser]}('english', %s) AS q, "
            "plainto_tsquery('english', %s) AS p", [query, query])
        text, nodes, plain, plain_nodes = cursor.fetchone()
    text = "" if not nodes else (or_query(text) if parser == "or" else text)
    return text, _operands(plain if plain_nodes else "")


@dataclass(frozen=True)
class TermColumns:
    """What a candidate query reads per term with ``keyword_idf=2``: the query's terms (:func:`query_terms`) and
    the rank they are scored by (``options``' ``rank`` and ``normalization``, as :func:`term_rank`)."""

    terms: tuple[str, ...]
    options: KeywordFusion

    def sql(self, alias: str) -> tuple[str, list]:
        """Per term, ``search_vector @@ term`` and the term's rank of ``alias``'s row: the SQL and its params
        (the same expressions as ``Q(search_vector=...)`` and :func:`term_rank` compile to)."""
        function = "ts_rank_cd" if self.options.rank == "ts_rank_cd" else "ts_rank"
        normalization = ", %s" if self.options.normalization else ""
        columns, params = [], []
        for term in self.terms:
            columns += [f"{alias}.search_vector @@ %s::tsquery",
                        f"{function}({alias}.search_vector, %s::tsquery{normalization})"]
            params += [term, term, *([self.options.normalization] if self.options.normalization else [])]
        return ", ".join(columns), params


TERM_SOURCE = "search_vector"
# A query of more distinct terms than this is ranked as with ``keyword_idf=0``: each term is two columns of both
# candidate queries (a 4,000-character query of short words has a thousand terms, past PostgreSQL's 1,664 columns
# a statement may return: the search failed), and each column is work on every candidate row.
MAX_WEIGHTED_TERMS = 64


def _with_term_columns(values: QuerySet, terms: TermColumns) -> list[Row]:
    """The rows of ``values`` (a ranked, sliced ``values_list`` of the :class:`Row` columns, then
    ``search_vector``: :data:`TERM_SOURCE`) with their term
    columns (``Row.terms``), in one statement: ``values`` unchanged as a subquery -- its WHERE clause (the access
    rule, :func:`readable_chunks`), order and limit its own -- and the terms read on its rows only. A term column
    in ``values`` itself would be computed for every row it ranks before the limit (PostgreSQL does not postpone
    cheap functions past a sort), each call reading the row's stored ``search_vector`` again; here each kept row's
    is read once (``|| ''::tsvector``, the same lexemes, positions and weights, in a subquery that is not
    flattened: ``OFFSET 0``) and ranked per term."""
    *fields, source = values._fields
    if source != TERM_SOURCE:
        raise ValueError(f"the term columns are read from {TERM_SOURCE}, the last column; got {source!r}")
    inner, inner_params = values.query.get_compiler(using=values.db).as_sql()
    shown = ", ".join(f'd."{name}"' for name in fields)
    columns, params = terms.sql("c")
    statement = (
        f"SELECT {shown.replace('d.', 'c.')}, {columns} FROM (SELECT {shown}, d.search_vector || ''::tsvector "
        f"AS search_vector FROM ({inner}) AS d OFFSET 0) AS c"
    )
    width = len(fields)
    converters = []
    for i, name in enumerate(fields):
        if name in _ROW_FIELDS:
            col = Chunk._meta.get_field(name).get_col(Chunk._meta.db_table)
            found = connection.ops.get_db_converters(col) + col.get_db_converters(connection)
            converters += [(i, converter, col) for converter in found]
    with connection.cursor() as cursor:
        cursor.execute(statement, [*params, *inner_params])
        fetched = [list(values) for values in cursor.fetchall()]
    rows = []
    for values in fetched:
        for i, converter, col in converters:
            values[i] = converter(values[i], col, connection)
        pairs = tuple((bool(values[j]), float(values[j + 1])) for j in range(width, len(values), 2))
        rows.append(Row(*values[:width], terms=pairs))
    return rows


def term_matches(term: str) -> Q:
    """A chunk's ``search_vector`` matches ``term`` (a tsquery text, as :func:`query_terms` gives it)."""
    return Q(search_vector=_ParsedTsQuery(term))


def term_counts(qs: QuerySet[Chunk], terms: list[str]) -> tuple[int, dict[str, int]]:
    """The rows of ``qs`` and, per term, how many of them match it (one statement)."""
    counts = qs.aggregate(
        total=Count("id"),
        **{f"t{i}": Count("id", filter=term_matches(t)) for i, t in enumerate(terms)},
    )
    return counts["total"], {t: counts[f"t{i}"] for i, t in enumerate(terms)}


def term_weights(qs: QuerySet[Chunk], terms: list[str]) -> dict[str, float]:
    """BM25's idf of each term over ``qs``: ln(1 + (N - n + 0.5) / (n + 0.5)), N the rows of ``qs``, n those
    whose ``search_vector`` matches the term. ``qs`` is the reader's own readable rows (:func:`readable_chunks`)."""
    if not terms:
        return {}
    total, counts = term_counts(qs, terms)
    return {t: bm25_idf(total, n) for t, n in counts.items()}


def bm25_idf(total: int, matching: int) -> float:
    """BM25's idf of a term ``matching`` of ``total`` rows hold: ln(1 + (N - n + 0.5) / (n + 0.5))."""
    return math.log(1 + (total - matching + 0.5) / (matching + 0.5))


def keyword_candidates(
    reader: Reader, version_id: uuid.UUID, filters: SearchFilters, query: str, depth: int, vector=None,
    options: KeywordFusion | None = None, *, parsed: str | None = None, terms: TermColumns | None = None,
) -> list[Row]:
    """Full-text matches ranked as :data:`KEYWORD` says; a query without lexemes matches nothing. ``parsed``: the
    query already parsed by ``options.parser`` (:func:`parsed_query_and_terms`); ``terms`` (with ``vector``):
    each row's term columns too, read by the same statement (:func:`_with_term_columns`)."""
    options = options or KEYWORD
    text = parsed_query(query, options.parser) if parsed is None else parsed
    if not text:
        return []
    tsquery = _ParsedTsQuery(text)
    qs = readable_chunks(reader, version_id, filters).filter(search_vector=tsquery)
    if options.keyword_idf == 1:  # 2 re-scores these rows over the candidate pool (pool_rescored)
        weights = term_weights(readable_chunks(reader, version_id, filters), query_terms(query))
        rank = sum(
            (Value(weight, output_field=FloatField()) * term_rank(term, options) for term, weight in weights.items()),
            Value(0.0, output_field=FloatField()),
        )
    else:
        rank = term_rank(text, options)
    ranked = qs.annotate(rank=rank)
    if vector is not None:
        ranked = ranked.annotate(distance=CosineDistance("embedding", vector))
        fields = (*_ROW_FIELDS, "distance", "rank")
    else:
        fields = (*_ROW_FIELDS, "rank")
    if terms is not None:
        if vector is None:
            raise ValueError("term columns are read with a query vector only (the hybrid search's candidates)")
        rows = _with_term_columns(ranked.order_by("-rank", "id").values_list(*fields, TERM_SOURCE)[:depth], terms)
        return sorted(rows, key=lambda row: (-row.rank, row.id))  # the statement's own order, kept explicitly
    rows = ranked.order_by("-rank", "id").values_list(*fields)[:depth]
    if vector is None:
        return [Row(*values[:9], rank=values[9]) for values in rows]
    return [Row(*values) for values in rows]


def pool_rescored(vector_rows: list[Row], keyword_rows: list[Row]) -> list[Row]:
    """The keyword rows re-scored by BM25's idf over the search's candidate pool (``keyword_idf=2``, see
    :class:`KeywordFusion`), from the term columns both candidate queries read with their rows (``Row.terms``,
    through :func:`readable_chunks`: the access rule in their WHERE clauses): N the pool's rows (the vector rows'
    and the keyword rows' ids, each once), n_t those matching term t, each keyword row's rank sum over t of
    idf(t) * rank(row, t), best first (ties by id). No statement of its own."""
    if not keyword_rows or not keyword_rows[0].terms:
        return keyword_rows
    pool: dict[uuid.UUID, tuple[tuple[bool, float], ...]] = {}
    for row in (*vector_rows, *keyword_rows):
        pool.setdefault(row.id, row.terms)
    return rescored(keyword_rows, pool, len(keyword_rows[0].terms))


def rescored(keyword_rows: list[Row], pool: dict[uuid.UUID, tuple], count: int) -> list[Row]:
    """``keyword_rows`` re-scored over ``pool`` (id -> per term (matches, rank)), ``count`` terms; a keyword row
    not in the pool dropped."""
    total = len(pool)
    counts = [sum(1 for pairs in pool.values() if pairs[i][0]) for i in range(count)]
    weights = [bm25_idf(total, n) for n in counts]
    ranks = {cid: sum(w * float(pairs[i][1]) for i, w in enumerate(weights)) for cid, pairs in pool.items()}
    rows = [replace(row, rank=ranks[row.id]) for row in keyword_rows if row.id in ranks]
    return sorted(rows, key=lambda row: (-row.rank, row.id))


def term_rank(text: str, options: KeywordFusion) -> SearchRank:
    """A chunk's keyword rank for the tsquery text ``text`` (``options``' ``rank`` and ``normalization``)."""
    return SearchRank(
        F("search_vector"), _ParsedTsQuery(text), cover_density=options.rank == "ts_rank_cd",
        normalization=options.normalization or None,
    )


def fuse(
    vector_rows: list[Row], keyword_rows: list[Row], k: int = RRF_K, *, keyword_weight: float = 1.0,
    keyword_top: int = 0, keyword_gate: int = 0, keyword_relative: int = 0, convex: float = 0.0,
    keyword_peak: int = 0,
) -> list[tuple[Row, float, int | None, int | None]]:
    """Weighted reciprocal rank fusion: score = 1 / (k + vector rank) + keyword_weight / (k + keyword rank)
    over the lists a chunk appears in; only the first ``keyword_top`` keyword rows count (0 = all).
    ``keyword_gate`` (see :class:`KeywordFusion`) weighs the keyword side by the vector side's agreement;
    ``keyword_relative`` scales each keyword row's term by its ``rank`` over the first keyword row's;
    ``convex`` (alpha) replaces both terms by alpha * similarity + (1 - alpha) * keyword_weight * rank / first rank
    (``keyword_weight`` as the gate left it: 1 unless set or gated)."""
    if keyword_top:
        keyword_rows = keyword_rows[:keyword_top]
    if keyword_gate and vector_rows:
        found = {row.id for row in vector_rows}
        if keyword_gate == 1:
            keyword_rows = [row for row in keyword_rows if row.id in found]
        else:
            head = keyword_rows[:GATE_TOP]
            keyword_weight *= sum(1 for row in head if row.id in found) / max(len(head), 1)
    scores: dict[uuid.UUID, float] = defaultdict(float)
    rows: dict[uuid.UUID, Row] = {}
    vector_rank: dict[uuid.UUID, int] = {}
    keyword_rank: dict[uuid.UUID, int] = {}
    top = keyword_rows[0].rank if (keyword_relative or convex) and keyword_rows else None
    for ranks, listed, weight in ((vector_rank, vector_rows, 1.0), (keyword_rank, keyword_rows, keyword_weight)):
        for position, row in enumerate(listed, 1):
            ranks[row.id] = position
            if row.id not in rows or rows[row.id].distance is None:
                rows[row.id] = row
            if convex:
                continue
            share = row.rank / top if ranks is keyword_rank and top else 1.0
            scores[row.id] += weight * share / (k + position)
    if convex:
        peak = 1.0
        if keyword_peak and top and len(keyword_rows) >= keyword_peak:
            peak = 1.0 - keyword_rows[keyword_peak - 1].rank / top
        for cid, row in rows.items():
            similarity = 1.0 - row.distance if row.distance is not None else 0.0
            strength = keyword_rows[keyword_rank[cid] - 1].rank / top if cid in keyword_rank and top else 0.0
            scores[cid] = convex * similarity + (1.0 - convex) * keyword_weight * peak * strength
    order = sorted(
        scores, key=lambda cid: (-scores[cid], min(vector_rank.get(cid, 10**9), keyword_rank.get(cid, 10**9)), cid)
    )
    return [(rows[cid], scores[cid], vector_rank.get(cid), keyword_rank.get(cid)) for cid in order]



def by_pieces(
    reader: Reader, version_id: uuid.UUID, filters: SearchFilters, lists: list[list[Row]], vector, weight: float
) -> list[list[Row]]:
    """Each list's rows with their distance re-scored by their pieces: 1 - piece_score(1 - distance, best piece,
    ``weight``) (:mod:`ingestion.pieces`); rows without a distance are kept as they are. The pieces of every
    candidate are read in one statement, through :func:`readable_chunks` (the access rule in its WHERE clause):
    a candidate it does not return is dropped (fail closed), one without pieces keeps its similarity."""
    ids = sorted({row.id for rows in lists for row in rows if row.distance is not None})
    if not ids:
        return lists
    stored = dict(readable_chunks(reader, version_id, filters).filter(id__in=ids).values_list("id", "pieces"))
    query = np.asarray(vector, dtype=np.float32)
    query = query / max(float(np.linalg.norm(query)), 1e-12)
    similarity = {cid: best_piece(unpack_pieces(stored[cid], EMBEDDING_DIMENSIONS), query) for cid in stored}
    out = []
    for rows in lists:
        scored = []
        for row in rows:
            if row.distance is None:
                scored.append(row)
            elif row.id in stored:
                scored.append(replace(row, distance=1.0 - piece_score(1.0 - row.distance, similarity[row.id], weight)))
        out.append(scored)
    return out


# ----------------------------------------------------------------------------- the modes

Ranked = tuple[Row, float, int | None, int | None]  # a candidate, its score, its vector rank, its keyword rank


@dataclass(frozen=True)
class Retrieved:
    """A mode's answer: at most ``top_k`` candidates, best first, and how the vector list was found
    (``exact``, ``hnsw``, ``tenant-hnsw``, ``...+exact`` after a short HNSW page; "" without one)."""

    ranked: list[Ranked]
    plan: str = ""


# A mode's candidates: (reader, version id, filters, query, query vector or None, top_k) -> Retrieved; called
# with ``piece_weight=`` the version's (``IndexVersion.piece_weight``, 0 = no pieces) and ``spare=`` how many
# candidates to give after the first ``top_k`` (0 = none; the search's budget fill, ``kb.search``), found as
# deep as the page alone would be, so the first ``top_k`` are the same with or without them (vector mode without
# pieces fetches ``top_k + spare`` nearest rows: the same first ``top_k`` on the exact plan, and on an HNSW plan
# while ``top_k + spare`` is at most the 20 rows it fetches anyway).
Retriever = Callable[..., Retrieved]


@dataclass(frozen=True)
class RetrievalMode:
    """One row of the table: whether the mode needs the query's vector (:func:`kb.search.search`
    embeds the query only then), and the function that finds and ranks its candidates."""

    embeds: bool
    retrieve: Retriever


def vector_mode(reader: Reader, version_id: uuid.UUID, filters: SearchFilters, query: str, vector, top_k: int, *,
                piece_weight: float = 0.0, spare: int = 0) -> Retrieved:
    """The nearest ``top_k``; with pieces, the best ``top_k`` of ``max(4 * top_k, 20)`` re-scored (:func:`by_pieces`).
    ``spare`` more after them (see :data:`Retriever`)."""
    if not piece_weight:
        rows, plan = vector_candidates(reader, version_id, filters, vector, top_k + spare)
    else:
        rows, plan = vector_candidates(reader, version_id, filters, vector, max(4 * top_k, 20, top_k + spare))
        (rows,) = by_pieces(reader, version_id, filters, [rows], vector, piece_weight)
        rows = sorted(rows, key=lambda r: (r.distance, r.id))[: top_k + spare]
    return Retrieved([(r, 1.0 - r.distance, i, None) for i, r in enumerate(rows, 1)], plan)


def keyword_mode(reader: Reader, version_id: uuid.UUID, filters: SearchFilters, query: str, vector, top_k: int, *,
                 piece_weight: float = 0.0, spare: int = 0) -> Retrieved:
    """Full-text matches (no query vector: pieces play no part); ``spare`` more after the ``top_k``."""
    rows = keyword_candidates(reader, version_id, filters, query, top_k + spare)
    return Retrieved([(r, float(r.rank), None, i) for i, r in enumerate(rows, 1)])


def hybrid_mode(reader: Reader, version_id: uuid.UUID, filters: SearchFilters, query: str, vector, top_k: int, *,
                piece_weight: float = 0.0, spare: int = 0) -> Retrieved:
    """Both lists, each fetched deeper than the page (``max(4 * top_k, 20)``), fused as :data:`KEYWORD` says;
    with pieces, every candidate's similarity re-scored first (:func:`by_pieces`). ``spare`` more after the
    ``top_k``, from the same fused list (the depth is the page's, so the first ``top_k`` are the same)."""
    depth = max(4 * top_k, 20, top_k + spare)
    options = KEYWORD  # read at call time: ``kb_eval --fusion`` swaps it for one evaluation
    if options.keyword_idf == 2:  # the terms with the keyword parse, their columns with both sides' rows
        text, found = parsed_query_and_terms(query, options.parser)
        terms = TermColumns(tuple(found), options) if 0 < len(found) <= MAX_WEIGHTED_TERMS else None
        vector_rows, plan = vector_candidates(reader, version_id, filters, vector, depth, terms)
        keyword_rows = keyword_candidates(reader, version_id, filters, query, depth, vector, options, parsed=text,
                                          terms=terms)
        keyword_rows = pool_rescored(vector_rows, keyword_rows)
    else:
        vector_rows, plan = vector_candidates(reader, version_id, filters, vector, depth)
        keyword_rows = keyword_candidates(reader, version_id, filters, query, depth, vector)
    if piece_weight:
        vector_rows, keyword_rows = by_pieces(reader, version_id, filters, [vector_rows, keyword_rows], vector,
                                              piece_weight)
        vector_rows.sort(key=lambda r: (r.distance, r.id))
    ranked = fuse(vector_rows, keyword_rows, options.rrf_k, keyword_weight=options.keyword_weight,
                  keyword_top=options.keyword_top, keyword_gate=options.keyword_gate,
                  keyword_relative=options.keyword_relative, convex=options.convex,
                  keyword_peak=options.keyword_peak)
    return Retrieved(ranked[: top_k + spare], plan)


# Every mode of ``kb.search_modes.MODES`` has its row here (tests/test_search_modes.py checks both ways).
RETRIEVAL_MODES: dict[str, RetrievalMode] = {
    "vector": RetrievalMode(embeds=True, retrieve=vector_mode),
    "keyword": RetrievalMode(embeds=False, retrieve=keyword_mode),
    "hybrid": RetrievalMode(embeds=True, retrieve=hybrid_mode),
}
