"""The keyword side of hybrid search and its fusion (kb.retrieval.KeywordFusion, or_query, fuse).

The default was chosen leave-one-genre-out on the evaluation suite (docs/benchmarks.md, "Hybrid vs
vector through the real search"); these tests pin the rules, not the numbers.
"""

from __future__ import annotations

import dataclasses
import math
import uuid

import pytest
from django.db import connection

from bench.keyword_idf_same import pool_weighted
from kb import retrieval
from kb.retrieval import KeywordFusion, Row, fuse, or_query, parsed_query


def _row(name: str, distance: float | None = None) -> Row:
    return Row(uuid.uuid5(uuid.NAMESPACE_DNS, name), uuid.uuid4(), uuid.uuid4(), 0, 0, 1, name, distance=distance)


def test_or_query_turns_the_top_level_and_into_or_and_keeps_phrases():
    assert or_query("'date' & 'format' & 'iso' <-> '8601'") == "'date' | 'format' | 'iso' <-> '8601'"
    assert or_query("'single'") == "'single'"


def test_fuse_plain_rrf_when_unweighted():
    a, b, c = _row("a", 0.1), _row("b", 0.2), _row("c")
    fused = fuse([a, b], [c, b], k=60)
    assert [r.id for r, *_ in fused][0] == b.id  # in both lists
    score = dict((r.id, s) for r, s, *_ in fused)
    assert score[b.id] == pytest.approx(1 / 62 + 1 / 62)
    assert score[c.id] == pytest.approx(1 / 61)


def test_fuse_keyword_weight_lowers_keyword_only_hits():
    v, kw = _row("v", 0.1), _row("kw")
    # Equal ranks: with weight 1 the tie goes by id; with weight < 1 the vector hit leads.
    ordered = [r.id for r, *_ in fuse([v], [kw], k=60, keyword_weight=0.5)]
    assert ordered == [v.id, kw.id]
    score = dict((r.id, s) for r, s, *_ in fuse([v], [kw], k=60, keyword_weight=0.5))
    assert score[kw.id] == pytest.approx(0.5 / 61)


def test_fuse_keyword_top_drops_low_keyword_ranks():
    vec = [_row(f"v{i}", 0.1 * i) for i in range(3)]
    kws = [_row(f"k{i}") for i in range(4)]
    fused = fuse(vec, kws, k=60, keyword_top=2)
    ids = {r.id for r, *_ in fused}
    assert {kws[0].id, kws[1].id} <= ids and not ({kws[2].id, kws[3].id} & ids)


def test_fuse_keyword_gate_keeps_unbacked_keyword_hits_from_outvoting_the_vector_side():
    vec = [_row(f"v{i}", 0.1 * i) for i in range(5)]
    stray = [_row(f"s{i}") for i in range(5)]  # keyword hits the vector side did not retrieve
    # Gate 1: only keyword hits that the vector side also found are fused (a re-ordering of vector's list).
    gated = fuse(vec, stray + [vec[4]], k=20, keyword_gate=1)
    assert [r.id for r, *_ in gated] == [vec[4].id] + [v.id for v in vec[:4]]
    assert [r.id for r, *_ in fuse(vec, stray, k=20, keyword_gate=1)] == [v.id for v in vec]
    # Gate 2: the keyword weight is the share of the keyword head the vector side agrees with.
    half = fuse(vec, [vec[3], stray[0]], k=20, keyword_gate=2)
    score = dict((r.id, s) for r, s, *_ in half)
    assert score[stray[0].id] == pytest.approx(0.5 / 22)
    assert [r.id for r, *_ in fuse(vec, stray, k=20, keyword_gate=2)][:5] == [v.id for v in vec]
    # Off: stray keyword hits interleave with the vector hits.
    assert stray[0].id in [r.id for r, *_ in fuse(vec, stray, k=20)][:2]
    with pytest.raises(ValueError):
        KeywordFusion(keyword_gate=3)


def test_fuse_keyword_gate_two_scales_the_convex_keyword_term_by_the_vector_sides_agreement():
    vec = [_row(f"v{i}", 0.1 + 0.05 * i) for i in range(5)]  # similarities 0.9, 0.85, ... 0.7
    stray = [_row(f"s{i}") for i in range(5)]  # keyword hits the vector side did not retrieve
    for row in stray:
        row.rank, row.distance = 1.0, 0.5
    # No keyword hit of the head backed by the vector side: the keyword term is 0, vector's order stands.
    alone = fuse(vec, stray, convex=0.8, keyword_gate=2)
    assert [r.id for r, *_ in alone][:5] == [v.id for v in vec]
    assert dict((r.id, s) for r, s, *_ in alone)[stray[0].id] == pytest.approx(0.8 * 0.5)
    # Without the gate the same stray hits carry the whole keyword term.
    assert dict((r.id, s) for r, s, *_ in fuse(vec, stray, convex=0.8))[stray[0].id] == pytest.approx(0.4 + 0.2)
    # Half of the head backed (vec[3] and one stray): the keyword term is halved.
    backed = dataclasses.replace(vec[3], rank=1.0)
    half = dict((r.id, s) for r, s, *_ in fuse(vec, [backed, stray[0]], convex=0.8, keyword_gate=2))
    assert half[vec[3].id] == pytest.approx(0.8 * 0.75 + 0.2 * 0.5)
    assert half[stray[0].id] == pytest.approx(0.8 * 0.5 + 0.2 * 0.5)
    # The default (gate 0, weight 1) is unchanged by the gate's weight.
    assert retrieval.CHOSEN_FUSION.keyword_gate == 0 and retrieval.CHOSEN_FUSION.keyword_weight == 1.0


def test_keyword_fusion_validates():
    with pytest.raises(ValueError):
        KeywordFusion(parser="phrase")
    with pytest.raises(ValueError):
        KeywordFusion(rank="bm25")
    with pytest.raises(ValueError):
        KeywordFusion(rrf_k=0)


@pytest.mark.django_db
def test_parsed_query_or_matches_a_text_with_only_some_of_the_terms():
    question = "Which date format character gives the ISO-8601 week number?"
    text = "The W character prints the ISO-8601 week number of the year."
    matches = {}
    for parser in ("websearch", "plain", "or"):
        tsquery = parsed_query(question, parser)
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_tsvector('english', %s) @@ %s::tsquery", [text, tsquery])
            matches[parser] = cursor.fetchone()[0]
    assert matches == {"websearch": False, "plain": False, "or": True}
    assert parsed_query("the and of", "or") == ""  # stop words only: no lexemes, no keyword list


def test_the_default_is_the_leave_one_genre_out_choice():
    """Reverting the default (AND of every term, ts_rank_cd, unweighted k = 60) fails here."""
    assert dataclasses.asdict(retrieval.KEYWORD) == dataclasses.asdict(retrieval.CHOSEN_FUSION)
    assert retrieval.KEYWORD.convex == 0.8  # issue 30, eleventh round; reciprocal rank fusion (0) before
    assert retrieval.KEYWORD != KeywordFusion(
        parser="websearch", rank="ts_rank_cd", normalization=0, rrf_k=60, keyword_weight=1.0, keyword_top=0
    )


def test_fuse_keyword_relative_scales_each_keyword_hit_by_its_rank_over_the_first():
    """The sixth round's PKCE question (docs/benchmarks.md): one strong keyword hit, then weak ones; a
    weak hit far down the vector list must not push the vector side's third candidate off the page."""
    vec = [_row(f"v{i}", 0.01 * i) for i in range(20)]
    answer, second, badge = vec[0], vec[2], vec[14]  # the badge matches one common word once
    keyword = [
        dataclasses.replace(answer, rank=0.035),
        dataclasses.replace(vec[1], rank=0.011),
        dataclasses.replace(badge, rank=0.009),
        dataclasses.replace(vec[3], rank=0.009),
    ]
    plain = [r.id for r, *_ in fuse(vec, keyword, k=20)]
    assert plain.index(badge.id) < plain.index(second.id)  # off: the weak hit outranks vector's third
    relative = fuse(vec, keyword, k=20, keyword_relative=1)
    ids = [r.id for r, *_ in relative]
    assert ids[0] == answer.id and ids.index(second.id) < 5 <= ids.index(badge.id)
    score = dict((r.id, s) for r, s, *_ in relative)
    assert score[answer.id] == pytest.approx(1 / 21 + 1 / 21)  # the first keyword hit keeps its whole term
    assert score[badge.id] == pytest.approx(1 / 35 + (0.009 / 0.035) / 23)
    assert KeywordFusion().keyword_relative == 0 and retrieval.KEYWORD.keyword_relative == 0
    with pytest.raises(ValueError):
        KeywordFusion(keyword_relative=2)


def test_fuse_convex_weighs_how_far_apart_candidates_are_not_their_positions():
    """``convex`` (alpha): alpha * similarity + (1 - alpha) * keyword rank / the first keyword hit's. A flat
    keyword list of common terms (every hit about as strong; the sixth round's "web frameworks" question)
    must not lift its hits over the answer, clearly the most similar and a keyword hit a little further
    down; one keyword hit far stronger than the rest must come up even when the vector side puts it low; a
    candidate found only by the keyword side is scored by the distance it carries."""
    answer = _row("answer", 0.30)  # similarity 0.70: vector's first
    listed = [_row(f"list{i}", 0.45 + 0.001 * i) for i in range(5)]  # near-equal, less similar
    flat = [dataclasses.replace(r, rank=0.040 - 0.001 * i) for i, r in enumerate(listed)]
    flat.append(dataclasses.replace(answer, rank=0.034))  # the answer: the keyword side's sixth
    plain = [r.id for r, *_ in fuse([answer, *listed], flat, k=20)]
    assert plain.index(answer.id) > 0  # positions: the flat list's first hit outranks vector's first
    fused = fuse([answer, *listed], flat, k=20, convex=0.7)
    assert [r.id for r, *_ in fused][0] == answer.id
    score = dict((r.id, s) for r, s, *_ in fused)
    assert score[answer.id] == pytest.approx(0.7 * 0.70 + 0.3 * 0.034 / 0.040)
    assert score[listed[0].id] == pytest.approx(0.7 * 0.55 + 0.3 * 1.0)
    # A strong keyword hit that the vector side ranks last, and one the vector side never listed.
    vec = [_row(f"v{i}", 0.30 + 0.01 * i) for i in range(20)]
    strong, outside = vec[19], _row("outside", 0.60)
    keyword = [dataclasses.replace(strong, rank=0.050), dataclasses.replace(outside, rank=0.045),
               dataclasses.replace(vec[5], rank=0.004)]
    ids = [r.id for r, *_ in fuse(vec, keyword, k=20, convex=0.7)]
    assert ids[:2] == [strong.id, outside.id]
    assert ids.index(vec[5].id) > ids.index(vec[1].id)  # a weak keyword hit stays behind the clearly closer
    plain = [r.id for r, *_ in fuse(vec, keyword, k=20)]
    assert plain.index(vec[5].id) < plain.index(vec[0].id)  # positions: any keyword hit jumps them
    assert KeywordFusion().convex == 0.0  # the class's own default; the search's is CHOSEN_FUSION
    for bad in (-0.1, 1.0, 1.5):
        with pytest.raises(ValueError):
            KeywordFusion(convex=bad)


def test_fuse_keyword_peak_leaves_a_flat_keyword_list_to_the_vector_side():
    """The eighth round's huggingface question: every keyword hit about as strong (0.088-0.076), the answer
    vector's second and keyword's tenth, well below the first five. Convex alone lifts the flat list over it; with ``keyword_peak`` the
    keyword weight is (1 - rank at that position / first rank), near 0 here, and a list with one clear
    first hit keeps nearly its whole weight."""
    vec = [_row(f"v{i}", 0.40 + 0.01 * i) for i in range(20)]
    answer = vec[1]
    flat_hits = [vec[14], vec[0], vec[17], vec[12], vec[19], vec[5], vec[6], vec[7], vec[8], answer]
    ranks = [0.088, 0.085, 0.082, 0.079, 0.076, 0.060, 0.055, 0.050, 0.045, 0.030]
    flat = [dataclasses.replace(r, rank=rank) for r, rank in zip(flat_hits, ranks, strict=True)]
    convex = [r.id for r, *_ in fuse(vec, flat, k=20, convex=0.7)]
    assert convex.index(answer.id) >= 5  # the flat list's hits take the page
    peaked = fuse(vec, flat, k=20, convex=0.7, keyword_peak=5)
    ids = [r.id for r, *_ in peaked]
    assert ids.index(answer.id) < 5
    score = dict((r.id, s) for r, s, *_ in peaked)
    weight = 0.3 * (1 - flat[4].rank / flat[0].rank)
    assert score[vec[14].id] == pytest.approx(0.7 * 0.46 + weight * 1.0)
    # One clear first hit: the weight stays (0.3 * (1 - 0.004 / 0.050)).
    strong = [dataclasses.replace(vec[19], rank=0.050)] + [dataclasses.replace(r, rank=0.004) for r in vec[:4]]
    assert [r.id for r, *_ in fuse(vec, strong, k=20, convex=0.7, keyword_peak=5)][0] == vec[19].id
    # Fewer hits than the position: the whole weight.
    short = fuse(vec, strong[:2], k=20, convex=0.7, keyword_peak=5)
    assert dict((r.id, s) for r, s, *_ in short)[vec[19].id] == pytest.approx(0.7 * 0.41 + 0.3)
    for bad in ({"keyword_peak": -1, "convex": 0.7}, {"keyword_peak": 5}):
        with pytest.raises(ValueError):
            KeywordFusion(**bad)


@pytest.mark.django_db
def test_keyword_idf_ranks_the_rare_term_first_with_weights_from_the_readers_rows_only():
    """ts_rank alone puts the chunk that repeats a common term first; with ``keyword_idf`` the chunk that holds
    the rare term leads. The term counts are the reader's: restricted chunks full of the rare term, which an
    internal member cannot read, change neither the weights nor the order."""
    from accounts.policy import AccessLevel
    from accounts.selectors import reader_for
    from accounts.services import membership_create, tenant_create
    from kb.search_types import SearchFilters
    from tests import factories

    tenant = tenant_create(slug="idf-t", name="idf")
    version = factories.index_version(tenant, config_hash="test-idf", status="ready")
    texts = [
        "oauth oauth oauth oauth token list",
        "pkce",
        "oauth client",
        "oauth server",
        "oauth flask",
        "oauth django",
    ]
    document = factories.document(tenant, text=" ".join(texts + ["pkce"] * 30), access_level=0)
    section = factories.section(document, key="0", access_level=AccessLevel.INTERNAL)
    hidden = factories.section(document, key="1", access_level=AccessLevel.RESTRICTED)
    chunks = [
        factories.chunk(section, version, ordinal=i, start=i, end=i + 1, text=t, embed_text=t)
        for i, t in enumerate(texts)
    ]
    for i in range(30):
        factories.chunk(hidden, version, ordinal=100 + i, start=i, end=i + 1, text="pkce pkce", embed_text="pkce pkce")
    reader = reader_for(membership_create(tenant=tenant, email="i@idf.io", role="viewer", clearance="internal"))
    plain = KeywordFusion(parser="or", rank="ts_rank", rrf_k=20)
    query = "Which oauth pkce?"
    off = retrieval.keyword_candidates(reader, version.pk, SearchFilters(), query, 10, options=plain)
    on = retrieval.keyword_candidates(
        reader, version.pk, SearchFilters(), query, 10, options=dataclasses.replace(plain, keyword_idf=1)
    )
    assert off[0].id == chunks[0].id and on[0].id == chunks[1].id
    assert {r.id for r in on} == {r.id for r in off} == {c.id for c in chunks}  # what matches is unchanged
    readable = retrieval.readable_chunks(reader, version.pk, SearchFilters())
    weights = retrieval.term_weights(readable, retrieval.query_terms(query))
    assert weights == pytest.approx(
        {"'oauth'": math.log(1 + (6 - 5 + 0.5) / 5.5), "'pkce'": math.log(1 + (6 - 1 + 0.5) / 1.5)}
    )


def test_the_default_fusion_orders_candidates_by_convex_0_8():
    """The search's default (``CHOSEN_FUSION``, as ``hybrid_mode`` passes it to :func:`fuse`): the answer,
    clearly the most similar and the keyword side's third, stays first over a slightly less similar first
    keyword hit (at alpha 0.7 or with reciprocal rank fusion it would not); a keyword hit far stronger than
    the rest still comes onto a page of five over vector candidates the keyword side did not match."""
    o = retrieval.CHOSEN_FUSION

    def ranked(vector, keyword):
        return [r.id for r, *_ in fuse(vector, keyword, o.rrf_k, keyword_weight=o.keyword_weight,
                                       keyword_top=o.keyword_top, keyword_gate=o.keyword_gate,
                                       keyword_relative=o.keyword_relative, convex=o.convex,
                                       keyword_peak=o.keyword_peak)]

    answer, near = _row("answer", 0.40), _row("near", 0.45)  # similarity 0.60 and 0.55
    rest = [_row(f"v{i}", 0.46 + 0.01 * i) for i in range(6)]
    keyword = [dataclasses.replace(near, rank=0.040), dataclasses.replace(rest[5], rank=0.0345),
               dataclasses.replace(answer, rank=0.034)]
    assert ranked([answer, near, *rest], keyword)[:2] == [answer.id, near.id]  # 0.65 against 0.64
    rrf = [r.id for r, *_ in fuse([answer, near, *rest], keyword, k=20)]
    assert rrf[0] == near.id  # positions (2, 1) against (1, 3): reciprocal ranks put it first
    alpha7 = [r.id for r, *_ in fuse([answer, near, *rest], keyword, k=20, convex=0.7)]
    assert alpha7[0] == near.id  # 0.685 against 0.675
    strong = _row("strong", 0.50)  # similarity 0.50: below every vector candidate listed
    page = ranked([answer, near, *rest], [dataclasses.replace(strong, rank=0.050),
                                          dataclasses.replace(rest[0], rank=0.005)])
    assert strong.id in page[:5] and page.index(strong.id) < page.index(rest[1].id)


def test_keyword_idf_takes_0_1_or_2_and_kb_eval_reads_2():
    """``keyword_idf=2`` is the twenty-eighth round's Q (weights over the candidate pool); ``kb_eval --fusion`` and
    ``bench.fusion_pair`` read it with the same parser."""
    from bench.management.commands.kb_eval import Command

    for value in (0, 1, 2):
        assert KeywordFusion(keyword_idf=value).keyword_idf == value
    for bad in (3, -1):
        with pytest.raises(ValueError, match="keyword_idf must be 0, 1 or 2"):
            KeywordFusion(keyword_idf=bad)
    assert Command._fusion("keyword_idf=2") == {"keyword_idf": 2}
    with pytest.raises(ValueError):
        Command._fusion("keyword_idf=3")


def _idf_world(slug: str):
    from accounts.policy import AccessLevel
    from accounts.selectors import reader_for
    from accounts.services import membership_create, tenant_create
    from tests import factories

    tenant = tenant_create(slug=slug, name=slug)
    version = factories.index_version(tenant, config_hash=f"test-{slug}", status="ready")
    document = factories.document(tenant, text="x" * 200, access_level=0)
    section = factories.section(document, key="0", access_level=AccessLevel.INTERNAL)
    hidden = factories.section(document, key="1", access_level=AccessLevel.RESTRICTED)
    reader = reader_for(membership_create(tenant=tenant, email=f"i@{slug}.io", role="viewer", clearance="internal"))
    return reader, version, section, hidden


def _chunks(section, version, texts, first=0):
    from kb.models import EMBEDDING_DIMENSIONS
    from tests import factories

    out = []
    for i, text in enumerate(texts, first):
        embedding = [0.1] * EMBEDDING_DIMENSIONS
        embedding[0] = 0.1 + 0.001 * i  # distinct distances: the vector side's order is fixed
        out.append(factories.chunk(section, version, ordinal=i, start=0, end=1, text=text, embed_text=text,
                                   embedding=embedding))
    return out


@pytest.mark.django_db
def test_keyword_idf_2_weighs_terms_over_the_candidate_pool_not_the_tenant():
    """Q re-scores the keyword side's rows by idf over the union of both sides' candidates: ``oauth``, in all
    candidates but one, weighs little there (though rare in the tenant), so the one candidate holding ``pkce``
    leads; counted over the reader's whole readable tenant (P), where forty other chunks say ``pkce``, the chunk
    that repeats ``oauth`` would lead. The rows are the keyword side's own, and equal ranks go by id."""
    from kb.search_types import SearchFilters

    reader, version, section, _ = _idf_world("idfq-t")
    k0, k1, k2, k3, v0, v1 = _chunks(section, version, [
        "oauth oauth oauth oauth token list", "pkce", "oauth client", "oauth client", "oauth flask", "oauth django"])
    _chunks(section, version, ["pkce pkce pkce"] * 40, first=100)  # readable, not candidates
    filters, query = SearchFilters(), "Which oauth pkce?"
    options = dataclasses.replace(retrieval.CHOSEN_FUSION, keyword_idf=2)
    wanted = {k0.id, k1.id, k2.id, k3.id}
    keyword = [r for r in retrieval.keyword_candidates(reader, version.pk, filters, query, 100, options=options)
               if r.id in wanted]  # the keyword side's rows at a depth of four
    assert keyword[0].id == k0.id  # ts_rank alone: the chunk that repeats the common term
    vector = [Row(c.id, c.document_id, c.section_id, c.ordinal, 0, 1, c.text, distance=0.5) for c in (k1, v0, v1)]
    rescored = pool_weighted(reader, version.pk, filters, query, vector, keyword, options)
    ties = sorted([k2.id, k3.id])
    assert [r.id for r in rescored] == [k1.id, k0.id, *ties]
    idf = {"oauth": math.log(1 + (6 - 5 + 0.5) / 5.5), "pkce": math.log(1 + (6 - 1 + 0.5) / 1.5)}  # the pool: 6
    with connection.cursor() as cursor:
        cursor.execute("SELECT ts_rank(to_tsvector('english', 'pkce'), 'pkce'::tsquery)::float8")
        one = cursor.fetchone()[0]
    assert rescored[0].rank == pytest.approx(idf["pkce"] * one)
    # P's weights, over every readable chunk (N = 46, pkce in 41): the other way round.
    tenant = retrieval.term_weights(retrieval.readable_chunks(reader, version.pk, filters), ["'oauth'", "'pkce'"])
    assert tenant["'oauth'"] > 5 * idf["oauth"] and tenant["'pkce'"] < idf["pkce"] / 10


@pytest.mark.django_db
def test_keyword_idf_2_answers_do_not_move_with_rows_the_reader_cannot_read(monkeypatch):
    """Through ``hybrid_mode`` (the search's path): Q puts the chunk with the rare term first, and what a reader
    gets -- rows, order, scores, both sides' positions -- is the same before restricted chunks are added, after,
    and after their words change: the pool is counted through the reader's access rule, never the tenant's rows."""
    from kb.models import EMBEDDING_DIMENSIONS, Chunk
    from kb.search_types import SearchFilters

    reader, version, section, hidden = _idf_world("idfq-leak")
    chunks = _chunks(section, version, ["oauth oauth oauth oauth token list", "pkce", "oauth client",
                                        "oauth server", "oauth flask", "oauth django"])
    query, vector = "Which oauth pkce?", [0.1] * EMBEDDING_DIMENSIONS

    def answer(idf: int) -> list:
        monkeypatch.setattr(retrieval, "KEYWORD", dataclasses.replace(retrieval.CHOSEN_FUSION, keyword_idf=idf))
        retrieval.count_cache.clear()
        got = retrieval.hybrid_mode(reader, version.pk, SearchFilters(), query, vector, 5)
        return [(row.id, round(score, 9), v, k) for row, score, v, k in got.ranked]

    assert answer(0)[0][0] == chunks[0].id
    before = answer(2)
    assert before[0][0] == chunks[1].id
    added = _chunks(hidden, version, ["pkce pkce"] * 30, first=100)
    assert answer(2) == before
    Chunk.objects.filter(id__in=[c.id for c in added]).update(embed_text="oauth token oauth list")
    assert answer(2) == before
