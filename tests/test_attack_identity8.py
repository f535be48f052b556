"""Attacking consent (2026-12-03): an admin of tenant A -- A's console, API tokens, SCIM token and identity
provider -- against a member of tenant B, or against an address B is about to add.

What was found: A's provider could enrol an address *before* B did (a first SCIM create or a single
sign-on of a new address is "the tenant's own" account, consented), so when the person later joined B by
accepting B's invitation -- choosing their first password there -- A's membership counted as agreed to:
A heard their failed sign-ins and resets and was offered at their password sign-in. And SCIM's
``POST /Users`` (and a first single sign-on) made one more database call for a new address than for an
existing account (the user's INSERT): the provider could tell by the time an address has an account
elsewhere. The rest are attempts that held, kept as a list."""

from __future__ import annotations

import json

import pytest
from django.core import mail
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.invitations import active_memberships_of, invitation_create
from accounts.models import Membership, SsoConfig
from accounts.passwords import user_set_password
from accounts.scim import scim_token_create
from accounts.services import api_token_create, membership_create, tenant_create
from accounts.sso import SESSION_TENANT_KEY
from audit.models import AuditEvent
from console.membership import SESSION_KEY
from tests.api_helpers import console_client, invitation_accept_mailed, sign_in_fail, sign_in_failures_heard

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"
KNOWN = "known@b.example"  # a member of tenant B, with a password
NEW = "new@b.example"  # an address nobody has
CT = "application/scim+json"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"


@pytest.fixture
def tenants(settings):
    settings.BULKHEAD_PUBLIC_URL = "https://kb.example"
    b = tenant_create(slug="tenant-b", name="Tenant B")
    b_admin = membership_create(tenant=b, email="admin@b.example", role="admin", clearance="restricted")
    membership_create(tenant=b, email=KNOWN, role="viewer", clearance="public")
    user_set_password(email=KNOWN, password=PASSWORD)
    a = tenant_create(slug="tenant-a", name="Tenant A")
    admin = membership_create(tenant=a, email="admin@a.example", role="admin", clearance="restricted")
    _, scim_key = scim_token_create(tenant=a, name="idp", actor=admin)
    SsoConfig.objects.create(tenant=a, enabled=True, issuer="https://idp.a.example", client_id="c",
                             admit_domains=["b.example"])
    return a, b, admin, b_admin, scim_key


def _scim(key: str, method: str, path: str, body=None):
    response = getattr(Client(HTTP_AUTHORIZATION=f"Bearer {key}"), method)(
        f"/scim/v2/{path}", data=json.dumps(body) if body is not None else None, content_type=CT)
    return response.status_code, (json.loads(response.content) if response.content else None)


def _scim_user(email: str) -> dict:
    return {"schemas": [USER], "userName": email, "active": True,
            "emails": [{"value": email, "primary": True, "type": "work"}]}


class _Provider:
    """A's provider at the callback (the protocol, tested elsewhere, taken as passed): asserts what A's
    admin makes it assert."""

    def __init__(self, claims: dict):
        self.claims = claims

    def authorize_access_token(self, request, **kwargs):
        return {"id_token": "checked", "userinfo": dict(self.claims)}


def _sso_as(monkeypatch, email: str) -> Client:
    claims = {"iss": "https://idp.a.example", "sub": f"sub-{email}", "email": email, "email_verified": True}
    monkeypatch.setattr("console.views.sso.oidc_client", lambda config, url_check: _Provider(claims))
    monkeypatch.setattr("console.views.sso.oidc_check_metadata", lambda client, config, url_check: {})
    client = Client(REMOTE_ADDR="192.0.2.60")
    response = client.get("/sso/tenant-a/callback/?code=c&state=s")
    assert response.status_code == 302 and response["Location"] == "/", response.content[:300]
    return client


def _password_session(email: str, password: str) -> Client:
    client = Client(REMOTE_ADDR="192.0.2.50")
    assert client.post("/sign-in/", {"username": email, "password": password}).status_code == 302
    return client


# ----------------------------------------------------------------------------- found: enrolling first


@pytest.mark.parametrize("first", ["scim", "sso"])
def test_a_tenant_that_enrols_an_address_first_is_not_the_persons_choice_once_they_join_another(
        tenants, first, monkeypatch):
    """A's provider enrols ``NEW`` before B adds it (the address of B's new hire, say): a new address, so A's
    membership was consented. The person then accepts B's invitation, choosing the account's first password
    there: that password is for B. A's membership -- which the person never agreed to -- must not hear the
    account's failed sign-ins or resets, nor be offered at its password sign-in; A's own single sign-on still
    reaches it, and nothing A can read changes (no oracle of the person joining elsewhere)."""
    a, b, admin, b_admin, scim_key = tenants
    if first == "scim":
        assert _scim(scim_key, "post", "Users", _scim_user(NEW))[0] == 201
    else:
        _sso_as(monkeypatch, NEW)
    in_a = Membership.objects.get(tenant=a, user__email=NEW)
    seen_by_a = _scim(scim_key, "get", f"Users/{in_a.pk}")
    invitation_create(tenant=b, email=NEW, role="viewer", clearance="public", actor=b_admin)
    joined = invitation_accept_mailed(NEW, password=PASSWORD)
    assert joined.tenant_id == b.pk and joined.consented
    # The password is B's: A hears none of its failed sign-ins or resets, and the sign-in goes straight into B.
    sign_in_fail(NEW, "203.0.113.51")
    assert sign_in_failures_heard(a, "sign_in.failed") == []
    assert sign_in_failures_heard(b, "sign_in.failed") == ["203.0.113.51"]
    assert [m.tenant_id for m in active_memberships_of(joined.user)] == [b.pk]
    session = _password_session(NEW, PASSWORD)
    assert session.get("/").status_code == 200 and session.session[SESSION_KEY] == joined.pk
    assert session.get("/api/v1/documents/", HTTP_X_BULKHEAD_TENANT="tenant-a").status_code in (401, 403)
    # A's single sign-on still reaches A's membership, and A sees the same resource as before.
    sso = Client()
    sso.force_login(joined.user)
    stored = sso.session
    stored[SESSION_TENANT_KEY] = a.pk
    stored.save()
    assert sso.get("/").status_code == 200 and sso.session[SESSION_KEY] == in_a.pk
    assert _scim(scim_key, "get", f"Users/{in_a.pk}") == seen_by_a


# ----------------------------------------------------------------------------- found: the INSERT as an oracle


def _scim_create_queries(scim_key: str, email: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert _scim(scim_key, "post", "Users", _scim_user(email))[0] == 201
    return len(queries)


def _sso_queries(monkeypatch, email: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        _sso_as(monkeypatch, email)
    return len(queries)


@pytest.mark.parametrize("how", ["scim", "sso"])
def test_a_provider_enrolling_an_address_makes_the_same_calls_whether_it_has_an_account_or_not(
        tenants, how, monkeypatch):
    """The answer was the same for ``NEW`` and another tenant's ``KNOWN``, but not the work: a new address
    made one more database call (the user's INSERT), a round trip the provider can time."""
    a, *_, scim_key = tenants
    count = (lambda email: _scim_create_queries(scim_key, email)) if how == "scim" else (
        lambda email: _sso_queries(monkeypatch, email))
    # A first call of each kind warms what is cached per process (content types, the token's last use).
    count("warm@b.example")
    assert count(KNOWN) == count(NEW)
    assert Membership.objects.filter(tenant=a, user__email__in=[KNOWN, NEW]).count() == 2


# ----------------------------------------------------------------------------- attempts that held


def _same(known, new):
    """Two answers, with the addresses, ids and times taken out."""
    text = json.dumps([known, new])
    for word in (KNOWN, NEW):
        text = text.replace(word, "EMAIL")
    known, new = json.loads(text)

    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()
                    if k not in ("id", "created", "lastModified", "location", "created_at", "expires_at", "value",
                                 "$ref")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(known) == strip(new)


@pytest.mark.parametrize("query", [
    'Users?filter=userName eq "EMAIL"',
    'Users?filter=emails.value eq "EMAIL"',
    'Users?filter=userName co "EMAIL"',
    'Users?filter=userName sw "EMAIL"',
])
def test_scim_filters_answer_alike_for_another_tenants_account_and_a_new_address(tenants, query):
    """Before and after the provider enrols both addresses, every filter it may send answers alike."""
    *_, scim_key = tenants
    for _ in range(2):
        known = _scim(scim_key, "get", query.replace("EMAIL", KNOWN))
        new = _scim(scim_key, "get", query.replace("EMAIL", NEW))
        assert known[0] == new[0] == 200 and _same(known[1], new[1]), (known, new)
        _scim(scim_key, "post", "Users", _scim_user(KNOWN))
        _scim(scim_key, "post", "Users", _scim_user(NEW))
    listed = _scim(scim_key, "get", "Users?startIndex=2&count=5")[1]["Resources"]
    assert _same(*[r for r in listed if r["userName"] in (KNOWN, NEW)])
    # A's trail records the two enrolments alike.
    a = tenants[0]
    records = {e.details["after"]["email"]: (e.action, e.membership_id, e.user_id, e.details) for e in AuditEvent.objects.filter(
        tenant_id=a.pk, action="membership.create")}
    assert _same(records[KNOWN], records[NEW])


def test_a_non_consented_membership_reaches_nothing_outside_a(tenants, monkeypatch):
    """A enrols B's member over SCIM, mints an API token for that membership and signs in as them by its
    provider: the token and the session act in A alone -- no tenant header, no switch, no password reach B."""
    a, b, admin, _, scim_key = tenants
    status, body = _scim(scim_key, "post", "Users", _scim_user(KNOWN))
    in_a = Membership.objects.get(pk=int(body["id"]))
    assert not in_a.consented
    _, key = api_token_create(membership=in_a, name="bot", actor=admin)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert api.get("/api/v1/documents/", HTTP_X_BULKHEAD_TENANT="tenant-b").status_code == 200  # A's, the header moot
    sso = _sso_as(monkeypatch, KNOWN)
    in_b = Membership.objects.get(tenant=b, user__email=KNOWN)
    assert sso.post("/tenant/", {"membership": in_b.pk}).status_code == 200  # "choose one of your tenants"
    assert sso.session[SESSION_KEY] == in_a.pk
    assert sso.get("/api/v1/documents/", HTTP_X_BULKHEAD_TENANT="tenant-b").status_code in (401, 403)
    # The SSO session may not try the account's password, let alone change it (tests/test_attack_identity9.py).
    assert sso.post("/password/", {"old_password": "guess", "new_password1": "a new long pass 123",
                                   "new_password2": "a new long pass 123"}).status_code == 403
    assert _password_session(KNOWN, PASSWORD).session.get(SESSION_KEY) in (None, in_b.pk)
    # Nothing was mailed to the person by any of it.
    assert [m.to for m in mail.outbox] == []
    # A's provider making a new address's account (no password) cannot give it one from its session either.
    fresh = _sso_as(monkeypatch, NEW)
    assert fresh.post("/password/", {"old_password": "", "new_password1": "a new long pass 123",
                                     "new_password2": "a new long pass 123"}).status_code == 403
    assert not Membership.objects.get(tenant=a, user__email=NEW).user.has_usable_password()


@pytest.mark.parametrize("how", ["api", "console"])
def test_adding_a_person_makes_the_same_calls_for_another_tenants_account_and_a_new_address(tenants, how):
    """The invitation answers alike (tests/test_attack_member_consent.py); the work behind it is alike too."""
    a, b, admin, *_ = tenants
    _, key = api_token_create(membership=admin, name="admin")

    def add(email: str) -> int:
        with CaptureQueriesContext(connection) as queries:
            if how == "api":
                api = APIClient()
                api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
                assert api.post("/api/v1/memberships/", {"email": email, "role": "viewer", "clearance": "public"},
                                format="json").status_code == 202
            else:
                assert console_client(admin).post("/members/", {"email": email, "role": "viewer",
                                                                "clearance": "public"}).status_code == 302
        return len(queries)

    add("warm@b.example")
    assert add(KNOWN) == add(NEW)


# ----------------------------------------------------------------------------- found: the account's id in A's trail


def test_a_tenants_trail_gives_no_account_id_to_tell_an_old_account_from_a_new_one(tenants, monkeypatch):
    """Found attacking identity: A's provider enrols ``KNOWN`` and ``NEW`` and signs in as each (or A's admin
    mints them tokens); A's trail (``GET /api/v1/audit/``, the export) gave each record's ``user_id``, the
    account's id across every tenant: ``KNOWN``'s, older than A's own admin's, told A the address had an
    account before A enrolled it. The trail names the membership (A's own id) and the e-mail, not the account."""
    a, b, admin, *_ = tenants
    for email in (KNOWN, NEW):
        _sso_as(monkeypatch, email).get("/")
    _, key = api_token_create(membership=admin, name="admin")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    listed = api.get("/api/v1/audit/", {"action": "sign_in", "limit": 50}).json()["results"]
    exported = [json.loads(line) for line in b"".join(
        api.get("/api/v1/audit/export/", {"action": "sign_in"}).streaming_content).decode().splitlines()]
    for records in (listed, exported):
        by_email = {r["actor_email"]: r for r in records}
        assert {KNOWN, NEW} <= set(by_email), records
        assert [r.get("user_id") for r in records] == [None] * len(records)
