"""A source's documents in a real browser (eighteenth session): an admin on a synced document's page detaches it from
its source -- a confirmation that says the document stays and stops following the source, then a message -- and the
next sync leaves its path alone; the source's page lists the detached path, and Re-attach takes it back. A viewer is
offered no such button. A real sync on a real worker makes the document."""

from __future__ import annotations

import pytest

from audit.models import Action, AuditEvent
from kb.models import Document
from sources.models import SourceDetached, SourceItem
from sources.services import source_create
from tests.browser.conftest import PASSWORD, sign_in
from tests.sources_helpers import new_folder, sync_now, write

pytestmark = pytest.mark.browser

PLANS = "# Plans\n\nThe walrus budget doubles next spring.\n"


@pytest.fixture
def world(acme):
    tenant, admin = acme["tenant"], acme["admin"]
    root = new_folder(tenant, "browser18-")
    write(root, {"plans.md": PLANS, "open.md": "# Open\n\nThe lighthouse keeper waves.\n"})
    source = source_create(actor=admin, tenant=tenant, kind="folder", name="handbook", path=str(root),
                           access_level="internal")
    return {**acme, "root": root, "source": source}


@pytest.mark.worker
def test_an_admin_detaches_a_synced_document_from_its_page_and_reattaches_it(page, another_page, world,
                                                                              celery_worker):
    admin, source, root = world["admin"], world["source"], world["root"]
    sync = sync_now(admin, source)
    assert (sync.status, sync.added) == ("succeeded", 2), (sync.error, sync.errors)
    plans = Document.objects.get(tenant=world["tenant"], source="plans.md")

    # A viewer reading the document is offered nothing of the kind.
    viewer = another_page()
    sign_in(viewer, "viewer@acme.test", PASSWORD)
    viewer.goto(f"/documents/{plans.pk}/")
    viewer.locator("#document-title").wait_for()
    assert viewer.get_by_role("link", name="Detach from its source…").count() == 0

    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto(f"/documents/{plans.pk}/")
    assert "handbook" in page.locator("#synced-from").inner_text()
    page.get_by_role("link", name="Detach from its source…").click()

    # The confirmation says what happens, and "Keep it synced" changes nothing.
    confirm = page.locator("#detach-confirm")
    confirm.get_by_role("heading").wait_for()
    said = " ".join(confirm.inner_text().split())
    assert "The document stays" in said and "It stops following the source handbook" in said, said
    assert "skip its path until an admin re-attaches it" in said, said
    page.get_by_role("link", name="Keep it synced").click()
    page.locator("#synced-from").wait_for()
    assert not SourceDetached.objects.exists()
    page.get_by_role("link", name="Detach from its source…").click()
    page.get_by_role("button", name="Detach from the source").click()

    # Back on the document, with a message; the button is gone; the path is a tombstone, audited as the API's detach.
    message = page.get_by_role("status").filter(has_text="was detached from the source handbook")
    message.wait_for()
    assert page.url.endswith(f"/documents/{plans.pk}/")
    assert page.get_by_role("link", name="Detach from its source…").count() == 0
    assert list(SourceDetached.objects.values_list("path", "document_id")) == [("plans.md", plans.pk)]
    event = AuditEvent.objects.get(action=Action.SOURCE_DETACH)
    assert (event.membership_id, event.target_id, event.document_ids) == (admin.pk, str(source.pk), [plans.pk])

    # The next sync, of an edited file, leaves the detached document as it is.
    write(root, {"plans.md": PLANS + "\nThe narwhal fund too.\n"})
    sync = sync_now(admin, source)
    assert (sync.status, sync.added, sync.skipped) == ("succeeded", 0, 1), (sync.errors, sync.skips)
    plans.refresh_from_db()
    assert "walrus" in plans.text and "narwhal" not in plans.text and "source_id" not in plans.metadata

    # The source's page lists the path; Re-attach makes the document the source's again.
    page.get_by_role("link", name="Sources").first.click()
    page.get_by_role("link", name="handbook").click()
    row = page.locator("#detached-paths tbody tr").filter(has_text="plans.md")
    row.get_by_role("button", name="Re-attach").click()
    page.get_by_role("status").filter(has_text="plans.md follows the source again").wait_for()
    assert not SourceDetached.objects.exists()
    assert SourceItem.objects.get(source=source, path="plans.md").document_id == plans.pk
    page.goto(f"/documents/{plans.pk}/")
    page.get_by_role("link", name="Detach from its source…").wait_for()


def test_the_source_pages_detached_paths_a_page_at_a_time(page, world):
    """Twentieth session: the table of detached paths is paged as the console's other lists (``?page=``, the
    pager's Previous and Next), newest first; a path on the second page is re-attached from there."""
    from accounts.policy import AccessLevel
    from sources.selectors import DETACHED_PAGE

    tenant, source = world["tenant"], world["source"]
    paths = [f"old/p{n:03}.md" for n in range(DETACHED_PAGE + 5)]
    for path in paths:
        SourceDetached.objects.create(tenant=tenant, source=source, path=path, access_level=AccessLevel.INTERNAL)

    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto(f"/sources/{source.pk}/")
    rows = page.locator("#detached-paths tbody tr")
    assert rows.count() == DETACHED_PAGE and rows.first.inner_text().startswith(paths[-1])
    assert f"page 1 of 2 · {len(paths)} detached paths" in page.locator(".pager").inner_text()
    page.get_by_role("link", name="Next →").click()
    page.get_by_role("link", name="← Previous").wait_for()
    seen = [r.split()[0] for r in rows.all_inner_texts()]
    assert seen == paths[4::-1], seen  # the oldest five, newest first
    rows.filter(has_text=paths[0]).get_by_role("button", name="Re-attach").click()
    page.get_by_role("status").filter(has_text=f"{paths[0]} follows the source again").wait_for()
    assert not SourceDetached.objects.filter(path=paths[0]).exists()
    assert SourceDetached.objects.count() == len(paths) - 1
