"""Attacking identity (2026-12-04, the fourteenth session): three gaps left open before.

* A password reset -- often the recovery of an account someone else has used -- left every API token of the
  account working. The reset form now offers "Also revoke my N API tokens", checked by default: each token of the
  memberships the password opens is revoked, one ``token.revoke`` record in its own tenant, and a membership the
  person did not agree to hears nothing. The account's other signed-in sessions end at a reset and at the
  owner's password change (Django's session hash is of the password: checked here, as it was already so).
"""

from __future__ import annotations

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.test import Client
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from rest_framework.test import APIClient

from accounts.models import ApiToken, Membership, MemberSource, Role, User
from accounts.passwords import user_set_password
from accounts.services import api_token_create, membership_create, tenant_create
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a brand new passphrase 14"
PERSON = "person@example.com"
REASON = "its member reset their password"


def _key_works(key: str) -> bool:
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return api.get("/api/v1/documents/").status_code == 200


def _reset_form(user: User) -> tuple[Client, str, bytes]:
    """A browser that followed ``user``'s mailed reset link: it, the form's address and the form's page."""
    link = f"/password/reset/{urlsafe_base64_encode(force_bytes(user.pk))}.{default_token_generator.make_token(user)}/"
    browser = Client()
    shown = browser.get(link, follow=True)
    assert shown.status_code == 200 and b"new_password1" in shown.content, shown.status_code
    return browser, shown.redirect_chain[-1][0], shown.content


def _reset(user: User, **extra) -> None:
    browser, form_url, _ = _reset_form(user)
    response = browser.post(form_url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD, **extra})
    assert response.status_code == 302, response.content[:500]


def _signed_in(password: str = PASSWORD) -> Client:
    browser = Client()
    assert browser.post("/sign-in/", {"username": PERSON, "password": password}).status_code == 302
    return browser


def _console_and_api_answer(browser: Client) -> tuple[int, int]:
    """The session's dashboard and its API call (one tenant: no header needed)."""
    return browser.get("/").status_code, browser.get("/api/v1/documents/").status_code


@pytest.fixture
def person() -> Membership:
    tenant = tenant_create(slug="sessions", name="Sessions")
    membership_create(tenant=tenant, email="admin@sessions.example", role="admin", clearance="restricted")
    membership = membership_create(tenant=tenant, email=PERSON, role="editor", clearance="internal")
    user_set_password(email=PERSON, password=PASSWORD)
    return membership


def test_a_reset_ends_the_accounts_other_sessions(person):
    """Whoever held the account had a session open; a reset from the mailed link ends it at its next request, in
    the console and in the API (the session hash Django keeps is of the password)."""
    intruder = _signed_in()
    assert _console_and_api_answer(intruder) == (200, 200)
    _reset(User.objects.get(email=PERSON))
    console, api = _console_and_api_answer(intruder)
    assert console == 302 and api in (401, 403), (console, api)
    assert _console_and_api_answer(_signed_in(NEW_PASSWORD)) == (200, 200)


def test_the_owners_password_change_ends_their_other_sessions_and_keeps_this_one(person):
    here, elsewhere = _signed_in(), _signed_in()
    assert _console_and_api_answer(elsewhere) == (200, 200)
    response = here.post("/password/", {"old_password": PASSWORD, "new_password1": NEW_PASSWORD,
                                        "new_password2": NEW_PASSWORD})
    assert response.status_code == 302 and response["Location"] == "/", response.content[:300]
    assert _console_and_api_answer(here) == (200, 200)
    console, api = _console_and_api_answer(elsewhere)
    assert console == 302 and api in (401, 403), (console, api)


@pytest.mark.parametrize("choice", ["revoke", "keep"])
def test_a_reset_revokes_the_persons_tokens_in_each_tenant_they_agreed_to(choice):
    """PERSON is in A (one live token, one revoked before) and B (two) by their own agreement, and in C by C's
    provider alone (not agreed to: C hears nothing of the account's resets). The form counts the three tokens of
    A and B and offers to revoke them, checked; revoked, each is a record in its own tenant by the person's
    membership there, naming that token alone; C's token, C's trail and another member's token are untouched.
    Left unchecked, nothing is revoked."""
    a, b, c = (tenant_create(slug=f"tenant-{x}", name=f"Tenant {x}") for x in "abc")
    admin_a, admin_b, admin_c = (membership_create(tenant=t, email=f"admin@{t.slug}.example", role="admin",
                                                   clearance="restricted") for t in (a, b, c))
    in_a = membership_create(tenant=a, email=PERSON, role="editor", clearance="internal")
    in_b = membership_create(tenant=b, email=PERSON, role="viewer", clearance="public")
    user = User.objects.get(email=PERSON)
    in_c = Membership.objects.create(user=user, tenant=c, role=Role.VIEWER, source=MemberSource.SCIM, consented=False)
    user_set_password(email=PERSON, password=PASSWORD)
    a_token, a_key = api_token_create(membership=in_a, name="laptop", actor=admin_a)
    old, _ = api_token_create(membership=in_a, name="old", actor=admin_a)
    ApiToken.objects.filter(pk=old.pk).update(revoked_at="2026-01-02T03:04:05Z")
    b_tokens = [api_token_create(membership=in_b, name=f"script {i}", actor=admin_b) for i in (1, 2)]
    c_token, c_key = api_token_create(membership=in_c, name="c's", actor=admin_c)
    _, others_key = api_token_create(membership=admin_a, name="the admin's own", actor=admin_a)
    user.refresh_from_db()  # its password, which the link's token is made from
    c_records = AuditEvent.objects.filter(tenant_id=c.pk).count()
    records_before = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()

    browser, form_url, page = _reset_form(user)
    assert b"Also revoke my 3 API tokens" in page
    assert b'name="revoke_tokens"' in page and b"checked" in page.split(b'name="revoke_tokens"')[1].split(b">")[0]
    data = {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}
    if choice == "revoke":
        data["revoke_tokens"] = "on"  # as the checked box posts it
    response = browser.post(form_url, data, follow=True)
    assert response.status_code == 200 and b"reset-complete" in response.content
    assert (b"Your API tokens were revoked." in response.content) == (choice == "revoke")
    assert User.objects.get(pk=user.pk).check_password(NEW_PASSWORD)

    revoked = choice == "revoke"
    assert [_key_works(key) for key in (a_key, *(k for _, k in b_tokens))] == [not revoked] * 3
    assert _key_works(c_key) and _key_works(others_key)
    assert ApiToken.objects.get(pk=c_token.pk).revoked_at is None
    assert ApiToken.objects.get(pk=old.pk).revoked_at.isoformat() == "2026-01-02T03:04:05+00:00"
    revocations = [(e.tenant_id, e.target_id, e.membership_id, e.details) for e in AuditEvent.objects.filter(
        pk__gt=records_before, action="token.revoke").order_by("pk")]

    def view(token, membership):
        return {"before": {"prefix": token.prefix, "name": token.name, "membership": membership.pk}, "reason": REASON}

    assert revocations == ([
        (a.pk, str(a_token.pk), in_a.pk, view(a_token, in_a)),
        *((b.pk, str(t.pk), in_b.pk, view(t, in_b)) for t, _ in b_tokens),
    ] if revoked else [])
    assert AuditEvent.objects.filter(tenant_id=c.pk).count() == c_records  # C hears nothing of the reset


def test_a_reset_form_without_tokens_offers_nothing_to_revoke(person):
    _, _, page = _reset_form(User.objects.get(email=PERSON))
    assert b"revoke_tokens" not in page and b"API token" not in page
