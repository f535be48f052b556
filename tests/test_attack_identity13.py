"""Attacking identity (2026-12-04): the console session of a person who belongs to two tenants, or who leaves one.

* A page shown for one tenant acted in another: the session's tenant is one value shared by every tab, so a
  form rendered while the person was in tenant A (an upload that was previewed there, an invitation) and
  posted after they switched to tenant B in another tab -- or after A removed them and the console gave
  them their only other tenant -- was carried out in B: A's confidential document was stored in B, for B's
  readers. A switch now ends every form and htmx request of the pages shown before it (the CSRF token is
  rotated), a request that finds its tenant gone changes nothing, and an htmx request of a page shown for
  another membership reloads the page instead of filling it with the new tenant's rows.
* Every signed-in page and API answer was cacheable: no ``Cache-Control``, so the browser kept A's pages --
  search results, documents, the trail -- and showed them again from its cache on "back", after a sign-out
  on a shared computer or a switch to another tenant. They are ``no-store, private`` now.
* A failed password sign-in of a known address made more database calls before its answer than one of an
  unknown address (its memberships looked up, to record the failure in each of its tenants): a timing oracle of
  accounts, open to anyone. The lookup and the records come after the answer now.
* A token minted by an admin whom the operator then deleted (their membership, or their account, in the Django
  admin) lost its minter -- and no minter means "minted on the server", which always works. Deleting a
  membership revokes what it minted first.
* A password reset racing a deactivation set the password, and -- Django's form saving the whole user it had
  read -- made a user deactivated in between active again. The password alone is written, if still let in.
  The console's password change did the same with the session's user.
"""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.test import APIClient

from accounts.models import Membership
from accounts.passwords import user_set_password
from accounts.services import api_token_create, membership_create, tenant_create
from kb.models import Document

pytestmark = pytest.mark.django_db
PASSWORD = "correct horse battery staple"
PERSON = "both@example.com"
SECRET_TITLE = "A's merger plan"


@pytest.fixture
def two_tenants():
    """``PERSON``: an editor with confidential clearance in tenants A and B (and B's own admin)."""
    a = tenant_create(slug="tenant-a", name="Tenant A")
    b = tenant_create(slug="tenant-b", name="Tenant B")
    membership_create(tenant=a, email="admin@a.example", role="admin", clearance="restricted")
    membership_create(tenant=b, email="admin@b.example", role="admin", clearance="restricted")
    in_a = membership_create(tenant=a, email=PERSON, role="editor", clearance="confidential")
    in_b = membership_create(tenant=b, email=PERSON, role="editor", clearance="confidential")
    user_set_password(email=PERSON, password=PASSWORD)
    return in_a, in_b


_FORM_TOKEN = re.compile(rb'name="csrfmiddlewaretoken" value="([^"]+)"')


def _form_token(response) -> str:
    """The CSRF token of the first form of a page: what that page's forms post."""
    assert response.status_code == 200, response.content[:300]
    return _FORM_TOKEN.search(response.content).group(1).decode()


def _signed_in(membership: Membership) -> Client:
    """A browser (CSRF checked, as a browser's posts are) signed in with the password, in ``membership``'s tenant."""
    browser = Client(enforce_csrf_checks=True)
    token = _form_token(browser.get("/sign-in/"))
    assert browser.post("/sign-in/", {"username": PERSON, "password": PASSWORD,
                                      "csrfmiddlewaretoken": token}).status_code == 302
    _switch(browser, membership)
    return browser


def _switch(browser: Client, membership: Membership) -> None:
    """The tenant switcher, as another tab would use it: its own page, its own form."""
    token = _form_token(browser.get("/tenant/"))
    response = browser.post("/tenant/", {"membership": str(membership.pk), "csrfmiddlewaretoken": token})
    assert response.status_code == 302 and response["Location"] == "/", response.content[:300]


def _upload(action: str, token: str, digest: str = "") -> dict:
    return {"title": SECRET_TITLE, "text": "# Plan\nWe buy the competitor in March.", "content_type": "text/markdown",
            "access_level": "confidential", "tags": "", "action": action, "preview_digest": digest,
            "csrfmiddlewaretoken": token}


def test_a_form_shown_for_one_tenant_never_acts_in_the_tenant_switched_to(two_tenants):
    """Tab 1 shows A's upload page and previews A's document there; in tab 2 the person switches to B; then
    "Ingest" in tab 1. Before the fix the session's tenant, B, took it: A's confidential text was stored in B,
    read by B's confidential readers. The switch rotates the CSRF token, so tab 1's post is refused (403)
    and nothing is stored anywhere; the page shown after the switch works."""
    in_a, in_b = two_tenants
    browser = _signed_in(in_a)
    page_token = _form_token(browser.get("/documents/upload/"))
    preview = browser.post("/documents/upload/", _upload("preview", page_token))
    digest = re.search(rb'name="preview_digest" value="([0-9a-f]+)"', preview.content).group(1).decode()
    _switch(browser, in_b)  # another tab
    ingest = browser.post("/documents/upload/", _upload("ingest", page_token, digest))
    assert ingest.status_code == 403, ingest.content[:300]
    assert b"reload" in ingest.content.lower()
    assert not Document.objects.filter(title=SECRET_TITLE).exists()
    # A page of B, shown after the switch, posts in B.
    fresh = _form_token(browser.get("/documents/upload/"))
    preview = browser.post("/documents/upload/", _upload("preview", fresh))
    digest = re.search(rb'name="preview_digest" value="([0-9a-f]+)"', preview.content).group(1).decode()
    assert browser.post("/documents/upload/", _upload("ingest", fresh, digest)).status_code == 200
    assert list(Document.objects.filter(title=SECRET_TITLE).values_list("tenant_id", flat=True)) == [in_b.tenant_id]


def test_a_page_answered_after_a_switch_never_brings_the_old_csrf_token_back(two_tenants):
    """Found reviewing the fix above (review 13): the switch rotated the CSRF token, but Django sends the request's
    own CSRF cookie back with every page that shows a form (``get_token`` renews it) -- and every console page does
    (``base.html``'s htmx headers). A page asked for before the switch's answer reached the browser (tab 1
    navigating, a click in a third tab) and answered after it carried the old cookie, and set it again: the
    browser held A's token once more while the session acted for B, and tab 1's "Ingest" stored A's document in B.
    Now the session remembers the token its tenant was entered with (``console.membership.tenant_enter``); a
    request bearing another is answered with a new one (a GET) or changes nothing (a post), so the old token
    never comes back."""
    in_a, in_b = two_tenants
    browser = _signed_in(in_a)
    page_token = _form_token(browser.get("/documents/upload/"))
    preview = browser.post("/documents/upload/", _upload("preview", page_token))
    digest = re.search(rb'name="preview_digest" value="([0-9a-f]+)"', preview.content).group(1).decode()
    old_cookie = browser.cookies["csrftoken"].value
    _switch(browser, in_b)  # another tab
    assert browser.cookies["csrftoken"].value != old_cookie
    # A page asked for before the switch's answer arrived: its request carried the old cookie.
    browser.cookies["csrftoken"] = old_cookie
    late = browser.get("/documents/")
    assert late.status_code == 200
    assert browser.cookies["csrftoken"].value != old_cookie  # never set again
    ingest = browser.post("/documents/upload/", _upload("ingest", page_token, digest))
    assert ingest.status_code in (302, 403), ingest.status_code
    assert not Document.objects.filter(title=SECRET_TITLE).exists()
    # Answered concurrently instead (the session read before the switch was saved): the old cookie is back in the
    # browser, the session acts for B -- a post with it changes nothing, and the next page brings a new token.
    browser.cookies["csrftoken"] = old_cookie
    ingest = browser.post("/documents/upload/", _upload("ingest", page_token, digest))
    assert ingest.status_code == 302 and ingest["Location"] == "/tenant/", ingest.status_code
    assert not Document.objects.filter(title=SECRET_TITLE).exists()
    fresh = _form_token(browser.get("/documents/upload/"))
    assert browser.cookies["csrftoken"].value != old_cookie
    preview = browser.post("/documents/upload/", _upload("preview", fresh))
    assert preview.status_code == 200  # a page shown now works


def test_a_form_posted_after_its_tenant_removed_the_person_changes_nothing(two_tenants):
    """A removes the person while their tab shows A's upload page; its "Ingest" found A's membership gone and
    the console handed the request the person's only other tenant, B, which stored A's document. A request
    that finds its tenant gone now changes nothing (it is sent to choose a tenant), and the pages shown
    before are ended with it (the CSRF token is rotated): the same post again is refused."""
    in_a, in_b = two_tenants
    browser = _signed_in(in_a)
    page_token = _form_token(browser.get("/documents/upload/"))
    preview = browser.post("/documents/upload/", _upload("preview", page_token))
    digest = re.search(rb'name="preview_digest" value="([0-9a-f]+)"', preview.content).group(1).decode()
    Membership.objects.filter(pk=in_a.pk).delete()  # A's admin removes the person
    ingest = browser.post("/documents/upload/", _upload("ingest", page_token, digest))
    assert ingest.status_code == 302 and ingest["Location"] == "/tenant/", ingest.content[:300]
    assert not Document.objects.filter(title=SECRET_TITLE).exists()
    again = browser.post("/documents/upload/", _upload("ingest", page_token, digest))
    assert again.status_code == 403
    assert not Document.objects.filter(title=SECRET_TITLE).exists()
    assert browser.get("/documents/upload/").status_code == 200  # now in B, chosen for them on a GET


def test_a_page_shown_for_one_tenant_never_fills_with_anothers_partials(two_tenants):
    """Tab 1 shows A's dashboard, whose job list htmx refreshes every 2 s; in tab 2 the person switches to B. The
    refresh then brought B's jobs into A's page, under A's name in the header. A page's htmx requests name the
    membership it was shown for (``X-Bulkhead-Membership``, in ``base.html``'s ``hx-headers``); another one is
    answered 409 with ``HX-Refresh``, so htmx reloads the whole page -- B's, named B -- and no B rows reach A's."""
    in_a, in_b = two_tenants
    browser = _signed_in(in_a)
    page = browser.get("/")
    assert f'"X-Bulkhead-Membership": "{in_a.pk}"'.encode() in page.content
    assert browser.get("/", HTTP_HX_REQUEST="true", HTTP_X_BULKHEAD_MEMBERSHIP=str(in_a.pk)).status_code == 200
    _switch(browser, in_b)  # another tab
    stale = browser.get("/", HTTP_HX_REQUEST="true", HTTP_X_BULKHEAD_MEMBERSHIP=str(in_a.pk))
    assert stale.status_code == 409 and stale["HX-Refresh"] == "true", (stale.status_code, stale.content[:200])
    assert b"Tenant B" not in stale.content and b"dashboard-jobs" not in stale.content
    assert browser.get("/", HTTP_HX_REQUEST="true", HTTP_X_BULKHEAD_MEMBERSHIP=str(in_b.pk)).status_code == 200


def _no_store(response) -> bool:
    directives = {d.strip() for d in response.get("Cache-Control", "").lower().split(",")}
    return {"no-store", "private"} <= directives


@pytest.mark.parametrize("path", ["/", "/documents/", "/search/?q=plan", "/audit/", "/members/", "/tenant/",
                                  "/jobs/"])
def test_a_signed_in_page_is_never_kept_by_the_browser(two_tenants, path):
    """Without ``Cache-Control`` a browser kept these pages and showed them again on "back" -- after a sign-out
    on a shared computer, or after a switch to the other tenant -- and a shared cache could keep them too."""
    in_a, _ = two_tenants
    Membership.objects.filter(pk=in_a.pk).update(role="admin")  # the trail and the members pages too
    browser = _signed_in(in_a)
    response = browser.get(path)
    assert response.status_code == 200, response.content[:300]
    assert _no_store(response), response.get("Cache-Control")


def test_an_api_answer_is_never_kept_by_a_cache(two_tenants):
    """The API's answers to a token and to a session alike."""
    in_a, _ = two_tenants
    _, key = api_token_create(membership=in_a)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = api.get("/api/v1/documents/")
    assert response.status_code == 200 and _no_store(response), response.get("Cache-Control")
    browser = _signed_in(in_a)
    response = browser.get("/api/v1/documents/", HTTP_X_BULKHEAD_TENANT="tenant-a")
    assert response.status_code == 200 and _no_store(response), response.get("Cache-Control")


# ----------------------------------------------------------------------------- a failed sign-in's time


def _in_the_answer(email: str) -> list[str]:
    """The database calls a failed password sign-in of ``email`` makes before its answer is sent (what its
    time is made of; the work after it, ``audit.middleware``, is not), with the address, the clock and the
    savepoints' names taken out. Each request starts from a cleared connection."""
    from django.core.signals import request_finished
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from accounts.tenancy import tenant_context_reset
    from audit.middleware import _write_after_the_answer

    uid = "bulkhead-audit-reads-after-response"
    before_flush: list[int] = []

    def counted_then_written(**kwargs):
        before_flush.append(len(connection.queries))
        _write_after_the_answer(**kwargs)

    tenant_context_reset()
    request_finished.disconnect(dispatch_uid=uid)
    request_finished.connect(counted_then_written, dispatch_uid=uid)
    try:
        with CaptureQueriesContext(connection) as queries:
            assert Client(REMOTE_ADDR="203.0.113.20").post("/sign-in/", {"username": email,
                                                                         "password": "a guess"}).status_code == 200
    finally:
        request_finished.disconnect(dispatch_uid=uid)
        request_finished.connect(_write_after_the_answer, dispatch_uid=uid)
    answered = queries.captured_queries[:before_flush[0] - queries.initial_queries]
    out = []
    for query in answered:
        sql = query["sql"].replace(email, "ADDRESS")
        sql = re.sub(r"'\d{4}-\d\d-\d\d[ T][\d:.]+\+00:00'", "'TIME'", sql)
        out.append(re.sub(r'"s\d+_x\d+"', '"SAVEPOINT"', sql))
    return out


def test_a_failed_sign_in_takes_the_same_calls_for_a_known_and_an_unknown_address(two_tenants):
    """Found attacking identity (2026-12-04): a failed sign-in looked up the address's memberships in the request
    -- naming the user, reading them, acting for each tenant to keep its record -- five database round trips
    (more with more tenants) an unknown address never made before the answer: anyone could time whether an
    address has an account, as "forgot password" once let them. The lookup and the records are made after the
    answer now (``audit.services.audit_after_answer``); each of the person's tenants still hears the failure,
    and an unknown address is still recorded in no tenant."""
    from accounts.models import Membership as M
    from audit.models import Action, AuditEvent

    in_a, in_b = two_tenants
    assert M.objects.filter(user__email=PERSON).count() == 2
    known, unknown = _in_the_answer(PERSON), _in_the_answer("nobody@example.com")
    assert known == unknown
    for membership in (in_a, in_b):
        assert AuditEvent.objects.filter(tenant_id=membership.tenant_id, action=Action.SIGN_IN_FAILED,
                                         actor_email=PERSON).count() == 1
    assert AuditEvent.objects.filter(tenant_id=None, action=Action.SIGN_IN_FAILED,
                                     actor_email="nobody@example.com").count() == 1


# ----------------------------------------------------------------------------- a minter removed on the server


def _api_status(key: str) -> int:
    return Client().get("/api/v1/documents/", HTTP_AUTHORIZATION=f"Token {key}").status_code


def _scim_status(key: str) -> int:
    return Client().get("/scim/v2/Users", HTTP_AUTHORIZATION=f"Bearer {key}").status_code


@pytest.mark.parametrize("removed", ["membership", "user"])
def test_tokens_die_with_a_minter_the_operator_deletes(removed):
    """Found attacking identity (2026-12-04): a token minted by an admin works only while they are an active admin
    (``accounts.services.may_mint``), but a token's minter is a nullable link (``ApiToken.created_by``,
    ``ScimToken.created_by``: ``SET_NULL``) and no minter means "minted on the server", which always works. An
    operator offboarding a rogue admin in the Django admin -- deleting their membership, or their whole account
    -- nulled the link: the bot's token and the SCIM token the rogue admin had minted, and still held, became
    the server's and worked for good. Deleting a membership, in any way, now revokes the tokens it minted
    first, each in the trail ("its minter was removed")."""
    from accounts.models import ApiToken, ScimToken, User
    from accounts.scim import scim_token_create
    from audit.models import Action, AuditEvent

    tenant = tenant_create(slug="offboard", name="Offboard")
    membership_create(tenant=tenant, email="boss@offboard.example", role="admin", clearance="restricted")
    rogue = membership_create(tenant=tenant, email="rogue@offboard.example", role="admin", clearance="restricted")
    bot = membership_create(tenant=tenant, email="bot@offboard.example", role="editor", clearance="restricted")
    for_bot, bot_key = api_token_create(membership=bot, name="deploy", actor=rogue)
    scim_token, scim_key = scim_token_create(tenant=tenant, name="idp", actor=rogue)
    assert (_api_status(bot_key), _scim_status(scim_key)) == (200, 200)
    operator = Client()
    operator.force_login(User.objects.create_superuser("root@offboard.example", PASSWORD))
    target = f"/admin/accounts/membership/{rogue.pk}/delete/" if removed == "membership" else \
        f"/admin/accounts/user/{rogue.user_id}/delete/"
    assert operator.post(target, {"post": "yes"}).status_code == 302
    assert not Membership.objects.filter(pk=rogue.pk).exists()
    assert (_api_status(bot_key), _scim_status(scim_key)) == (401, 401)
    assert ApiToken.objects.get(pk=for_bot.pk).revoked_at is not None
    assert ScimToken.objects.get(pk=scim_token.pk).revoked_at is not None
    reasons = set(AuditEvent.objects.filter(tenant_id=tenant.pk, action__in=[Action.TOKEN_REVOKE,
                                                                            Action.SCIM_TOKEN_REVOKE])
                  .values_list("action", "target_id", "details__reason"))
    assert {(Action.TOKEN_REVOKE, str(for_bot.pk), "its minter was removed"),
            (Action.SCIM_TOKEN_REVOKE, str(scim_token.pk), "its minter was removed")} <= reasons


# ----------------------------------------------------------------------------- a reset racing a deactivation


@pytest.mark.parametrize("fate", ["membership deactivated", "user deactivated"])
def test_a_reset_racing_a_deactivation_sets_no_password(monkeypatch, fate):
    """A reset link opens only while its account may still be mailed one (an active user with an active
    membership), checked when the view finds the link's user. The new password was then hashed (a million
    PBKDF2 rounds) and saved without looking again: a deactivation committed in between -- the admins ending a
    leaver's access while the leaver, holding the mail, submits the form -- still had the deactivated account's
    password set. The deactivation here is made right after that check, as another request's commit would be;
    the password is saved only if the account is still let in, after the hash, else the one 404 of a link
    that is not valid. Worse, Django's form saved the whole user object it had read before: a user deactivated
    in between was active again. Only the password is written now."""
    from django.contrib.auth.tokens import default_token_generator
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    from accounts.models import User
    from accounts.tenancy import acting_tenant
    from console.views.people import PasswordResetConfirm

    tenant = tenant_create(slug="reset-race", name="Reset race")
    membership_create(tenant=tenant, email="boss@race.example", role="admin", clearance="restricted")
    leaver = membership_create(tenant=tenant, email="leaver@race.example", role="editor", clearance="internal")
    user_set_password(email="leaver@race.example", password=PASSWORD)
    user = User.objects.get(pk=leaver.user_id)
    link = f"/password/reset/{urlsafe_base64_encode(force_bytes(user.pk))}.{default_token_generator.make_token(user)}/"
    browser = Client()
    shown = browser.get(link, follow=True)
    assert shown.status_code == 200 and b"new_password1" in shown.content
    form_url = shown.redirect_chain[-1][0]
    checked = PasswordResetConfirm.get_user

    def checked_then_deactivated(self, uidb64):
        found = checked(self, uidb64)
        if self.request.method == "POST" and found is not None:
            if fate == "membership deactivated":
                with acting_tenant(tenant.pk):  # as the admins' request would (the request acts for no tenant)
                    assert Membership.objects.filter(pk=leaver.pk).update(is_active=False) == 1
            else:
                User.objects.filter(pk=user.pk).update(is_active=False)
        return found

    monkeypatch.setattr(PasswordResetConfirm, "get_user", checked_then_deactivated)
    new = "a brand new passphrase 7"
    response = browser.post(form_url, {"new_password1": new, "new_password2": new})
    user.refresh_from_db()
    # Django's form saved the whole user it had read before the deactivation: it was active again, too.
    assert user.is_active == (fate != "user deactivated")
    assert response.status_code == 404 and b"not valid" in response.content, response.status_code
    assert user.check_password(PASSWORD) and not user.check_password(new)


def test_a_reset_link_made_dead_while_its_form_is_checked_sets_no_password(monkeypatch):
    """Found reviewing the fix above (review 13): the link's token was checked when the view found its user, and
    the new password written after the hash (a million PBKDF2 rounds) under the lock -- but the token was not
    checked again there. A link dies with the password it was made for: the owner of the account, seeing a reset
    they did not ask for, changes their password (their own session, the console's page) while the holder of the
    mail submits the link's form; or the same link is submitted twice at once. Before: the reset's password was
    written over the owner's new one (the second submission over the first). Now the link is checked again on the
    locked row (``accounts.invitations.password_reset_save``): a link made dead meanwhile sets nothing."""
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.tokens import default_token_generator
    from django.utils.encoding import force_bytes
    from django.utils.http import urlsafe_base64_encode

    from accounts.models import User
    from console.views.people import PasswordResetConfirm

    tenant = tenant_create(slug="reset-dead", name="Reset dead")
    membership_create(tenant=tenant, email="owner@dead.example", role="editor", clearance="internal")
    user_set_password(email="owner@dead.example", password=PASSWORD)
    user = User.objects.get(email="owner@dead.example")
    link = f"/password/reset/{urlsafe_base64_encode(force_bytes(user.pk))}.{default_token_generator.make_token(user)}/"
    browser = Client()
    shown = browser.get(link, follow=True)
    assert shown.status_code == 200 and b"new_password1" in shown.content
    form_url = shown.redirect_chain[-1][0]
    checked = PasswordResetConfirm.get_user
    owners = "the owner's own new passphrase 9"

    def checked_then_dead(self, uidb64):
        found = checked(self, uidb64)
        if self.request.method == "POST" and found is not None:
            # Committed by another request right after this one's check, as the owner's or the twin's would be.
            User.objects.filter(pk=user.pk).update(password=make_password(owners))
        return found

    monkeypatch.setattr(PasswordResetConfirm, "get_user", checked_then_dead)
    new = "the holder's passphrase 10"
    response = browser.post(form_url, {"new_password1": new, "new_password2": new})
    user.refresh_from_db()
    assert user.check_password(owners) and not user.check_password(new)
    assert response.status_code == 404 and b"not valid" in response.content, response.status_code


def test_a_password_change_racing_a_deactivation_never_brings_the_account_back(monkeypatch):
    """The console's "change password" saved the whole user its request had read (Django's form): an operator
    deactivating the account while the change was being checked and hashed -- the session's owner changing the
    password as they were offboarded -- had it saved back active. The password alone is written now, and only
    while the account is active; otherwise nothing is, and the session ends."""
    from django.contrib.auth.forms import PasswordChangeForm

    from accounts.models import User

    tenant = tenant_create(slug="change-race", name="Change race")
    membership_create(tenant=tenant, email="boss@change.example", role="admin", clearance="restricted")
    leaver = membership_create(tenant=tenant, email="leaver@change.example", role="editor", clearance="internal")
    user_set_password(email="leaver@change.example", password=PASSWORD)
    browser = Client()
    assert browser.post("/sign-in/", {"username": "leaver@change.example", "password": PASSWORD}).status_code == 302
    checked = PasswordChangeForm.clean_old_password

    def checked_then_deactivated(self):
        value = checked(self)
        User.objects.filter(pk=leaver.user_id).update(is_active=False)  # the operator, in the Django admin
        return value

    monkeypatch.setattr(PasswordChangeForm, "clean_old_password", checked_then_deactivated)
    new = "a brand new passphrase 8"
    response = browser.post("/password/", {"old_password": PASSWORD, "new_password1": new, "new_password2": new})
    user = User.objects.get(pk=leaver.user_id)
    assert not user.is_active
    assert user.check_password(PASSWORD) and not user.check_password(new)
    assert response.status_code == 302 and response["Location"].startswith("/sign-in/"), response.status_code
    assert browser.get("/").status_code == 302  # the session is over


# ----------------------------------------------------------------------------- held (2026-12-04)


def test_held_a_session_made_before_a_sign_in_is_never_the_signed_in_one(two_tenants, monkeypatch):
    """Session fixation: a session key planted before the sign-in (a password, a single sign-on, an accepted
    invitation) is not the one signed in; the planted one stays anonymous."""
    import hashlib
    from datetime import timedelta

    from django.utils import timezone

    from accounts.models import Invitation, SsoConfig

    in_a, _ = two_tenants

    def planted() -> tuple[Client, str]:
        browser = Client()
        browser.get("/sign-in/")
        session = browser.session
        session["planted"] = True
        session.save()
        browser.cookies["sessionid"] = session.session_key
        return browser, session.session_key

    def anonymous(key: str) -> bool:
        replay = Client()
        replay.cookies["sessionid"] = key
        return replay.get("/").status_code == 302

    browser, key = planted()
    assert browser.post("/sign-in/", {"username": PERSON, "password": PASSWORD}).status_code == 302
    assert browser.cookies["sessionid"].value != key and anonymous(key)

    SsoConfig.objects.create(tenant=in_a.tenant, enabled=True, issuer="https://idp.a.example", client_id="c",
                             admit_domains=["example.com"])
    claims = {"iss": "https://idp.a.example", "sub": "both", "email": PERSON, "email_verified": True}

    class _Provider:
        def authorize_access_token(self, request, **kwargs):
            return {"id_token": "checked", "userinfo": dict(claims)}

    monkeypatch.setattr("console.views.sso.oidc_client", lambda config, url_check: _Provider())
    monkeypatch.setattr("console.views.sso.oidc_check_metadata", lambda client, config, url_check: {})
    browser, key = planted()
    assert browser.get("/sso/tenant-a/callback/?code=c&state=s").status_code == 302
    assert browser.cookies["sessionid"].value != key and anonymous(key)

    inviter = Membership.objects.get(tenant=in_a.tenant, user__email="admin@a.example")
    Invitation.objects.create(tenant=in_a.tenant, email="new@example.com", role="viewer", clearance=0,
                              key_hash=hashlib.sha256(b"the-key").hexdigest(), invited_by=inviter,
                              expires_at=timezone.now() + timedelta(days=1))
    browser, key = planted()
    assert browser.get("/invitation/the-key/").status_code == 302
    accepted = browser.post("/invitation/accept/", {"password": "a brand new passphrase 9",
                                                    "password2": "a brand new passphrase 9"})
    assert accepted.status_code == 302, accepted.content[:300]
    assert browser.cookies["sessionid"].value != key and anonymous(key)


@pytest.mark.parametrize("target", ["https://evil.example/", "//evil.example/", "/\\evil.example/",
                                    "\\\\evil.example", "https:evil.example", " //evil.example"])
def test_held_a_sign_in_never_leads_to_another_site(two_tenants, target):
    """``next=`` after a password sign-in, and for a signed-in visitor of the sign-in page: this site only."""
    browser = Client()
    signed_in = browser.post(f"/sign-in/?next={target}", {"username": PERSON, "password": PASSWORD, "next": target})
    assert signed_in.status_code == 302 and signed_in["Location"] == "/", signed_in["Location"]
    again = browser.get("/sign-in/", {"next": target})
    assert again.status_code == 302 and again["Location"] == "/", again["Location"]
