"""A costly document leaves the small-upload lane before it can hold it (issue 23, finding 3).

Found by the third attack on the demo: two 36 KB PDFs (a page tree naming one page object 4,999
times) took both small-upload workers for the two-minute parse limit; another tenant's 25-byte
upload then waited 57.8 s. The small-upload lane (``kb.jobs.INTERACTIVE``) now prices each document
against its own budget (``ingestion.costs``) and gives each step ``BULKHEAD_PARSE_SECONDS_SMALL``: a
document over either is handed to the bulk lane (not an attempt), and one over a document's budget
fails at once with its numbers.
"""

from __future__ import annotations

import pytest

from accounts.services import tenant_create
from bench.costly_documents import repeated_page_pdf
from kb.jobs import BULK, INTERACTIVE, _heavy_jobs
from kb.models import IngestionJob
from kb.services import Upload, document_create
from pipeline.services import jobs_run
from tests.ingestion_helpers import wait_for_jobs


def _upload(tenant, data: bytes, name: str = "report.pdf"):
    return document_create(tenant=tenant, created_by=None, upload=Upload(content=data, title=name, source=name))


@pytest.mark.django_db
def test_a_pdf_over_the_small_lanes_budget_is_handed_to_the_bulk_lane_before_it_is_read(unserved_queue):
    tenant = tenant_create(slug="lane-co", name="Lane Co")
    _, job = _upload(tenant, repeated_page_pdf(references=16))  # 36 KB: the small lane by its bytes
    assert str(job.pk) not in _heavy_jobs([str(job.pk)])
    jobs_run([job.pk], task_id="small-lane-task", lane=INTERACTIVE)
    job.refresh_from_db()
    assert (job.status, job.stage, job.attempts, job.error) == ("queued", "queued", 0, "")  # not an attempt
    assert job.stats["lane"] == BULK
    assert "16 page references to 1 page object" in job.stats["moved_to_bulk"]
    assert "the small-upload lane takes at most 2,097,152" in job.stats["moved_to_bulk"]
    # The sweeper's re-sends keep it on the bulk lane.
    assert str(job.pk) in _heavy_jobs([str(job.pk)])


@pytest.mark.django_db
def test_the_attack_pdf_fails_on_the_small_lane_at_once_with_its_numbers(unserved_queue):
    tenant = tenant_create(slug="attack-co", name="Attack Co")
    _, job = _upload(tenant, repeated_page_pdf())
    jobs_run([job.pk], task_id="small-lane-task", lane=INTERACTIVE)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error.startswith("this PDF has 684,468,079 bytes of page content to interpret (4,999 page "
                                "references to 1 page object; each reference is read); a document may have at most")


@pytest.mark.django_db
def test_a_parse_that_outlasts_the_small_lanes_share_of_time_moves_too(unserved_queue, settings):
    settings.BULKHEAD_PARSE_SECONDS_SMALL = 0.0001  # stands for a lane's share that a long parse outlasts
    # A document that takes a quarter of a second of CPU to parse (400 KB of Markdown, under the lane's budgets): a
    # tiny one finished within the 0.1 ms once, its result already waiting when a loaded machine let the caller look.
    content = "# Note\n\n" + "".join(f"## Part {i}\n\nCall the desk about item {i}; it answers within the hour.\n\n"
                                     for i in range(5000))
    tenant = tenant_create(slug="slow-co", name="Slow Co")
    _, job = document_create(tenant=tenant, created_by=None, upload=Upload(
        content=content.encode(), title="Note", content_type="text/markdown"))
    jobs_run([job.pk], task_id="small-lane-task", lane=INTERACTIVE)
    job.refresh_from_db()
    assert job.status == "queued" and job.stats["lane"] == BULK
    assert job.stats["moved_to_bulk"] == "it did not fit in the small-upload lane's 0.0001 s"


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_costly_pdf_moves_to_the_bulk_lane_and_is_read_there(celery_worker):
    # Through the real router and a real worker: the interactive task hands it on, the bulk task reads it.
    tenant = tenant_create(slug="moved-co", name="Moved Co")
    data = repeated_page_pdf(references=6, lines=20, drawing=20_000)  # 100 KB, 2.6 MB of drawing to interpret
    document, job = _upload(tenant, data)
    (job,) = wait_for_jobs([job.pk])
    assert job.status == "succeeded", job.error
    assert job.stats["lane"] == BULK and "6 page references to 1 page object" in job.stats["moved_to_bulk"]
    assert job.attempts == 1  # the move was not counted
    assert IngestionJob.objects.get(pk=job.pk).done == job.total > 0
    log = celery_worker.log_path.read_text()
    assert f"job {job.pk} moves to the bulk lane" in log
