"""A transient failure (database or broker unavailable, disk full) is retried without using up attempts.

Found by the load harness's disk-full scenario (``kb_bench load``, docs/reliability.md): the
database's volume was full for 16 s, each retry of the ingestion task claimed its jobs again, and
every claim counted as an attempt, so two innocent documents ended ``failed`` with "gave up after 3
attempts: the worker stopped ... each time" -- a wrong reason, and a document lost to a passing
outage. Attempts bound workers that *die* on a document; a retry after a handled error hands the
job back. When the task has no retry left, the job fails naming the real error.

The task body runs in this process (called directly, as Celery's autoretry would call it again); the
failure is a real ``OperationalError`` class raised where the pipeline embeds.
"""

from __future__ import annotations

import pytest
from django.db import OperationalError

from accounts.services import tenant_create
from kb.models import Document, IngestionJob
from kb.services import Upload, batch_create
from pipeline import services as pipeline_services
from pipeline.tasks import ingest_documents

pytestmark = pytest.mark.django_db(transaction=True)

DISK_FULL = 'could not extend file "base/16384/2619": No space left on device'


def _jobs(slug: str) -> list[IngestionJob]:
    tenant = tenant_create(slug=slug, name=slug)
    uploads = [Upload(content=f"# Note {i}\n\nCall desk {i}.\n".encode(), title=f"Note {i}", source=f"n{i}.md",
                      content_type="text/markdown") for i in range(2)]
    batch = batch_create(tenant=tenant, created_by=None, uploads=uploads)
    return list(IngestionJob.objects.filter(batch=batch).order_by("document__source"))


def test_retries_after_a_full_disk_do_not_use_up_attempts(unserved_queue, monkeypatch, settings):
    jobs = _jobs("transient-retry")
    ids = [str(j.pk) for j in jobs]
    real_embed = pipeline_services.embed_plans

    def disk_full(plans):
        raise OperationalError(DISK_FULL)

    monkeypatch.setattr(pipeline_services, "embed_plans", disk_full)
    for _ in range(settings.BULKHEAD_JOB_MAX_ATTEMPTS + 2):  # more tries than a dying worker gets
        with pytest.raises(OperationalError):
            ingest_documents(ids)
        for job in jobs:
            job.refresh_from_db()
            assert (job.status, job.attempts) == ("queued", 0), (job.status, job.attempts, job.error)
            assert "No space left on device" in job.stats["last_error"]

    monkeypatch.setattr(pipeline_services, "embed_plans", real_embed)  # the disk has room again
    ingest_documents(ids)
    for job in jobs:
        job.refresh_from_db()
        assert job.status == "succeeded", (job.status, job.attempts, job.error)
        assert Document.objects.get(pk=job.document_id).status == "ready"


def test_the_last_retry_fails_the_jobs_with_the_real_error(unserved_queue, monkeypatch):
    jobs = _jobs("transient-final")

    def disk_full(plans):
        raise OperationalError(DISK_FULL)

    monkeypatch.setattr(pipeline_services, "embed_plans", disk_full)
    monkeypatch.setattr(ingest_documents, "max_retries", 0)  # this call is the last try
    with pytest.raises(OperationalError):
        ingest_documents([str(j.pk) for j in jobs])
    for job in jobs:
        job.refresh_from_db()
        assert job.status == "failed"
        assert "No space left on device" in job.error and "worker stopped" not in job.error, job.error
        assert Document.objects.get(pk=job.document_id).status == "failed"
