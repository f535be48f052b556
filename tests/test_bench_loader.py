"""The search benchmark's loader (bench.search_bench): rows through COPY, columns from the models."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection

from bench import search_bench
from kb.models import Chunk, Document, Section

pytestmark = pytest.mark.django_db

N_CHUNKS = 520  # 104 sections (1% of them public): ten documents of 10 sections and one of 4


def _load(tenant_number: int = 0):
    rng = np.random.default_rng(11)
    texts = [f"Benchmark paragraph {i}.\tA tab, a backslash \\ and a newline\nstay text." for i in range(N_CHUNKS)]
    vectors = rng.normal(size=(N_CHUNKS, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tenant, version, blue = search_bench.create_tenant(tenant_number)
    ids = rng.permutation(N_CHUNKS)
    search_bench.load_tenant(tenant, version, blue.id, ids, texts, vectors, np.arange(N_CHUNKS), rng)
    return tenant, version, blue, texts, vectors


def test_loaded_rows_carry_tenant_version_and_section_policy():
    tenant, version, blue, texts, vectors = _load()

    documents = list(Document.objects.filter(tenant=tenant))
    assert len(documents) == 11 and all(d.status == Document.Status.READY for d in documents)
    sections = {s.id: s for s in Section.objects.filter(tenant=tenant)}
    assert len(sections) == 11 + 104  # a root per document plus its parts
    chunks = list(Chunk.objects.filter(tenant=tenant).order_by("document_id", "ordinal"))
    assert len(chunks) == N_CHUNKS
    assert {c.index_version_id for c in chunks} == {version.id}
    by_document = {d.id: d for d in documents}
    for chunk in chunks:
        section = sections[chunk.section_id]
        assert section.tenant_id == chunk.tenant_id == by_document[chunk.document_id].tenant_id
        assert section.document_id == chunk.document_id
        # The section's policy is the chunk's, and only the benchmark group appears in it.
        assert (chunk.access_level, chunk.access_groups) == (section.access_level, section.access_groups)
        assert (section.own_level, section.own_groups) == (section.access_level, section.access_groups)
        assert chunk.access_groups in ([], [blue.id])
        # Spans slice the document text back to the chunk, tabs and newlines included.
        assert by_document[chunk.document_id].text[chunk.start : chunk.end] == chunk.text
        assert [chunk.start, chunk.end] in section.body_spans
    assert {c.text for c in chunks} == set(texts)
    first = next(c for c in chunks if c.text == texts[0])
    np.testing.assert_allclose(np.asarray(first.embedding), vectors[0], atol=1e-6)
    # Every policy of the benchmark is present (one section each at least).
    policies = {(s.access_level, tuple(s.access_groups)) for s in sections.values() if s.parent_id}
    assert policies == {(int(level), (blue.id,) if grouped else ()) for level, grouped, _ in search_bench.POLICIES}
    roots = [s for s in sections.values() if s.parent_id is None]
    assert all(r.own_level is None and r.end == len(by_document[r.document_id].text) for r in roots)


def test_copy_columns_come_from_the_models(monkeypatch):
    statements: list[str] = []
    with connection.cursor() as cursor:
        cursor_class = type(cursor.cursor)
    real_copy = cursor_class.copy

    def recording_copy(self, statement, *args, **kwargs):
        statements.append(str(statement))
        return real_copy(self, statement, *args, **kwargs)

    monkeypatch.setattr(cursor_class, "copy", recording_copy)
    _load()

    def columns(model):
        return ", ".join(connection.ops.quote_name(f.column) for f in model._meta.concrete_fields if not f.generated)

    assert statements == [
        f'COPY "{model._meta.db_table}" ({columns(model)}) FROM STDIN' for model in (Document, Section, Chunk)
    ]
    # Only what the database computes is left out (the chunk's full-text vector).
    assert [f.name for f in Chunk._meta.concrete_fields if f not in search_bench.copy_fields(Chunk)] == [
        "search_vector"
    ]
