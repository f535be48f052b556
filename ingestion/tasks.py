"""Celery tasks: thin, idempotent, retried only for transient failures."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from celery import shared_task
from celery.signals import worker_process_init, worker_ready
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError

logger = logging.getLogger(__name__)

# Documents per task: the model sees their chunks in shared batches.
JOBS_PER_TASK = 16
TRANSIENT = (OperationalError, InterfaceError, BrokerOperationalError, ConnectionError)
TASK = "ingestion.tasks.ingest_documents"
# Lanes: "interactive" (the default queue) and "bulk" (settings.BULKHEAD_BULK_QUEUE).
INTERACTIVE, BULK = "interactive", "bulk"
# Formats that inflate when parsed: their size counts this many times against the bulk threshold.
COMPRESSED_TYPES = {
    "application/pdf": 4,
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": 4,
}


@shared_task(
    bind=True,
    name="ingestion.tasks.ingest_documents",
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=8,
)
def ingest_documents(self, job_ids: list[str], lane: str = INTERACTIVE) -> dict:
    """Run document jobs. ``lane`` only routes the task (see :func:`route_task`)."""
    from ingestion.services import jobs_run

    return jobs_run(job_ids, task_id=self.request.id)


def route_task(name, args, kwargs, options, task=None, **kw):
    """Celery router (settings.CELERY_TASK_ROUTES): bulk-lane ingestion tasks go to the bulk queue.

    Everything else takes the default queue.  A process that routes ingestion to a
    queue of its own (``ingestion.private_worker.routed_to``) replaces this router,
    so both lanes then go to that queue.
    """
    if name == TASK and (kwargs or {}).get("lane") == BULK:
        from django.conf import settings

        return {"queue": settings.BULKHEAD_BULK_QUEUE}
    return None


@shared_task(name="ingestion.tasks.sweep_stuck_jobs", autoretry_for=TRANSIENT, max_retries=3)
def sweep_stuck_jobs() -> int:
    from ingestion.services import jobs_requeue_stuck

    return len(jobs_requeue_stuck())


def _warm_model() -> None:
    """Start the parse server and load the embedding model before the first task, so no job pays for them."""
    from ingestion import limits
    from ingestion.services import embedder

    try:
        limits.warm()  # a subprocess: it loads the parsers while this process loads the model
    except Exception:  # the first document starts it again, or fails with the reason
        logger.exception("could not start the parse server at worker start")
    try:
        embedder().embed(["warm-up"])
    except Exception:  # a broken model shows up, with its error, in the first job instead
        logger.exception("could not load the embedding model at worker start")


@worker_process_init.connect
def _warm_pool_child(**kwargs) -> None:
    _warm_model()  # prefork: each child process has its own model


@worker_ready.connect
def _warm_in_process_pool(sender=None, **kwargs) -> None:
    pool = getattr(sender, "pool", None)
    if pool is not None and type(pool).__module__.endswith(("solo", "thread")):
        _warm_model()  # solo/threads: tasks run in this very process


def enqueue_jobs(job_ids: Sequence[str]) -> None:
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


def _send(group: list[str], lane: str) -> None:
    try:
        ingest_documents.apply_async(args=[group], kwargs={"lane": lane})
    except Exception:  # broker down: the sweeper will retry
        logger.exception("could not enqueue ingestion jobs %s; the sweeper will re-send them", group)


def _heavy_jobs(job_ids: list[str]) -> set[str]:
    """The jobs whose document is over the bulk threshold (none when the sizes cannot be read)."""
    from django.conf import settings

    from kb.models import IngestionJob

    threshold = settings.BULKHEAD_BULK_DOCUMENT_BYTES
    try:
        rows = IngestionJob.objects.filter(id__in=job_ids, document__isnull=False).values_list(
            "id", "document__size_bytes", "document__content_type"
        )
        return {
            str(job_id)
            for job_id, size, content_type in rows
            if (size or 0) * COMPRESSED_TYPES.get((content_type or "").split(";")[0].strip().lower(), 1) > threshold
        }
    except Exception:  # the database is down: every job takes the interactive lane, none is lost
        logger.exception("could not read document sizes; sending jobs %s on the interactive lane", job_ids)
        return set()
