"""The console end to end, in real browsers, with a real worker and the real embedding model.

An admin uploads a handbook whose "Merger plans" heading carries a restricted marker, sees that
in the access preview, ingests it and watches the job to the end. A viewer (internal clearance)
searching in a browser of their own cannot find the restricted text. The admin views the document
as that viewer -- a redacted row saying why -- and relaxes the section to internal; the viewer
finds it. A malformed marker never gets past the preview, and a minted token is shown once.

Also here, along the same path: the session cookie is Secure and dies with sign-out on the
server, and the admin and the API docs still work under the Content-Security-Policy.
"""

from __future__ import annotations

import time

import pytest

from accounts.models import ApiToken, User
from accounts.services import tenant_create
from kb.models import Document, IngestionJob
from tests.bounds import JOB_WAIT
from tests.browser.conftest import (
    JOB_TIMEOUT_MS,
    PASSWORD,
    TIMEOUT_MS,
    choose_member,
    console_member,
    screenshot,
    sign_in,
)

pytestmark = pytest.mark.browser

HANDBOOK = """# Travel handbook

Book trains through the internal portal; receipts go to finance within a month.

## Merger plans <!-- access: restricted -->

The Falcon acquisition closes in March for ninety million euros.
"""
SECRET = "The Falcon acquisition closes in March for ninety million euros."
QUERY = "Falcon acquisition ninety million euros"
MALFORMED = "# Board notes\nHello.\n\n<!-- access: restricted; grups: board -->\nOops.\n<!-- /access -->\n"
VIEWER = "viewer@acme.test"


@pytest.fixture
def world(transactional_db):
    tenant = tenant_create(slug="acme", name="Acme Corporation")
    return {
        "tenant": tenant,
        "admin": console_member(tenant, "admin@acme.test", "admin", "restricted"),
        "viewer": console_member(tenant, VIEWER, "viewer", "internal"),
    }


def _jobs_finished(timeout: float = JOB_WAIT) -> list[IngestionJob]:
    deadline = time.monotonic() + timeout
    while IngestionJob.objects.exclude(status__in=["succeeded", "failed"]).exists():
        assert time.monotonic() < deadline, "jobs still running"
        time.sleep(0.5)
    return list(IngestionJob.objects.all())


def _search(page, query: str) -> str:
    """Search as oneself with the playground's defaults; the hits' text."""
    page.goto("/search/")
    page.get_by_label("Search for").fill(query)
    page.get_by_role("button", name="Search").click(timeout=JOB_TIMEOUT_MS)  # the first one loads the model
    page.wait_for_selector(".search-result")
    return "\n".join(page.locator(".search-result .hit-text").all_inner_texts())


def _section_row(page, title: str):
    return page.locator("li.section-row", has=page.locator("a.section-title", has_text=title))


@pytest.mark.worker
def test_restricted_text_stays_hidden_until_an_admin_relaxes_it(page, another_page, world, celery_worker):
    # The admin uploads the handbook: the preview shows the marker's section as restricted.
    sign_in(page, "admin@acme.test", PASSWORD)
    page.wait_for_selector("#stat-documents")
    page.get_by_role("link", name="Documents").click()
    page.get_by_role("link", name="Upload").click()
    page.get_by_label("Files").set_input_files(
        [{"name": "travel.md", "mimeType": "text/markdown", "buffer": HANDBOOK.encode()}])
    page.get_by_role("button", name="Preview").click()
    merger = page.locator("tr.section", has=page.locator(".section-title", has_text="Merger plans"))
    merger.wait_for()
    assert merger.locator(".badge").all_inner_texts() == ["restricted"]
    assert "marker" in merger.inner_text()
    page.evaluate("() => document.getElementById('preview').scrollIntoView()")
    screenshot(page, "upload-preview")
    assert Document.objects.count() == 0  # a preview stores nothing

    # Ingest, and watch the job's progress bar to the end.
    page.get_by_role("button", name="Ingest").click()
    page.wait_for_selector("#created-jobs, #preview-failed")  # the page says it when the answer did not come
    assert page.locator("#preview-failed").count() == 0, page.locator("#preview").inner_text()
    page.locator("#created-jobs a").click()
    page.wait_for_selector("#job-progress[data-status=succeeded]", timeout=JOB_TIMEOUT_MS)
    assert page.locator("#job-stage").inner_text() == "done"
    done, total = page.locator("#job-count").inner_text().split("/")
    assert done == total and int(total) > 0
    assert page.locator("#job-progress progress").get_attribute("value") == done
    screenshot(page, "job")
    document = Document.objects.get()

    # The viewer, in a browser of their own, cannot find the restricted text.
    viewer = another_page()
    sign_in(viewer, VIEWER, PASSWORD)
    viewer.wait_for_selector("#stat-documents")
    hits = _search(viewer, QUERY)
    assert "Book trains" in hits  # the handbook's readable part still answers
    assert "Falcon" not in hits
    assert "closes in March" not in viewer.content() and "Merger plans" not in viewer.content()

    # The admin sees the document as the viewer: the section is a redacted row that says why.
    page.get_by_role("link", name="Documents").click()
    page.get_by_role("link", name="travel.md").click()
    page.wait_for_selector("#section-tree")
    screenshot(page, "document")
    page.get_by_role("link", name="View as a member").click()
    choose_member(page, "#id_member", VIEWER)
    page.get_by_role("button", name="Show").click()
    redacted = page.locator("#as-member tr.redacted-row")
    redacted.wait_for()
    assert redacted.count() == 1
    assert redacted.locator("ul.reasons li").all_inner_texts() == ["clearance internal is below restricted"]
    assert redacted.locator(".badge").all_inner_texts() == ["restricted"]
    assert "Falcon" not in page.locator("#as-member").inner_text()
    screenshot(page, "view-as-member")

    # Who can read the section, and why the viewer cannot.
    page.get_by_role("link", name="travel.md").click()
    _section_row(page, "Merger plans").get_by_role("link", name="Who can read").click()
    page.wait_for_selector("#non-readers")
    assert VIEWER in page.locator("#non-readers").inner_text()
    assert VIEWER not in page.locator("main").inner_text().split("Cannot read")[0]
    screenshot(page, "section-readers")

    # The admin relaxes the section to internal, inline on the document page.
    page.get_by_role("link", name="travel.md").click()
    row = _section_row(page, "Merger plans")
    row.locator("summary", has_text="Change access").click()
    row.get_by_label("Level").select_option("internal")
    row.get_by_role("button", name="Save access").click()
    _section_row(page, "Merger plans").get_by_role("status").filter(has_text="Access changed.").wait_for()
    assert _section_row(page, "Merger plans").locator(".section-policy .badge").all_inner_texts() == ["internal"]
    # Chunks follow at once; any whose heading prefix changed would be rebuilt by a job: wait for all.
    jobs = _jobs_finished()
    assert all(job.status == "succeeded" for job in jobs), [job.error for job in jobs]
    page.get_by_role("link", name="Jobs").click()
    page.wait_for_selector("#jobs")
    screenshot(page, "jobs")

    # Now the viewer finds it.
    hits = _search(viewer, QUERY)
    assert SECRET in hits
    assert viewer.locator(".hit-text mark", has_text="Falcon").count() >= 1
    screenshot(viewer, "search")

    # A malformed marker stops at the preview, with its line, and cannot be ingested.
    page.goto("/documents/upload/")
    page.get_by_label("Files").set_input_files(
        [{"name": "board.md", "mimeType": "text/markdown", "buffer": MALFORMED.encode()}])
    page.get_by_role("button", name="Preview").click()
    alert = page.locator("article.preview [role=alert]")
    alert.wait_for()
    assert "Line 4:" in alert.inner_text() and "malformed access marker" in alert.inner_text()
    assert page.get_by_role("button", name="Ingest").count() == 0
    assert list(Document.objects.all()) == [document]

    # A token minted for the viewer is shown once: not on the next visit, only its prefix.
    page.get_by_role("link", name="Members").click()
    page.get_by_role("link", name="API tokens").click()
    choose_member(page, "#id_membership", VIEWER)
    page.get_by_label("Name", exact=True).fill("reporting script")
    page.get_by_role("button", name="Create token").click()
    key = page.get_by_label("Key").input_value()
    token = ApiToken.objects.get()
    assert key.startswith(f"bkh_{token.prefix}_") and len(key) > len(token.prefix) + 20
    screenshot(page, "tokens")
    page.goto("/tokens/")
    assert page.locator("#new-token").count() == 0
    assert key not in page.content()
    assert f"bkh_{token.prefix}_…" in page.locator("#tokens").inner_text()


def test_the_session_cookie_is_secure_and_dies_with_sign_out(page, another_page, world):
    """Over http://localhost, as the demo over http://127.0.0.1: chromium keeps Secure cookies there."""
    sign_in(page, "admin@acme.test", PASSWORD)
    page.wait_for_selector("#stat-documents")
    cookies = {c["name"]: c for c in page.context.cookies()}
    session = cookies["sessionid"]
    assert session["secure"] and session["httpOnly"] and session["sameSite"] == "Lax"
    assert cookies["csrftoken"]["secure"]
    # The owner leaves the dashboard for a page that asks the server nothing by itself. The thief's visit below makes
    # the session remember the thief's CSRF token (console.membership: a request bearing a token other than the one
    # the session's tenant was entered with gets a new one), so the dashboard's next poll (every 2 s) would give the
    # owner a new token cookie, and the Sign out form shown before it would be refused (403): on a slow, loaded
    # machine the poll came between the thief's visit and the click. Here the owner asks nothing until the click.
    page.get_by_role("link", name="Documents").click()
    page.wait_for_selector("#documents-table")
    # The cookie alone is the session: a second browser with a copy of it is signed in ...
    thief = another_page()
    thief.context.add_cookies([session])
    thief.goto("/")
    assert thief.locator("#stat-documents").count() == 1
    # ... until the owner signs out, which ends the session on the server.
    page.get_by_role("button", name="Sign out").click()
    page.wait_for_url("**/sign-in/")
    thief.goto("/")
    assert "/sign-in/" in thief.url
    assert thief.locator("h1").inner_text() == "Sign in"


def test_the_admin_and_the_api_docs_still_work(page, browser, live_server, world):
    User.objects.create_superuser("root@acme.test", PASSWORD)
    # The admin under the console's policy: the page fixture fails on any violation.
    page.goto("/admin/login/")
    page.get_by_label("Email").fill("root@acme.test")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.get_by_role("heading", name="Site administration").wait_for()
    page.goto("/admin/accounts/user/")
    page.get_by_role("link", name="admin@acme.test").click()
    page.wait_for_selector("#user_form")
    # Swagger UI and Redoc (no policy: they need inline script and style). Redoc asks for web
    # fonts from elsewhere, refused here; the page must work without them.
    context = browser.new_context(base_url=live_server.url)
    context.set_default_timeout(TIMEOUT_MS)
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith(live_server.url)
                  else route.abort())
    docs = context.new_page()
    errors: list[str] = []
    docs.on("pageerror", lambda exc: errors.append(str(exc)))
    docs.goto("/api/docs/")
    docs.locator(".swagger-ui .opblock").first.wait_for()
    assert "Bulkhead API" in docs.locator(".swagger-ui .title").inner_text()
    docs.goto("/api/redoc/")
    docs.get_by_role("heading", name="Bulkhead API").first.wait_for()
    context.close()
    assert not errors
