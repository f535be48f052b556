"""Ingestion jobs: creating them, sending them to the workers, recording progress, ending them.

Everything that starts ingestion (an upload, a policy change that re-derives chunks, an
index build, the sweeper) creates jobs here and sends them **by task name**, so this
module -- and the knowledge-base services that call it -- never import the pipeline
that runs them (``pipeline.tasks``). The pipeline, in turn, ends every job through
:func:`job_finish`, the one place where a job, its batch and an index build are closed.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence

from celery import current_app
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from accounts.models import Tenant, User
from kb.models import CONTENT_BY, Document, IndexVersion, IngestionJob
from kb.selectors import index_version_missing_documents

logger = logging.getLogger(__name__)

# The Celery task that runs document jobs (defined in pipeline/tasks.py).
INGEST_TASK = "pipeline.tasks.ingest_documents"
RESCREEN_TASK = "pipeline.tasks.rescreen_chunks"  # screens again the chunks marked stale (``pipeline.rescreen``)
# Documents per task: the model sees their chunks in shared batches.
JOBS_PER_TASK = 16
# Lanes: "interactive" (the default queue) and "bulk" (settings.BULKHEAD_BULK_QUEUE).
INTERACTIVE, BULK = "interactive", "bulk"
# Formats that inflate when parsed: their size counts this many times against the bulk threshold.
COMPRESSED_TYPES = {
    "application/pdf": 4,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": 4,
}
UNFINISHED = (IngestionJob.Status.QUEUED, IngestionJob.Status.RUNNING)


# ----------------------------------------------------------------------------- creating and sending


def job_create(
    *, tenant: Tenant, document: Document | None, created_by: User | None, cause: IngestionJob.Cause, **fields
) -> IngestionJob:
    """A job, and what started it (``cause``: every creator names it); a document job records who uploaded the bytes
    it will parse (its error may quote them)."""
    if cause not in IngestionJob.Cause.values:
        raise ValueError(f"not a job's cause: {cause!r}")
    if document is not None:
        fields["stats"] = {**fields.get("stats", {}), CONTENT_BY: document.metadata.get(CONTENT_BY)}
    return IngestionJob.objects.create(tenant=tenant, document=document, created_by=created_by, cause=cause, **fields)


def enqueue_after_commit(job_ids: Sequence[uuid.UUID | str], *, lane: str = "") -> None:
    """Send the jobs once the current transaction commits (never a job the database does not hold).
    ``lane=BULK``: every one on the bulk lane (background work such as a source's sync)."""
    ids = [str(j) for j in job_ids]
    if lane == BULK:
        transaction.on_commit(lambda: [_send(ids[i : i + JOBS_PER_TASK], BULK) for i in range(0, len(ids), JOBS_PER_TASK)])
    else:
        transaction.on_commit(lambda: enqueue_jobs(ids))


def job_tenant_ids(job_ids: Sequence[uuid.UUID | str]) -> dict[int, list[str]]:
    """The jobs grouped by tenant, before any tenant is set: a worker has only the ids the broker
    gave it. ``bulkhead_job_tenant`` (a SECURITY DEFINER function, migration ``kb/0006``) returns a
    job's tenant id and nothing else; the job itself is then read under the wall, as that tenant.
    Jobs that no longer exist are left out."""
    groups: dict[int, list[str]] = {}
    with connection.cursor() as cursor:  # one round trip for the task's jobs, in their order
        cursor.execute(
            "SELECT id::text, bulkhead_job_tenant(id) FROM unnest(%s::uuid[]) WITH ORDINALITY AS j(id, n) ORDER BY n",
            [[str(job_id) for job_id in job_ids]],
        )
        for job_id, tenant_id in cursor.fetchall():
            if tenant_id is not None:
                groups.setdefault(int(tenant_id), []).append(job_id)
    return groups


def enqueue_jobs(job_ids: Sequence[uuid.UUID | str]) -> None:
    """Send document jobs to the workers in groups. A failure to send is logged, not raised:
    the jobs stay ``queued`` in the database and the sweeper sends them again.

    Two lanes, so that one tenant's heavy work cannot hold up another tenant's small
    upload: a document over ``BULKHEAD_BULK_DOCUMENT_BYTES`` goes to the bulk lane in
    a task of its own, and so does every document of a call with more jobs than one
    task holds (a batch import, an index build, the sweeper's re-sends), in groups.
    The rest -- a few small uploads -- take the interactive lane, which a worker
    started with ``-Q celery`` serves alone.
    """
    ids = [str(j) for j in job_ids]
    heavy = _heavy_jobs(ids)
    batch = len(ids) > JOBS_PER_TASK
    light = [j for j in ids if j not in heavy]
    for job_id in ids:
        if job_id in heavy:
            _send([job_id], BULK)
    for i in range(0, len(light), JOBS_PER_TASK):
        _send(light[i : i + JOBS_PER_TASK], BULK if batch else INTERACTIVE)


def job_move_to_bulk(job: IngestionJob, reason: str) -> bool:
    """Hand a running job whose document costs more than the small-upload lane takes to the bulk lane.

    The small-upload lane found it out by pricing the document (``ingestion.costs``) or by its share of
    time (``BULKHEAD_PARSE_SECONDS_SMALL``), before it could hold that lane -- every tenant's -- for the
    whole parse limit. Not an attempt (attempts count workers that died on the document); the job
    waits queued, marked for the bulk lane (``stats["lane"]``, which the sweeper's re-sends keep) with
    the numbers in ``stats["moved_to_bulk"]``, and is sent there once this commits. False when the job
    was no longer running (deleted, or finished by someone else)."""
    with transaction.atomic():
        locked = IngestionJob.objects.select_for_update().filter(pk=job.pk, status=IngestionJob.Status.RUNNING).first()
        if locked is None:
            return False
        locked.attempts = max(locked.attempts - 1, 0)
        locked.status = IngestionJob.Status.QUEUED
        locked.stage = "queued"
        locked.heartbeat_at = timezone.now()  # the sweeper leaves it to the bulk lane's task
        locked.stats = {**locked.stats, "lane": BULK, "moved_to_bulk": reason[:500]}
        locked.save(update_fields=["attempts", "status", "stage", "heartbeat_at", "stats"])
        transaction.on_commit(lambda: _send([str(job.pk)], BULK))
    job.status, job.stage, job.stats = locked.status, locked.stage, locked.stats
    return True


def rescreen_after_commit(tenant_id: int) -> None:
    """Send the re-screen task for ``tenant_id`` once the current transaction commits (its stale chunks:
    ``screening_detector`` no longer ``pipeline.screen.SCREENED_BY``; its documents without chunks whose own record
    another made, ``pipeline.rescreen.chunkless_stale_documents``)."""

    def send() -> None:
        try:
            current_app.send_task(RESCREEN_TASK, args=[[tenant_id]])
        except Exception:  # broker down: a worker's start re-screens every stale chunk
            logger.exception("could not send the re-screen task of tenant %s", tenant_id)

    transaction.on_commit(send)


def _send(group: list[str], lane: str) -> None:
    try:
        current_app.send_task(INGEST_TASK, args=[group], kwargs={"lane": lane})
    except Exception:  # broker down: the sweeper will retry
        logger.exception("could not enqueue ingestion jobs %s; the sweeper will re-send them", group)


def _heavy_jobs(job_ids: list[str]) -> set[str]:
    """The jobs whose document is over the bulk threshold, or that the small-upload lane priced over its
    budget and moved (``job_move_to_bulk``); none when the database cannot be read."""
    threshold = settings.BULKHEAD_BULK_DOCUMENT_BYTES
    try:
        rows = IngestionJob.objects.filter(id__in=job_ids, document__isnull=False).values_list(
            "id", "document__size_bytes", "document__content_type", "stats__lane"
        )
        return {
            str(job_id)
            for job_id, size, content_type, lane in rows
            if lane == BULK
            or (size or 0) * COMPRESSED_TYPES.get((content_type or "").split(";")[0].strip().lower(), 1) > threshold
        }
    except Exception:  # the database is down: every job takes the interactive lane, none is lost
        logger.exception("could not read document sizes; sending jobs %s on the interactive lane", job_ids)
        return set()


def route_task(name, args, kwargs, options, task=None, **kw):
    """Celery router (settings.CELERY_TASK_ROUTES): bulk-lane ingestion tasks go to the bulk queue.

    Everything else takes the default queue.  A process that routes ingestion to a
    queue of its own (``bench.private_worker.routed_to``) replaces this router,
    so both lanes then go to that queue.
    """
    if name == INGEST_TASK and (kwargs or {}).get("lane") == BULK:
        return {"queue": settings.BULKHEAD_BULK_QUEUE}
    return None


# ----------------------------------------------------------------------------- progress and the end


def job_progress(
    job: IngestionJob, *, done: int | None = None, total: int | None = None, stage: str | None = None
) -> bool:
    """Record progress with one small UPDATE (autocommit), so any client can poll it. False when the
    job is gone (its document was deleted meanwhile): its work can stop."""
    fields: dict = {"heartbeat_at": timezone.now()}
    if stage is not None:
        fields["stage"] = job.stage = stage
    if total is not None:
        fields["total"] = job.total = total
    if done is not None:
        fields["done"] = job.done = min(done, job.total)
    return bool(IngestionJob.objects.filter(pk=job.pk).update(**fields))


def job_finish(job: IngestionJob, *, error: str = "") -> bool:
    """End a running job exactly once (failed when ``error``); count it into its batch, and
    close the batch -- and the index build it may be -- when it was the last one."""
    status = IngestionJob.Status.FAILED if error else IngestionJob.Status.SUCCEEDED
    with transaction.atomic():
        updated = IngestionJob.objects.filter(pk=job.pk, status=IngestionJob.Status.RUNNING).update(
            status=status, stage="done" if not error else "failed", error=error[:4000], finished_at=timezone.now(),
            stats=job.stats,
        )
        if updated and job.batch_id:
            IngestionJob.objects.filter(pk=job.batch_id).update(done=F("done") + 1, heartbeat_at=timezone.now())
            batch = IngestionJob.objects.select_for_update().get(pk=job.batch_id)
            if not batch_close_if_done(batch) and batch.status == IngestionJob.Status.QUEUED:
                IngestionJob.objects.filter(pk=batch.pk).update(
                    status=IngestionJob.Status.RUNNING, stage="ingesting", started_at=timezone.now()
                )
    return bool(updated)


def batch_close_if_done(batch: IngestionJob) -> bool:
    """Close an unfinished batch (or index build) whose children are all finished; True if it closed.
    The caller holds the batch row locked."""
    if batch.done < batch.total or batch.status not in UNFINISHED:
        return False
    failed = batch.children.filter(status=IngestionJob.Status.FAILED).count()
    batch.status = IngestionJob.Status.FAILED if failed else IngestionJob.Status.SUCCEEDED
    batch.error = f"{failed} of {batch.total} documents failed" if failed else ""
    batch.stage, batch.finished_at = "done", timezone.now()
    batch.save(update_fields=["status", "error", "stage", "finished_at"])
    if batch.kind == IngestionJob.Kind.REINDEX and batch.index_version_id:
        _index_build_finished(batch)
    return True


def _index_build_finished(batch: IngestionJob) -> None:
    """Set a shadow version's status when its build ends: ``ready`` when every child stored its
    chunks and the version covers every ready document; ``failed`` (incomplete) when a document
    failed or was skipped. The active version is maintained by ingestion; its status stays ready."""
    version = IndexVersion.objects.select_for_update().get(pk=batch.index_version_id)
    if version.is_active:
        return
    children = IngestionJob.objects.filter(batch=batch)
    incomplete = (
        children.filter(Q(status=IngestionJob.Status.FAILED) | Q(stats__has_key="skipped")).exists()
        or index_version_missing_documents(version=version).exists()
    )
    version.status = IndexVersion.Status.FAILED if incomplete else IndexVersion.Status.READY
    version.save(update_fields=["status"])
