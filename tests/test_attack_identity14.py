"""Attacking identity (2026-12-04, the thirteenth session): three gaps left open before.

* A password reset -- often the recovery of an account someone else has used -- left every API token of the
  account working. The reset form now offers "Also revoke my N API tokens", checked by default: each token of the
  memberships the password opens is revoked, one ``token.revoke`` record in its own tenant, and a membership the
  person did not agree to hears nothing. The account's other signed-in sessions end at a reset and at the
  owner's password change (Django's session hash is of the password: checked here, as it was already so). The
  console's "Change password" offered no such choice (found in the fourteenth session): it offers the same one now,
  unchecked at first (``accounts.invitations.password_change_save``: the same count, re-check and records).
* Tokens whose minter was deleted before a deletion revoked what it minted read as minted on the server (no
  minter) and worked for good. The trail's creation records tell them apart: the data migration
  ``accounts/0010_revoke_tokens_of_unknown_minters`` revokes every live token without a minter that its tenant's
  trail does not show was minted on the server.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from django.contrib.auth.tokens import default_token_generator
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode
from rest_framework.test import APIClient

from accounts.models import ApiToken, Membership, MemberSource, Role, ScimToken, User
from accounts.passwords import user_set_password
from accounts.scim import scim_token_create
from accounts.services import api_token_create, membership_create, tenant_create
from accounts.tenancy import acting_tenant
from audit.models import AuditEvent
from tests.application_role import as_application_role

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"
NEW_PASSWORD = "a brand new passphrase 14"
PERSON = "person@example.com"
REASONS = {"reset": "its member reset their password", "change": "its member changed their password"}


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


def _password_form(how: str, user: User) -> tuple[Client, str, bytes]:
    """A browser at a new-password form -- the mailed reset link's (``reset``), or "Change password" signed in
    (``change``) --, the form's address and its page."""
    if how == "reset":
        return _reset_form(user)
    browser = _signed_in()
    shown = browser.get("/password/")
    assert shown.status_code == 200 and b"new_password1" in shown.content, shown.status_code
    return browser, "/password/", shown.content


def _new_password(how: str, page: bytes) -> dict:
    """What the form posts for NEW_PASSWORD (the change asks for the current one too), with the number it offered."""
    data = {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD, "tokens_offered": _offered(page)}
    return {**data, "old_password": PASSWORD} if how == "change" else data


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
@pytest.mark.parametrize("how", ["reset", "change"])
def test_a_new_password_revokes_the_persons_tokens_in_each_tenant_they_agreed_to(how, choice, stored_order_reads):
    """PERSON is in A (one live token, one revoked before) and B (two) by their own agreement, and in C by C's
    provider alone (not agreed to: C hears nothing of the account's resets). The reset form counts the three tokens
    of A and B and offers to revoke them, checked; revoked, each is a record in its own tenant by the person's
    membership there, naming that token alone; C's token, C's trail and another member's token are untouched.
    Left unchecked, nothing is revoked. The console's "Change password" offers the same, unchecked at first (found in
    the fourteenth session: it offered nothing), with the same records but its own reason."""
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
    # A's membership row written last and tables read in their stored order, so a read in no order meets B's first
    # (the records must still come in id order; found in CI, where the order followed the rows' last update)
    Membership.objects.filter(pk=in_a.pk).update(consented=True)
    c_records = AuditEvent.objects.filter(tenant_id=c.pk).count()
    records_before = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()

    browser, form_url, page = _password_form(how, user)
    assert b"Also revoke my 3 API tokens" in page
    assert b'name="revoke_tokens"' in page and _revoke_box_checked(page) == (how == "reset")
    data = _new_password(how, page)
    if choice == "revoke":
        data["revoke_tokens"] = "on"  # as the checked box posts it
    response = browser.post(form_url, data, follow=True)
    assert response.status_code == 200, response.content[:500]
    assert response.redirect_chain[0][0] == ("/" if how == "change" else "/password/reset/done/"), response.redirect_chain
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
        return {"before": {"prefix": token.prefix, "name": token.name, "membership": membership.pk},
                "reason": REASONS[how]}

    assert revocations == ([
        (a.pk, str(a_token.pk), in_a.pk, view(a_token, in_a)),
        *((b.pk, str(t.pk), in_b.pk, view(t, in_b)) for t, _ in b_tokens),
    ] if revoked else [])
    assert AuditEvent.objects.filter(tenant_id=c.pk).count() == c_records  # C hears nothing of it


@pytest.mark.parametrize("how", ["reset", "change"])
def test_a_new_password_form_without_tokens_offers_nothing_to_revoke(person, how):
    _, _, page = _password_form(how, User.objects.get(email=PERSON))
    assert b"revoke_tokens" not in page and b"API token" not in page and _offered(page) == "0"


def _offered(page: bytes) -> str:
    """The number of tokens the form offered to revoke, as its hidden field holds it (a browser posts it back)."""
    found = re.search(rb'name="tokens_offered" value="(\d+)"', page)
    assert found, page[:2000]
    return found.group(1).decode()


def _revoke_box_checked(page: bytes) -> bool:
    return b"checked" in page.split(b'name="revoke_tokens"')[1].split(b">")[0]


@pytest.mark.parametrize("shown_with", [0, 2], ids=["no-box", "two-tokens"])
@pytest.mark.parametrize("minted", ["after-the-page", "after-the-forms-check"])
@pytest.mark.parametrize("how", ["reset", "change"])
def test_a_token_minted_after_the_password_form_was_shown_is_offered_again(person, monkeypatch, how, shown_with,
                                                                           minted):
    """Found attacking identity (2026-12-04): the reset form counted the person's tokens when it was shown; a
    token minted before the post -- by a script of whoever holds the account, or an admin -- was kept silently,
    with no box (none shown) or with "revoke my N" (it revoked the live ones, the new one too, or kept them all
    unchecked, never knowing). The form carries the number it offered; a post when the live number differs writes
    nothing and shows the form again: the new number, the box as at first (the reset's checked, the change's not),
    "You have N API tokens now; choose again." Minted after the page, the form's own check catches it; minted after
    that check (between it and the write, the hash in between), the save counts again on the locked user. "Change
    password" likewise (the fourteenth session)."""
    from console.views.auth import ChangeForm
    from console.views.people import ResetForm

    tokens = [api_token_create(membership=person, name=f"script {i}")[1] for i in range(shown_with)]
    user = User.objects.get(email=PERSON)
    browser, form_url, page = _password_form(how, user)
    assert _offered(page) == str(shown_with) and (b'name="revoke_tokens"' in page) == bool(shown_with)
    data = _new_password(how, page)
    if shown_with:
        data["revoke_tokens"] = "on"
    late: list[str] = []
    if minted == "after-the-page":
        late.append(api_token_create(membership=person, name="minted meanwhile")[1])
    else:
        form_class = ResetForm if how == "reset" else ChangeForm
        checked = form_class.clean

        def checked_then_minted(form):
            cleaned = checked(form)
            if not late:  # committed by another request right after this one's check, acting for the tenant
                with acting_tenant(person.tenant_id):
                    late.append(api_token_create(membership=person, name="minted meanwhile")[1])
            return cleaned

        monkeypatch.setattr(form_class, "clean", checked_then_minted)
    records = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()

    again = browser.post(form_url, data)
    now = shown_with + 1
    assert again.status_code == 200, again.status_code
    assert f"You have {now} API token{'s' if now > 1 else ''} now; choose again.".encode() in again.content
    assert f"Also revoke my {now} API token".encode() in again.content
    assert _revoke_box_checked(again.content) == (how == "reset")
    assert _offered(again.content) == str(now)
    assert User.objects.get(pk=user.pk).check_password(PASSWORD)  # nothing written
    assert all(_key_works(key) for key in (*tokens, *late))
    assert not AuditEvent.objects.filter(pk__gt=records).exclude(action="token.create").exists()

    monkeypatch.undo()
    response = browser.post(form_url, {**data, "tokens_offered": _offered(again.content), "revoke_tokens": "on"})
    assert response.status_code == 302, response.content[:500]
    assert User.objects.get(pk=user.pk).check_password(NEW_PASSWORD)
    assert not any(_key_works(key) for key in (*tokens, *late))


# ----------------------------------------------------------------------------- tokens whose minter is unknown

BEFORE = ("accounts", "0009_retired_tenant_slugs")
AFTER = ("accounts", "0010_revoke_tokens_of_unknown_minters")


def _migrate(target) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])


def _scim_key_works(key: str) -> bool:
    return Client(HTTP_AUTHORIZATION=f"Bearer {key}").get("/scim/v2/Users").status_code == 200


@pytest.mark.parametrize("as_role", [False, True], ids=["as-the-owner", "as-a-role-under-the-wall"])
def test_the_migration_revokes_tokens_not_shown_minted_on_the_server(as_role, settings):
    """Before the migration: ``rogue``, an admin of one, minted a token for the bot and a SCIM token, and was
    deleted before a deletion revoked what it minted -- both tokens lost their minter and worked for good, as the
    server's do. A token without a minter and without a creation record (expired from the trail, or made without
    one) cannot be shown the server's either. The migration revokes those three, one record each by no one in its
    tenant, with why; it keeps the tokens the trail shows the server minted (``kb_user``, ``kb_tenant``), and those
    with a minter, in either tenant -- also when it runs as a role the tenant wall holds."""
    _migrate(BEFORE)
    one = tenant_create(slug="t-one", name="One")
    boss = membership_create(tenant=one, email="boss@one.example", role="admin", clearance="restricted")
    rogue = membership_create(tenant=one, email="rogue@one.example", role="admin", clearance="restricted")
    bot = membership_create(tenant=one, email="bot@one.example", role="viewer", clearance="public")
    by_rogue, by_rogue_key = api_token_create(membership=bot, name="from rogue", actor=rogue)
    scim_by_rogue, scim_by_rogue_key = scim_token_create(tenant=one, name="rogue's idp", actor=rogue)
    by_server, by_server_key = api_token_create(membership=bot, name="kb_user")
    scim_by_server, scim_by_server_key = scim_token_create(tenant=one, name="kb_tenant")
    by_boss, by_boss_key = api_token_create(membership=bot, name="from boss", actor=boss)
    unrecorded_key = "bkh_0badc0de_no-record-of-this-one"
    unrecorded = ApiToken.objects.create(membership=bot, name="no record", prefix="0badc0de",
                                         key_hash=hashlib.sha256(unrecorded_key.encode()).hexdigest())
    already, _ = api_token_create(membership=bot, name="revoked before", actor=rogue)
    ApiToken.objects.filter(pk=already.pk).update(revoked_at="2026-01-02T03:04:05Z")
    two = tenant_create(slug="t-two", name="Two")
    membership_create(tenant=two, email="boss@two.example", role="admin", clearance="restricted")
    member_two = membership_create(tenant=two, email="member@two.example", role="viewer", clearance="public")
    two_by_server, two_by_server_key = api_token_create(membership=member_two, name="kb_user")
    # The rogue deleted as before a deletion revoked anything: the link nulled (SET_NULL), then the row gone.
    ApiToken.objects.filter(created_by=rogue).update(created_by=None)
    ScimToken.objects.filter(created_by=rogue).update(created_by=None)
    Membership.objects.filter(pk=rogue.pk).delete()
    assert _key_works(by_rogue_key) and _scim_key_works(scim_by_rogue_key) and _key_works(unrecorded_key)
    records_before = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()

    with as_application_role(as_role):
            _migrate(AFTER)

    assert {t.pk for t in ApiToken.objects.filter(revoked_at__isnull=False)} == {by_rogue.pk, unrecorded.pk, already.pk}
    assert {t.pk for t in ScimToken.objects.filter(revoked_at__isnull=False)} == {scim_by_rogue.pk}
    assert ApiToken.objects.get(pk=already.pk).revoked_at.isoformat() == "2026-01-02T03:04:05+00:00"
    records = [(e.tenant_id, e.action, e.target_type, e.target_id, e.membership_id, e.user_id, e.actor_email,
                e.details) for e in AuditEvent.objects.filter(pk__gt=records_before).order_by("pk")]
    removed, unknown = "its minter was removed", "who minted it is not recorded"
    assert records == [
        (one.pk, "token.revoke", "token", str(by_rogue.pk), None, None, "",
         {"before": {"prefix": by_rogue.prefix, "name": "from rogue", "membership": bot.pk}, "reason": removed}),
        (one.pk, "token.revoke", "token", str(unrecorded.pk), None, None, "",
         {"before": {"prefix": "0badc0de", "name": "no record", "membership": bot.pk}, "reason": unknown}),
        (one.pk, "scim_token.revoke", "scim_token", str(scim_by_rogue.pk), None, None, "",
         {"before": {"prefix": scim_by_rogue.prefix, "name": "rogue's idp"}, "reason": removed}),
    ]
    assert not _key_works(by_rogue_key) and not _scim_key_works(scim_by_rogue_key) and not _key_works(unrecorded_key)
    assert all(_key_works(k) for k in (by_server_key, by_boss_key, two_by_server_key))
    assert _scim_key_works(scim_by_server_key)
