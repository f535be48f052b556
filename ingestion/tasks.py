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
def ingest_documents(self, job_ids: list[str]) -> dict:
    from ingestion.services import jobs_run

    return jobs_run(job_ids, task_id=self.request.id)


@shared_task(name="ingestion.tasks.sweep_stuck_jobs", autoretry_for=TRANSIENT, max_retries=3)
def sweep_stuck_jobs() -> int:
    from ingestion.services import jobs_requeue_stuck

    return len(jobs_requeue_stuck())


def _warm_model() -> None:
    """Load the embedding model before the first task, so no job pays for it."""
    from ingestion.services import embedder

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
    the jobs stay ``queued`` in the database and the sweeper sends them again."""
    for i in range(0, len(job_ids), JOBS_PER_TASK):
        group = [str(j) for j in job_ids[i : i + JOBS_PER_TASK]]
        try:
            ingest_documents.delay(group)
        except Exception:  # broker down: the sweeper will retry
            logger.exception("could not enqueue ingestion jobs %s; the sweeper will re-send them", group)
