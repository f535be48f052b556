"""The ingestion pipeline: claim -> plan -> embed -> screen -> store, for one or many document jobs.

This module runs the stages (:func:`jobs_run`) and hands jobs back or re-sends them
(:func:`jobs_interrupted`, :func:`jobs_requeue_stuck`); each stage is its own module:

* ``pipeline.claim``: :func:`job_claim` under a row lock with a status guard, so a re-delivered task or a
  second worker is harmless; ending a job as failed or skipped;
* ``pipeline.plan``: :func:`plan_content` (parse, resolve policies, the document's access view, chunk;
  reads only -- the upload preview runs it too) and its budget (:class:`PlanBudget`);
* ``pipeline.embed``: :func:`embed_plans`, with the cache and its scope rule in ``EmbeddingCache``;
* ``pipeline.screen``: every chunk screened once (``ingestion.screening``);
* ``pipeline.store``: every write that readers can see, in one transaction per document (the old chunks
  serve until the new set commits), with the policies re-checked under row locks.

Errors that will not go away on retry (a corrupt file, a bad access marker) end the job as ``failed``;
database/broker hiccups propagate for the task to retry. The stages' public names other packages use
are importable from here too (``pipeline.services.plan_content``, the exceptions).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from accounts.errors import ApplicationError
from accounts.tenancy import owner_path, tenant_activate
from kb.jobs import enqueue_jobs, job_finish, job_move_to_bulk, job_progress, job_tenant_ids
from kb.models import IngestionJob
from pipeline.claim import job_claim, job_fail, job_skip, lease
from pipeline.embed import EMBED_BATCH, EmbeddingCache, embed_plans
from pipeline.plan import (
    BULK_NICE,
    BuildSkipped,
    OverLane,
    Plan,
    PlanBudget,
    TerminalIngestionError,
    lane_budget,
    plan_budget,
    plan_content,
    plan_job,
)
from pipeline.screen import screen_plans, screening_fields
from pipeline.store import PolicyChanged, finish_if_unchanged, store_plan

logger = logging.getLogger(__name__)

__all__ = [
    "BULK_NICE", "EMBED_BATCH", "BuildSkipped", "EmbeddingCache", "OverLane", "Plan", "PlanBudget", "PolicyChanged",
    "TerminalIngestionError", "embed_plans", "job_claim", "jobs_interrupted", "jobs_requeue_stuck",
    "jobs_run", "lane_budget", "plan_budget", "plan_content", "screening_fields",
]


_TOTALS = ("chunks", "cache_hits", "embedded", "model_calls")  # what jobs_run returns, summed over its jobs
REPLANS = 3  # a document whose policies keep changing while it is stored is planned at most this often more


def _plan_or_finish(job: IngestionJob, lane: str | None = None) -> Plan | None:
    """Plan a claimed job, or end it (failed, skipped, or handed to the bulk lane) and return None."""
    try:
        plan = plan_job(job, lane)
    except (TerminalIngestionError, ApplicationError) as exc:
        job_fail(job, str(exc))
        return None
    except OverLane as exc:
        # Before the small-upload lane reads it for its whole budget: the bulk lane takes it.
        job_move_to_bulk(job, str(exc))
        logger.info("job %s moves to the bulk lane: %s", job.pk, exc)
        return None
    except BuildSkipped as exc:
        job_skip(job, str(exc))
        return None
    except (OperationalError, InterfaceError):
        raise  # the database or broker: the task retries
    except Exception:  # a bug or an input no check foresaw: never leave the job running forever
        logger.exception("ingestion job %s failed unexpectedly while planning", job.pk)
        job_fail(job, f"internal error while reading this document (reference {job.pk}); it has been logged")
        return None
    job_progress(job, total=len(plan.chunks), done=0, stage="chunking")
    return plan


def jobs_run(job_ids: Sequence[str | uuid.UUID], *, task_id: str | None = None, lane: str | None = None) -> dict:
    """Run document jobs; the model sees chunks of all of them in shared batches.

    Returns stats (chunks, cache hits, texts embedded, model calls) for tests and benchmarks;
    each job's own stats count only its own document.

    A task holding a job that was attempted before -- delivered again because its worker died, or
    re-sent by the sweeper -- runs its jobs one at a time, each claimed just before it runs: the
    document that killed the worker may be among them, and claiming them all up front would count
    an attempt for every neighbour each time it kills the worker again, until they all failed with
    it (other tenants' jobs too: the sweeper's re-sends mix tenants).

    The jobs run tenant by tenant, each group acting for its tenant (``accounts.tenancy``): the
    worker learns a job's tenant from its id alone (``kb.jobs.job_tenant_ids``).

    On the small-upload lane (``lane=kb.jobs.INTERACTIVE``) a document is planned under the lane's
    budget (:func:`plan_budget`); one that costs more is handed to the bulk lane (``kb.jobs.job_move_to_bulk``).
    """
    totals = dict.fromkeys(_TOTALS, 0)
    for tenant_id, ids in job_tenant_ids(job_ids).items():
        tenant_activate(tenant_id)
        stats = _jobs_run_in_tenant(ids, task_id=task_id, lane=lane)
        totals = {k: totals[k] + stats[k] for k in totals}
    return totals


def _jobs_run_in_tenant(job_ids: Sequence[str | uuid.UUID], *, task_id: str | None, lane: str | None) -> dict:
    if len(job_ids) > 1 and IngestionJob.objects.filter(id__in=list(job_ids), attempts__gt=0).exists():
        totals = dict.fromkeys(_TOTALS, 0)
        for job_id in job_ids:
            stats = _jobs_run([job_id], task_id=task_id, lane=lane)
            totals = {k: totals[k] + stats[k] for k in totals}
        return totals
    return _jobs_run(job_ids, task_id=task_id, lane=lane)


def _jobs_run(job_ids: Sequence[str | uuid.UUID], *, task_id: str | None, lane: str | None = None) -> dict:
    plans: list[Plan] = []
    for job_id in job_ids:
        job = job_claim(job_id, task_id=task_id)
        if job is None:
            continue
        if job.attempts > settings.BULKHEAD_JOB_MAX_ATTEMPTS:
            job_fail(job, f"gave up after {job.attempts - 1} attempts: the worker stopped (crashed, was killed or "
                       "ran out of time or memory) each time it ingested this document")
            continue
        if finish_if_unchanged(job):
            continue
        plan = _plan_or_finish(job, lane)
        if plan is not None:
            plans.append(plan)
    totals = dict.fromkeys(_TOTALS, 0)
    for attempt in range(REPLANS + 1):
        if not plans:
            break
        stats = embed_plans(plans)
        totals = {k: totals[k] + stats[k] for k in totals}
        screen_plans(plans)
        stale: list[IngestionJob] = []
        for plan in plans:
            try:
                store_plan(plan)
            except BuildSkipped as exc:
                job_skip(plan.job, str(exc))
                continue
            except PolicyChanged as exc:
                if attempt == REPLANS:
                    job_fail(plan.job, f"{exc}, again and again; ingest it again")
                else:
                    logger.info("job %s: %s; planning it again", plan.job.pk, exc)
                    stale.append(plan.job)
                continue
            plan.job.stats = {**plan.job.stats, **plan.stats, "document_chunks": len(plan.chunks)}
            job_progress(plan.job, done=len(plan.chunks))
            job_finish(plan.job)
        plans = [p for p in (_plan_or_finish(job, lane) for job in stale) if p is not None]
    return totals


def jobs_interrupted(job_ids: Sequence[str | uuid.UUID], *, task_id: str | None, error: BaseException,
                     final: bool) -> None:
    """A task stopped on a transient failure (the database or the broker unavailable, the disk full).

    Its jobs still running under this task are handed back: the claim is not counted as an attempt
    (attempts bound workers that *die* on a document, and a full disk for a few seconds once used
    them all up, failing innocent documents as "the worker stopped each time"), and the job waits
    queued for the task's retry. When the task has no retry left (``final``), they fail with the
    error. Best effort: the database may still be unreachable, and then the attempt stays counted.
    """
    message = f"{type(error).__name__}: {error}".strip()[:500]
    try:
        # Tenant by tenant, as they ran: the connection may be a new one, acting for no tenant.
        for tenant_id, ids in job_tenant_ids(job_ids).items():
            tenant_activate(tenant_id)
            mine = IngestionJob.objects.filter(id__in=ids, status=IngestionJob.Status.RUNNING, stats__task_id=task_id)
            if final:
                for job in mine:
                    job_fail(job, f"the database or broker failed on every try of this task; last error: {message}")
                continue
            with transaction.atomic():
                for job in mine.select_for_update():
                    job.attempts = max(job.attempts - 1, 0)
                    job.status = IngestionJob.Status.QUEUED
                    job.stage = "queued"
                    job.heartbeat_at = timezone.now()  # the sweeper leaves it to the task's retry
                    job.stats = {**job.stats, "last_error": message}
                    job.save(update_fields=["attempts", "status", "stage", "heartbeat_at", "stats"])
    except (OperationalError, InterfaceError):
        logger.warning("could not hand back the jobs of task %s after %s", task_id, message)


def jobs_requeue_stuck(*, older_than: timedelta | None = None) -> list[str]:
    """Find jobs that nobody is working on (queued too long, or running past the lease) and queue them again."""
    cutoff = timezone.now() - (older_than or lease())
    # Every tenant's jobs: the owner path, past the tenant wall (accounts.tenancy).
    with owner_path() as owner:
        documents = IngestionJob.objects.filter(kind=IngestionJob.Kind.DOCUMENT)
        with transaction.atomic(using=owner):
            queued = documents.filter(status=IngestionJob.Status.QUEUED, created_at__lt=cutoff).exclude(
                heartbeat_at__gte=cutoff
            )
            running = documents.filter(status=IngestionJob.Status.RUNNING, heartbeat_at__lt=cutoff)
            stuck = [str(j) for j in queued.union(running).values_list("id", flat=True)]
            # Back to queued, so the new task can claim it; the heartbeat stops the next sweep re-sending it.
            IngestionJob.objects.filter(id__in=stuck).update(
                status=IngestionJob.Status.QUEUED, stage="queued", heartbeat_at=timezone.now()
            )
        if stuck:
            logger.warning("re-queueing %d stuck ingestion jobs", len(stuck))
            enqueue_jobs(stuck)
    return stuck
