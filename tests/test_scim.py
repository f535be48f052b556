"""SCIM 2.0 provisioning (issue 28): what identity providers send (Entra ID's and Okta's shapes), what it
changes in Bulkhead, and what it may never reach -- another tenant, a user's own e-mail, a role or a
clearance, a section's policy. Deprovisioning ends a person's sessions and API tokens at their next request."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Group, Membership, MemberSource, User
from accounts.passwords import user_set_password
from accounts.policy import AccessLevel
from accounts.scim import scim_token_create, scim_token_revoke
from accounts.services import api_token_create, group_create, membership_create, tenant_create
from audit.models import Action, AuditEvent
from tests.api_helpers import console_client

pytestmark = pytest.mark.django_db
CT = "application/scim+json"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"


class Scim:
    def __init__(self, key: str):
        self.client = Client(HTTP_AUTHORIZATION=f"Bearer {key}")

    def __call__(self, method: str, path: str, body=None):
        response = getattr(self.client, method)(f"/scim/v2/{path}", data=json.dumps(body) if body is not None else None,
                                                content_type=CT)
        return response.status_code, (json.loads(response.content) if response.content else None)


@pytest.fixture
def acme():
    tenant = tenant_create(slug="acme", name="Acme")
    admin = membership_create(tenant=tenant, email="admin@acme.example", role="admin", clearance="restricted")
    group_create(tenant=tenant, slug="security-team")
    _, key = scim_token_create(tenant=tenant, name="entra")
    return tenant, admin, Scim(key)


def _new_user(scim, email="ann@acme.example", **extra):
    status, body = scim("post", "Users", {"schemas": [USER], "userName": email, "active": True,
                                          "emails": [{"value": email, "primary": True, "type": "work"}], **extra})
    assert status == 201, body
    return body


def test_a_provisioned_member_is_a_viewer_with_the_lowest_clearance_and_comes_from_scim(acme):
    tenant, _, scim = acme
    body = _new_user(scim, externalId="e-1", name={"givenName": "Ann", "familyName": "Lee"})
    membership = Membership.objects.get(pk=int(body["id"]))
    assert (membership.role, membership.clearance, membership.source) == ("viewer", AccessLevel.PUBLIC,
                                                                          MemberSource.SCIM)
    assert body["userName"] == "ann@acme.example" and body["externalId"] == "e-1" and body["active"] is True
    # A role or a clearance in the payload is no attribute of the published schema: nothing is raised.
    status, _ = scim("patch", f"Users/{body['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "value": {"roles": [{"value": "admin"}], "title": "restricted"}}]})
    membership.refresh_from_db()
    assert (membership.role, membership.clearance) == ("viewer", AccessLevel.PUBLIC)
    assert AuditEvent.objects.filter(tenant_id=tenant.pk, action=Action.MEMBERSHIP_CREATE,
                                     target_id=str(membership.pk), details__via="scim").exists()
    # The same userName again: 409 uniqueness.
    status, error = scim("post", "Users", {"schemas": [USER], "userName": "ANN@acme.example",
                                           "emails": [{"value": "ann@acme.example"}]})
    assert status == 409 and error["scimType"] == "uniqueness"


def test_filters_find_members_as_identity_providers_ask(acme):
    _, _, scim = acme
    _new_user(scim, "ann@acme.example")
    _new_user(scim, "bob@acme.example", externalId="okta-7")
    status, body = scim("get", 'Users?filter=userName%20eq%20%22Bob@acme.example%22')
    assert status == 200 and body["totalResults"] == 1 and body["Resources"][0]["userName"] == "bob@acme.example"
    status, body = scim("get", 'Users?filter=externalId%20eq%20%22okta-7%22')
    assert body["totalResults"] == 1
    status, body = scim("get", 'Users?filter=emails.value%20co%20%22acme%22&count=2&startIndex=2')
    assert body["totalResults"] == 3 and len(body["Resources"]) == 2  # the admin, ann, bob; the page from the 2nd
    status, body = scim("get", 'Users?filter=userName%20eq')
    assert status == 400 and body["scimType"] == "invalidFilter"


def test_deprovisioning_ends_sessions_and_api_tokens_at_their_next_request(acme):
    tenant, _, scim = acme
    body = _new_user(scim)
    membership = Membership.objects.get(pk=int(body["id"]))
    user_set_password(email="ann@acme.example", password="correct horse battery staple")
    console = console_client(membership)
    _, key = api_token_create(membership=membership, name="cli")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert console.get("/documents/").status_code == 200 and api.get("/api/v1/documents/").status_code == 200
    # Entra ID: "Replace", a string for a boolean.
    status, body = scim("patch", f"Users/{membership.pk}", {"schemas": [PATCH], "Operations": [
        {"op": "Replace", "path": "active", "value": "False"}]})
    assert status == 200 and body["active"] is False
    assert console.get("/documents/").status_code == 302  # to the tenant chooser: no active membership
    assert api.get("/api/v1/documents/").status_code == 401
    # Okta: a PUT of the whole user with active true brings it back; a DELETE removes the membership.
    status, body = scim("put", f"Users/{membership.pk}", {"schemas": [USER], "userName": "ann@acme.example",
                                                         "active": True, "emails": [{"value": "ann@acme.example"}]})
    assert status == 200 and console.get("/documents/").status_code == 200
    assert scim("delete", f"Users/{membership.pk}")[0] == 204
    assert not Membership.objects.filter(pk=membership.pk).exists()
    assert console.get("/documents/").status_code == 302 and api.get("/api/v1/documents/").status_code == 401
    assert User.objects.filter(email="ann@acme.example").exists()  # the person stays; other tenants keep them


def test_an_address_change_moves_the_membership_and_never_changes_a_user(acme):
    tenant, _, scim = acme
    other = tenant_create(slug="globex", name="Globex")
    victim = membership_create(tenant=other, email="ceo@globex.example", role="admin", clearance="restricted")
    user_set_password(email="ceo@globex.example", password="correct horse battery staple")
    body = _new_user(scim, "mallory@acme.example")
    status, body = scim("patch", f"Users/{body['id']}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "userName", "value": "ceo@globex.example"},
        {"op": "replace", "path": "emails", "value": [{"value": "ceo@globex.example", "primary": True}]}]})
    assert status == 200
    moved = Membership.objects.get(pk=int(body["id"]))
    mallory = User.objects.get(email="mallory@acme.example")  # still her own address
    assert moved.user_id == victim.user_id and moved.tenant_id == tenant.pk
    assert User.objects.get(pk=victim.user_id).check_password("correct horse battery staple")
    assert not Membership.objects.filter(user=mallory).exists()
    victim.refresh_from_db()
    assert victim.tenant_id == other.pk and victim.role == "admin"  # the other tenant's membership untouched


def test_a_token_reaches_its_own_tenant_only(acme):
    tenant, _, scim = acme
    other = tenant_create(slug="globex", name="Globex")
    theirs = membership_create(tenant=other, email="bob@globex.example", role="viewer", clearance="internal")
    their_group = group_create(tenant=other, slug="board")
    _, their_key = scim_token_create(tenant=other)
    for path in (f"Users/{theirs.pk}", f"Groups/{their_group.pk}"):
        assert scim("get", path)[0] == 404
        assert scim("delete", path)[0] == 404
    status, body = scim("get", "Users")
    assert [r["userName"] for r in body["Resources"]] == ["admin@acme.example"]
    # A group of this tenant cannot take another tenant's member.
    ours = Group.objects.get(tenant=tenant, slug="security-team")
    status, body = scim("patch", f"Groups/{ours.pk}", {"schemas": [PATCH], "Operations": [
        {"op": "add", "path": "members", "value": [{"value": str(theirs.pk)}]}]})
    assert status == 400 and str(theirs.pk) in body["detail"]
    assert not ours.memberships.exists()
    # No token, a wrong one, an API token, a revoked one: 401.
    _, api_key = api_token_create(membership=theirs)
    for header in ("", "Bearer bks_nope_nope", f"Bearer {api_key}", f"Token {their_key}"):
        response = Client(HTTP_AUTHORIZATION=header).get("/scim/v2/Users")
        assert response.status_code == 401, header
    token = scim_token_create(tenant=tenant, name="old")
    scim_token_revoke(tenant=tenant, token_id=token[0].pk)
    assert Scim(token[1])("get", "Users")[0] == 401


def test_groups_as_identity_providers_send_them(acme):
    tenant, admin, scim = acme
    ann = int(_new_user(scim, "ann@acme.example")["id"])
    bob = int(_new_user(scim, "bob@acme.example")["id"])
    status, body = scim("post", "Groups", {"schemas": [GROUP], "displayName": "Finance Team",
                                           "members": [{"value": str(ann)}]})
    assert status == 201
    group = Group.objects.get(pk=int(body["id"]))
    assert (group.slug, group.name, group.source) == ("finance-team", "Finance Team", "scim")
    # Okta: add members; Entra ID: remove with the value naming the member.
    assert scim("patch", f"Groups/{group.pk}", {"schemas": [PATCH], "Operations": [
        {"op": "add", "path": "members", "value": [{"value": str(bob)}]}]})[0] == 200
    assert set(group.memberships.values_list("pk", flat=True)) == {ann, bob}
    assert scim("patch", f"Groups/{group.pk}", {"schemas": [PATCH], "Operations": [
        {"op": "Remove", "path": "members", "value": [{"value": str(ann)}]}]})[0] == 200
    assert set(group.memberships.values_list("pk", flat=True)) == {bob}
    assert scim("patch", f"Groups/{group.pk}", {"schemas": [PATCH], "Operations": [
        {"op": "remove", "path": f'members[value eq "{bob}"]'}]})[0] == 200
    assert not group.memberships.exists()
    status, body = scim("get", 'Groups?filter=displayName%20eq%20%22finance%20team%22')
    assert body["totalResults"] == 1
    # A name the tenant has already: 409; a group made in Bulkhead cannot be deleted over SCIM.
    status, body = scim("post", "Groups", {"schemas": [GROUP], "displayName": "Security team"})
    assert status == 409 and body["scimType"] == "uniqueness"
    manual = Group.objects.get(tenant=tenant, slug="security-team")
    assert scim("delete", f"Groups/{manual.pk}")[0] == 403
    assert scim("delete", f"Groups/{group.pk}")[0] == 204
    assert not Group.objects.filter(pk=group.pk).exists()


def test_the_last_active_admin_is_not_deprovisioned(acme):
    _, admin, scim = acme
    status, body = scim("patch", f"Users/{admin.pk}", {"schemas": [PATCH], "Operations": [
        {"op": "replace", "path": "active", "value": False}]})
    assert status == 409
    assert scim("delete", f"Users/{admin.pk}")[0] == 409
    admin.refresh_from_db()
    assert admin.is_active


def test_discovery_and_errors_are_scim_messages(acme):
    _, _, scim = acme
    status, body = scim("get", "ServiceProviderConfig")
    assert status == 200 and body["patch"]["supported"] is True and body["bulk"]["supported"] is False
    status, body = scim("get", "ResourceTypes")
    assert {r["name"] for r in body["Resources"]} == {"User", "Group"}
    status, body = scim("get", "Schemas/urn:ietf:params:scim:schemas:core:2.0:User")
    assert {a["name"] for a in body["attributes"]} == {"userName", "name", "displayName", "active", "emails", "groups"}
    status, body = scim("get", "Users/999999999")
    assert status == 404 and body["schemas"] == ["urn:ietf:params:scim:api:messages:2.0:Error"]
    status, body = scim("post", "Users", {"schemas": [USER], "userName": "no-address"})
    assert status == 400 and "e-mail" in body["detail"]
    response = scim.client.post("/scim/v2/Users", data=b"{not json", content_type=CT)
    assert response.status_code == 400 and response["Content-Type"] == CT


def test_kb_tenant_scim_token_prints_a_working_token_last(acme):
    out = io.StringIO()
    call_command("kb_tenant", "scim-token", "acme", "--name", "okta", stdout=out)
    key = out.getvalue().strip().splitlines()[-1]
    assert key.startswith("bks_")
    status, body = Scim(key)("get", "Users")
    assert status == 200 and body["totalResults"] == 1
