"""Admin endpoints: groups, memberships and tokens of the admin's own tenant."""

from __future__ import annotations

import pytest

from accounts.models import ApiToken, Group, Membership
from tests.api_helpers import Actor, invitation_accept_mailed, snapshot

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.api_fixtures"]


def test_groups_create_list_rename(world):
    admin = world.client("admin")
    created = admin.post("/api/v1/groups/", {"slug": "legal", "name": "Legal"}, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["slug"] == "legal"
    slugs = [g["slug"] for g in admin.get("/api/v1/groups/").json()["results"]]
    assert slugs == ["finance", "legal", "security-team"]  # only this tenant's, by slug
    renamed = admin.patch(f"/api/v1/groups/{created.json()['id']}/", {"name": "Legal & Compliance"}, format="json")
    assert renamed.status_code == 200 and renamed.json() == {**created.json(), "name": "Legal & Compliance"}


@pytest.mark.parametrize(("body", "status"), [({"slug": "finance"}, 409), ({"slug": "Not A Slug"}, 400),
                                              ({"name": "no slug"}, 400),
                                              ({"slug": "numbers", "name": 21890853158}, 400),
                                              ({"slug": 7}, 400)])
def test_group_create_refusals(world, body, status):
    before = snapshot()
    response = world.client("admin").post("/api/v1/groups/", body, format="json")
    assert response.status_code == status, response.content
    assert snapshot() == before


def test_membership_create_and_update(world):
    admin = world.client("admin")
    created = admin.post("/api/v1/memberships/", {"email": "Zed@Example.com", "role": "editor",
                                                  "clearance": "confidential", "groups": ["finance"]}, format="json")
    # Adding a person is an invitation (whatever the address: docs/security.md, "People"); they join by accepting.
    assert created.status_code == 202, created.content
    invited = created.json()
    assert (invited["email"], invited["role"], invited["clearance"], invited["groups"], invited["status"]) == (
        "zed@example.com", "editor", "confidential", ["finance"], "invited")
    assert not Membership.objects.filter(user__email="zed@example.com").exists()
    accepted = invitation_accept_mailed("zed@example.com")
    data = admin.get("/api/v1/memberships/?limit=100").json()["results"]
    data = next(m for m in data if m["id"] == accepted.pk)
    assert (data["email"], data["role"], data["clearance"], data["groups"], data["is_active"]) == (
        "zed@example.com", "editor", "confidential", ["finance"], True)
    updated = admin.patch(f"/api/v1/memberships/{data['id']}/",
                          {"clearance": "restricted", "groups": ["security-team"], "is_active": False}, format="json")
    assert updated.status_code == 200, updated.content
    assert (updated.json()["clearance"], updated.json()["groups"], updated.json()["is_active"]) == (
        "restricted", ["security-team"], False)
    membership = Membership.objects.get(pk=data["id"])
    assert membership.clearance == 3 and not membership.is_active
    emails = [m["email"] for m in admin.get("/api/v1/memberships/?limit=100").json()["results"]]
    assert "zed@example.com" in emails and "other_tenant@example.com" not in emails


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"email": "viewer@example.com"}, 409),  # already a member
        ({"email": "x@example.com", "groups": ["ghosts"]}, 400),
        ({"email": "x@example.com", "role": "owner"}, 400),
        ({"email": "not-an-email"}, 400),
    ],
)
def test_membership_create_refusals(world, body, status):
    before = snapshot()
    response = world.client("admin").post("/api/v1/memberships/", body, format="json")
    assert response.status_code == status, response.content
    assert snapshot() == before


@pytest.mark.parametrize("body", [{"role": "viewer"}, {"is_active": False}])
def test_admin_cannot_demote_or_deactivate_themselves(world, body):
    admin = world.actors["admin"].membership
    before = snapshot()
    response = world.client("admin").patch(f"/api/v1/memberships/{admin.id}/", body, format="json")
    assert response.status_code == 409
    assert snapshot() == before


def test_a_group_of_another_tenant_cannot_be_given(world):
    viewer = world.actors["viewer"].membership
    foreign = Group.objects.get(tenant=world.other, slug="security-team")
    before = snapshot()
    response = world.client("admin").patch(f"/api/v1/memberships/{viewer.id}/", {"groups": [foreign.slug, "ghost"]},
                                           format="json")
    assert response.status_code == 400
    assert snapshot() == before
    # The slug exists here too: it resolves to this tenant's group, never the other's.
    response = world.client("admin").patch(f"/api/v1/memberships/{viewer.id}/", {"groups": [foreign.slug]},
                                           format="json")
    assert response.status_code == 200
    assert list(viewer.groups.values_list("tenant_id", flat=True)) == [world.tenant.id]


def test_token_create_shows_the_key_once_and_revoke_stops_it(world):
    admin = world.client("admin")
    viewer = world.actors["viewer"].membership
    created = admin.post("/api/v1/tokens/", {"membership_id": viewer.id, "name": "bot"}, format="json")
    assert created.status_code == 201, created.content
    key = created.json()["key"]
    assert key.startswith("bkh_") and created.json()["membership_id"] == viewer.id
    bot = Actor("bot", viewer, key).client()
    assert bot.get("/api/v1/documents/").status_code == 200
    listed = admin.get("/api/v1/tokens/").json()["results"]
    assert all("key" not in t for t in listed) and key not in str(listed)
    assert {t["email"] for t in listed} == {"low_clearance@example.com", "viewer@example.com", "editor@example.com",
                                           "admin@example.com"}
    revoked = admin.post(f"/api/v1/tokens/{created.json()['id']}/revoke/")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    assert bot.get("/api/v1/documents/").status_code == 401
    again = admin.post(f"/api/v1/tokens/{created.json()['id']}/revoke/")
    assert again.json()["revoked_at"] == revoked.json()["revoked_at"]  # idempotent


def test_token_create_defaults_to_the_callers_membership(world):
    created = world.client("admin").post("/api/v1/tokens/", {}, format="json")
    assert created.status_code == 201
    token = ApiToken.objects.get(pk=created.json()["id"])
    assert token.membership == world.actors["admin"].membership


def test_pagination_bounds_are_enforced(world):
    admin = world.client("admin")
    for query in ("limit=0", "limit=501", "limit=x", "offset=-1"):
        response = admin.get(f"/api/v1/memberships/?{query}")
        assert response.status_code == 400, query
    assert len(admin.get("/api/v1/memberships/?limit=2&offset=1").json()["results"]) == 2
