"""Attacking identity (2026-12-04): what a hostile tenant's identity provider, which may sign its admin in as any
address (into that tenant alone), gets from the password of an account that is also another tenant's, and a
deactivated member's tokens that outlived the deactivation.

* The console's "change password" answered a single sign-on session: the page counted its tries, but such a
  session -- vouched for by one tenant's provider, for that tenant alone -- could still guess, within the
  count, and change the password that opens every tenant of the account. It is refused outright now.
* An operator adding a provider-made account (no password yet) to their tenant on the server (``kb_user
  create``, then ``kb_user set-password``) gives it its first password for that tenant, as accepting an
  invitation does; the provider's membership stayed agreed to (``Membership.consented``), so that tenant
  heard the person's failed sign-ins.
* Memberships deactivated before deactivation revoked their tokens still held live ones, which would work
  again if the member were reactivated: a data migration revokes them, recorded as deactivation records them.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import ApiToken, Membership, ScimToken, SsoConfig, User
from accounts.passwords import user_set_password
from accounts.scim import scim_token_create
from accounts.services import api_token_create, membership_create, tenant_create
from accounts.sso import SESSION_TENANT_KEY
from audit.models import AuditEvent
from console.membership import SESSION_KEY
from tests.api_helpers import sign_in_fail, sign_in_failures_heard

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "the attacker's own choice 1"
VICTIM = "victim@home.example"


class _Provider:
    """A tenant's provider at the callback (the protocol, tested elsewhere, taken as passed): asserts what
    that tenant's admin makes it assert."""

    def __init__(self, claims: dict):
        self.claims = claims

    def authorize_access_token(self, request, **kwargs):
        return {"id_token": "checked", "userinfo": dict(self.claims)}


def _sso_as(monkeypatch, slug: str, issuer: str, email: str, address: str = "192.0.2.60") -> Client:
    """A console session made by ``slug``'s single sign-on for ``email``, through the real callback."""
    claims = {"iss": issuer, "sub": f"sub-{email}", "email": email, "email_verified": True}
    monkeypatch.setattr("console.views.sso.oidc_client", lambda config, url_check: _Provider(claims))
    monkeypatch.setattr("console.views.sso.oidc_check_metadata", lambda client, config, url_check: {})
    client = Client(REMOTE_ADDR=address)
    response = client.get(f"/sso/{slug}/callback/?code=c&state=s")
    assert response.status_code == 302 and response["Location"] == "/", response.content[:300]
    assert client.session.get(SESSION_TENANT_KEY) is not None
    return client


def _password_session(email: str, password: str, address: str = "192.0.2.50") -> Client:
    client = Client(REMOTE_ADDR=address)
    assert client.post("/sign-in/", {"username": email, "password": password}).status_code == 302
    return client


# ----------------------------------------------------------------------------- the password page


@pytest.fixture
def victim_and_providers():
    """The victim: an admin of ``home`` with a password, whose own tenant signs on by its provider too; and
    ``evil``, whose admin's provider asserts the victim's address, verified (it may: it vouches for evil alone)."""
    home = tenant_create(slug="home", name="Home")
    membership_create(tenant=home, email=VICTIM, role="admin", clearance="restricted")
    user_set_password(email=VICTIM, password=PASSWORD)
    evil = tenant_create(slug="evil", name="Evil")
    membership_create(tenant=evil, email="boss@evil.example", role="admin", clearance="restricted")
    for tenant, issuer in ((home, "https://idp.home.example"), (evil, "https://idp.evil.example")):
        SsoConfig.objects.create(tenant=tenant, enabled=True, issuer=issuer, client_id="c",
                                 admit_domains=["home.example"])
    return home, evil


@pytest.mark.parametrize("provider", ["evil", "home"], ids=["hostile-tenants-provider", "own-tenants-provider"])
def test_a_single_sign_on_session_can_neither_try_nor_change_the_password(victim_and_providers, monkeypatch,
                                                                           settings, provider):
    """Any session made by single sign-on -- a hostile tenant's provider asserting the victim's address, or the
    victim's own tenant's -- is refused the page (GET and POST, the right current password too) before the
    password is checked or a try counted; the page's header offers no "Password" there. The victim's own
    password session still changes it, its tries uncounted by the refused ones."""
    sso = _sso_as(monkeypatch, provider, f"https://idp.{provider}.example", VICTIM, address="203.0.113.9")
    assert b'id="password-link"' not in sso.get("/").content
    shown = sso.get("/password/")
    assert shown.status_code == 403 and b"from a password sign-in" in shown.content
    assert b"old_password" not in shown.content
    change = {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    for guess in ["a guess"] * settings.AXES_FAILURE_LIMIT + [PASSWORD]:
        refused = sso.post("/password/", {"old_password": guess, **change})
        assert refused.status_code == 403 and b"from a password sign-in" in refused.content
    victim = User.objects.get(email=VICTIM)
    assert victim.check_password(PASSWORD) and not victim.check_password(NEW_PASSWORD)
    # The password session: the link, the page and the change, no try of the account's count spent above.
    own = _password_session(VICTIM, PASSWORD)
    assert b'id="password-link"' in own.get("/").content
    assert own.get("/password/").status_code == 200
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        assert own.post("/password/", {"old_password": "a typo", **change}).status_code == 200
    assert own.post("/password/", {"old_password": PASSWORD, **change}).status_code == 302
    assert User.objects.get(email=VICTIM).check_password(NEW_PASSWORD)


# ----------------------------------------------------------------------------- an operator's first password


@pytest.fixture
def provider_tenant(settings):
    """Tenant A, whose admin holds a SCIM token and runs A's provider (admitting ``b.example``); tenant B,
    which an operator runs on the server."""
    a = tenant_create(slug="tenant-a", name="Tenant A")
    admin = membership_create(tenant=a, email="admin@a.example", role="admin", clearance="restricted")
    _, scim_key = scim_token_create(tenant=a, name="idp", actor=admin)
    SsoConfig.objects.create(tenant=a, enabled=True, issuer="https://idp.a.example", client_id="c",
                             admit_domains=["b.example"])
    b = tenant_create(slug="tenant-b", name="Tenant B")
    membership_create(tenant=b, email="admin@b.example", role="admin", clearance="restricted")
    return a, b, scim_key


@pytest.mark.parametrize("first", ["scim", "sso"])
def test_an_operators_first_password_for_their_tenant_ends_the_consent_a_provider_took(provider_tenant, first,
                                                                                          monkeypatch):
    """A's provider enrols ``NEW`` first (a new address: A's own account, consented). B's operator then adds the
    address on the server and gives it its first password -- the person joins B, as by accepting B's invitation
    with a first password. A's membership must stop counting as agreed to: A hears none of the account's failed
    sign-ins, and its password sign-in goes straight into B. Nothing A can read changes (no record, no
    ``updated_at``): that would tell A the person joined another tenant. A's own single sign-on still works."""
    a, b, scim_key = provider_tenant
    new = "new@b.example"
    if first == "scim":
        body = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": new, "active": True,
                "emails": [{"value": new, "primary": True, "type": "work"}]}
        created = Client(HTTP_AUTHORIZATION=f"Bearer {scim_key}").post(
            "/scim/v2/Users", data=json.dumps(body), content_type="application/scim+json")
        assert created.status_code == 201, created.content
    else:
        _sso_as(monkeypatch, "tenant-a", "https://idp.a.example", new)
    in_a = Membership.objects.get(tenant=a, user__email=new)
    assert in_a.consented
    seen_by_a = (in_a.updated_at, list(AuditEvent.objects.filter(tenant_id=a.pk).order_by("pk").values_list(
        "pk", flat=True)))
    out = io.StringIO()
    call_command("kb_user", "create", new, "--tenant", "tenant-b", "--role", "viewer", "--clearance", "public",
                 stdout=out)
    call_command("kb_user", "set-password", new, stdin=io.StringIO(PASSWORD + "\n"), stdout=out)
    in_b = Membership.objects.get(tenant=b, user__email=new)
    in_a.refresh_from_db()
    assert in_b.consented and not in_a.consented
    assert (in_a.updated_at, list(AuditEvent.objects.filter(tenant_id=a.pk).order_by("pk").values_list(
        "pk", flat=True))) == seen_by_a
    sign_in_fail(new, "203.0.113.61")
    assert sign_in_failures_heard(a, "sign_in.failed") == []
    assert sign_in_failures_heard(b, "sign_in.failed") == ["203.0.113.61"]
    session = _password_session(new, PASSWORD)
    assert session.get("/").status_code == 200 and session.session[SESSION_KEY] == in_b.pk
    sso = _sso_as(monkeypatch, "tenant-a", "https://idp.a.example", new)
    assert sso.get("/").status_code == 200 and sso.session[SESSION_KEY] == in_a.pk


# ----------------------------------------------------------------------------- tokens of inactive members


BEFORE = ("accounts", "0007_membership_consented")
AFTER = ("accounts", "0008_revoke_tokens_of_inactive_members")


def _migrate(target) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])


def _key_works(key: str) -> bool:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api.get("/api/v1/documents/").status_code == 200


def _scim_key_works(key: str) -> bool:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}").get("/scim/v2/Users").status_code == 200


@pytest.mark.parametrize("as_role", [False, True], ids=["as-the-owner", "as-a-role-under-the-wall"])
def test_the_migration_revokes_what_members_deactivated_before_still_held(as_role, settings):
    """Before the migration: ``leaver`` (an admin once) was deactivated when deactivating revoked nothing,
    holding its own tokens and having minted one for ``stayer`` and a SCIM token; ``gone`` in another tenant
    likewise. Reactivated, their keys would work again. The migration revokes each, one record each as
    deactivating writes them, in the token's tenant, by no one -- also when it runs as a role the tenant wall
    holds -- and leaves every other token as it was."""
    _migrate(BEFORE)
    t1 = tenant_create(slug="t-one", name="One")
    boss = membership_create(tenant=t1, email="boss@one.example", role="admin", clearance="restricted")
    leaver = membership_create(tenant=t1, email="leaver@one.example", role="admin", clearance="restricted")
    stayer = membership_create(tenant=t1, email="stayer@one.example", role="editor", clearance="internal")
    own_by_boss, own_by_boss_key = api_token_create(membership=leaver, name="from boss", actor=boss)
    own_by_self, own_by_self_key = api_token_create(membership=leaver, name="mine", actor=leaver)
    for_stayer, for_stayer_key = api_token_create(membership=stayer, name="from leaver", actor=leaver)
    scim, scim_key = scim_token_create(tenant=t1, name="idp", actor=leaver)
    already, _ = api_token_create(membership=leaver, name="revoked before", actor=boss)
    ApiToken.objects.filter(pk=already.pk).update(revoked_at="2026-01-02T03:04:05Z")
    kept, kept_key = api_token_create(membership=stayer, name="from boss", actor=boss)
    t2 = tenant_create(slug="t-two", name="Two")
    membership_create(tenant=t2, email="boss@two.example", role="admin", clearance="restricted")
    gone = membership_create(tenant=t2, email="gone@two.example", role="viewer", clearance="public")
    gone_token, gone_key = api_token_create(membership=gone, name="bot")
    # Deactivated as before deactivating revoked anything.
    Membership.objects.filter(pk__in=[leaver.pk, gone.pk]).update(is_active=False)
    records_before = AuditEvent.objects.count()

    if as_role:
        with connection.cursor() as cursor:
            cursor.execute(f'SET ROLE "{settings.BULKHEAD_APP_DB_ROLE}"')
    try:
        _migrate(AFTER)
    finally:
        if as_role:
            with connection.cursor() as cursor:
                cursor.execute("RESET ROLE")

    revoked = {t.pk for t in ApiToken.objects.filter(revoked_at__isnull=False)}
    assert revoked == {own_by_boss.pk, own_by_self.pk, for_stayer.pk, already.pk, gone_token.pk}
    assert ScimToken.objects.get(pk=scim.pk).revoked_at is not None
    assert ApiToken.objects.get(pk=already.pk).revoked_at.isoformat() == "2026-01-02T03:04:05+00:00"
    records = [(e.tenant_id, e.action, e.target_type, e.target_id, e.membership_id, e.user_id, e.actor_email,
                e.details) for e in AuditEvent.objects.order_by("pk")[records_before:]]
    minter, member = "its minter was deactivated", "its member was deactivated"

    def token(t, membership):
        return {"prefix": t.prefix, "name": t.name, "membership": membership.pk}

    assert records == [
        (t1.pk, "token.revoke", "token", str(own_by_self.pk), None, None, "",
         {"before": token(own_by_self, leaver), "reason": minter}),
        (t1.pk, "token.revoke", "token", str(for_stayer.pk), None, None, "",
         {"before": token(for_stayer, stayer), "reason": minter}),
        (t1.pk, "scim_token.revoke", "scim_token", str(scim.pk), None, None, "",
         {"before": {"prefix": scim.prefix, "name": "idp"}, "reason": minter}),
        (t1.pk, "token.revoke", "token", str(own_by_boss.pk), None, None, "",
         {"before": token(own_by_boss, leaver), "reason": member}),
        (t2.pk, "token.revoke", "token", str(gone_token.pk), None, None, "",
         {"before": token(gone_token, gone), "reason": member}),
    ]
    # Reactivated, they start without the keys that were out there while they were away.
    Membership.objects.filter(pk__in=[leaver.pk, gone.pk]).update(is_active=True)
    assert not any(_key_works(key) for key in (own_by_boss_key, own_by_self_key, for_stayer_key, gone_key))
    assert not _scim_key_works(scim_key)
    assert _key_works(kept_key)
