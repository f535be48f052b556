"""Effective access in a real browser (admins): a document as one member sees it -- redacted rows
saying why, and nothing of the hidden sections -- and who can read a section, with the reasons of
those who cannot. Others get 403 (viewers) or the same 404 as a missing document (another tenant)."""

from __future__ import annotations

import pytest

from accounts.models import Membership
from accounts.policy import AccessLevel
from accounts.services import tenant_create
from tests.api_helpers import POLICY_SECTIONS, make_document
from tests.browser.conftest import PASSWORD, choose_member, console_member, sign_in

pytestmark = pytest.mark.browser

RESTRICTED = ["Incident response", "Only the security team.", "Playbook", "Page the on-call engineer."]
CONFIDENTIAL = ["Reporting", "Names of past reporters."]




@pytest.fixture
def world(acme):
    tenant = acme["tenant"]
    console_member(tenant, "sec@acme.test", "viewer", "restricted", ["security-team"])
    console_member(tenant, "junior@acme.test", "editor", "internal", ["security-team"])
    console_member(tenant, "boss@acme.test", "editor", "restricted")
    console_member(tenant, "helper@acme.test", "admin", "internal")  # an admin who reads little
    other = tenant_create(slug="other", name="Other")
    console_member(other, "stranger@other.test", "admin", "restricted", [])
    document = make_document(tenant, sections=POLICY_SECTIONS, default=AccessLevel.INTERNAL)
    return {**acme, "document": document}


def _view_as(page, document, email: str) -> None:
    page.goto(f"/documents/{document.pk}/")
    page.get_by_role("link", name="View as a member").click()
    choose_member(page, "#id_member", email)
    page.get_by_role("button", name="Show").click()
    page.locator("#member-summary").filter(has_text=email).wait_for()


def _reasons(row) -> list[str]:
    return row.locator("ul.reasons li").all_inner_texts()


def test_admin_views_the_document_as_a_viewer_redacted_rows_say_why(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    _view_as(page, world["document"], "viewer@acme.test")
    summary = page.locator("#member-summary").inner_text()
    assert "viewer" in summary and "internal" in summary and "none" in summary
    assert page.locator("#as-member-counts").inner_text() == "Reads 3 of 6 sections, 3 of 6 chunks."
    rows = page.locator("#as-member tbody tr")
    assert rows.count() == 6  # every section, in document order
    readable = page.locator("#as-member tr.readable")
    assert readable.locator(".excerpt").all_inner_texts() == [
        "Preamble for internal readers.", "Intro for internal readers.", "An internal note under a restricted heading.",
    ]
    redacted = page.locator("#as-member tr.redacted-row")
    assert redacted.count() == 3
    both = ["clearance internal is below restricted", "needs the group security-team"]
    assert [_reasons(redacted.nth(i)) for i in range(3)] == [both, both, ["clearance internal is below confidential"]]
    assert redacted.locator(".redacted-title").all_inner_texts() == ["(title redacted)"] * 3
    assert redacted.nth(0).locator(".badge.level-restricted").count() == 1  # the admin sees the policy
    html = page.content()
    for secret in RESTRICTED + CONFIDENTIAL:
        assert secret not in html


def test_view_as_a_member_of_the_security_team_shows_their_sections(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    _view_as(page, world["document"], "sec@acme.test")
    assert page.locator("#as-member-counts").inner_text() == "Reads 6 of 6 sections, 6 of 6 chunks."
    assert "Incident response" in page.locator("#as-member").inner_text()


def test_an_admin_who_reads_little_sees_no_more_through_another_members_eyes(page, world):
    sign_in(page, "helper@acme.test", PASSWORD)
    _view_as(page, world["document"], "sec@acme.test")
    # sec@ reads every section; the restricted ones are beyond helper@'s own access.
    assert page.locator("#as-member-counts").inner_text() == "Reads 6 of 6 sections, 6 of 6 chunks."
    assert page.locator("#as-member .redacted-title").filter(has_text="beyond your own access").count() == 3
    html = page.content()
    for secret in RESTRICTED + CONFIDENTIAL:
        assert secret not in html


def test_who_can_read_lists_the_members_and_why_the_others_cannot(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto(f"/documents/{world['document'].pk}/")
    row = page.locator("li.section-row").filter(has=page.get_by_role("link", name="Incident response", exact=True))
    row.get_by_role("link", name="Who can read").click()
    page.get_by_role("heading", name="Who can read this section").wait_for()
    assert page.locator("#readers-rule").inner_text() == (
        "A member reads it when their clearance is at least restricted and they are in the group security-team.")
    readers = page.locator("#readers tbody tr")
    assert [r.locator("td").first.inner_text() for r in readers.all()] == ["admin@acme.test", "sec@acme.test"]
    others = {r.locator("td").first.inner_text(): _reasons(r) for r in page.locator("#non-readers tbody tr").all()}
    assert others == {
        "boss@acme.test": ["needs the group security-team"],
        "helper@acme.test": ["clearance internal is below restricted", "needs the group security-team"],
        "junior@acme.test": ["clearance internal is below restricted"],
        "viewer@acme.test": ["clearance internal is below restricted", "needs the group security-team"],
    }
    group = page.locator("#reader-groups tbody tr")
    assert group.locator("td").all_inner_texts() == ["security-team", "security-team", "3", "2"]
    for secret in ["Only the security team.", "Page the on-call engineer."]:
        assert secret not in page.content()


def test_only_the_tenants_admins_may_look(page, world):
    document = world["document"]
    sign_in(page, "viewer@acme.test", PASSWORD)
    page.wait_for_url("/")  # the dashboard: "**/" would match the sign-in page it leaves
    assert page.goto(f"/documents/{document.pk}/as/?member={world['admin'].pk}").status == 403
    assert page.goto(f"/sections/{document.section_ids['intro']}/readers/").status == 403
    page.goto(f"/documents/{document.pk}/")
    assert page.get_by_role("link", name="View as a member").count() == 0
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, "stranger@other.test", PASSWORD)
    page.wait_for_url("/")
    assert page.goto(f"/documents/{document.pk}/as/?member={world['viewer'].pk}").status == 404
    assert page.goto(f"/sections/{document.section_ids['intro']}/readers/").status == 404
    # This tenant's admin asking about another tenant's member: not one to choose.
    page.goto("/")
    page.get_by_role("button", name="Sign out").click()
    sign_in(page, "admin@acme.test", PASSWORD)
    page.wait_for_url("/")
    stranger = Membership.objects.get(user__email="stranger@other.test")
    page.goto(f"/documents/{document.pk}/as/?member={stranger.pk}")
    assert "Select a valid choice" in page.get_by_role("alert").inner_text()
    assert page.locator("#member-summary").count() == 0 and "stranger@other.test" not in page.content()
