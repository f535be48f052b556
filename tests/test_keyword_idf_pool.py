"""``keyword_idf=2`` computed in one pass (issue 30, twenty-ninth round's candidate R, kb.retrieval): the candidate
pool's idf re-scoring read from term columns of the hybrid search's own candidate queries must give exactly what
the twenty-eighth round's Q gave with two statements of its own (``bench.keyword_idf_same.pool_weighted``, kept
as the reference; no product code calls it), and must run no more statements than the default hybrid search."""

from __future__ import annotations

import dataclasses
import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.keyword_idf_same import pool_weighted
from kb import retrieval

WORDS = ["oauth", "token", "client", "pkce", "server", "flask", "django", "scope", "grant", "refresh", "well-known",
         "endpoint", "redirect", "secret"]
QUERIES = ["Which oauth pkce token?", "refresh the well-known endpoint", "client secret grant scope redirect",
           "django", "the and of", "nothing here matches zzyzx"]


def _world(slug: str):
    from accounts.policy import AccessLevel
    from accounts.selectors import reader_for
    from accounts.services import membership_create, tenant_create
    from kb.models import EMBEDDING_DIMENSIONS
    from tests import factories

    rng = random.Random(0)
    tenant = tenant_create(slug=slug, name=slug)
    version = factories.index_version(tenant, config_hash=f"test-{slug}", status="ready")
    documents = [factories.document(tenant, text="x" * 400, access_level=0) for _ in range(2)]
    for d, document in enumerate(documents):
        open_ = factories.section(document, key="0", access_level=AccessLevel.INTERNAL)
        hidden = factories.section(document, key="1", access_level=AccessLevel.RESTRICTED)
        for i in range(45):
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12)))
            embedding = [rng.uniform(-1, 1) for _ in range(EMBEDDING_DIMENSIONS)]
            factories.chunk(hidden if i % 5 == 4 else open_, version, ordinal=100 * d + i, start=0, end=1, text=text,
                            embed_text=text, embedding=embedding)
    reader = reader_for(membership_create(tenant=tenant, email=f"i@{slug}.io", role="viewer", clearance="internal"))
    vector = [rng.uniform(-1, 1) for _ in range(EMBEDDING_DIMENSIONS)]
    return reader, version, documents, vector


def _keyword_side(reader, version, filters, query, vector, depth, options):
    """R's keyword rows (the search's path) and Q's (the two-statement reference), each with both sides' rows."""
    text, found = retrieval.parsed_query_and_terms(query, options.parser)
    terms = retrieval.TermColumns(tuple(found), options) if found else None
    retrieval.count_cache.clear()
    r_vector, r_plan = retrieval.vector_candidates(reader, version.pk, filters, vector, depth, terms)
    r_keyword = retrieval.pool_rescored(r_vector, retrieval.keyword_candidates(
        reader, version.pk, filters, query, depth, vector, options, parsed=text, terms=terms))
    retrieval.count_cache.clear()
    q_vector, q_plan = retrieval.vector_candidates(reader, version.pk, filters, vector, depth)
    q_keyword = pool_weighted(reader, version.pk, filters, query, q_vector, retrieval.keyword_candidates(
        reader, version.pk, filters, query, depth, vector, options), options)
    assert r_plan == q_plan
    assert [(row.id, row.distance) for row in r_vector] == [(row.id, row.distance) for row in q_vector]
    return r_keyword, q_keyword


@pytest.mark.django_db
@pytest.mark.parametrize("plan", ["exact", "hnsw"])
def test_one_pass_gives_the_two_statement_pool_weights_exactly(monkeypatch, plan):
    """Every query (phrases from hyphenated words, stop words only, no match), tenant-wide and narrowed to one
    document, on both vector plans: the same keyword rows, in the same order, with the same ranks (exact
    equality, not approximate), as Q's own computation; and the re-scoring does re-order somewhere."""
    from kb.search_types import SearchFilters

    if plan == "hnsw":  # a threshold of 0: the HNSW plan for any readable row (refilled exactly when short)
        monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", 0)
        monkeypatch.setattr(retrieval, "HNSW_MIN_FRACTION", 0.0)
    reader, version, documents, vector = _world(f"idfr-{plan}")
    options = dataclasses.replace(retrieval.CHOSEN_FUSION, keyword_idf=2)
    moved = 0
    for filters in (SearchFilters(), SearchFilters(document_ids=(documents[1].pk,))):
        for query in QUERIES:
            r_keyword, q_keyword = _keyword_side(reader, version, filters, query, vector, 20, options)
            assert [(row.id, row.rank) for row in r_keyword] == [(row.id, row.rank) for row in q_keyword], query
            plain = retrieval.keyword_candidates(reader, version.pk, filters, query, 20, vector, options)
            assert {row.id for row in r_keyword} == {row.id for row in plain}  # which rows: unchanged
            moved += [row.id for row in r_keyword] != [row.id for row in plain]
    assert moved  # the pool's weights re-order the keyword side on some query


@pytest.mark.django_db
def test_hybrid_with_keyword_idf_2_runs_no_more_statements_than_the_default(monkeypatch):
    """Through ``hybrid_mode`` (the search's path), the same cached state before each: Q ran two statements more
    than the default (the terms, the pool); R reads both with the statements the default runs anyway."""
    from kb.search_types import SearchFilters

    reader, version, _, vector = _world("idfr-count")

    def statements(idf: int) -> list[str]:
        monkeypatch.setattr(retrieval, "KEYWORD", dataclasses.replace(retrieval.CHOSEN_FUSION, keyword_idf=idf))
        retrieval.count_cache.clear()
        retrieval.hybrid_mode(reader, version.pk, SearchFilters(), QUERIES[0], vector, 5)  # the plan's lookups cached
        with CaptureQueriesContext(connection) as captured:
            got = retrieval.hybrid_mode(reader, version.pk, SearchFilters(), QUERIES[0], vector, 5)
        assert got.ranked
        return [query["sql"] for query in captured.captured_queries]

    default, one_pass = statements(0), statements(2)
    assert len(one_pass) <= len(default), (len(one_pass), len(default))


@pytest.mark.django_db
def test_a_query_of_a_thousand_terms_is_answered_ranked_as_without_the_weights(monkeypatch):
    """Found reviewing R as the default: each term is two columns of both candidate queries, and a 4,000-character
    query of three-letter words (a thousand terms) passed PostgreSQL's 1,664 columns -- the search failed
    (``target lists can have at most 1664 entries``). Past ``MAX_WEIGHTED_TERMS`` terms the keyword side ranks as
    with ``keyword_idf=0``."""
    import itertools

    from kb.search_types import SearchFilters

    reader, version, _, vector = _world("idfr-many")
    words = ["".join(letters) for letters in itertools.product("bcdfghjklmnp", repeat=3)]
    query = ("oauth token " + " ".join(words))[:4000]
    assert len(retrieval.query_terms(query)) > 1664 // 2  # two columns a term: past the limit

    def ranked(idf: int) -> list:
        monkeypatch.setattr(retrieval, "KEYWORD", dataclasses.replace(retrieval.CHOSEN_FUSION, keyword_idf=idf))
        retrieval.count_cache.clear()
        got = retrieval.hybrid_mode(reader, version.pk, SearchFilters(), query, vector, 5)
        return [(hit[0].id, hit[1]) for hit in got.ranked]

    weighted = ranked(2)
    assert weighted and weighted == ranked(0)
