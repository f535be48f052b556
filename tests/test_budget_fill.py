"""The budget fill (issue 30, sixteenth round; ``kb.search.search(budget_fill=True)``, ``kb.expansion.fill_contexts``).

When the contexts of the ``top_k`` hits leave part of the context budget unused, the next ``top_k`` candidates of
the same retrieval add their own chunk's text as further contexts while it fits. Through the real pipeline and
worker, on a document of many small sections (so that whole sections leave most of a budget unused), one of them
confidential:

* the hits are the same with and without the fill, and so are the contexts the hits make; the fill's contexts
  come after them, each one the own chunk of the next hit not already inside a context, in rank order, its text
  the document's text at the chunk's span;
* never beyond the budget (a Hypothesis property over budgets), and a chunk that does not fit is passed over;
* never text the member may not read: the spare candidates come from the same access-checked retrieval;
* what the fill returns is in the audit trail with the hits.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accounts.services import membership_create, tenant_create
from audit.models import AuditEvent
from ingestion.chunking.tokens import default_counter
from kb import retrieval
from kb.models import Chunk, Document
from kb.search import SearchFilters, search
from kb.services import Upload, document_create
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

COUNTER = default_counter()
TOPICS = ["invoices", "refunds", "servers", "backups", "payroll", "vendors", "laptops", "badges", "parking", "travel"]
SECRET = "zqsecretx"


def _section(i: int, topic: str) -> str:
    return (f"## Policy {i}: {topic}\n\nThe rule for {topic} in the office policy is short. Staff ask the office "
            f"desk about {topic} before they act, and the desk answers within a day.")


# One section of several chunks: its whole text is one context, and its other chunks are then inside it.
ARCHIVES = "## Policy 10: archives\n\n" + "\n\n".join(
    f"Part {p} of the office policy on archives. " + " ".join(
        f"Staff ask the office desk about archive box {p}.{j} before they move it." for j in range(9))
    for p in range(3))
DOC = "\n\n".join(["---\ntitle: Office policy\naccess: internal\n---\n# Office policy"]
                  + [_section(i, t) for i, t in enumerate(TOPICS)] + [ARCHIVES]
                  + [f"## Policy 99: vault <!-- access: confidential -->\n\nThe office policy for the vault says "
                     f"{SECRET}: staff ask the office desk before they open it."])
QUERY = "what does the office policy say staff ask the desk about"


@pytest.fixture
def office():
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="fill-co", name="Fill Co")
    members = {
        "internal": membership_create(tenant=tenant, email="int@fill.io", role="viewer", clearance="internal"),
        "confidential": membership_create(tenant=tenant, email="conf@fill.io", role="viewer",
                                          clearance="confidential"),
    }
    document, job = document_create(tenant=tenant, created_by=None, upload=Upload(
        content=DOC.encode(), title="Office policy", content_type="text/markdown"))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    return tenant, members, Document.objects.get(pk=document.pk)


def _fill_part(without, with_fill):
    """The contexts the fill added, after checking that everything else is as without it."""
    assert [(h.chunk_id, h.rank, h.start, h.end) for h in with_fill.results] == \
        [(h.chunk_id, h.rank, h.start, h.end) for h in without.results]
    n = len(without.contexts)
    assert with_fill.contexts[:n] == without.contexts
    return with_fill.contexts[n:]


def _inside(span, spans) -> bool:
    return any(s <= span[0] and span[1] <= e for s, e in spans)


def _own_spans(chunk: Chunk) -> list[tuple[int, int]]:
    """A chunk's span as a context reports it: cut to its section's body spans (one per paragraph)."""
    return [(max(chunk.start, s), min(chunk.end, e)) for s, e in chunk.section.body_spans
            if max(chunk.start, s) < min(chunk.end, e)]


def _held(chunk: Chunk, covered) -> bool:
    """Whether every paragraph of the chunk lies inside one of the ``covered`` spans (its text is there already)."""
    return all(_inside(span, covered) for span in _own_spans(chunk))


def test_the_fill_adds_the_next_hits_own_chunks(celery_worker, office):
    _, members, document = office
    member = members["internal"]
    chunks = {c.id: c for c in Chunk.objects.filter(document=document).select_related("section")}
    assert len([c for c in chunks.values() if "archive box" in c.text]) >= 3
    passed_over = 0
    for mode in ("vector", "keyword", "hybrid"):
        common = {"member": member, "query": QUERY, "mode": mode, "top_k": 2, "expand": "parent",
                  "context_token_budget": 1000}
        without = search(**common, budget_fill=False)
        default = search(**common)  # off by default
        assert default.contexts == without.contexts
        with_fill = search(**common, budget_fill=True)
        added = _fill_part(without, with_fill)
        assert added, (mode, "whole small sections leave room: the fill must add something")
        deeper = search(**{**common, "top_k": 4, "expand": "none"})
        assert [h.chunk_id for h in deeper.results[:2]] == [h.chunk_id for h in without.results]
        covered = [s for c in without.contexts for s in c.spans]
        expected = []
        for hit in deeper.results[2:]:
            if _held(chunks[hit.chunk_id], covered):
                passed_over += 1
            else:
                expected.append(hit.chunk_id)
                covered += _own_spans(chunks[hit.chunk_id])
        assert [c.chunk_ids for c in added] == [[cid] for cid in expected], mode
        for context in added:
            chunk = chunks[context.chunk_ids[0]]
            assert context.spans == _own_spans(chunk)
            assert context.text == "\n\n".join(document.text[s:e] for s, e in context.spans)
            assert context.token_count == COUNTER.count(context.text) and not context.truncated
            assert context.section_id == chunk.section_id and context.document_id == document.id
        assert sum(c.token_count for c in with_fill.contexts) <= 1000
        # Nothing to fill without contexts to fill after.
        assert search(**{**common, "expand": "none"}, budget_fill=True).contexts == []
    assert passed_over, "not vacuous: a next hit inside a context already there is passed over"


def test_the_fill_keeps_to_the_budget(celery_worker, office):
    _, members, document = office
    member = members["internal"]
    chunks = {c.id: c for c in Chunk.objects.filter(document=document).select_related("section")}
    common = {"member": member, "query": QUERY, "mode": "hybrid", "top_k": 3, "expand": "parent"}
    base = search(**common, context_token_budget=10_000, budget_fill=False)
    used = sum(c.token_count for c in base.contexts)
    whole = search(**common, context_token_budget=10_000, budget_fill=True)
    first = _fill_part(base, whole)[0]
    # One token short of the first fill context: it is passed over (a later one may still fit).
    short = search(**common, context_token_budget=used + first.token_count - 1, budget_fill=True)
    assert all(c.chunk_ids != first.chunk_ids for c in _fill_part(base, short))
    exact = search(**common, context_token_budget=used + first.token_count, budget_fill=True)
    assert _fill_part(base, exact) == [first]

    @settings(max_examples=25, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(budget=st.integers(min_value=1, max_value=used + 600), top_k=st.integers(min_value=1, max_value=5),
           mode=st.sampled_from(["vector", "keyword", "hybrid"]))
    def within(budget, top_k, mode):
        args = {**common, "mode": mode, "top_k": top_k, "context_token_budget": budget}
        without = search(**args, budget_fill=False)
        with_fill = search(**args, budget_fill=True)
        added = _fill_part(without, with_fill)
        assert sum(c.token_count for c in with_fill.contexts) <= budget
        assert len(added) <= top_k
        ranks = {h.chunk_id: h.rank for h in search(**{**args, "top_k": 2 * top_k, "expand": "none"}).results}
        assert [ranks[c.chunk_ids[0]] for c in added] == sorted(ranks[c.chunk_ids[0]] for c in added)
        assert all(ranks[c.chunk_ids[0]] > top_k for c in added)
        covered = [s for c in without.contexts for s in c.spans]
        for context in added:
            chunk = chunks[context.chunk_ids[0]]
            assert not _held(chunk, covered)
            assert context.spans == _own_spans(chunk)
            assert context.text == "\n\n".join(document.text[s:e] for s, e in context.spans)
            covered += context.spans

    within()


def test_the_fill_never_returns_what_the_member_may_not_read(celery_worker, office):
    _, members, document = office
    query = "the office policy for the vault: staff ask the office desk"
    seen = {}
    for level, member in members.items():
        texts = []
        for mode in ("vector", "keyword", "hybrid"):
            for top_k in (1, 3, 6):
                response = search(member=member, query=query, mode=mode, top_k=top_k, context_token_budget=4000,
                                  budget_fill=True, filters=SearchFilters(document_ids=(document.id,)))
                texts += [c.text for c in response.contexts]
        seen[level] = any(SECRET in t for t in texts)
    assert not seen["internal"]
    assert seen["confidential"]  # not vacuous: the vault's text is a candidate for who may read it


def test_the_audit_trail_names_the_fill_chunks(celery_worker, office):
    tenant, members, _ = office
    response = search(member=members["internal"], query=QUERY, mode="hybrid", top_k=2, context_token_budget=1000,
                      budget_fill=True)
    hits = [h.chunk_id for h in response.results]
    filled = [cid for c in response.contexts for cid in c.chunk_ids if cid not in hits]
    assert filled
    (event,) = AuditEvent.objects.filter(tenant_id=tenant.pk, action="search")
    assert event.chunk_ids == hits + filled
