"""The per-document budget through a real worker: a document over it fails with a clear message,
and the worker lives on to ingest the next one.
"""

from __future__ import annotations

import re

import pytest

from accounts.services import tenant_create
from bench.private_worker import routed_to
from kb.models import Document
from kb.services import Upload, document_create
from tests.ingestion.test_limits import _inflating_docx
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
]

QUEUE = "parse-budget-test"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def test_a_document_over_the_memory_budget_fails_and_the_worker_carries_on(worker_factory):
    with routed_to(QUEUE):
        worker = worker_factory("budget", extra_env={"BULKHEAD_PARSE_MEMORY_MB": "400"}, queues=QUEUE)
        tenant = tenant_create(slug="budget-co", name="Budget Co")
        big, big_job = document_create(
            tenant=tenant, created_by=None,
            upload=Upload(content=_inflating_docx(90_000), title="Big", source="big.docx", content_type=DOCX),
        )
        small, small_job = document_create(
            tenant=tenant, created_by=None,
            upload=Upload(content=b"# Note\n\nCall the desk.\n", title="Note", content_type="text/markdown"),
        )
        big_job, small_job = wait_for_jobs([big_job.id, small_job.id])
    assert big_job.status == "failed"
    assert big_job.error == "document exceeded the parse memory limit of 400 MB"
    assert Document.objects.get(pk=big.pk).status == "failed"
    assert small_job.status == "succeeded", small_job.error
    assert worker.process.poll() is None  # the worker itself never ran out of memory


def _rows_csv(rows: int, start: int = 0) -> bytes:
    return ("n\n" + "".join(f"{start + i}\n" for i in range(rows))).encode()


def test_a_small_document_that_makes_too_many_chunks_fails_before_embedding(worker_factory):
    """Every CSV row is a chunk: a 1 MB CSV of one number a row made 164,444 chunks and held a
    small-upload worker (every tenant's lane) for half an hour (found by an attack)."""
    from kb.models import Chunk, EmbeddingCacheEntry

    with routed_to("chunk-limit-test"):  # workers live for the session: each test has a queue of its own
        worker_factory("chunk-limit", extra_env={"BULKHEAD_MAX_CHUNKS_SMALL": "50"}, queues="chunk-limit-test")
        tenant = tenant_create(slug="rows-co", name="Rows Co")
        many, many_job = document_create(tenant=tenant, created_by=None, upload=Upload(
            content=_rows_csv(200), title="Rows", source="rows.csv", content_type="text/csv"))
        few, few_job = document_create(tenant=tenant, created_by=None, upload=Upload(
            content=_rows_csv(20), title="Few rows", source="few.csv", content_type="text/csv"))
        many_job, few_job = wait_for_jobs([many_job.id, few_job.id])
    assert many_job.status == "failed"
    assert re.fullmatch(r"the document makes 2\d\d chunks, more than the 50 a small document may make: "
                        r"split it into several documents", many_job.error), many_job.error
    assert few_job.status == "succeeded", few_job.error
    stored = Chunk.objects.filter(document=few).count()
    assert 20 <= stored <= 50 and EmbeddingCacheEntry.objects.filter(tenant=tenant).count() == stored  # none of many


def test_deleting_a_document_stops_its_embedding(celery_worker):
    """After DELETE the job of a big document went on embedding every chunk (found by an attack). The session's
    worker serves both lanes, one task at a time, and needs no setting of its own here: no worker of the test's own
    (a worker's start is five CPU-seconds)."""
    import time

    from kb.models import EmbeddingCacheEntry, IngestionJob
    from kb.services import document_delete

    rows = 4000
    tenant = tenant_create(slug="stop-co", name="Stop Co")
    big, big_job = document_create(tenant=tenant, created_by=None, upload=Upload(
        content=_rows_csv(rows, start=10_000_000), title="Rows", source="rows.csv", content_type="text/csv"))
    while not IngestionJob.objects.filter(pk=big_job.pk, stage="embedding", done__gt=0).exists():
        assert IngestionJob.objects.filter(pk=big_job.pk, status__in=["queued", "running"]).exists()
        time.sleep(0.05)  # polling for a state, not timing anything
    document_delete(document=big)
    # The worker takes one task at a time: once the next one has run, the first has ended.
    _, after_job = document_create(tenant=tenant, created_by=None, upload=Upload(
        content=b"# Note\n\nCall the desk.\n", title="Note", content_type="text/markdown"))
    (after_job,) = wait_for_jobs([after_job.id])
    assert after_job.status == "succeeded", after_job.error
    embedded = EmbeddingCacheEntry.objects.filter(tenant=tenant).count()
    assert 0 < embedded < rows / 2, embedded
