"""Jobs in a real browser: the list with filters and pages, a job's live progress, a failed job's
error with its line, and Retry (a real worker runs the retried document to the end)."""

from __future__ import annotations

import re

import pytest

from accounts.services import group_create
from kb.models import IngestionJob
from kb.services import Upload, document_create
from tests import factories
from tests.browser.conftest import JOB_TIMEOUT_MS, PASSWORD, console_member, sign_in
from tests.ingestion_helpers import wait_for_jobs

pytestmark = pytest.mark.browser

UNKNOWN_GROUP = "# Handbook\nHello.\n\n## Payroll <!-- access: confidential; groups: payroll -->\nSalaries.\n"




@pytest.fixture
def world(acme):
    return {**acme, "editor": console_member(acme["tenant"], "editor@acme.test", "editor", "confidential")}


def _job(world, **fields) -> IngestionJob:
    fields = {"tenant": world["tenant"], "created_by": world["admin"].user, **fields}
    return IngestionJob.objects.create(**fields)


@pytest.mark.worker
def test_a_failed_job_shows_its_error_with_the_line_and_retry_runs_it_again(page, world, celery_worker):
    upload = Upload(content=UNKNOWN_GROUP.encode(), title="Handbook", content_type="text/markdown")
    _, job = document_create(tenant=world["tenant"], created_by=world["editor"], upload=upload)
    (job,) = wait_for_jobs([job.id])
    assert job.status == "failed"

    sign_in(page, "editor@acme.test", PASSWORD)
    page.goto("/jobs/")
    page.get_by_role("link", name=str(job.id)[:8]).click()
    assert page.locator("#job-error").inner_text() == "unknown group payroll (line 4)"
    assert page.locator("#job-progress").get_attribute("hx-trigger") is None  # finished: nothing to poll

    group_create(tenant=world["tenant"], slug="payroll")  # what failed it, fixed outside the file
    page.get_by_role("button", name="Retry").click()
    page.wait_for_url(re.compile(rf"/jobs/(?!{job.pk}/)[0-9a-f-]+/$"))  # the retry's page, not the one it leaves
    page.wait_for_selector("#job-progress")
    retry = IngestionJob.objects.exclude(pk=job.pk).get()
    assert page.url.endswith(f"/jobs/{retry.pk}/")
    assert retry.stats.get("retry_of") == str(job.pk) and retry.created_by_id == world["editor"].user_id
    assert "a retry of" in page.locator("main").inner_text()
    page.wait_for_selector("#job-progress[data-status=succeeded]", timeout=JOB_TIMEOUT_MS)
    assert page.get_by_role("button", name="Retry").count() == 0
    assert IngestionJob.objects.count() == 2


def test_a_viewer_sees_the_error_without_document_text_and_no_retry(page, world):
    document = factories.document(world["tenant"], title="Handbook", text="Hello.", status="failed")
    error = "line 4: marker 'access: public' would widen access from 'internal' -- markers can only narrow"
    job = _job(world, document=document, status="failed", stage="failed", error=error)
    sign_in(page, "viewer@acme.test", PASSWORD)
    page.goto(f"/jobs/{job.pk}/")
    shown = page.locator("#job-error").inner_text()
    assert shown.startswith("line 4: marker '…' would widen access")
    assert "access: public" not in shown
    assert page.get_by_role("button", name="Retry").count() == 0
    # The retry URL refuses them too, and makes no job.
    csrf = page.locator("input[name=csrfmiddlewaretoken]").first.input_value()
    page.request.post(f"/jobs/{job.pk}/retry/", form={"csrfmiddlewaretoken": csrf}, headers={"Referer": page.url})
    assert IngestionJob.objects.count() == 1


def test_a_batch_shows_its_documents_and_updates_without_reloading(page, world):
    tenant = world["tenant"]
    batch = _job(world, kind="batch", status="running", stage="ingesting", total=2, done=1)
    first = factories.document(tenant, title="First")
    second = factories.document(tenant, title="Second")
    _job(world, document=first, batch=batch, status="succeeded", stage="done", total=3, done=3)
    running = _job(world, document=second, batch=batch, status="running", stage="embedding", total=4, done=1)
    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto(f"/jobs/{batch.pk}/")
    children = page.locator("#job-children tbody tr")
    assert children.count() == 2
    assert "First" in children.nth(0).inner_text() and "3/3" in children.nth(0).inner_text()
    assert "embedding" in children.nth(1).inner_text() and "1/4" in children.nth(1).inner_text()
    page.evaluate("() => { window.notReloaded = true; }")

    IngestionJob.objects.filter(pk=running.pk).update(stage="storing", done=4)
    page.wait_for_selector("#job-children tbody tr >> text=4/4")  # polled, not reloaded
    IngestionJob.objects.filter(pk=running.pk).update(status="succeeded", stage="done")
    IngestionJob.objects.filter(pk=batch.pk).update(status="succeeded", stage="done", done=2)
    page.wait_for_selector("#job-progress[data-status=succeeded]")
    assert page.locator("#job-count").inner_text() == "2/2"
    assert page.evaluate("() => window.notReloaded") is True
    assert page.locator("#job-progress").get_attribute("hx-trigger") is None  # polling stopped


def test_the_list_filters_and_pages(page, world):
    document = factories.document(world["tenant"], title="Handbook")
    for i in range(30):
        _job(world, document=document, status="failed" if i % 3 == 0 else "succeeded", stage="done")
    _job(world, kind="batch", status="succeeded", stage="done")
    sign_in(page, "admin@acme.test", PASSWORD)
    page.goto("/jobs/")
    assert page.locator("#jobs tbody tr").count() == 25
    assert "31 jobs" in page.locator(".pager").inner_text()
    page.locator("#next-page").click()
    page.wait_for_url("**page=2**")
    assert page.locator("#jobs tbody tr").count() == 6
    page.goto("/jobs/")
    page.get_by_label("Status").select_option("failed")
    page.wait_for_selector("text=10 jobs")
    assert page.locator("#jobs tbody tr").count() == 10
    assert set(page.locator("#jobs .badge").all_inner_texts()) == {"failed"}
    assert "status=failed" in page.url  # the filter is in the address: a reload keeps it
    page.get_by_label("Kind").select_option("batch")
    page.wait_for_selector("#no-jobs")
