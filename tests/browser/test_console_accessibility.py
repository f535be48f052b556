"""Accessibility basics of every console page, in a real browser.

Every page an admin can open (and the sign-in page) fits a 375 px wide screen without scrolling
sideways (wide tables scroll inside their own box); every input, select, textarea and button has
an accessible name (a label, aria-label or its text); every access-level badge says its level in
words, not by colour alone. The upload form works with the keyboard alone: Tab to the fields,
type, Enter on Preview, Space on Ingest.
"""

from __future__ import annotations

import time

import pytest

from accounts.policy import AccessLevel
from accounts.services import api_token_create, group_create, tenant_create
from ingestion.chunking.config import ChunkingConfig
from kb.index_versions import index_version_create
from kb.jobs import job_create
from kb.models import Document, IngestionJob
from kb.services import SOURCE_ID, SOURCE_PATH
from sources.models import Source
from tests.api_helpers import POLICY_SECTIONS, make_document
from tests.bounds import JOB_WAIT
from tests.browser.conftest import PASSWORD, VIEWPORT, choose_member, console_member, screenshot, sign_in
from tests.conftest import SOURCE_ROOT

pytestmark = pytest.mark.browser

NARROW = {"width": 375, "height": 800}
# The README's pictures of pages that tests/browser/test_console_story.py does not show.
SCREENSHOTS = {"dashboard", "documents", "members", "versions", "version"}
LEVELS = ["public", "internal", "confidential", "restricted"]
MARKED = "# Handbook\nOpening hours for everyone.\n\n## Incident response <!-- access: restricted -->\nPage the on-call engineer.\n"

# For each control, the name a screen reader would announce: aria-labelledby, aria-label, its
# <label>s (for= or around it), else a button's own text or value.
UNNAMED_CONTROLS = """() => {
  const text = (s) => (s || "").replace(/\\s+/g, " ").trim();
  const unnamed = [];
  for (const el of document.querySelectorAll("input, select, textarea, button")) {
    if (el.type === "hidden") continue;
    let name = text((el.getAttribute("aria-labelledby") || "").split(/\\s+/)
      .map((id) => document.getElementById(id)?.textContent).join(" "));
    name = name || text(el.getAttribute("aria-label"));
    name = name || text(Array.from(el.labels || []).map((label) => label.textContent).join(" "));
    if (!name && el.tagName === "BUTTON") name = text(el.textContent);
    if (!name && ["submit", "button", "reset"].includes(el.type)) name = text(el.value);
    if (!name) unnamed.push(el.outerHTML.slice(0, 160));
  }
  return unnamed;
}"""
# Each badge coloured by a level, with the level its class names and the words it shows.
LEVEL_BADGES = """() => Array.from(document.querySelectorAll(".badge[class*='level-']")).map(
  (b) => [b.className.match(/level-([a-z]*)/)[1], b.textContent.trim().toLowerCase()])"""
# Open every <details> (hidden parts count too), then the page's width and what sticks out.
WIDTH = """() => {
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  const limit = document.documentElement.clientWidth + 1;
  const wide = Array.from(document.querySelectorAll("body *"))
    .filter((el) => el.getBoundingClientRect().right > limit && !el.closest(".table-scroll"))
    .map((el) => el.outerHTML.slice(0, 100));
  return [document.documentElement.scrollWidth, wide.slice(0, 5)];
}"""


@pytest.fixture
def world(transactional_db):
    tenant = tenant_create(slug="acme", name="Acme Corporation")
    group_create(tenant=tenant, slug="security-team")
    admin = console_member(tenant, "admin@acme.test", "admin", "restricted", ["security-team"])
    viewer = console_member(tenant, "a.rather.long.address.for.a.viewer@acme-corporation.test", "viewer", "internal")
    document = make_document(tenant, sections=POLICY_SECTIONS, default=AccessLevel.INTERNAL, tags=["policy"],
                             source="handbooks/security/policy-with-a-long-file-name-2024.md")
    make_document(tenant, title="Opening hours", default=AccessLevel.PUBLIC,
                  sections=[("root", None, "", AccessLevel.PUBLIC, [], "Open from nine to five.")])
    failed = job_create(tenant=tenant, document=document, created_by=admin.user, cause=IngestionJob.Cause.UPLOAD,
                        status=IngestionJob.Status.FAILED, stage="parse", error="line 4: malformed access marker 'grups: a' (did you mean 'groups'?)")
    job_create(tenant=tenant, document=document, created_by=admin.user, cause=IngestionJob.Cause.UPLOAD,
               status=IngestionJob.Status.SUCCEEDED, stage="done", done=6, total=6)
    shadow, _ = index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=128), name="small chunks")
    token, _ = api_token_create(membership=viewer, name="reporting script")
    # A document a source owns (as its sync leaves one), for its "Detach from its source…" and the confirmation.
    source = Source.objects.create(tenant=tenant, name="the handbook repository of the security team", kind="folder",
                                   path=str(SOURCE_ROOT / tenant.slug))
    synced = make_document(tenant, title="Synced handbook", default=AccessLevel.INTERNAL,
                           source="handbooks/synced/a-long-synced-file-name-2024.md",
                           sections=[("root", None, "", AccessLevel.INTERNAL, [], "Synced from the repository.")])
    Document.objects.filter(pk=synced.pk).update(metadata={**synced.metadata, SOURCE_ID: source.pk,
                                                            SOURCE_PATH: synced.source})
    return {"tenant": tenant, "admin": admin, "viewer": viewer, "document": document, "job": failed,
            "shadow": shadow, "token": token, "synced": synced}


def _pages(world) -> dict[str, str]:
    """Every page an admin opens, by a short name."""
    doc, ids = world["document"], world["document"].section_ids
    shadow = world["shadow"].short_id
    return {
        "dashboard": "/",
        "documents": "/documents/",
        "upload": "/documents/upload/",
        "document-section": f"/documents/{doc.pk}/?section={ids['incident']}",
        "view-as-member-viewer": f"/documents/{doc.pk}/as/?member={world['viewer'].pk}",
        "section-readers-incident": f"/sections/{ids['incident']}/readers/",
        "section-access-intro": f"/sections/{ids['intro']}/access/",
        "document-delete": f"/documents/{doc.pk}/delete/",
        "document-synced": f"/documents/{world['synced'].pk}/",
        "document-detach": f"/documents/{world['synced'].pk}/detach/",
        "jobs": "/jobs/",
        "job": f"/jobs/{world['job'].pk}/",
        "search-compare": "/search/?query=incident+response+on-call&mode=hybrid&expand=parent&expand_level=leaf"
                          f"&top_k=5&max_contexts=5&context_token_budget=2000&compare_version={world['shadow'].pk}",
        "members": "/members/",
        "groups": "/groups/",
        "tokens": "/tokens/",
        "token-revoke": f"/tokens/{world['token'].pk}/revoke/",
        "member-deactivate": f"/members/{world['viewer'].pk}/active/?is_active=false",
        "versions": "/versions/",
        "version": f"/versions/{shadow}/",
        "version-activate": f"/versions/{shadow}/activate/",
        "password": "/password/",
        "tenant": "/tenant/",
        "audit": "/audit/",
        "audit-document-searches": f"/audit/?document={doc.pk}&action=search",
    }


def _visit(page, url: str) -> None:
    response = page.goto(url)
    assert response.status == 200, url


def _fits(page, where: str) -> str | None:
    # Measured once the page has its stylesheet: an element can be in the DOM (what a
    # wait_for_selector after a form post waits for) before the CSS that lays it out has loaded.
    page.wait_for_load_state("load")
    width, wide = page.evaluate(WIDTH)
    return None if width <= NARROW["width"] + 1 else f"{where}: {width} px wide, sticking out: {wide}"


def test_every_page_fits_a_375px_screen_names_its_controls_and_says_levels_in_words(page, world):
    """One walk of the pages, each loaded once and read at both widths (the layout is the style sheet's alone:
    a page resized to 375 px lays out as one loaded at it): at the default width its controls' names and its
    badges' words (and the README's pictures), then at 375 px its width (:func:`_fits`)."""
    too_wide, unnamed, badges = [], {}, []

    def read(where: str, *, levels: bool = True, picture: str = "") -> None:
        if picture:
            screenshot(page, picture)
        unnamed[where] = page.evaluate(UNNAMED_CONTROLS)
        if levels:
            badges.extend(page.evaluate(LEVEL_BADGES))
        page.set_viewport_size(NARROW)
        too_wide.append(_fits(page, where))
        page.set_viewport_size(VIEWPORT)

    page.goto("/sign-in/")
    read("/sign-in/", levels=False, picture="sign-in")
    sign_in(page, "admin@acme.test", PASSWORD)
    page.wait_for_selector("#stat-documents")
    for name, url in _pages(world).items():
        _visit(page, url)
        read(url, picture=name if name in SCREENSHOTS else "")
    # The parts that htmx adds: the access preview of an upload; a minted token.
    _preview(page, MARKED)
    read("the upload's access preview")
    _mint(page, world)
    read("a new token", levels=False)
    page.set_viewport_size(NARROW)
    assert [w for w in too_wide if w] == []
    assert page.evaluate("() => document.querySelector('.table-scroll').scrollWidth") > NARROW["width"]
    assert {where: found for where, found in unnamed.items() if found} == {}
    assert {level for level, _ in badges} == set(LEVELS)  # every level was on some page
    assert [(level, words) for level, words in badges if level != words] == []


def _preview(page, text: str) -> None:
    page.goto("/documents/upload/")
    page.locator("summary", has_text="paste a text").click()
    page.get_by_label("Title of the pasted text").fill("Handbook")
    page.get_by_label("Text", exact=True).fill(text)
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("table.preview-tree")


def _mint(page, world) -> None:
    page.goto("/tokens/")
    choose_member(page, "#id_membership", "admin@")
    page.get_by_label("Name", exact=True).fill("laptop")
    page.get_by_role("button", name="Create token").click()
    page.wait_for_selector("#new-token")


def _tab_to(page, description: str, selector: str, limit: int = 60) -> None:
    """Press Tab until the element ``selector`` has the focus."""
    for _ in range(limit):
        if page.evaluate("(s) => document.activeElement === document.querySelector(s)", selector):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"{limit} presses of Tab never reached {description}")


@pytest.mark.worker
def test_the_upload_form_works_by_keyboard_alone(page, world, celery_worker):
    sign_in(page, "admin@acme.test", PASSWORD)
    page.wait_for_selector("#stat-documents")
    page.goto("/documents/upload/")
    page.locator("body").focus()
    _tab_to(page, "the paste section", "details.paste summary")
    page.keyboard.press("Enter")  # opens it
    _tab_to(page, "the title", "#id_title")
    page.keyboard.type("Keyboard handbook")
    _tab_to(page, "the text", "#id_text")
    page.keyboard.insert_text(MARKED)  # as a paste does
    _tab_to(page, "the default level", "#id_access_level")
    assert page.evaluate("() => document.activeElement.value") == "internal"
    _tab_to(page, "Preview", "#preview-button")
    page.keyboard.press("Enter")
    page.wait_for_selector("table.preview-tree")
    assert page.locator("tr.section", has_text="Incident response").locator(".badge").inner_text() == "restricted"
    _tab_to(page, "Ingest", "#ingest-button")
    page.keyboard.press("Space")
    page.wait_for_selector("#created-jobs")
    document = Document.objects.get(title="Keyboard handbook")
    job = IngestionJob.objects.get(document=document)
    deadline = time.monotonic() + JOB_WAIT
    while job.status not in ("succeeded", "failed") and time.monotonic() < deadline:
        time.sleep(0.5)
        job.refresh_from_db()
    assert job.status == "succeeded", job.error
