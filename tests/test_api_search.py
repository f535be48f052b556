"""``POST /api/v1/search/``: what each member gets back, validation, index version choice."""

from __future__ import annotations

import json

import pytest

from accounts.services import api_token_create, membership_create, tenant_create
from kb.models import IndexVersion
from tests.api_helpers import Actor

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.api_fixtures"]

RESTRICTED_TEXT = "Only the security team."


def _search(client, **body):
    return client.post("/api/v1/search/", body, format="json")


def test_search_in_an_empty_tenant_is_200_with_empty_lists(db):
    tenant = tenant_create(slug="empty-co", name="Empty")
    membership = membership_create(tenant=tenant, email="e@example.com", role="viewer", clearance="restricted")
    _, key = api_token_create(membership=membership)
    for mode in ("keyword", "hybrid"):
        response = _search(Actor("e", membership, key).client(), query="anything at all", mode=mode)
        assert response.status_code == 200, response.content
        assert response.json()["results"] == [] and response.json()["contexts"] == []


@pytest.mark.parametrize(("actor", "sees_restricted"), [("viewer", False), ("editor", False), ("admin", True)])
def test_search_returns_only_what_the_member_may_read(world, actor, sees_restricted):
    response = _search(world.client(actor), query="security team", mode="keyword", top_k=10)
    assert response.status_code == 200, response.content
    data = response.json()
    body = json.dumps(data)
    assert (RESTRICTED_TEXT in body) is sees_restricted
    if not sees_restricted:
        assert "Incident response" not in body and "Playbook" not in body  # not even a heading
    assert "Globex" not in body  # never another tenant's
    for hit in data["results"]:
        assert hit["document_id"] == str(world.doc.id)
        assert set(hit) >= {"chunk_id", "document_id", "document_title", "section_id", "heading_path", "text",
                            "score", "distance", "start", "end", "url", "section_anchor"}
    assert not sees_restricted or (data["results"] and data["contexts"])
    for item in data["results"] + data["contexts"]:
        # The citation: the section's console page, absolute, the section chosen and scrolled to.
        assert item["section_anchor"] == f"section-{item['section_id']}"
        assert item["url"] == (f"http://testserver/documents/{item['document_id']}/?section={item['section_id']}"
                               f"#section-{item['section_id']}")
    for context in data["contexts"]:
        assert set(context) >= {"section_id", "document_id", "heading_path", "text", "chunk_ids"}


def test_search_filters(world):
    client = world.client("admin")
    hits = _search(client, query="security", mode="keyword", filters={"document_ids": [str(world.other_doc.id)]})
    assert hits.status_code == 200 and hits.json()["results"] == []  # another tenant's id finds nothing
    tagged = _search(client, query="security", mode="keyword", filters={"tags": ["security"]})
    assert tagged.json()["results"]
    untagged = _search(client, query="security", mode="keyword", filters={"tags": ["nope"], "source_prefix": "x/"})
    assert untagged.json()["results"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"query": ""},
        {"query": "   "},
        {"query": "x", "top_k": 0},
        {"query": "x", "top_k": 1000},
        {"query": "x", "mode": "psychic"},
        {"query": "x", "expand": "everything"},
        {"query": "x", "filters": {"document_ids": ["not-a-uuid"]}},
        {"query": "x", "filters": {"updated_after": "yesterday"}},
        # Found attacking the demo: a misspelt filter was ignored, so the search ran over everything.
        {"query": "x", "filters": {"document_idz": ["4f1d7e2c-0000-4000-8000-000000000000"]}},
        {"top_k": 3},
    ],
)
def test_search_validation_is_400(world, body):
    response = _search(world.client("viewer"), **body)
    assert response.status_code == 400, response.content
    assert set(response.json()["error"]) == {"code", "message", "details"}
    if "document_idz" in body.get("filters", {}):
        assert "document_idz" in json.dumps(response.json()["error"]["details"])


def test_only_admins_choose_an_index_version(world):
    version = IndexVersion.objects.get(tenant=world.tenant, is_active=True)
    foreign = IndexVersion.objects.get(tenant=world.other, is_active=True)
    refused = _search(world.client("editor"), query="security", mode="keyword", index_version=str(version.id))
    assert refused.status_code == 403
    chosen = _search(world.client("admin"), query="security", mode="keyword", index_version=str(version.id))
    assert chosen.status_code == 200 and chosen.json()["index_version_id"] == str(version.id)
    other = _search(world.client("admin"), query="security", mode="keyword", index_version=str(foreign.id))
    assert other.status_code == 404
    assert other.json() == {"error": {"code": "not_found", "message": "Not found.", "details": {}}}
