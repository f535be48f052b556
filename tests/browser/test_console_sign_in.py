"""Sign-in, tenant switch, password change, sign-out and the sign-in rate limit, in a real browser."""

from __future__ import annotations

import re

import pytest

from accounts.models import User
from accounts.services import membership_create, tenant_create
from tests.browser.conftest import PASSWORD, sign_in

pytestmark = pytest.mark.browser



def _person(email: str, *tenants: str, role: str = "viewer", password: str = PASSWORD) -> User:
    for slug in tenants:
        tenant = tenant_create(slug=slug, name=slug.replace("-", " ").title())
        membership_create(tenant=tenant, email=email, role=role, clearance="internal", group_slugs=[])
    user = User.objects.get(email=email)
    user.set_password(password)
    user.save()
    return user


def test_anonymous_visitor_gets_the_sign_in_page(page):
    page.goto("/")
    assert "/sign-in/" in page.url
    assert page.locator("h1").inner_text() == "Sign in"


def test_sign_in_shows_the_dashboard_of_the_only_tenant_and_sign_out_ends_it(page):
    _person("ana@example.com", "acme-corp")
    sign_in(page, "Ana@Example.com ", PASSWORD)
    page.wait_for_selector("#stat-documents")
    assert page.locator("header .tenant").inner_text() == "Acme Corp"
    page.click("text=Sign out")
    page.wait_for_selector("text=Sign in")
    page.goto("/")
    assert "/sign-in/" in page.url


def test_wrong_password_is_refused_with_a_message(page):
    _person("bo@example.com", "acme-corp")
    sign_in(page, "bo@example.com", "not the password")
    assert page.locator("[role=alert]").inner_text() == "That e-mail and password do not match an active account."
    assert "/sign-in/" in page.url


def test_several_tenants_choose_one_then_switch(page):
    _person("cy@example.com", "alpha-co", "beta-co")
    sign_in(page, "cy@example.com", PASSWORD)
    page.wait_for_selector("text=Choose a tenant")
    page.click("button:has-text('Beta Co')")
    page.wait_for_selector("#stat-documents")
    assert page.locator("header .tenant").inner_text() == "Beta Co"
    page.click("header .tenant")
    page.click("button:has-text('Alpha Co')")
    page.wait_for_selector("#stat-documents")
    assert page.locator("header .tenant").inner_text() == "Alpha Co"


def test_a_deactivated_membership_stops_working_at_the_next_request(page):
    user = _person("di@example.com", "acme-corp")
    sign_in(page, "di@example.com", PASSWORD)
    page.wait_for_selector("#stat-documents")
    user.memberships.update(is_active=False)
    page.goto("/")
    assert page.locator("h1").inner_text() == "Choose a tenant"
    assert "not an active member of any tenant" in page.locator("main").inner_text()


def test_change_own_password(page):
    _person("ed@example.com", "acme-corp")
    sign_in(page, "ed@example.com", PASSWORD)
    page.wait_for_selector("#stat-documents")
    page.click("text=Password")
    page.fill("input[name=old_password]", PASSWORD)
    page.fill("input[name=new_password1]", "a much better passphrase 42")
    page.fill("input[name=new_password2]", "a much better passphrase 42")
    page.click("button:has-text('Change password')")
    page.wait_for_selector("text=Your password was changed.")
    assert User.objects.get(email="ed@example.com").check_password("a much better passphrase 42")


def test_failed_sign_ins_are_rate_limited_with_a_clear_message(page, settings):
    _person("fa@example.com", "acme-corp")
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(page, "fa@example.com", "guess")
    # Locked out now: even the right password is refused, with the reason and the wait.
    response = page.goto("/sign-in/")
    page.fill("input[name=username]", "fa@example.com")
    page.fill("input[name=password]", PASSWORD)
    with page.expect_response(re.compile(r".*/sign-in/$")) as answer:
        page.click("button[type=submit]")
    assert answer.value.status == 429
    assert "Too many failed sign-ins. Try again in 15 minutes." in page.locator("#locked-out").inner_text()
    assert response.status == 200
    # Another person at the same address is not locked out.
    _person("gi@example.com", "beta-co")
    sign_in(page, "gi@example.com", PASSWORD)
    page.wait_for_selector("#stat-documents")
