"""Enrolling another tenant's member without their consent (found by an attack on the demo): an admin of
tenant A added the e-mail of a member of tenant B, the account joined A at once, A's audit trail then
received every failed sign-in against that account (with its addresses), and the person's sign-in asked
them to choose a tenant.

Now adding a person through the console or the API is always an invitation the person accepts -- the
answer and the state are the same for a new address and for an account that exists, so A learns nothing
of the account -- and a membership a tenant's own identity provider makes (SCIM, a first single sign-on) for
another tenant's account is not the person's consent: it works in A's single sign-on sessions alone, is
not offered at the person's password sign-in, and hears nothing of the account's failed sign-ins or
password resets."""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.test import Client
from rest_framework.test import APIClient

from accounts.invitations import active_memberships_of
from accounts.models import Invitation, Membership, MemberSource, SsoConfig
from accounts.passwords import user_set_password
from accounts.scim import scim_token_create
from accounts.services import api_token_create, membership_create, tenant_create
from accounts.sso import SESSION_TENANT_KEY
from console.membership import SESSION_KEY
from tests.api_helpers import console_client, invitation_accept_mailed, sign_in_fail, sign_in_failures_heard

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"
KNOWN = "known@b.example"  # a member of tenant B, with a password
NEW = "new@b.example"  # an address nobody has


@pytest.fixture
def tenants():
    """Tenant B with its member ``KNOWN``; tenant A with an admin (and an API token) who knows that address."""
    b = tenant_create(slug="tenant-b", name="Tenant B")
    membership_create(tenant=b, email=KNOWN, role="viewer", clearance="public")
    user_set_password(email=KNOWN, password=PASSWORD)
    a = tenant_create(slug="tenant-a", name="Tenant A")
    admin = membership_create(tenant=a, email="admin@a.example", role="admin", clearance="restricted")
    _, key = api_token_create(membership=admin, name="admin")
    return a, b, admin, key


def _signs_straight_into(email: str, tenant) -> bool:
    """Whether the password sign-in of ``email`` enters ``tenant`` at once (no tenant to choose)."""
    client = Client(REMOTE_ADDR="192.0.2.50")
    assert client.post("/sign-in/", {"username": email, "password": PASSWORD}).status_code == 302
    return client.get("/").status_code == 200 and Membership.objects.get(
        pk=client.session[SESSION_KEY]).tenant_id == tenant.pk


def _add_by_api(admin, key, email):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.post("/api/v1/memberships/", {"email": email, "role": "editor", "clearance": "confidential"},
                           format="json")
    return response.status_code, response.json()


def _add_by_console(admin, key, email):
    response = console_client(admin).post("/members/", {"email": email, "role": "editor", "clearance": "confidential"})
    follow = console_client(admin).get("/members/")
    return response.status_code, [m.message.replace(email, "EMAIL") for m in follow.context["messages"]] + [
        response.get("Location")]


def _shape(body):
    """An answer with the address and the ids and times taken out: what must not differ."""
    if isinstance(body, dict):
        return {k: "X" if k in ("id", "expires_at") else _shape(v).replace(KNOWN, "EMAIL").replace(NEW, "EMAIL")
                if isinstance(v, str) else _shape(v) for k, v in body.items()}
    return body


@pytest.mark.parametrize("add", [_add_by_api, _add_by_console], ids=["api", "console"])
def test_adding_another_tenants_member_is_an_invitation_answered_as_for_a_new_address(tenants, add):
    a, b, admin, key = tenants
    known_status, known_body = add(admin, key, KNOWN)
    new_status, new_body = add(admin, key, NEW)
    # The same answer and the same state for both: an invitation each, no membership of A yet.
    assert known_status == new_status and known_status in (202, 302), (known_body, new_body)
    assert _shape(known_body) == _shape(new_body)
    if add is _add_by_api:
        assert known_body["status"] == "invited" and known_body["email"] == KNOWN
    assert not Membership.objects.filter(tenant=a, user__email__in=[KNOWN, NEW]).exists()
    pending = Invitation.objects.filter(tenant=a, accepted_at__isnull=True, revoked_at__isnull=True)
    assert sorted(pending.values_list("email", flat=True)) == [KNOWN, NEW]
    assert sorted(m.to[0] for m in mail.outbox) == [KNOWN, NEW]
    # Until the person accepts, A hears nothing of the account and the person is not asked to choose A.
    sign_in_fail(KNOWN, "203.0.113.21")
    assert sign_in_failures_heard(a, "sign_in.failed") == []
    assert sign_in_failures_heard(b, "sign_in.failed") == ["203.0.113.21"]
    assert _signs_straight_into(KNOWN, b)
    # Accepting (with the account's own password) is the consent: from then on A is one of the account's tenants.
    joined = invitation_accept_mailed(KNOWN, password=PASSWORD)
    assert (joined.tenant_id, joined.role, joined.source, joined.consented) == (a.pk, "editor", MemberSource.INVITED,
                                                                                True)
    sign_in_fail(KNOWN, "203.0.113.22")
    assert sign_in_failures_heard(a, "sign_in.failed") == ["203.0.113.22"]
    assert not _signs_straight_into(KNOWN, b)  # two tenants now, by the person's choice


def _scim(key: str, body: dict) -> tuple[int, dict]:
    response = Client(HTTP_AUTHORIZATION=f"Bearer {key}").post(
        "/scim/v2/Users", data=json.dumps(body), content_type="application/scim+json")
    return response.status_code, json.loads(response.content)


def _scim_user(email: str) -> dict:
    return {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": email, "active": True,
            "emails": [{"value": email, "primary": True, "type": "work"}]}


def _scim_shape(body: dict) -> dict:
    body = json.loads(json.dumps(body).replace(KNOWN, "EMAIL").replace(NEW, "EMAIL"))
    body["id"] = "X"
    body["meta"] = {k: v for k, v in body["meta"].items() if k == "resourceType"}
    return body


def test_a_scim_user_with_another_tenants_account_is_answered_as_a_new_one_and_joins_nothing_else(tenants):
    a, b, admin, _ = tenants
    _, scim_key = scim_token_create(tenant=a, name="idp", actor=admin)
    known_status, known_body = _scim(scim_key, _scim_user(KNOWN))
    new_status, new_body = _scim(scim_key, _scim_user(NEW))
    # The provider learns nothing of the account: the same answer, and the same members list in A.
    assert known_status == new_status == 201
    assert _scim_shape(known_body) == _scim_shape(new_body)
    rows = {m.user.email: (m.role, m.clearance, m.is_active, m.source)
            for m in Membership.objects.filter(tenant=a).exclude(pk=admin.pk).select_related("user")}
    assert rows[KNOWN] == rows[NEW]
    members_page = console_client(admin).get("/members/").content.decode()
    assert members_page.count('class="badge source-scim"') == 2
    # But the account is B's: A hears none of its failed sign-ins or password resets, and its password
    # sign-in goes straight into B (not asked to choose A) -- the API's session too.
    in_a = Membership.objects.get(tenant=a, user__email=KNOWN)
    sign_in_fail(KNOWN, "203.0.113.31")
    assert sign_in_failures_heard(a, "sign_in.failed") == []
    assert sign_in_failures_heard(b, "sign_in.failed") == ["203.0.113.31"]
    # (what a password reset is recorded in, and mailed for: accounts.invitations._password_reset_work)
    assert [m.tenant_id for m in active_memberships_of(in_a.user)] == [b.pk]
    assert _signs_straight_into(KNOWN, b)
    session = Client()
    session.post("/sign-in/", {"username": KNOWN, "password": PASSWORD})
    assert session.get("/api/v1/documents/").status_code == 200  # one tenant: no tenant_required
    # A's own single sign-on (its provider vouches for the person in A alone) still reaches the membership.
    sso = Client()
    sso.force_login(in_a.user)
    stored = sso.session
    stored[SESSION_TENANT_KEY] = a.pk
    stored.save()
    assert sso.get("/").status_code == 200 and sso.session[SESSION_KEY] == in_a.pk
    # The new address's account is A's own: its failed sign-ins are A's.
    sign_in_fail(NEW, "203.0.113.33")
    assert sign_in_failures_heard(a, "sign_in.failed") == ["203.0.113.33"]


class _Provider:
    """A's provider at the callback, the protocol (tested elsewhere) taken as passed."""

    def __init__(self, claims: dict):
        self.claims = claims

    def authorize_access_token(self, request, **kwargs):
        return {"id_token": "checked", "userinfo": dict(self.claims)}


def test_a_first_single_sign_on_with_another_tenants_account_joins_that_tenant_alone(tenants, monkeypatch):
    a, b, _, _ = tenants
    SsoConfig.objects.create(tenant=a, enabled=True, issuer="https://idp.a.example", client_id="c",
                             admit_domains=["b.example"])
    claims = {"iss": "https://idp.a.example", "sub": "known", "email": KNOWN, "email_verified": True}
    monkeypatch.setattr("console.views.sso.oidc_client", lambda config, url_check: _Provider(claims))
    monkeypatch.setattr("console.views.sso.oidc_check_metadata", lambda client, config, url_check: {})
    signed_in = Client(REMOTE_ADDR="192.0.2.60")
    response = signed_in.get("/sso/tenant-a/callback/?code=c&state=s")
    assert response.status_code == 302 and response["Location"] == "/", response.content[:300]
    assert signed_in.get("/").status_code == 200  # in A, by A's provider
    assert not Membership.objects.get(tenant=a, user__email=KNOWN).consented
    sign_in_fail(KNOWN, "203.0.113.41")
    assert sign_in_failures_heard(a, "sign_in.failed") == []
    assert sign_in_failures_heard(b, "sign_in.failed") == ["203.0.113.41"]
    assert _signs_straight_into(KNOWN, b)
