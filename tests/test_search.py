"""Search: full pages at any selectivity, the plan choice, expansion, isolation, validation.

Full-page tests insert chunks directly with random unit vectors (no model); the
expansion and isolation tests ingest Markdown through the real worker.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from accounts.errors import ApplicationError, NotFound
from accounts.models import Tenant
from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb import retrieval, tenant_indexes
from kb.models import Chunk, Document, IngestionJob, Section
from kb.search import SearchFilters, search
from kb.services import Upload, document_create, section_set_access
from tests import factories
from tests.bounds import JOB_WAIT
from tests.ingestion_helpers import wait_for_jobs

# ----------------------------------------------------------------------------- synthetic chunks (no model)


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    v = rng.normal(size=(n, 384)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


N_SKEWED = 2000


@pytest.fixture(scope="module")
def skewed_data(django_db_setup, django_db_blocker):
    """2,000 chunks in a dedicated index version: 1% public, 9% internal, 90% restricted, plus a
    second tenant with the same vectors that must never show up. Built once per module
    (HNSW inserts are slow) and deleted at the end."""
    rng = np.random.default_rng(5)
    vectors = _unit(rng, N_SKEWED)
    levels = np.where(np.arange(N_SKEWED) % 100 == 0, 0, np.where(np.arange(N_SKEWED) % 10 == 1, 1, 3))
    out = {}
    with django_db_blocker.unblock():
        for slug in ("skew-a", "skew-b"):
            tenant = tenant_create(slug=slug, name=slug)
            version = factories.index_version(tenant, config_hash=f"test-{slug}", status="ready")
            document = factories.document(tenant, title=f"{slug} doc", raw=b"", text="x" * 300_000, access_level=0)
            section = factories.section(document, key="0", access_level=0, body_spans=[[0, 300_000]])
            Chunk.objects.bulk_create(
                [
                    factories.chunk(section, version, save=False, ordinal=i, start=i * 100, end=i * 100 + 50,
                                    embed_text=f"alpha common row {i}", token_count=4, content_hash=f"{i}",
                                    embedding=vectors[i].tolist(), access_level=int(levels[i]))
                    for i in range(N_SKEWED)
                ],
                batch_size=1000,
            )
            out[slug] = (tenant, version, document)
        tenant, version, document = out["skew-a"]
        members = {
            level: membership_create(tenant=tenant, email=f"{level}@skew.io", role="viewer", clearance=level)
            for level in ("public", "internal", "restricted")
        }
    yield tenant, version, members, vectors, out["skew-b"]
    with django_db_blocker.unblock():
        for tenant, _, _ in out.values():
            Chunk.objects.filter(tenant=tenant).delete()
            tenant.delete()


@pytest.fixture
def skewed_tenant(db, skewed_data):
    retrieval.count_cache.clear()
    yield skewed_data
    retrieval.count_cache.clear()  # a rolled-back test's index must not be remembered


def _exact_ids(version, max_level: int, vector: np.ndarray, k: int) -> list[uuid.UUID]:
    rows = list(Chunk.objects.filter(index_version=version, access_level__lte=max_level).values_list("id", "embedding"))
    ids = np.array([r[0] for r in rows])
    matrix = np.array([r[1] for r in rows], dtype=np.float32)
    return list(ids[np.argsort(-(matrix @ vector), kind="stable")[:k]])


@pytest.mark.parametrize("mode", ["vector", "keyword", "hybrid"])
@pytest.mark.parametrize(("clearance", "readable"), [("public", 20), ("internal", 200), ("restricted", 2000)])
@pytest.mark.parametrize("exact_max_rows", [0, 5000], ids=["hnsw-planned", "exact-planned"])
def test_full_pages_at_every_selectivity(skewed_tenant, monkeypatch, mode, clearance, readable, exact_max_rows):
    tenant, version, members, vectors, _ = skewed_tenant
    monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", exact_max_rows)
    monkeypatch.setattr(retrieval, "HNSW_MIN_FRACTION", 0.0)  # the threshold is EXACT_MAX_ROWS alone
    rng = np.random.default_rng(11)
    for query_vector in _unit(rng, 5):
        response = search(member=members[clearance], query="alpha", top_k=10, mode=mode, expand="none",
                          index_version=version, query_vector=query_vector)
        assert len(response.results) == 10
        level = int(AccessLevel.from_name(clearance))
        allowed = set(Chunk.objects.filter(index_version=version, access_level__lte=level).values_list("id", flat=True))
        assert {h.chunk_id for h in response.results} <= allowed
        assert [h.rank for h in response.results] == list(range(1, 11))
        if mode == "vector":
            assert response.plan in ("exact", "hnsw", "hnsw+exact")
            if response.plan != "hnsw":  # exact by construction (HNSW recall is measured by kb_bench, not here)
                expected = _exact_ids(version, level, query_vector, 10)
                assert [h.chunk_id for h in response.results] == expected
            distances = [h.distance for h in response.results]
            assert distances == sorted(distances)


def test_exact_threshold_grows_with_the_index():
    assert retrieval.exact_threshold(100) == retrieval.EXACT_MAX_ROWS
    assert retrieval.exact_threshold(100_000) == 20_000  # 20% of the shared index
    assert retrieval.exact_threshold(10_000_000) == retrieval.EXACT_CEILING


def test_plan_follows_the_readable_count(skewed_tenant, monkeypatch):
    tenant, version, members, vectors, _ = skewed_tenant
    monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", 1000)
    monkeypatch.setattr(retrieval, "HNSW_MIN_FRACTION", 0.0)
    q = vectors[7]
    small = search(member=members["public"], query="q", mode="vector", expand="none", index_version=version,
                   query_vector=q)
    large = search(member=members["restricted"], query="q", mode="vector", expand="none", index_version=version,
                   query_vector=q)
    assert small.plan == "exact"
    assert large.plan in ("hnsw", "hnsw+exact")
    # Random 384-d vectors are HNSW's worst case (recall is measured by kb_bench): only the page is checked.
    assert len(large.results) == 5 and len(small.results) == 5


def test_short_hnsw_page_falls_back_to_exact(skewed_tenant, monkeypatch):
    tenant, version, members, vectors, _ = skewed_tenant
    monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", 0)
    monkeypatch.setattr(retrieval, "HNSW_MIN_FRACTION", 0.0)
    monkeypatch.setattr(retrieval, "vector_hnsw", lambda qs, vector, depth, **kw: [])  # an index that finds nothing
    response = search(member=members["public"], query="q", top_k=10, mode="vector", expand="none",
                      index_version=version, query_vector=vectors[0])
    assert response.plan == "hnsw+exact"
    assert len(response.results) == 10


def test_other_tenants_rows_never_appear_even_with_identical_vectors(skewed_tenant):
    tenant, version, members, vectors, (tenant_b, version_b, document_b) = skewed_tenant
    for mode in ("vector", "keyword", "hybrid"):
        response = search(member=members["restricted"], query="alpha", top_k=50, mode=mode, expand="parent",
                          index_version=version, query_vector=vectors[3])
        assert response.results
        assert all(h.document_id != document_b.id for h in response.results)
        assert all(c.document_id != document_b.id for c in response.contexts)
    with pytest.raises(NotFound):
        search(member=members["restricted"], query="alpha", index_version=version_b, query_vector=vectors[3])


# ----------------------------------------------------------------------------- per-tenant vector indexes


def _hnsw_plan_text(member, version, vector) -> str:
    from django.db import connection

    from accounts.selectors import reader_for

    # Statistics as this transaction sees the table: an autovacuum ANALYZE from outside (other tests
    # churn rows in this database) counts none of the test's uncommitted rows, and a near-empty table
    # makes the shared index look as cheap as the tenant's.
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE kb_chunk")
    qs = retrieval.readable_chunks(reader_for(member), version.pk, SearchFilters())
    with retrieval.local_settings(**retrieval.hnsw_settings(20)):
        return retrieval.nearest(qs, vector, 20).explain()


def test_tenant_index_serves_its_tenant_and_only_its_tenant(skewed_tenant, monkeypatch):
    tenant, version, members, vectors, (tenant_b, version_b, _) = skewed_tenant
    member_b = membership_create(tenant=tenant_b, email="restricted@skew-b.io", role="viewer", clearance="restricted")
    name = tenant_indexes.index_name(tenant.id)
    assert name not in _hnsw_plan_text(members["restricted"], version, vectors[0])

    built = tenant_indexes.tenant_index_build(tenant_id=tenant.id)  # in the test's transaction: not concurrent
    assert (built.name, built.valid, built.rows) == (name, True, N_SKEWED)
    assert tenant_indexes.tenant_index_rows(tenant.id) == N_SKEWED
    assert tenant_indexes.tenant_index_rows(tenant_b.id) is None
    # The planner picks the partial index for tenant A's statement, the shared one for tenant B's.
    assert name in _hnsw_plan_text(members["restricted"], version, vectors[0])
    plan_b = _hnsw_plan_text(member_b, version_b, vectors[0])
    assert name not in plan_b and "chunk_embedding_hnsw" in plan_b

    monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", 0)
    monkeypatch.setattr(retrieval, "HNSW_MIN_FRACTION", 0.0)
    for clearance in ("public", "internal", "restricted"):
        level = int(AccessLevel.from_name(clearance))
        allowed = set(Chunk.objects.filter(index_version=version, access_level__lte=level).values_list("id", flat=True))
        response = search(member=members[clearance], query="q", top_k=10, mode="vector", expand="none",
                          index_version=version, query_vector=vectors[5])
        assert response.plan in ("tenant-hnsw", "tenant-hnsw+exact")
        assert len(response.results) == 10
        assert {h.chunk_id for h in response.results} <= allowed
    other = search(member=member_b, query="q", top_k=10, mode="vector", expand="none", index_version=version_b,
                   query_vector=vectors[5])
    assert other.plan in ("hnsw", "hnsw+exact")
    assert other.results and all(Chunk.objects.get(id=h.chunk_id).tenant_id == tenant_b.id for h in other.results)


def test_plan_threshold_is_sized_on_the_tenant_index(skewed_tenant, monkeypatch):
    tenant, version, members, vectors, _ = skewed_tenant
    monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", 100)
    monkeypatch.setattr(retrieval, "HNSW_MIN_FRACTION", 0.2)
    monkeypatch.setattr(retrieval, "index_rows", lambda: 1_000_000)  # a big shared index: threshold 50,000
    shared = search(member=members["restricted"], query="q", mode="vector", expand="none", index_version=version,
                    query_vector=vectors[2])
    assert shared.plan == "exact"  # 2,000 readable rows are a tiny share of the shared index
    tenant_indexes.tenant_index_build(tenant_id=tenant.id)
    retrieval.count_cache.clear()
    # Sized on the tenant's 2,000-row index the threshold is 400: 200 rows exact, 2,000 through the index.
    internal = search(member=members["internal"], query="q", mode="vector", expand="none", index_version=version,
                      query_vector=vectors[2])
    restricted = search(member=members["restricted"], query="q", mode="vector", expand="none",
                        index_version=version, query_vector=vectors[2])
    assert internal.plan == "exact"
    assert restricted.plan in ("tenant-hnsw", "tenant-hnsw+exact")
    assert len(internal.results) == len(restricted.results) == 5


def test_sync_builds_for_large_tenants_and_drops_when_gone_small_or_dominant(skewed_tenant):
    tenant, version, members, vectors, (tenant_b, _, _) = skewed_tenant
    small = tenant_create(slug="skew-small", name="small")  # no chunks: never indexed
    sync = tenant_indexes.tenant_indexes_sync
    first = sync(min_rows=1500, max_share=1.0)
    assert {tenant.id, tenant_b.id} <= {t for t, _, _ in first.built}
    assert small.id not in {t for t, _, _ in first.built}
    valid = {i.tenant_id for i in tenant_indexes.tenant_indexes() if i.valid}
    assert {tenant.id, tenant_b.id} <= valid
    again = sync(min_rows=1500, max_share=1.0)
    assert again.built == [] and again.dropped == []  # idempotent
    assert sync(min_rows=1500, max_share=0.5).dropped == []  # about half each: kept (drops above 75%)

    b_id = tenant_b.id
    Chunk.objects.filter(tenant_id=b_id).delete()
    Tenant.objects.filter(id=b_id).delete()  # a deleted tenant's index goes
    gone = sync(min_rows=1500, max_share=1.0)
    assert gone.dropped == [b_id]
    counts = tenant_indexes.tenant_chunk_counts()
    assert counts[tenant.id] / sum(counts.values()) > 0.75  # tenant A now holds nearly all chunks
    dominant = sync(min_rows=1500, max_share=0.5)  # the shared index serves it as well: one graph, not two
    assert dominant.dropped == [tenant.id] and dominant.built == []
    assert sync(min_rows=1500, max_share=0.5).built == []
    assert [t for t, _, _ in sync(min_rows=1500, max_share=1.0).built] == [tenant.id]
    shrunk = sync(min_rows=5000, max_share=1.0)  # 2,000 rows < half of 5,000: dropped
    assert shrunk.dropped == [tenant.id]
    assert tenant_indexes.tenant_index_rows(tenant.id) is None


def test_invalid_index_is_ignored_then_rebuilt(skewed_tenant, monkeypatch):
    """An interrupted CREATE INDEX CONCURRENTLY leaves an invalid index: search must not
    count on it, and the next build replaces it."""
    from django.db import connection

    tenant, version, members, vectors, _ = skewed_tenant
    name = tenant_indexes.tenant_index_build(tenant_id=tenant.id).name
    with connection.cursor() as cursor:
        cursor.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = %s::regclass", [name])
    retrieval.count_cache.clear()
    assert [i.valid for i in tenant_indexes.tenant_indexes() if i.name == name] == [False]
    assert tenant_indexes.tenant_index_rows(tenant.id) is None
    monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", 0)
    monkeypatch.setattr(retrieval, "HNSW_MIN_FRACTION", 0.0)
    response = search(member=members["restricted"], query="q", mode="vector", expand="none", index_version=version,
                      query_vector=vectors[4])
    assert response.plan in ("hnsw", "hnsw+exact") and len(response.results) == 5
    rebuilt = tenant_indexes.tenant_index_build(tenant_id=tenant.id)
    assert rebuilt.valid and rebuilt.rows == N_SKEWED


def test_kb_index_tenant_indexes_command(skewed_tenant):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    tenant, *_ = skewed_tenant
    out = StringIO()
    call_command("kb_index", "tenant-indexes", "build", "--tenant", "skew-a", stdout=out)
    assert f"{tenant_indexes.index_name(tenant.id)}: {N_SKEWED} rows" in out.getvalue()
    out = StringIO()
    call_command("kb_index", "tenant-indexes", "list", stdout=out)
    line = next(ln for ln in out.getvalue().splitlines() if ln.startswith("skew-a"))
    assert line.split()[1:3] == [str(N_SKEWED), str(N_SKEWED)] and line.endswith("valid")
    out = StringIO()
    call_command("kb_index", "tenant-indexes", "drop", "--tenant", "skew-a", stdout=out)
    assert "dropped" in out.getvalue() and tenant_indexes.tenant_index_rows(tenant.id) is None
    with pytest.raises(CommandError, match="needs --tenant"):
        call_command("kb_index", "tenant-indexes", "build")
    with pytest.raises(CommandError, match="no tenant 'nope'"):
        call_command("kb_index", "tenant-indexes", "build", "--tenant", "nope")


def test_filters_narrow_inside_the_query(skewed_tenant):
    tenant, version, members, vectors, _ = skewed_tenant
    none = search(member=members["restricted"], query="alpha", mode="vector", expand="none", index_version=version,
                  query_vector=vectors[1], filters=SearchFilters(tags=("missing",)))
    assert none.results == []
    doc_id = Document.objects.get(tenant=tenant).id
    some = search(member=members["restricted"], query="alpha", mode="hybrid", expand="none", index_version=version,
                  query_vector=vectors[1], filters=SearchFilters(document_ids=(doc_id,), content_types=("text/plain",)))
    assert len(some.results) == 5


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "fuzzy"}, "mode must be one of"),
        ({"expand": "all"}, "expand must be one of"),
        ({"expand_level": "root"}, "expand_level must be one of"),
        ({"top_k": 0}, "top_k must be an integer from 1 to 100"),
        ({"top_k": 101}, "top_k must be an integer from 1 to 100"),
        ({"query": "   "}, "query must be a non-empty string"),
        ({"query": "x" * 4001}, "the limit is 4000"),
    ],
)
def test_invalid_arguments_are_refused(db, kwargs, message):
    tenant = tenant_create(slug="valid-co", name="Valid")
    member = membership_create(tenant=tenant, email="v@valid.io", role="viewer", clearance="internal")
    with pytest.raises(ApplicationError, match=message):
        search(member=member, **{"query": "hello", **kwargs})


def test_tenant_without_documents_gets_empty_lists(db):
    tenant = tenant_create(slug="empty-co", name="Empty")
    member = membership_create(tenant=tenant, email="e@empty.io", role="viewer", clearance="restricted")
    for mode in ("vector", "keyword", "hybrid"):
        response = search(member=member, query="anything at all", mode=mode, query_vector=np.ones(384) / 384**0.5)
        assert response.results == [] and response.contexts == []
        assert response.index_version_id is not None


def test_keyword_query_without_lexemes_is_an_empty_list(skewed_tenant):
    tenant, version, members, vectors, _ = skewed_tenant
    response = search(member=members["restricted"], query="the and of ?!", mode="keyword", index_version=version)
    assert response.results == []
    hybrid = search(member=members["restricted"], query="the and of ?!", mode="hybrid", index_version=version,
                    query_vector=vectors[2], expand="none")
    assert len(hybrid.results) == 5 and all(h.keyword_rank is None for h in hybrid.results)


def test_set_local_does_not_leak_into_the_callers_transaction(skewed_tenant):
    from django.db import connection

    tenant, version, members, vectors, _ = skewed_tenant
    search(member=members["restricted"], query="q", mode="vector", expand="none", index_version=version,
           query_vector=vectors[0])
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('enable_indexscan'), current_setting('hnsw.iterative_scan', true)")
        assert cursor.fetchone()[0] == "on"


# ----------------------------------------------------------------------------- through the real pipeline

POLICY_DOC = """---
title: Security policy
access: internal
---
# Security policy
Intro for everyone with internal clearance. It explains what this policy covers.

## Incident response <!-- access: restricted; groups: security-team -->
Only the security team reads this. Call the on-call engineer first when the pager rings.

## Reporting
Everyone with internal clearance reads the reporting rules. Reporting goes to the desk.

<!-- access: confidential -->
A confidential region inside Reporting: the names of past reporters are Ada and Grace.
<!-- /access -->

Back to internal text about reporting. The reporting desk answers within a day.

### Reporting channels <!-- access: internal -->
Reporting channels are email and the hotline. Reporting by phone is fine too.
"""


def _paragraphs(topic: str, n: int) -> str:
    return "\n\n".join(
        f"Paragraph {i} about {topic}. " + " ".join(f"The {topic} process step {i}.{j} needs care and review." for j in range(18))
        for i in range(n)
    )


LONG_DOC = f"""---
title: Operations manual
access: internal
---
# Operations manual

## Deployment
{_paragraphs("deployment", 6)}

## Backups
{_paragraphs("backup", 2)}
"""


@pytest.fixture
def policy_tenant():
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="search-co", name="Search Co")
    group_create(tenant=tenant, slug="security-team")
    members = {
        "internal": membership_create(tenant=tenant, email="int@s.io", role="viewer", clearance="internal"),
        "confidential": membership_create(tenant=tenant, email="conf@s.io", role="viewer", clearance="confidential"),
        "security": membership_create(tenant=tenant, email="sec@s.io", role="viewer", clearance="restricted",
                                      group_slugs=["security-team"]),
    }
    return tenant, members


def _ingest(tenant, text: str, title: str) -> Document:
    document, job = document_create(
        tenant=tenant, created_by=None,
        upload=Upload(content=text.encode(), title=title, content_type="text/markdown"),
    )
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    document.refresh_from_db()
    return document


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_restricted_region_inside_a_readable_parent(celery_worker, policy_tenant):
    tenant, members = policy_tenant
    _ingest(tenant, POLICY_DOC, "Security policy")
    query = "reporting desk rules"
    for level in ("leaf", "parent"):
        internal = search(member=members["internal"], query=query, mode="hybrid", expand_level=level, top_k=3)
        confidential = search(member=members["confidential"], query=query, mode="hybrid", expand_level=level, top_k=3)
        reporting = [c for c in internal.contexts if "reporting rules" in c.text]
        assert reporting, [c.text for c in internal.contexts]
        for context in internal.contexts:
            assert "past reporters" not in context.text and "security team" not in context.text
            assert "Incident response" not in context.text and "Incident response" not in context.heading_path
        assert any("past reporters" in c.text for c in confidential.contexts)
        assert all("Only the security team" not in c.text for c in confidential.contexts)
        # A readable sub-heading is shown as a separator in its parent's context.
        assert any("## Reporting channels" in c.text for c in reporting)
    sec = search(member=members["security"], query="on-call engineer pager", expand_level="parent", top_k=3)
    assert any("Only the security team" in c.text for c in sec.contexts)
    assert any(c.heading_path == ["Security policy"] and "## Incident response" in c.text for c in sec.contexts)


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_heading_paths_follow_permission_changes(celery_worker, policy_tenant):
    tenant, members = policy_tenant
    document = _ingest(tenant, POLICY_DOC, "Security policy")
    before = search(member=members["internal"], query="reporting channels hotline", mode="keyword", top_k=1)
    assert before.results[0].heading_path == ["Security policy", "Reporting", "Reporting channels"]
    # Restrict the parent; the channels sub-section keeps its own internal marker.
    section_set_access(actor=None, section=Section.objects.get(document=document, title="Reporting"),
                       access_level="restricted", groups=["security-team"])
    # The channels' chunks carried "Reporting" in their embedded prefix: hidden, then rebuilt without it.
    wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))
    after = search(member=members["internal"], query="reporting channels hotline", mode="keyword", top_k=5)
    hit = after.results[0]
    assert "hotline" in hit.text
    assert hit.heading_path == ["Security policy", "Reporting channels"]
    for result in after.results:
        assert "Reporting" not in result.heading_path
    for context in search(member=members["internal"], query="reporting channels hotline", expand_level="parent").contexts:
        assert "Reporting" not in context.heading_path
        assert "reporting rules" not in context.text and "## Reporting\n" not in context.text
    sec = search(member=members["security"], query="reporting channels hotline", mode="keyword", top_k=1)
    assert sec.results[0].heading_path == ["Security policy", "Reporting", "Reporting channels"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_contexts_dedupe_order_and_budget(celery_worker, policy_tenant):
    tenant, members = policy_tenant
    document = _ingest(tenant, LONG_DOC, "Operations manual")
    deployment = Section.objects.get(document=document, title="Deployment")
    assert Chunk.objects.filter(section=deployment).count() >= 3
    response = search(member=members["internal"], query="deployment process step needs care", mode="hybrid",
                      top_k=6, expand="parent", context_token_budget=100_000)
    # Several hits share the Deployment section: one context carrying all their chunk ids.
    contexts = {c.section_id: c for c in response.contexts}
    assert len(contexts) == len(response.contexts)
    shared = contexts[deployment.id]
    in_deployment = [h.chunk_id for h in response.results if h.section_id == deployment.id]
    assert len(in_deployment) >= 2 and shared.chunk_ids == in_deployment
    # Ordered by best hit.
    hit_rank = {h.chunk_id: h.rank for h in response.results}
    firsts = [hit_rank[c.chunk_ids[0]] for c in response.contexts]
    assert firsts == sorted(firsts)
    # The whole section within a large budget: its body spans, each paragraph's text in the context.
    assert shared.spans == [tuple(s) for s in deployment.body_spans] and len(shared.spans) == 6
    assert all(document.text[s:e] in shared.text for s, e in shared.spans)

    budget = 120
    small = search(member=members["internal"], query="deployment process step needs care", top_k=6,
                   expand="parent", context_token_budget=budget)
    assert small.contexts
    assert sum(c.token_count for c in small.contexts) <= budget
    assert small.contexts[-1].truncated
    # Truncation keeps whole sentences of the text and the spans point at them.
    last = small.contexts[-1]
    assert last.spans, "a truncated context still reports where its text is"
    for start, end in last.spans:
        assert document.text[start:end].strip() in last.text
        assert document.text[start:end].rstrip().endswith("."), "cut at a sentence end"
    assert last.spans[-1][1] < max(e for _, e in deployment.body_spans), "the budget cut the section short"
    capped = search(member=members["internal"], query="backup deployment", top_k=10, max_contexts=1,
                    context_token_budget=100_000)
    assert len(capped.contexts) == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_neighbors_mode(celery_worker, policy_tenant):
    tenant, members = policy_tenant
    document = _ingest(tenant, LONG_DOC, "Operations manual")
    deployment = Section.objects.get(document=document, title="Deployment")
    chunks = list(Chunk.objects.filter(section=deployment).order_by("ordinal"))
    assert len(chunks) >= 3
    middle = chunks[len(chunks) // 2]
    response = search(member=members["internal"], query=middle.text[:300], mode="vector", top_k=1,
                      expand="neighbors", neighbors=1)
    hit = response.results[0]
    assert hit.chunk_id == middle.id
    (context,) = response.contexts
    assert context.chunk_ids == [middle.id]
    before, after = chunks[len(chunks) // 2 - 1], chunks[len(chunks) // 2 + 1]
    for neighbour in (before, middle, after):
        assert neighbour.text.split("\n\n")[0] in context.text
    assert context.heading_path == ["Operations manual", "Deployment"]
    assert all(not (s < before.start - 1 and e > before.start) for s, e in context.spans)
    # Hits next to each other merge into one context; none in neighbours of other sections.
    merged = search(member=members["internal"], query="deployment process step", mode="keyword", top_k=len(chunks),
                    expand="neighbors", neighbors=1, filters=SearchFilters(document_ids=(document.id,)))
    deployment_contexts = [c for c in merged.contexts if c.section_id == deployment.id]
    assert len(deployment_contexts) == 1
    assert "backup" not in deployment_contexts[0].text.lower()


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_identical_text_in_two_tenants_stays_apart(celery_worker, policy_tenant):
    tenant, members = policy_tenant
    other = tenant_create(slug="other-co", name="Other")
    group_create(tenant=other, slug="security-team")
    outsider = membership_create(tenant=other, email="out@o.io", role="viewer", clearance="restricted",
                                 group_slugs=["security-team"])
    mine = _ingest(tenant, POLICY_DOC, "Security policy")
    theirs = _ingest(other, POLICY_DOC, "Security policy")
    for mode in ("vector", "keyword", "hybrid"):
        for expand in ("parent", "neighbors"):
            a = search(member=members["security"], query="reporting rules", mode=mode, expand=expand,
                       top_k=20)
            b = search(member=outsider, query="reporting rules", mode=mode, expand=expand, top_k=20)
            assert a.results and b.results
            assert {h.document_id for h in a.results} == {mine.id}
            assert {c.document_id for c in a.contexts} == {mine.id}
            assert {h.document_id for h in b.results} == {theirs.id}
            assert {c.document_id for c in b.contexts} == {theirs.id}


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_sync_task_on_a_real_worker_builds_a_concurrent_index_search_then_uses(celery_worker, policy_tenant):
    from kb.tasks import sync_tenant_indexes

    tenant, members = policy_tenant
    _ingest(tenant, LONG_DOC, "Operations manual")
    rows = Chunk.objects.filter(tenant=tenant).count()
    try:
        result = sync_tenant_indexes.delay(min_rows=rows, max_share=1.0).get(timeout=JOB_WAIT)  # CREATE INDEX CONCURRENTLY, in the worker
        assert str(tenant.id) in result["built"] and not result["skipped"]
        retrieval.count_cache.clear()
        assert tenant_indexes.tenant_index_rows(tenant.id) == rows
        retrieval.count_cache.clear()
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(retrieval, "EXACT_MAX_ROWS", 0)
            patch.setattr(retrieval, "HNSW_MIN_FRACTION", 0.0)
            response = search(member=members["internal"], query="backup process", mode="vector", expand="parent")
        assert response.plan in ("tenant-hnsw", "tenant-hnsw+exact") and response.results
        assert all(Chunk.objects.get(id=h.chunk_id).tenant_id == tenant.id for h in response.results)
    finally:
        tenant_indexes.tenant_index_drop(tenant_id=tenant.id)


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_section_forest_loads_only_the_hits_ancestors_and_the_expansion_subtrees(celery_worker, policy_tenant):
    """Search never loads whole documents: a hit's ancestors, then the subtree it expands to."""
    from accounts.selectors import reader_for
    from kb.expansion import SectionForest

    tenant, members = policy_tenant
    document = _ingest(tenant, POLICY_DOC, "Security policy")
    sections = {s.title: s for s in Section.objects.filter(document=document)}
    channels, reporting, root = sections["Reporting channels"], sections["Reporting"], sections["Security policy"]
    chain = {channels.id, reporting.id, root.id} | ({root.parent_id} if root.parent_id else set())
    forest = SectionForest.around(reader_for(members["internal"]), {channels.id}, bodies=False)
    assert set(forest.nodes) == chain
    assert forest.heading_path(channels.id) == ["Security policy", "Reporting", "Reporting channels"]
    assert forest.document_titles == {document.id: "Security policy"}
    assert all(node.body_spans == () for node in forest.nodes.values())

    forest = SectionForest.around(reader_for(members["internal"]), {reporting.id})
    forest.add_subtrees({reporting.id})
    below = set(Section.objects.filter(document=document, start__gte=reporting.start, end__lte=reporting.end)
                .values_list("id", flat=True))
    assert set(forest.nodes) == chain | below
    assert sections["Incident response"].id not in forest.nodes  # a sibling branch is never read
    assert forest.nodes[reporting.id].body_spans  # loaded with bodies for expansion
    other = tenant_create(slug="forest-other", name="Other")
    assert SectionForest.around(reader_for(membership_create(
        tenant=other, email="o@o.io", role="viewer", clearance="restricted")), {reporting.id}).nodes == {}
