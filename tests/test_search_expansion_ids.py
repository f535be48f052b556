"""Search never names what the caller cannot read -- not its text, and not its id either.

``expand_level: parent`` used to report the hit's parent section as the context even when
that parent was unreadable (a public or internal section under a restricted heading): the
context's ``section_id`` was the restricted section's id. A context now expands to the nearest
*readable* titled ancestor (the parent in the caller's own view of the tree, as the sections
API shows it), or stays at the hit's own section.
"""

from __future__ import annotations

import pytest

from accounts.access import readable_q
from accounts.selectors import reader_for
from accounts.services import group_create, membership_create, tenant_create
from kb import retrieval
from kb.models import Chunk, IngestionJob, Section
from kb.search import search
from kb.services import Upload, document_create, section_set_access
from tests.ingestion_helpers import wait_for_jobs

pytest_plugins = ["tests.api_fixtures"]


def _readable(member) -> tuple[set[str], set[str], set[str]]:
    reader = reader_for(member)
    sections = {str(i) for i in Section.objects.filter(readable_q(reader)).values_list("id", flat=True)}
    chunks = {str(i) for i in Chunk.objects.filter(readable_q(reader)).values_list("id", flat=True)}
    documents = {str(i) for i in Section.objects.filter(readable_q(reader)).values_list("document_id", flat=True)}
    return sections, chunks, documents


def _assert_only_readable_ids(body: dict, member) -> None:
    sections, chunks, documents = _readable(member)
    for hit in body["results"]:
        assert hit["section_id"] in sections and hit["chunk_id"] in chunks and hit["document_id"] in documents
    for context in body["contexts"]:
        assert context["section_id"] in sections, f"context names unreadable section {context['section_id']}"
        assert context["document_id"] in documents
        assert set(context["chunk_ids"]) <= chunks


@pytest.mark.django_db
@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_parent_expansion_skips_an_unreadable_parent_api(world, mode):
    """world.doc: intro (internal) > incident (restricted) > playbook (restricted) > region (internal)."""
    viewer = world.actors["viewer"].membership
    response = world.client("viewer").post(
        "/api/v1/search/",
        {"query": "internal note under a restricted heading", "mode": mode, "expand_level": "parent", "top_k": 10},
        format="json",
    )
    assert response.status_code == 200, response.content
    body = response.json()
    region, playbook, incident = (str(world.section_ids[k]) for k in ("region", "playbook", "incident"))
    region_hits = [h for h in body["results"] if h["section_id"] == region]
    assert region_hits, body["results"]
    _assert_only_readable_ids(body, viewer)
    ids = {c["section_id"] for c in body["contexts"]}
    assert playbook not in ids and incident not in ids
    # The region's context is its nearest readable titled ancestor: "Security policy" (intro).
    region_context = next(c for c in body["contexts"] if region_hits[0]["chunk_id"] in c["chunk_ids"])
    assert region_context["section_id"] == str(world.section_ids["intro"])
    assert "An internal note under a restricted heading." in region_context["text"]
    assert "Only the security team" not in region_context["text"] and "Playbook" not in region_context["text"]

    # The security team reads the playbook: for them the region still expands to it.
    admin = world.client("admin").post(
        "/api/v1/search/",
        {"query": "internal note under a restricted heading", "mode": "keyword", "expand_level": "parent"},
        format="json",
    ).json()
    hit = next(h for h in admin["results"] if h["section_id"] == region)
    assert next(c for c in admin["contexts"] if hit["chunk_id"] in c["chunk_ids"])["section_id"] == playbook


@pytest.mark.django_db
def test_parent_expansion_stays_at_the_hit_without_a_readable_titled_ancestor(db):
    """A readable section whose every titled ancestor is unreadable expands to itself, not to the document."""
    from tests.api_helpers import make_document, member_with_token

    tenant = tenant_create(slug="orphan-co", name="Orphan")
    group_create(tenant=tenant, slug="security-team")
    doc = make_document(tenant, title="Orphans", sections=[
        ("root", None, "", 1, [], "Untitled preamble."),
        ("secret", "root", "Secret heading", 3, ["security-team"], "Restricted words."),
        ("public", "secret", "Public part", 0, [], "A public paragraph about lighthouses."),
    ])
    membership, key = member_with_token(tenant, "p@o.io", "viewer", "internal")
    response = search(member=membership, query="lighthouses", mode="keyword", expand_level="parent")
    (context,) = response.contexts
    assert context.section_id == doc.section_ids["public"]
    assert "Restricted words" not in context.text and "Untitled preamble" not in context.text


# ----------------------------------------------------------------------------- through the real pipeline

POLICY_DOC = """---
title: Security policy
access: internal
---
# Security policy
Intro for everyone with internal clearance.

## Reporting
Everyone with internal clearance reads the reporting rules.

### Reporting channels <!-- access: internal -->
Reporting channels are email and the hotline. Reporting by phone is fine too.

## Incident response <!-- access: restricted; groups: security-team -->
Only the security team reads this.
"""


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_parent_expansion_never_reports_an_unreadable_section_id(celery_worker):
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="expand-ids", name="Expand ids")
    group_create(tenant=tenant, slug="security-team")
    internal = membership_create(tenant=tenant, email="int@e.io", role="viewer", clearance="internal")
    document, job = document_create(
        tenant=tenant, created_by=None,
        upload=Upload(content=POLICY_DOC.encode(), title="Security policy", content_type="text/markdown"),
    )
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    sections = {s.title: s for s in Section.objects.filter(document=document)}
    # A restricted parent with an internal child (the policy changed after ingestion).
    section_set_access(actor=None, section=sections["Reporting"], access_level="restricted", groups=["security-team"])
    # The channels' chunks embedded "Reporting" in their prefix: hidden, then rebuilt without it by a job.
    wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))

    for member, query in [(internal, "reporting channels hotline")]:
        for mode in ("keyword", "hybrid", "vector"):
            response = search(member=member, query=query, mode=mode, expand_level="parent", top_k=5)
            assert response.results, mode
            body = {
                "results": [{"section_id": str(h.section_id), "chunk_id": str(h.chunk_id),
                             "document_id": str(h.document_id)} for h in response.results],
                "contexts": [{"section_id": str(c.section_id), "document_id": str(c.document_id),
                              "chunk_ids": [str(i) for i in c.chunk_ids]} for c in response.contexts],
            }
            _assert_only_readable_ids(body, member)
            reported = {c.section_id for c in response.contexts}
            assert sections["Reporting"].id not in reported and sections["Incident response"].id not in reported

    # The internal member's channels hit expands to "Security policy" (its nearest readable heading).
    response = search(member=internal, query="reporting channels hotline", mode="keyword", expand_level="parent")
    top = response.contexts[0]
    assert top.section_id == sections["Security policy"].id
    assert "hotline" in top.text and "reporting rules" not in top.text
