"""Ingestion, stage 1: claiming a job (``pipeline.services.jobs_run`` runs the stages).

A job is taken under a row lock with a status guard, so a re-delivered task or a second worker is
harmless; a job ends here as failed or skipped when a later stage says so.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from kb.jobs import job_finish
from kb.models import Document, IndexVersion, IngestionJob

logger = logging.getLogger("pipeline.services")


def is_shadow(job: IngestionJob) -> bool:
    """A job that builds an explicitly chosen, non-active version (``kb_index build``)."""
    return job.index_version_id is not None and not IndexVersion.objects.filter(
        pk=job.index_version_id, is_active=True
    ).exists()


def lease() -> timedelta:
    return timedelta(seconds=settings.BULKHEAD_JOB_LEASE_SECONDS)


def job_claim(job_id: str | uuid.UUID, *, task_id: str | None) -> IngestionJob | None:
    """Take a job for this task, or None when it is finished or alive in another worker.

    A redelivery of the same task (same ``task_id``) may take it back at once; any
    other task only once the holder's heartbeat is older than the lease.
    """
    with transaction.atomic():
        job = IngestionJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status in (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED):
            return None
        if job.status == IngestionJob.Status.RUNNING:
            same_task = task_id is not None and job.stats.get("task_id") == task_id
            stale = job.heartbeat_at is None or timezone.now() - job.heartbeat_at > lease()
            if not (same_task or stale):
                return None
        now = timezone.now()
        job.status = IngestionJob.Status.RUNNING
        job.stage = "parsing"
        job.attempts += 1
        job.started_at = job.started_at or now
        job.heartbeat_at = now
        job.stats = {**job.stats, "task_id": task_id}
        job.save(update_fields=["status", "stage", "attempts", "started_at", "heartbeat_at", "stats"])
        if job.document_id and not is_shadow(job):  # a shadow build leaves the document's own state alone
            Document.objects.filter(pk=job.document_id, status=Document.Status.PENDING).update(
                status=Document.Status.PROCESSING
            )
        return job


def job_fail(job: IngestionJob, message: str) -> None:
    if job_finish(job, error=message) and job.document_id and not is_shadow(job):
        # The previous chunks (if any) stay untouched and keep serving.
        Document.objects.filter(pk=job.document_id).update(status=Document.Status.FAILED, error=message[:4000])
    logger.info("ingestion job %s failed: %s", job.pk, message)


def job_skip(job: IngestionJob, reason: str) -> None:
    # Finished (not failed): nothing is wrong with the document; the build reports it as skipped.
    job.stats = {**job.stats, "skipped": reason}
    job_finish(job)
    logger.info("index build job %s skipped document %s: %s", job.pk, job.document_id, reason)
