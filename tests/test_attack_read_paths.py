"""Attacking the read paths (2026-12-03): what a reader gets must not move with text they may not read.

Two worlds, two tenants, the same document through the real pipeline except the words of its restricted
parts (a restricted section, its heading, a confidential region inside a section the reader reads), each
replaced by words of the same length. An internal viewer's answers -- search in every mode and way to
expand, with the budget cut and not, the keyword side's IDF weights on and off, the documents list, the
section tree -- must be the same in both worlds once ids (which differ between tenants) are named by their
place in the document: scores, ranks, distances, offsets, token counts, truncation, heading paths and titles
included. The restricted words are the query's own, so a score counted over them would move. Every readable
chunk holds the query's words a different number of times: ties are broken by chunk id, random in each world.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest
from rest_framework.test import APIClient

from accounts.services import api_token_create, group_create, membership_create, tenant_create
from kb import retrieval
from kb.models import Chunk, Document, IndexVersion, Section
from kb.services import Upload, document_create
from tests.ingestion_helpers import wait_for_jobs

# The restricted words of each world, the same length one for one (so every offset is the same).
WORLDS = {
    "a": {"HEAD": "Pager escalation", "SECRET": "reporting desk pager rotation budget zebra", "REGION": "reporting desk names"},
    "b": {"HEAD": "Quartz ornaments", "SECRET": "lantern okapi violet harbour muffin crypts", "REGION": "willow hatch pebbles"},
}
for a_word, b_word in zip(WORLDS["a"].values(), WORLDS["b"].values(), strict=True):
    assert len(a_word) == len(b_word), (a_word, b_word)

DOCUMENT = """---
title: Operations handbook
access: internal
---
# Operations handbook
The reporting desk keeps the pager rotation for internal staff. Everyone reads this introduction.

## {HEAD} <!-- access: restricted; groups: security-team -->
Only the security team: {SECRET}. The {SECRET} again, and once more {SECRET}.

## Reporting desk
Internal staff report incidents to the reporting desk, which answers the pager within an hour; the pager is loud.

<!-- access: confidential -->
A confidential region: {REGION} and {REGION}.
<!-- /access -->

After the region, the desk rotation is published every Monday for internal staff.

## Budget
The pager budget is reviewed by internal staff each quarter; pager costs and pager spares too.
"""

QUERIES = ["reporting desk pager rotation", "zebra budget", "okapi lantern", "pager escalation"]
SEARCHES = [
    {"mode": mode, "expand": expand, "top_k": 8, **extra}
    for mode in ("keyword", "vector", "hybrid")
    for expand, extra in (("parent", {}), ("parent", {"expand_level": "parent"}), ("neighbors", {"neighbors": 2}),
                          ("parent", {"context_token_budget": 40}), ("none", {}))
]


def _world(name: str) -> dict:
    tenant = tenant_create(slug=f"two-worlds-{name}", name=f"Two worlds {name}")
    group_create(tenant=tenant, slug="security-team")
    viewer = membership_create(tenant=tenant, email=f"viewer@{name}.example", role="viewer", clearance="internal")
    _, key = api_token_create(membership=viewer, name="viewer")
    document, job = document_create(
        tenant=tenant, created_by=None,
        upload=Upload(content=DOCUMENT.format(**WORLDS[name]).encode(), title="", content_type="text/markdown"),
    )
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return {"tenant": tenant, "document": Document.objects.get(pk=document.pk), "client": client}


def _names(world: dict) -> dict[str, str]:
    """Every id of the world's document named by its place: sections by order, chunks by (section, ordinal)."""
    document = world["document"]
    order = dict(Section.objects.filter(document=document).values_list("id", "order"))
    names = {str(sid): f"section-{n}" for sid, n in order.items()}
    for cid, sid, ordinal in Chunk.objects.filter(document=document).values_list("id", "section_id", "ordinal"):
        names[str(cid)] = f"chunk-{order[sid]}-{ordinal}"
    names[str(document.pk)] = "document"
    for vid in IndexVersion.objects.filter(tenant=world["tenant"]).values_list("id", flat=True):
        names[str(vid)] = "version"
    return names


def _named(value, names: dict[str, str]):
    """``value`` (a JSON answer) with every id replaced by its name, and floats rounded (the model's batches
    differ between the worlds in the restricted chunks, which moves a float's last bits, not its meaning)."""
    if isinstance(value, dict):
        return {k: _named(v, names) for k, v in value.items() if k not in ("created_at", "updated_at")}
    if isinstance(value, list):
        return [_named(v, names) for v in value]
    if isinstance(value, float):
        return round(value, 5)
    if isinstance(value, str):
        return re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                      lambda m: names.get(m.group(0), "UNKNOWN-ID"), value)
    return value


def _answers(world: dict) -> dict:
    names, client, document = _names(world), world["client"], world["document"]
    out = {}
    for query in QUERIES:
        for options in SEARCHES:
            response = client.post("/api/v1/search/", {"query": query, **options}, format="json")
            assert response.status_code == 200, response.content
            out[f"search {query!r} {json.dumps(options, sort_keys=True)}"] = _named(response.json(), names)
    for path in ("/api/v1/documents/", f"/api/v1/documents/{document.pk}/",
                 f"/api/v1/documents/{document.pk}/sections/", f"/api/v1/documents/{document.pk}/sections/?offset=1&limit=2"):
        response = client.get(path)
        assert response.status_code == 200, response.content
        out[f"GET {_named(path, names)}"] = {"body": _named(response.json(), names),
                                             "total": response.get("X-Sections-Total")}
    return out


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_readers_answers_do_not_move_with_the_words_they_may_not_read(celery_worker, monkeypatch):
    worlds = {name: _world(name) for name in WORLDS}  # ingested once (the real worker), read under each fusion
    for keyword_idf in (0, 1, 2):
        monkeypatch.setattr(retrieval, "KEYWORD", replace(retrieval.CHOSEN_FUSION, keyword_idf=keyword_idf))
        retrieval.count_cache.clear()
        answers = {name: _answers(world) for name, world in worlds.items()}
        dumped = json.dumps([list(answers["a"].values()), list(answers["b"].values())])  # the answers, not the queries
        for word in ("zebra", "escalation", "okapi", "Quartz", "willow", "names and"):
            assert word not in dumped, (keyword_idf, word)
        assert any(answers["a"][k]["results"] for k in answers["a"] if k.startswith("search")), "nothing was found"
        for key in answers["a"]:
            assert answers["a"][key] == answers["b"][key], (keyword_idf, key)


# ----------------------------------------------------------------------------- the plan a search page shows


def _plan_shown(client) -> str | None:
    """The plan the console's search page shows its member ("exact", "hnsw", "hnsw+exact"), None if none."""
    page = client.get("/search/", {"query": "reporting desk", "mode": "vector", "expand": "none"})
    assert page.status_code == 200
    found = re.search(r'<code class="plan">([^<]*)</code>', page.content.decode())
    return found.group(1) if found else None


@pytest.mark.django_db
def test_the_search_page_shows_no_viewer_a_plan_that_moves_with_chunks_they_may_not_read(monkeypatch):
    """Found attacking the read paths (2026-12-03): the plan (``kb.retrieval.vector_candidates``: exact up to a
    threshold of readable rows, HNSW above) is chosen by comparing the member's readable rows with a share of
    the index that serves the query -- the tenant's own index, every chunk of the tenant, or the shared one,
    every chunk of every tenant (``pg_class.reltuples``). The console's search page showed it to every member,
    so a viewer who reads more rows than the floor read off, by narrowing their own search with filters until
    the plan flipped, about how many chunks the tenant holds above their access -- or every other tenant holds.
    The plan was then shown to admins only; since 2026-12-03 it is shown to no one (an admin read the other
    tenants' volume from it: ``test_a_tenants_search_answers_do_not_move_with_another_tenants_volume``)."""
    from django.db import connection

    from kb.search import search
    from tests.api_helpers import console_client, make_document

    tenant = tenant_create(slug="plan-shown", name="Plan shown")
    viewer = membership_create(tenant=tenant, email="viewer@plan.example", role="viewer", clearance="internal")
    admin = membership_create(tenant=tenant, email="admin@plan.example", role="admin", clearance="internal")
    make_document(tenant, sections=[(f"s{i}", None, f"Part {i}", 1, [], "The reporting desk answers.") for i in range(3)])
    monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", 0)  # the floor, as it is for a member reading over 2,000 rows

    def shown(member) -> str | None:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE kb_chunk")  # the planner's row count, which the threshold reads
            # The shared HNSW graph rebuilt on the rows there are: earlier tests of this process leave their rolled-back
            # chunks in it, and the approximate plan then missed one of this tenant's 8 chunks once (a suite run,
            # 2026-12-04) -- recall at the margin, which docs/security.md accepts ("Timing"); this test is about what
            # the answers carry of the plan, so the approximate plan must find what the exact one does here.
            cursor.execute("REINDEX INDEX chunk_embedding_hnsw")
        retrieval.count_cache.clear()
        return _plan_shown(console_client(member))

    def planned() -> str:
        return search(member=admin, query="reporting desk", mode="vector", expand="none", audit=False).plan

    before = shown(viewer), shown(admin), planned()
    secret = make_document(tenant, title="Board", default=3, sections=[
        (f"r{i}", None, f"Board {i}", 3, [], "Restricted board minutes.") for i in range(200)])
    assert not Section.objects.filter(document=secret, access_level__lte=1).exists()
    after = shown(viewer), shown(admin), planned()
    assert before[2] != after[2], "the test did not move the plan"
    assert before[:2] == after[:2] == (None, None), "a page shows the plan"


# ----------------------------------------------------------------------------- another tenant's volume


def _without_clock(page: bytes) -> str:
    """A console page less what changes on every render: the CSRF token and the server's milliseconds."""
    text = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', 'name="csrfmiddlewaretoken"', page.decode())
    text = re.sub(r'"X-CSRFToken": "[^"]*"', '"X-CSRFToken"', text)
    return re.sub(r"server [\d.,]+ ms", "server ms", text)


@pytest.mark.django_db
def test_a_tenants_search_answers_do_not_move_with_another_tenants_volume(monkeypatch):
    """Found reviewing what search shows (2026-12-03): for a tenant without an index of its own, the plan
    (``exact`` up to a fifth of the shared index's rows, ``hnsw`` above) is chosen against every chunk of
    every tenant (``kb.retrieval.index_rows``), and the console's search page (its "search as" too) showed it
    to admins and each search's audit record kept it: an admin read off about how many chunks the other
    tenants hold, and when that changed. What a tenant's members and admins get from a search -- the API's
    and MCP's answers, the console's page as themselves and as another member, the trail's records -- is the
    same, wall-clock milliseconds aside, with and without a second tenant holding many chunks."""
    from django.db import connection

    from accounts.models import Membership
    from audit.models import AuditEvent
    from kb.mcp_server import Caller, search_work
    from kb.search import search
    from tests.api_helpers import console_client, make_document, member_with_token

    tenant = tenant_create(slug="volume-a", name="Volume A")
    admin, admin_key = member_with_token(tenant, "admin@volume.example", "admin", "restricted")
    viewer, viewer_key = member_with_token(tenant, "viewer@volume.example", "viewer", "internal")
    make_document(tenant, sections=[(f"s{i}", None, f"Desk {i}", 1 + i % 3, [], f"The reporting desk {i} answers.")
                                    for i in range(8)])
    monkeypatch.setattr(retrieval, "EXACT_MAX_ROWS", 0)  # the threshold: a fifth of the index serving the query
    bodies = [{"query": "reporting desk", "mode": mode, "expand": "parent", "top_k": 5} for mode in ("vector", "hybrid")]

    def answers() -> tuple[dict, str]:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE kb_chunk")  # the planner's row count, which the threshold reads
            # The shared HNSW graph rebuilt on the rows there are: earlier tests of this process leave their rolled-back
            # chunks in it, and the approximate plan then missed one of this tenant's 8 chunks once (a suite run,
            # 2026-12-04) -- recall at the margin, which docs/security.md accepts ("Timing"); this test is about what
            # the answers carry of the plan, so the approximate plan must find what the exact one does here.
            cursor.execute("REINDEX INDEX chunk_embedding_hnsw")
        retrieval.count_cache.clear()
        seen_before = AuditEvent.objects.filter(tenant_id=tenant.pk).values_list("pk", flat=True)
        last = max(seen_before, default=0)
        got = {}
        for name, member, key in (("admin", admin, admin_key), ("viewer", viewer, viewer_key)):
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
            for body in bodies:
                answer = client.post("/api/v1/search/", body, format="json")
                assert answer.status_code == 200, answer.content
                got[f"api {name} {body['mode']}"] = answer.json()
                got[f"mcp {name} {body['mode']}"] = search_work(dict(body))(
                    member, Caller(lambda m=member: m, "http://testserver"))
        console = console_client(Membership.objects.get(pk=admin.pk))
        for as_member in ("", str(viewer.pk)):
            for body in bodies:
                page = console.get("/search/", {**body, "as_member": as_member})
                assert page.status_code == 200
                got[f"console as {as_member or 'self'} {body['mode']}"] = _without_clock(page.content)
        records = AuditEvent.objects.filter(tenant_id=tenant.pk, pk__gt=last).order_by("pk")
        got["audit"] = [{f: v for f, v in row.items() if f not in ("id", "created_at", "latency_ms")}
                        for row in records.values()]
        assert len(got["audit"]) == 12, got["audit"]
        plan = search(member=viewer, query="reporting desk", mode="vector", audit=False).plan
        return got, plan

    alone, plan_alone = answers()
    other = tenant_create(slug="volume-b", name="Volume B")
    make_document(other, sections=[(f"b{i}", None, f"Other {i}", 1, [], f"Another tenant's desk {i}.")
                                   for i in range(300)])
    beside, plan_beside = answers()
    assert plan_alone != plan_beside, "the test did not move the plan"  # hnsw alone, exact beside the other
    assert any(hit["text"] for hit in alone["api viewer vector"]["results"]), "nothing was found"
    for key in alone:
        assert alone[key] == beside[key], key


@pytest.mark.django_db
def test_a_search_record_kept_before_the_plan_was_blanked_shows_no_plan():
    """Records of searches kept before 2026-12-03 hold the plan (chosen against every tenant's chunks, so
    another tenant's volume at the time); the trail is append-only, so they are not rewritten: the list and
    both export files give every record's plan blank."""
    from audit.models import Action, AuditEvent
    from tests.api_helpers import member_with_token

    tenant = tenant_create(slug="old-plan", name="Old plan")
    admin, key = member_with_token(tenant, "admin@old-plan.example", "admin", "internal")
    AuditEvent.objects.create(tenant_id=tenant.pk, membership_id=admin.pk, actor_email="admin@old-plan.example",
                              action=Action.SEARCH, query_text="reporting desk", mode="vector", plan="hnsw+exact")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    listed = client.get("/api/v1/audit/", {"action": "search"}).json()["results"]
    assert [r["plan"] for r in listed] == [""]
    for file in ("jsonl", "csv"):
        exported = b"".join(client.get("/api/v1/audit/export/", {"action": "search", "file": file})
                            .streaming_content).decode()
        assert "reporting desk" in exported and "hnsw" not in exported, exported
