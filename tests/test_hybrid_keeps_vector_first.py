"""Hybrid keeps vector's first candidate (issue 30's candidate O, ``KeywordFusion.keep_vector_first``, off by
default): the fused page never drops the embedding's strongest candidate because the keyword side's terms are
common in the document."""

from __future__ import annotations

import uuid
from dataclasses import replace

import numpy as np
import pytest

from accounts.policy import Reader
from accounts.services import tenant_create
from accounts.tenancy import acting_tenant
from kb import retrieval
from kb.models import EMBEDDING_DIMENSIONS
from kb.retrieval import CHOSEN_FUSION, KeywordFusion, Row, vector_first_kept
from kb.search_types import SearchFilters
from tests import factories


def _row(name: str) -> Row:
    return Row(uuid.uuid5(uuid.NAMESPACE_URL, name), uuid.uuid4(), uuid.uuid4(), 0, 0, 1, name)


def _ranked(names):
    return [(_row(n), 1.0 - i / 10, None, None) for i, n in enumerate(names)]


def _names(ranked):
    return [entry[0].text for entry in ranked]


@pytest.mark.parametrize(
    ("fused", "first", "expected"),
    [
        ("abcdefg", "f", "abcdfeg"),  # off the page of 5: takes place 5, e moves down one
        ("abcdefg", "g", "abcdgef"),
        ("abcdefg", "c", "abcdefg"),  # on the page already
        ("abcdefg", "e", "abcdefg"),  # the page's last place already
        ("abcdefg", "z", "abcdefg"),  # not fused at all (cannot happen; nothing to move)
        ("abc", "c", "abc"),
    ],
)
def test_vector_first_takes_the_pages_last_place_only_when_off_the_page(fused, first, expected):
    assert _names(vector_first_kept(_ranked(fused), [_row(first)], 5)) == list(expected)


def test_without_vector_candidates_nothing_moves():
    assert _names(vector_first_kept(_ranked("abcdefg"), [], 5)) == list("abcdefg")


@pytest.mark.parametrize("value", [2, -1])
def test_keep_vector_first_is_zero_or_one(value):
    with pytest.raises(ValueError, match="keep_vector_first"):
        KeywordFusion(keep_vector_first=value)


def _basis(*weights) -> list[float]:
    v = np.zeros(EMBEDDING_DIMENSIONS)
    for axis, weight in weights:
        v[axis] = weight
    return (v / np.linalg.norm(v)).tolist()


@pytest.mark.django_db
def test_a_hybrid_page_keeps_the_vector_side_first_candidate(monkeypatch):
    """One chunk nearest the query (cosine 0.9) without its words; six at 0.8 that repeat them. The chosen fusion
    (0.8 x cosine + 0.2 x keyword strength) fills the page of five with the six; with the option the nearest
    takes the fifth place. Through ``hybrid_mode`` on the real PostgreSQL (full text and pgvector)."""
    tenant = tenant_create(slug=f"keep-{uuid.uuid4().hex[:8]}", name="Keep")
    version = factories.index_version(tenant, status="ready")
    texts = ["The tool writes its files under a hidden folder of the project."] + [
        f"The cache files of the cache are written with cache settings, note {i}." for i in range(6)]
    document = factories.document(tenant, title="readme", raw=b"", text="\n".join(texts), access_level=0)
    start = 0
    for i, text in enumerate(texts):
        section = factories.section(document, key=f"s{i}", order=i, start=start, end=start + len(text), access_level=0)
        vector = _basis((0, 0.9), (1, 0.436)) if i == 0 else _basis((0, 0.8), (2 + i, 0.6))
        factories.chunk(section, version, ordinal=i, embedding=vector)
        start += len(text) + 1
    reader = Reader(tenant_id=tenant.pk, clearance=0, group_ids=frozenset())
    query = "Where are the cache files written?"
    pages = {}
    with acting_tenant(tenant.pk):
        for keep in (0, 1):
            monkeypatch.setattr(retrieval, "KEYWORD", replace(CHOSEN_FUSION, keep_vector_first=keep))
            found = retrieval.hybrid_mode(reader, version.pk, SearchFilters(), query, _basis((0, 1.0)), 5)
            pages[keep] = [row.ordinal for row, *_ in found.ranked]
    assert 0 not in pages[0] and len(pages[0]) == 5, pages
    assert pages[1] == [*pages[0][:4], 0], pages
