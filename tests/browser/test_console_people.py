"""Invitations, password reset and SCIM tokens in a real browser, with the e-mails sent through a real
SMTP server (aiosmtpd): an admin invites, the invited person follows the link from the mail and lands
in the tenant; "forgot password" mails a link that sets a new one; an admin mints a SCIM token that then
provisions over HTTP; members show where they came from."""

from __future__ import annotations

import re

import pytest

from accounts.models import ApiToken, Membership, MemberSource, User
from accounts.services import api_token_create, group_create, tenant_create
from tests.browser.conftest import PASSWORD, console_member, screenshot, sign_in
from tests.mail_server import link_in

pytestmark = pytest.mark.browser
NEW_PASSWORD = "a completely new sentence"


@pytest.fixture
def admin(transactional_db):
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    return console_member(tenant, "admin@acme.test", "admin", "restricted")


def test_an_invitation_from_the_members_page_to_the_dashboard(page, another_page, admin, smtp_inbox, live_server):
    sign_in(page, admin.user.email, PASSWORD)
    page.goto("/members/")
    page.fill("#id_invite-email", "new@acme.test")
    page.select_option("#id_invite-role", "editor")
    page.select_option("#id_invite-clearance", "confidential")
    page.check("#invite-member input[value=security-team]")
    page.click("#invite-member button[type=submit]")
    page.get_by_role("status").filter(has_text="An invitation was sent to new@acme.test").wait_for()
    assert page.locator("#invitations").inner_text().count("new@acme.test") == 1
    path = link_in(smtp_inbox.wait_for("new@acme.test"), "/invitation/")
    invited = another_page()
    invited.goto(path)
    invited.wait_for_url(re.compile(r"/invitation/accept/$"))  # the key left the address bar
    invited.fill("#id_password", NEW_PASSWORD)
    invited.fill("#id_password2", NEW_PASSWORD)
    invited.click("button[type=submit]")
    invited.wait_for_url("/")  # the dashboard: r"/$" would match the accept page it leaves
    assert invited.locator(".who .email").inner_text() == "new@acme.test"
    membership = Membership.objects.get(user__email="new@acme.test")
    assert (membership.role, membership.source) == ("editor", MemberSource.INVITED)
    page.goto("/members/")
    assert page.locator("#members tr[data-email='new@acme.test'] .source").inner_text().strip() == "Invited"
    assert page.locator("#invitations").count() == 0  # no longer pending
    screenshot(page, "members-sources")


def test_forgot_password_mails_a_link_that_sets_a_new_one(page, admin, smtp_inbox):
    """... and offers to revoke the person's API tokens, checked: a reset is often an account's recovery."""
    token, _ = api_token_create(membership=admin, name="laptop")
    page.goto("/sign-in/")
    page.click("#forgot-password")
    page.fill("#id_email", "admin@acme.test")
    page.click("button[type=submit]")
    page.locator("#reset-sent").wait_for()
    path = link_in(smtp_inbox.wait_for("admin@acme.test"), "/password/reset/")
    page.goto(path)
    page.wait_for_url(re.compile(r"set-password/$"))
    page.fill("#id_new_password1", NEW_PASSWORD)
    page.fill("#id_new_password2", NEW_PASSWORD)
    assert page.locator("#revoke-tokens label").inner_text().strip() == "Also revoke my 1 API token"
    assert page.is_checked("#id_revoke_tokens")
    page.click("button[type=submit]")
    page.locator("#reset-complete").wait_for()
    page.get_by_role("status").filter(has_text="Your API tokens were revoked.").wait_for()
    assert User.objects.get(email="admin@acme.test").check_password(NEW_PASSWORD)
    assert ApiToken.objects.get(pk=token.pk).revoked_at is not None
    sign_in(page, "admin@acme.test", NEW_PASSWORD)
    page.wait_for_url("/")  # the dashboard: r"/$" would match the sign-in page it leaves
    page.goto(path)  # used: refused
    assert "not valid" in page.locator("#reset-invalid").inner_text()


def test_an_admin_mints_a_scim_token_that_provisions(page, admin):
    sign_in(page, admin.user.email, PASSWORD)
    page.goto("/settings/scim/")
    page.fill("#id_name", "okta")
    page.click("#mint-scim-token button[type=submit]")
    key = page.input_value("#new-key")
    assert key.startswith("bks_")
    screenshot(page, "scim-tokens")
    response = page.request.post("/scim/v2/Users", headers={"Authorization": f"Bearer {key}",
                                                            "Content-Type": "application/scim+json"},
                                 data={"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
                                       "userName": "okta@acme.example", "emails": [{"value": "okta@acme.example"}]})
    assert response.status == 201, response.text()
    page.goto("/members/")
    assert page.locator("#members tr[data-email='okta@acme.example'] .source").inner_text().strip() == "SCIM"
    page.goto("/settings/scim/")
    assert page.locator("#new-key").count() == 0  # shown once
    page.click("#scim-tokens button.danger")
    page.get_by_role("status").filter(has_text="was revoked").wait_for()  # the revocation's answer
    assert page.request.get("/scim/v2/Users", headers={"Authorization": f"Bearer {key}"}).status == 401
