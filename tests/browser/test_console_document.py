"""The document page in a real browser: a viewer sees only the sections they may read and only their
text; an editor changes a section's level inline (the badge follows without a reload), and a level
above their clearance is refused in the row with the service's message, changing nothing; an admin
replaces the content and deletes the document after a confirmation; anyone who cannot see the
document -- a member of another tenant, or anyone asking for a made-up id -- gets the same 404."""

from __future__ import annotations

import uuid

import pytest

from accounts.policy import AccessLevel
from accounts.services import tenant_create
from kb.models import Chunk, Document, IngestionJob, Section
from tests.api_helpers import POLICY_SECTIONS, make_document
from tests.browser.conftest import PASSWORD, console_member, sign_in

pytestmark = pytest.mark.browser

# Text and titles of the sections an internal viewer may not read (POLICY_SECTIONS).
SECRETS = ["Only the security team.", "Page the on-call engineer.", "Names of past reporters.",
           "Incident response", "Playbook", "Reporting"]




@pytest.fixture
def world(acme):
    tenant = acme["tenant"]
    editor = console_member(tenant, "editor@acme.test", "editor", "confidential")
    other = tenant_create(slug="other", name="Other")
    console_member(other, "stranger@other.test", "admin", "restricted")
    document = make_document(tenant, sections=POLICY_SECTIONS, default=AccessLevel.INTERNAL, tags=["security"])
    return {**acme, "editor": editor, "document": document}


def _open(page, document) -> None:
    page.goto(f"/documents/{document.pk}/")
    page.get_by_role("heading", name="Security policy", exact=True).wait_for()


def _row(page, title: str):
    return page.locator("li.section-row").filter(has=page.get_by_role("link", name=title, exact=True))


def _policies() -> list:
    return [sorted(Section.objects.values_list("id", "own_level", "own_groups", "access_level", "access_groups")),
            sorted(Chunk.objects.values_list("id", "access_level", "access_groups"))]


def test_a_viewer_sees_only_the_sections_they_may_read_with_their_badges(page, world):
    sign_in(page, "viewer@acme.test", PASSWORD)
    page.get_by_role("link", name="Documents").click()
    page.get_by_role("link", name="Security policy").click()
    page.get_by_role("heading", name="Security policy", exact=True).wait_for()
    rows = page.locator("li.section-row")
    assert rows.count() == 3  # the root, the intro, the internal region under the restricted heading
    assert [b.inner_text() for b in page.locator("li.section-row .section-policy .badge").all()] == ["internal"] * 3
    assert _row(page, "Security policy").count() == 1
    assert page.locator("#sections-count").inner_text() == "3" and page.locator("#chunks-count").inner_text() == "3"
    assert page.get_by_role("button", name="Save access").count() == 0  # viewers change nothing
    assert page.get_by_role("link", name="Who can read").count() == 0  # admins only
    html = page.content()
    for secret in SECRETS:
        assert secret not in html


def test_the_viewers_text_view_never_holds_restricted_text(page, world):
    sign_in(page, "viewer@acme.test", PASSWORD)
    _open(page, world["document"])
    text = page.locator("#raw-text").inner_text()
    assert "Intro for internal readers." in text and "An internal note under a restricted heading." in text
    assert "characters you cannot read" in text
    # The region under the restricted heading: chosen in place (htmx), its chunk and its span marked.
    page.locator("li.section-row").nth(2).get_by_role("link").first.click()
    page.get_by_role("heading", name="Chunks").wait_for()
    assert page.locator("#raw-text mark").inner_text().strip() == "An internal note under a restricted heading."
    assert "An internal note under a restricted heading." in page.locator("#chunks").inner_text()
    assert f"section={world['document'].section_ids['region']}" in page.url
    for secret in SECRETS:
        assert secret not in page.content()
    # A restricted section's id in the address chooses nothing: the same page as no choice.
    page.goto(f"/documents/{world['document'].pk}/?section={world['document'].section_ids['incident']}")
    assert page.get_by_role("heading", name="Chunks").count() == 0
    for secret in SECRETS:
        assert secret not in page.content()


def test_an_editor_changes_a_level_inline_and_the_badge_follows_without_a_reload(page, world, unserved_queue):
    # The change queues a re-derive job; a worker left running in this process by an earlier test would
    # rebuild the sections from the made-up document's bytes (new ids) while this test reads them.
    sign_in(page, "editor@acme.test", PASSWORD)
    _open(page, world["document"])
    page.evaluate("window.notReloaded = true")
    row = _row(page, "Security policy")
    row.get_by_text("Change access").click()
    row.get_by_label("Level").select_option("confidential")
    row.get_by_role("button", name="Save access").click()
    row.get_by_role("status").filter(has_text="Access changed.").wait_for()
    assert row.locator(".section-policy .badge").first.inner_text() == "confidential"
    assert page.evaluate("window.notReloaded") is True
    intro = Section.objects.get(pk=world["document"].section_ids["intro"])
    assert intro.access_level == AccessLevel.CONFIDENTIAL and intro.own_level == AccessLevel.CONFIDENTIAL


def test_change_access_opened_before_htmx_has_read_the_page_still_brings_its_form(page, world):
    # A quick click on a slow page: the <details> opens while htmx is still loading, so its toggle
    # fires with no listener. The form must still come once htmx has run (console/access.js).
    sign_in(page, "editor@acme.test", PASSWORD)
    page.wait_for_url("/")  # the dashboard, loaded (htmx and all), not the sign-in page it leaves
    held = []

    def hold(route):
        if held is not None:
            held.append(route)
        else:
            route.continue_()

    page.route("**/django_htmx/htmx-2*.js", hold)  # htmx is held back until released below
    page.goto(f"/documents/{world['document'].pk}/", wait_until="commit")
    row = _row(page, "Security policy")
    row.locator("summary", has_text="Change access").click()
    assert row.locator("details.access-edit").get_attribute("open") is not None
    assert page.evaluate("() => window.htmx === undefined")
    assert row.get_by_label("Level").count() == 0
    routes, held = held, None
    assert routes, "the test did not hold htmx back"
    for route in routes:
        route.continue_()
    row.get_by_label("Level").wait_for()
    assert row.get_by_label("Level").input_value() == "internal"


def test_a_level_above_the_editors_clearance_is_refused_in_the_row_and_nothing_changes(page, world):
    sign_in(page, "editor@acme.test", PASSWORD)
    _open(page, world["document"])
    before = _policies()
    page.evaluate("window.notReloaded = true")
    row = _row(page, "Security policy")
    row.get_by_text("Change access").click()
    row.get_by_label("Level").select_option("restricted")
    row.get_by_role("button", name="Save access").click()
    alert = _row(page, "Security policy").get_by_role("alert")
    alert.wait_for()
    assert alert.inner_text() == "access level 'restricted' is above your clearance ('confidential')"
    assert _row(page, "Security policy").locator(".section-policy .badge").first.inner_text() == "internal"
    assert page.evaluate("window.notReloaded") is True
    assert _policies() == before


def test_an_admin_replaces_the_content_and_follows_the_new_job(page, world, tmp_path):
    sign_in(page, "admin@acme.test", PASSWORD)
    _open(page, world["document"])
    new = tmp_path / "policy.md"
    new.write_text("# Security policy\nA new intro.\n")
    page.get_by_label("New file").set_input_files(str(new))
    page.get_by_role("button", name="Replace content").click()
    page.get_by_role("status").filter(has_text="is being ingested").wait_for()
    job = IngestionJob.objects.get(document=world["document"])
    assert f"/jobs/{job.pk}/" in page.url
    document = Document.objects.get(pk=world["document"].pk)
    assert bytes(document.raw) == new.read_bytes() and document.title == "Security policy"
    assert document.access_level == AccessLevel.INTERNAL and document.tags == ["security"]  # kept


def test_an_editor_who_cannot_read_every_section_may_not_delete(page, world):
    sign_in(page, "editor@acme.test", PASSWORD)
    _open(page, world["document"])
    assert page.locator("#change-refusal").inner_text() == "You may not change a document with sections you cannot read."
    assert page.get_by_role("link", name="Delete this document…").count() == 0
    page.goto(f"/documents/{world['document'].pk}/delete/")
    assert page.get_by_role("alert").inner_text() == "You may not change a document with sections you cannot read."
    assert page.get_by_role("button", name="Delete for good").count() == 0
    assert Document.objects.filter(pk=world["document"].pk).exists()


def test_an_admin_deletes_the_document_after_a_confirmation(page, world):
    sign_in(page, "admin@acme.test", PASSWORD)
    _open(page, world["document"])
    page.get_by_role("link", name="Delete this document…").click()
    page.get_by_role("heading", name="Delete “Security policy”?").wait_for()
    assert Document.objects.filter(pk=world["document"].pk).exists()  # nothing before the confirmation
    page.get_by_role("button", name="Delete for good").click()
    page.get_by_role("status").filter(has_text="was deleted").wait_for()
    assert page.url.endswith("/documents/")
    assert not Document.objects.filter(pk=world["document"].pk).exists()
    assert not Section.objects.filter(document_id=world["document"].pk).exists()
    assert not Chunk.objects.filter(document_id=world["document"].pk).exists()


def test_another_tenants_member_and_a_made_up_id_get_the_same_404(page, world):
    sign_in(page, "stranger@other.test", PASSWORD)
    page.wait_for_url("/")  # the dashboard: "**/" would match the sign-in page it leaves
    document = world["document"]
    theirs = page.goto(f"/documents/{document.pk}/")
    theirs_body = page.locator("body").inner_text()
    made_up = page.goto(f"/documents/{uuid.uuid4()}/")
    assert theirs.status == made_up.status == 404
    assert theirs_body == page.locator("body").inner_text()
    for path in (f"/documents/{document.pk}/?section={document.section_ids['intro']}",
                 f"/documents/{document.pk}/as/", f"/sections/{document.section_ids['intro']}/readers/",
                 f"/documents/{document.pk}/delete/"):
        assert page.goto(path).status == 404, path
    for secret in SECRETS + ["Intro for internal readers.", "Security policy"]:
        assert secret not in page.content()
