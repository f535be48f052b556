"""Members, groups and API tokens in a real browser (admins only), through the accounts services:
an admin adds a member (an invitation she accepts), changes their clearance and groups, deactivates them (their next page
load is refused); the same self-demotion refusal as the API; a token's key shown once, working
against the REST API until revoked; everyone else gets 403."""

from __future__ import annotations

import pytest
from django.contrib.sessions.models import Session
from django.test import Client

from accounts.models import ApiToken, Group, Invitation, Membership, User
from accounts.passwords import user_set_password
from accounts.services import group_create, tenant_create
from tests.api_helpers import invitation_accept_mailed
from tests.browser.conftest import PASSWORD, TIMEOUT_MS, console_member, sign_in

pytestmark = pytest.mark.browser

ADMIN_PAGES = ["/members/", "/groups/", "/tokens/", "/versions/"]




@pytest.fixture
def world(transactional_db):
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team", name="Security team")
    admin = console_member(tenant, "admin@acme.test", "admin", "restricted")
    viewer = console_member(tenant, "viewer@acme.test", "viewer", "internal")
    return {"tenant": tenant, "admin": admin, "viewer": viewer}


def _row(page, text: str):
    return page.get_by_role("row").filter(has_text=text)


def _message(page, text: str) -> None:
    page.get_by_role("status").filter(has_text=text).wait_for()


def test_admin_adds_a_member_changes_clearance_and_groups_then_deactivates_them(page, browser, live_server, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    page.get_by_role("link", name="Members").click()
    new = page.locator("#invite-member")
    new.get_by_label("E-mail").fill("nia@acme.test")
    new.get_by_label("Role").select_option("editor")
    new.get_by_label("Clearance").select_option("public")
    page.get_by_role("button", name="Send invitation").click()
    # Adding a person is an invitation: she joins when she accepts it (docs/security.md, "People").
    _message(page, "An invitation was sent to nia@acme.test; they join when they accept it.")
    assert not Membership.objects.filter(user__email="nia@acme.test").exists()
    invitation_accept_mailed("nia@acme.test", password=PASSWORD)
    page.goto("/members/")
    created = Membership.objects.get(user__email="nia@acme.test")
    assert (created.tenant_id, created.role, created.clearance, created.is_active) == (world["tenant"].pk, "editor", 0, True)

    row = _row(page, "nia@acme.test")
    row.get_by_label("Clearance of nia@acme.test").select_option("confidential")
    row.get_by_label("security-team").check()
    row.get_by_role("button", name="Save").click()
    _message(page, "nia@acme.test was changed.")
    changed = Membership.objects.get(pk=created.pk)
    assert changed.clearance == 2 and [g.slug for g in changed.groups.all()] == ["security-team"]
    row = _row(page, "nia@acme.test")
    assert row.get_by_label("security-team").is_checked()
    assert row.locator(".badge.level-confidential").inner_text() == "confidential"

    # Nia signs in elsewhere (a second browser) before she is deactivated.
    user_set_password(email="nia@acme.test", password=PASSWORD)
    elsewhere = browser.new_context(base_url=live_server.url)
    elsewhere.set_default_timeout(TIMEOUT_MS)
    nia = elsewhere.new_page()
    try:
        sign_in(nia, "nia@acme.test", PASSWORD)
        nia.wait_for_selector("#stat-documents")

        row.get_by_role("link", name="Deactivate").click()
        page.get_by_role("heading", name="Deactivate nia@acme.test?").wait_for()
        assert Membership.objects.get(pk=created.pk).is_active  # nothing happens before the confirmation
        page.get_by_role("button", name="Deactivate").click()
        _message(page, "nia@acme.test was deactivated.")
        assert not Membership.objects.get(pk=created.pk).is_active
        assert _row(page, "nia@acme.test").locator(".badge", has_text="inactive").count() == 1

        # Her next page load is refused: she is no active member of any tenant any more.
        nia.goto("/documents/")
        assert nia.locator("h1").inner_text() == "Choose a tenant"
        assert "not an active member of any tenant" in nia.locator("main").inner_text()
        assert "/tenant/" in nia.url

        _row(page, "nia@acme.test").get_by_role("link", name="Reactivate").click()
        page.get_by_role("button", name="Reactivate").click()
        _message(page, "nia@acme.test was reactivated.")
        nia.goto("/")
        nia.wait_for_selector("#stat-documents")
    finally:
        elsewhere.close()


def test_an_admin_cannot_demote_or_deactivate_themselves_as_the_api_refuses(page, world):
    admin = world["admin"]
    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto("/members/")
    row = _row(page, "admin@acme.test")
    row.get_by_label("Role of admin@acme.test").select_option("viewer")
    row.get_by_role("button", name="Save").click()
    refusal = _row(page, "admin@acme.test").get_by_role("alert")
    assert refusal.inner_text() == "you cannot demote or deactivate your own membership; ask another admin"
    page.goto(f"/members/{admin.pk}/active/?is_active=false")
    page.get_by_role("button", name="Deactivate").click()
    assert "you cannot demote or deactivate your own membership" in page.locator("#refusal").inner_text()
    admin.refresh_from_db()
    assert (admin.role, admin.is_active) == ("admin", True)


def test_an_unknown_or_taken_email_is_refused_inline(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto("/members/")
    new = page.locator("#invite-member")
    new.get_by_label("E-mail").fill("viewer@acme.test")
    page.get_by_role("button", name="Send invitation").click()
    assert "viewer@acme.test is already a member of this tenant" in page.locator(
        "#invite-member [role=alert]").inner_text()
    assert Membership.objects.filter(tenant=world["tenant"]).count() == 2
    assert not Invitation.objects.filter(tenant=world["tenant"]).exists()


def test_groups_are_created_and_renamed_their_slug_stays(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto("/members/")
    page.get_by_role("link", name="Groups").click()
    new = page.locator("#new-group")
    new.get_by_label("Slug").fill("Not A Slug")
    page.get_by_role("button", name="Create group").click()
    assert "invalid group slug 'Not A Slug'" in page.locator("#new-group [role=alert]").inner_text()
    page.locator("#new-group").get_by_label("Slug").fill("legal")
    page.locator("#new-group").get_by_label("Name").fill("Legal")
    page.get_by_role("button", name="Create group").click()
    _message(page, "Group legal was created.")
    row = _row(page, "legal")
    row.get_by_label("Name of legal").fill("Legal & Compliance")
    row.get_by_role("button", name="Rename").click()
    _message(page, "Group legal is now called Legal & Compliance.")
    assert Group.objects.get(tenant=world["tenant"], slug="legal").name == "Legal & Compliance"


def test_a_minted_key_is_shown_once_works_against_the_api_and_fails_once_revoked(page, world):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto("/members/")
    page.get_by_role("link", name="API tokens").click()
    mint = page.locator("#mint-token")
    mint.get_by_label("Member").select_option(label="viewer@acme.test")
    mint.get_by_label("Name").fill("ci")
    page.get_by_role("button", name="Create token").click()
    key = page.get_by_label("Key").input_value()
    token = ApiToken.objects.get(name="ci")
    assert token.membership_id == world["viewer"].pk
    assert key.startswith(f"bkh_{token.prefix}_") and key not in token.key_hash
    page.get_by_role("button", name="Copy").click()
    page.get_by_role("button", name="Copied").wait_for()
    assert page.evaluate("navigator.clipboard.readText()") == key
    # Not kept anywhere to be shown again: not in any session, not on the list.
    assert all(key not in str(s.get_decoded()) for s in Session.objects.all())
    page.goto("/tokens/")
    assert key not in page.content()
    row = _row(page, "viewer@acme.test")
    assert f"bkh_{token.prefix}_…" in row.inner_text()

    api = Client()
    assert api.get("/api/v1/documents/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200

    row.get_by_role("link", name="Revoke").click()
    page.get_by_role("heading", name=f"Revoke token bkh_{token.prefix}_…?").wait_for()
    assert api.get("/api/v1/documents/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 200
    page.get_by_role("button", name="Revoke").click()
    _message(page, f"Token {token.prefix} was revoked")
    assert api.get("/api/v1/documents/", HTTP_AUTHORIZATION=f"Token {key}").status_code == 401
    assert _row(page, "viewer@acme.test").get_by_role("link", name="Revoke").count() == 0


def test_everyone_but_admins_gets_403(page, world):
    sign_in(page, "viewer@acme.test", PASSWORD)
    page.wait_for_selector("#stat-documents")
    assert page.get_by_role("link", name="Members").count() == 0
    assert page.get_by_role("link", name="Versions").count() == 0
    admin, token_count = world["admin"], ApiToken.objects.count()
    for url in [*ADMIN_PAGES, f"/members/{admin.pk}/active/?is_active=false", "/versions/0123456789ab/"]:
        response = page.goto(url)
        assert response.status == 403, url
        assert page.locator("h1").inner_text() == "Not allowed"
    # Writes too, with a valid session and CSRF token (Django's test client skips the CSRF check).
    client = Client()
    client.force_login(User.objects.get(email="viewer@acme.test"))
    for url, body in [("/members/", {"email": "x@acme.test", "role": "admin", "clearance": "restricted"}),
                      (f"/members/{world['viewer'].pk}/", {"role": "admin", "clearance": "restricted"}),
                      (f"/members/{admin.pk}/active/", {"is_active": "false"}),
                      ("/groups/", {"slug": "sneaky"}),
                      ("/tokens/", {"membership": admin.pk, "name": "steal"}),
                      ("/versions/", {"name": "v"})]:
        assert client.post(url, body).status_code == 403, url
    assert not User.objects.filter(email="x@acme.test").exists()
    assert Membership.objects.get(pk=world["viewer"].pk).role == "viewer"
    assert Membership.objects.get(pk=admin.pk).is_active
    assert not Group.objects.filter(slug="sneaky").exists() and ApiToken.objects.count() == token_count
