"""Request bodies that cannot be parsed answer 400 in the API's error shape on every JSON endpoint:
nesting deeper than the JSON parser can follow (``"[" * 50000`` used to raise RecursionError,
a 500), nesting deeper than the API's limit, invalid UTF-8, broken JSON."""

from __future__ import annotations

import pytest

from kb.index_versions import index_version_config, index_version_create
from tests.api_helpers import snapshot

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.api_fixtures"]

DEEP = "[" * 50000
# Valid JSON, but nested past the API's depth limit (an array of arrays ... of 1).
TOO_DEEP_VALID = "[" * 200 + "1" + "]" * 200
BODIES = {
    "deep": (DEEP.encode(), "application/json"),
    "deep_object": (('{"a":' * 50000).encode(), "application/json"),
    "too_deep_valid": (TOO_DEEP_VALID.encode(), "application/json"),
    "invalid_utf8": (b'{"query": "\xff\xfe\xfa"}', "application/json"),
    "broken": (b'{"query": ', "application/json"),
}


def _endpoints(world) -> list[tuple[str, str, str]]:
    """(actor, method, path) of every endpoint that reads a JSON body."""
    version, _ = index_version_create(tenant=world.tenant, config=index_version_config(settings=["target_tokens=99"]))
    admin = world.actors["admin"].membership
    group_id = world.tenant.groups.first().pk
    return [
        ("editor", "post", "/api/v1/documents/"),
        ("admin", "put", f"/api/v1/documents/{world.doc.id}/"),
        ("editor", "patch", f"/api/v1/sections/{world.section_ids['intro']}/"),
        ("viewer", "post", "/api/v1/search/"),
        ("admin", "post", "/api/v1/index-versions/"),
        ("admin", "post", f"/api/v1/index-versions/{version.id}/activate/"),
        ("admin", "post", "/api/v1/groups/"),
        ("admin", "patch", f"/api/v1/groups/{group_id}/"),
        ("admin", "post", "/api/v1/memberships/"),
        ("admin", "patch", f"/api/v1/memberships/{admin.pk}/"),
        ("admin", "post", "/api/v1/tokens/"),
    ]


@pytest.mark.parametrize("body", sorted(BODIES))
def test_unparsable_bodies_are_400_on_every_json_endpoint(world, body):
    content, content_type = BODIES[body]
    endpoints = _endpoints(world)
    before = snapshot()
    for actor, method, path in endpoints:
        client = world.client(actor)
        response = getattr(client, method)(path, data=content, content_type=content_type)
        assert response.status_code == 400, (body, method, path, response.status_code, response.content[:300])
        error = response.json()["error"]
        assert set(error) == {"code", "message", "details"}, (path, error)
        assert error["code"] == "parse_error", (path, error)
        assert "Traceback" not in response.content.decode()
    assert snapshot() == before  # nothing was written


def test_ordinary_nesting_still_parses(world):
    """The depth limit leaves room for every real body (filters, configs are two levels deep)."""
    response = world.client("viewer").post(
        "/api/v1/search/", {"query": "security", "mode": "keyword", "filters": {"tags": ["security"]}}, format="json"
    )
    assert response.status_code == 200, response.content
