"""Upload in a real browser: the access preview before anything is stored, then "Ingest".

An editor (confidential, in finance) uploads Markdown with access markers: the preview shows each
section with the badges of its effective policy and its token and chunk counts, and nothing is
stored; a bad marker shows its message and line and no Ingest button; files come by the picker
or by drag-and-drop; levels above the editor's clearance are not offered and a crafted one is
refused by the service; viewers get 403; Ingest makes jobs that a real worker runs to the end.
"""

from __future__ import annotations

import pytest

from accounts.services import group_create, tenant_create
from kb.models import Chunk, Document, IngestionJob, Section
from kb.services import Upload
from pipeline.preview import document_preview
from tests.browser.conftest import JOB_TIMEOUT_MS, PASSWORD, console_member, sign_in
from tests.ingestion_helpers import POLICY_DOC

pytestmark = pytest.mark.browser

UNKNOWN_GROUP = "# Handbook\nHello.\n\n## Payroll <!-- access: confidential; groups: payroll -->\nSalaries.\n"
MALFORMED = "# Handbook\nHello.\n\n<!-- access: confidential; grups: a -->\nOops.\n<!-- /access -->\n"
NOTES = "# Notes\nMeeting notes for everyone with internal clearance.\n"




@pytest.fixture
def world(transactional_db):
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    group_create(tenant=tenant, slug="finance")
    return {
        "tenant": tenant,
        "admin": console_member(tenant, "admin@acme.test", "admin", "restricted", ["security-team"]),
        "editor": console_member(tenant, "editor@acme.test", "editor", "confidential", ["finance"]),
        "viewer": console_member(tenant, "viewer@acme.test", "viewer", "internal"),
    }


def _counts() -> dict:
    return {model.__name__: model.objects.count() for model in (Document, Section, Chunk, IngestionJob)}


def _file(name: str, text: str) -> dict:
    return {"name": name, "mimeType": "text/markdown", "buffer": text.encode()}


def _open_upload(page, email="editor@acme.test"):
    sign_in(page, email, PASSWORD)
    page.goto("/documents/upload/")


def _row(page, title: str):
    return page.locator("tr.section", has=page.locator(".section-title", has_text=title))


def test_preview_shows_the_section_tree_with_badges_and_counts_and_stores_nothing(page, world):
    before = _counts()
    _open_upload(page)
    page.get_by_label("Files").set_input_files([_file("policy.md", POLICY_DOC)])
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("table.preview-tree")

    incident = _row(page, "Incident response")
    assert incident.locator(".badge").all_inner_texts() == ["restricted", "security-team"]
    assert "marker" in incident.inner_text()
    assert _row(page, "Reporting").locator(".badge").all_inner_texts() == ["internal"]
    region = page.locator("tr.section", has=page.locator(".section-title", has_text="(region)"))
    assert region.locator(".badge").all_inner_texts() == ["confidential"]
    # The counts are the service's (the same planning step as ingestion: see tests/test_preview.py).
    expected = document_preview(member=world["editor"], upload=Upload(
        content=POLICY_DOC.encode(), title="policy.md", source="policy.md"))
    assert page.locator(".total-chunks").inner_text() == str(expected.chunks)
    assert page.locator(".total-tokens").inner_text() == str(expected.tokens)
    shown = {row.get_attribute("data-key"): (row.locator(".tokens").inner_text(), row.locator(".chunks").inner_text())
             for row in page.locator("tr.section").all()}
    assert shown == {s.key: (str(s.tokens), str(s.chunks)) for s in expected.sections}
    assert page.get_by_role("button", name="Ingest").count() == 1
    assert _counts() == before  # nothing stored, nothing embedded, no job


@pytest.mark.parametrize(("text", "message"), [
    (UNKNOWN_GROUP, "unknown group payroll (line 4)"),
    (MALFORMED, "malformed access marker"),
])
def test_a_bad_marker_shows_its_message_and_line_and_no_ingest_button(page, world, text, message):
    before = _counts()
    _open_upload(page)
    page.get_by_label("Files").set_input_files([_file("handbook.md", text)])
    page.get_by_role("button", name="Preview").click()
    alert = page.locator("article.preview [role=alert]")
    alert.wait_for()
    assert "Line 4:" in alert.inner_text() and message in alert.inner_text()
    assert page.get_by_role("button", name="Ingest").count() == 0
    assert page.locator("table.preview-tree").count() == 0
    assert _counts() == before


def test_two_files_by_the_picker(page, world):
    _open_upload(page)
    page.get_by_label("Files").set_input_files([_file("policy.md", POLICY_DOC), _file("handbook.md", UNKNOWN_GROUP)])
    assert page.locator("#chosen-files li").count() == 2
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("article.preview >> nth=1")
    assert page.locator("article.preview").count() == 2
    assert page.locator("article.preview[data-file='policy.md'] table.preview-tree").count() == 1
    assert "unknown group payroll" in page.locator("article.preview[data-file='handbook.md']").inner_text()
    # Only the file that previews cleanly would be ingested.
    assert page.get_by_role("button", name="Ingest").inner_text() == "Ingest 1 of 2"


def test_two_files_dropped_on_the_drop_zone_are_previewed(page, world):
    before = _counts()
    _open_upload(page)
    page.evaluate(
        """([files]) => {
            const data = new DataTransfer();
            for (const [name, text] of files) data.items.add(new File([text], name, {type: "text/markdown"}));
            const zone = document.getElementById("dropzone");
            zone.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true, cancelable: true}));
            zone.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
        }""",
        [[["policy.md", POLICY_DOC], ["notes.md", NOTES]]],
    )
    # The drop previews at once, without a click.
    page.wait_for_selector("article.preview >> nth=1")
    assert sorted(a.get_attribute("data-file") for a in page.locator("article.preview").all()) == [
        "notes.md", "policy.md"]
    assert page.locator("table.preview-tree").count() == 2
    assert page.get_by_role("button", name="Ingest").inner_text() == "Ingest 2 of 2"
    assert _counts() == before


def test_an_editor_is_offered_only_what_they_may_set_and_a_crafted_choice_is_refused(page, world):
    _open_upload(page)
    levels = page.locator("#id_access_level option").all_inner_texts()
    assert levels == ["public", "internal", "confidential"]  # not restricted: above the editor's clearance
    assert page.locator("#id_groups option").all_inner_texts() == ["finance"]  # only their own group
    before = _counts()
    # A crafted request: an option the page did not offer.
    page.evaluate("""() => { const s = document.getElementById("id_access_level");
                             s.add(new Option("restricted", "restricted")); s.value = "restricted"; }""")
    page.get_by_label("Files").set_input_files([_file("notes.md", NOTES)])
    page.get_by_role("button", name="Preview").click()
    alert = page.locator("article.preview [role=alert]")
    alert.wait_for()
    assert "access level 'restricted' is above your clearance ('confidential')" in alert.inner_text()
    assert page.get_by_role("button", name="Ingest").count() == 0
    # The same crafted choice sent with Ingest directly is refused by the service as well.
    response = page.request.post("/documents/upload/", multipart={
        "csrfmiddlewaretoken": page.locator("input[name=csrfmiddlewaretoken]").first.input_value(),
        "files": {"name": "notes.md", "mimeType": "text/markdown", "buffer": NOTES.encode()},
        "access_level": "restricted", "content_type": "text/markdown", "action": "ingest",
        "preview_digest": "forged",
    }, headers={"Referer": page.url})
    assert response.status == 200 and "above your clearance" in response.text()
    assert _counts() == before


def test_a_viewer_gets_403(page, world):
    sign_in(page, "viewer@acme.test", PASSWORD)
    response = page.goto("/documents/upload/")
    assert response.status == 403
    assert "Not allowed" in page.locator("main").inner_text()
    before = _counts()
    csrf = page.locator("input[name=csrfmiddlewaretoken]").first.input_value()  # the sign-out form's
    posted = page.request.post("/documents/upload/", headers={"Referer": page.url}, form={
        "csrfmiddlewaretoken": csrf, "text": NOTES, "title": "Notes", "content_type": "text/markdown",
        "access_level": "internal", "action": "ingest"})
    assert posted.status == 403  # the role, not the CSRF check
    assert "Not allowed" in posted.text()
    assert _counts() == before


@pytest.mark.worker
def test_ingest_creates_jobs_and_the_job_page_shows_progress_to_succeeded(page, world, celery_worker):
    _open_upload(page)
    page.get_by_label("Files").set_input_files([_file("policy.md", POLICY_DOC)])
    page.locator("summary", has_text="paste a text").click()
    page.get_by_label("Title of the pasted text").fill("Meeting notes")
    page.get_by_label("Text", exact=True).fill(NOTES)
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("article.preview >> nth=1")
    assert IngestionJob.objects.count() == 0
    page.get_by_role("button", name="Ingest").click()
    page.wait_for_selector("#created-jobs")
    links = page.locator("#created-jobs a.job-link")
    assert links.count() == 2
    jobs = list(IngestionJob.objects.order_by("created_at"))
    assert len(jobs) == 2 and {j.created_by_id for j in jobs} == {world["editor"].user_id}
    assert sorted(Document.objects.values_list("title", flat=True)) == ["Meeting notes", "policy.md"]

    links.first.click()
    page.wait_for_selector("#job-progress")
    page.evaluate("() => { window.notReloaded = true; }")
    page.wait_for_selector("#job-progress[data-status=succeeded]", timeout=JOB_TIMEOUT_MS)
    assert page.evaluate("() => window.notReloaded") is True  # the fragment refreshed, not the page
    assert page.locator("#job-stage").inner_text() == "done"
    done, total = page.locator("#job-count").inner_text().split("/")
    assert done == total and int(total) > 0
    assert page.locator("#job-progress").get_attribute("hx-trigger") is None  # polling stopped
