"""``POST /api/v1/search/``: what each member gets back, validation, index version choice."""

from __future__ import annotations

import json

import pytest

from accounts.policy import AccessLevel, can_read
from accounts.selectors import reader_for
from accounts.services import api_token_create, membership_create, tenant_create
from kb import search_modes
from kb.models import Chunk, IndexVersion
from tests.api_helpers import Actor, make_document

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


# ----------------------------------------------------------------------------- the budget fill (issue 30)

# Sibling sections of one line each: a hit's context is its own small section, so a budget of 2000 tokens is
# mostly unused and the budget fill (the next top_k hits' own chunks) has room. The vault is above the viewer,
# and ranks last (the query's word once, the others' twice: ties among the others fall by random ids).
FILL_WORD, VAULT_WORD = "zqfillx", "zqvaultx"
FILL_SECTIONS = [
    ("root", None, "", AccessLevel.INTERNAL, [], "Handbook preamble."),
    *[(key, "root", key.title(), AccessLevel.INTERNAL, [],
       f"The {FILL_WORD} rule for {key}: ask the desk about {FILL_WORD}.")
      for key in ("lockers", "parking", "badges", "travel")],
    ("vault", "root", "Vault", AccessLevel.CONFIDENTIAL, [], f"The {FILL_WORD} rule for the vault: {VAULT_WORD}."),
]


def _fill_search(client, document, **body):
    response = _search(client, query=FILL_WORD, mode="keyword", filters={"document_ids": [str(document.id)]}, **body)
    assert response.status_code == 200, response.content
    return response.json()


def _fill_part(off: dict, on: dict) -> list[dict]:
    """The contexts the fill added, after checking that the hits and the hits' contexts are as without it."""
    assert on["results"] == off["results"]
    assert on["contexts"][:len(off["contexts"])] == off["contexts"]
    return on["contexts"][len(off["contexts"]):]


def test_search_budget_fill_adds_the_next_hits_readable_chunks(world):
    document = make_document(world.tenant, title="Handbook", sections=FILL_SECTIONS)
    member = world.actors["viewer"].membership
    reader = reader_for(member)
    client = world.client("viewer")
    off = _fill_search(client, document, top_k=2, budget_fill=False)
    on = _fill_search(client, document, top_k=2, budget_fill=True)
    added = _fill_part(off, on)
    assert len(off["contexts"]) == 2 and len(added) == 2  # the viewer's other two readable sections
    hits = {hit["chunk_id"] for hit in on["results"]}
    for context in added:
        (chunk_id,) = context["chunk_ids"]
        section = Chunk.objects.select_related("section").get(pk=chunk_id).section
        assert chunk_id not in hits and str(section.pk) == context["section_id"]
        assert can_read(reader, level=section.access_level, group_ids=section.access_groups)
        assert FILL_WORD in context["text"] and VAULT_WORD not in context["text"]
    assert sum(c["token_count"] for c in on["contexts"]) <= 2000
    # Never over the budget: one just over the hits' contexts leaves no room for a fill context.
    used = sum(c["token_count"] for c in off["contexts"])
    tight = _fill_search(client, document, top_k=2, budget_fill=True, context_token_budget=used + 1)
    assert _fill_part(off, tight) == []
    # Only with expansion: without contexts there is nothing to fill after.
    assert _fill_search(client, document, top_k=2, expand="none", budget_fill=True)["contexts"] == []


def test_search_budget_fill_never_gives_a_member_a_chunk_above_them(world):
    document = make_document(world.tenant, title="Handbook", sections=FILL_SECTIONS)
    for top_k in (1, 2, 3, 5):
        body = json.dumps(_fill_search(world.client("viewer"), document, top_k=top_k, budget_fill=True))
        assert VAULT_WORD not in body and "Vault" not in body
    # Not vacuous: for who may read it the vault is a fill candidate -- not among the hits, added by the fill.
    editor = world.client("editor")
    off = _fill_search(editor, document, top_k=3, budget_fill=False)
    assert VAULT_WORD not in json.dumps(off)
    assert VAULT_WORD in json.dumps(_fill_part(off, _fill_search(editor, document, top_k=3, budget_fill=True)))


def test_search_budget_fill_absent_or_null_is_the_server_default(world, monkeypatch):
    document = make_document(world.tenant, title="Handbook", sections=FILL_SECTIONS)
    client = world.client("viewer")
    answers = {}
    for default in (False, True):
        monkeypatch.setattr(search_modes, "DEFAULT_BUDGET_FILL", default)
        explicit = _fill_search(client, document, top_k=2, budget_fill=default)
        assert _fill_search(client, document, top_k=2) == explicit
        assert _fill_search(client, document, top_k=2, budget_fill=None) == explicit
        answers[default] = explicit
    assert len(answers[True]["contexts"]) > len(answers[False]["contexts"])  # the flip is seen


@pytest.mark.parametrize("value", ["maybe", 3, [True], {"on": True}, "", "null"])
def test_search_budget_fill_must_be_a_boolean(world, value):
    response = _search(world.client("viewer"), query="security", budget_fill=value)
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert set(error) == {"code", "message", "details"} and list(error["details"]) == ["budget_fill"], error
    assert "unknown option" not in json.dumps(error)  # refused as the field's value, not as a field it lacks
