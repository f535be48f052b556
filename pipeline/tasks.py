"""Celery tasks: thin, idempotent, retried only for transient failures."""

from __future__ import annotations

import logging
import os

from celery import shared_task
from celery.signals import worker_process_init, worker_ready
from django.conf import settings
from django.db import InterfaceError, OperationalError, connections
from kombu.exceptions import OperationalError as BrokerOperationalError

from ingestion import limits
from kb.embedder import embedder
from kb.jobs import INGEST_TASK, INTERACTIVE
from pipeline.services import jobs_interrupted, jobs_requeue_stuck, jobs_run

logger = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError, BrokerOperationalError, ConnectionError)


@shared_task(
    bind=True,
    name=INGEST_TASK,
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=TRANSIENT,
    retry_backoff=2,
    retry_backoff_max=120,
    retry_jitter=True,
    max_retries=8,
)
def ingest_documents(self, job_ids: list[str], lane: str = INTERACTIVE) -> dict:
    """Run document jobs. ``lane`` routes the task (see ``kb.jobs.route_task``), and on the small-upload lane
    holds each document to that lane's budget (``pipeline.services.plan_budget``): a costlier one moves on.

    On a transient failure the jobs are handed back before the retry (``jobs_interrupted``): a
    retry is not an attempt; when no retry is left they fail with the error."""
    try:
        return jobs_run(job_ids, task_id=self.request.id, lane=lane)
    except TRANSIENT as exc:
        jobs_interrupted(job_ids, task_id=self.request.id, error=exc,
                         final=self.request.retries >= self.max_retries)
        raise


@shared_task(name="pipeline.tasks.sweep_stuck_jobs", autoretry_for=TRANSIENT, max_retries=3)
def sweep_stuck_jobs() -> int:
    return len(jobs_requeue_stuck())


@shared_task(name="pipeline.tasks.rescreen_chunks", autoretry_for=TRANSIENT, retry_backoff=2, max_retries=5)
def rescreen_chunks(tenant_ids: list[int] | None = None) -> dict:
    """Re-screen chunks screened by another detector version, and the titles and heads of documents without chunks
    likewise (``pipeline.rescreen``); no re-embedding.
    Sent at worker start and by ``manage.py kb_rescreen``; a run with nothing stale does nothing."""
    from pipeline.rescreen import rescreen

    return rescreen(tenant_ids=tenant_ids)


def _send_rescreen() -> None:
    """At worker start: queue the re-screen of what an older detector version screened (best effort).

    Its connection is closed after: a prefork worker's main process runs no task, so nothing else would close it
    (Celery's Django fixup closes connections around tasks), and it kept an idle owner-role session for its life."""
    if not settings.BULKHEAD_RESCREEN_AT_WORKER_START:
        return
    try:
        from pipeline.rescreen import stale_tenant_ids

        stale = stale_tenant_ids()
        if stale:
            rescreen_chunks.delay(stale)
    except Exception:  # noqa: BLE001 - the next start (or kb_rescreen) tries again
        logger.exception("could not queue the re-screen of stale chunks at worker start")
    finally:
        connections.close_all()


def _warm_model() -> None:
    """Start the parse server and load the embedding model before the first task, so no job pays for them."""
    try:
        limits.warm()  # a subprocess: it loads the parsers while this process loads the model
    except Exception:  # the first document starts it again, or fails with the reason
        logger.exception("could not start the parse server at worker start")
    try:
        embedder().embed(["warm-up"])
    except Exception:  # a broken model shows up, with its error, in the first job instead
        logger.exception("could not load the embedding model at worker start")


_niced = False


def _yield_cpu_to_searches() -> None:
    """Ingestion runs below the web process's priority (BULKHEAD_WORKER_NICE); its children inherit it.
    Once per process: the solo pool sends both signals below."""
    global _niced
    if settings.BULKHEAD_WORKER_NICE > 0 and not _niced:
        os.nice(settings.BULKHEAD_WORKER_NICE)
        _niced = True


@worker_process_init.connect
def _warm_pool_child(**kwargs) -> None:
    _yield_cpu_to_searches()
    _warm_model()  # prefork: each child process has its own model


@worker_ready.connect
def _warm_in_process_pool(sender=None, **kwargs) -> None:
    _send_rescreen()
    pool = getattr(sender, "pool", None)
    if pool is not None and type(pool).__module__.endswith(("solo", "thread")):
        _yield_cpu_to_searches()
        _warm_model()  # solo/threads: tasks run in this very process
