"""A document that kills its worker takes only itself down, not the other jobs of its task.

Found by the load harness (``kb_bench load``, scenario ``poison``, docs/reliability.md): a task
carries up to 16 jobs (a batch import; the sweeper's re-sends, which mix tenants). When one
document kills the worker process (out of memory, a native crash), the task is delivered again
whole -- or re-sent whole by the sweeper -- and every delivery claimed all its jobs up front, so
each crash counted an attempt for every neighbour until all of them had used up
``BULKHEAD_JOB_MAX_ATTEMPTS`` and failed "gave up after 3 attempts" with the poison. Now a task
holding a job attempted before runs its jobs one at a time, each claimed just before it runs.

In-process ``jobs_run``: the worker's death is a ``SystemExit`` raised while the poison document is
embedded (where the memory goes; nothing in the pipeline catches it, as nothing survives a SIGKILL);
the task is then delivered again, as Celery does after a lost worker.
"""

from __future__ import annotations

import pytest

from accounts.services import tenant_create
from kb.models import IngestionJob
from kb.services import Upload, batch_create
from pipeline import services as pipeline_services
from pipeline.services import jobs_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_poison_job_fails_alone_and_its_task_neighbours_succeed(unserved_queue, monkeypatch, settings):
    tenant = tenant_create(slug="crashed-task", name="Crashed task")
    uploads = [Upload(content=f"# Note {name}\n\nCall desk {name}.\n".encode(), title=name, source=f"{name}.md",
                      content_type="text/markdown") for name in ("a-poison", "b-note", "c-note")]
    batch = batch_create(tenant=tenant, created_by=None, uploads=uploads)
    poison, *neighbours = IngestionJob.objects.filter(batch=batch).order_by("document__source")
    ids = [str(poison.pk), *(str(j.pk) for j in neighbours)]
    real_embed = pipeline_services.embed_plans

    def kills_the_worker(plans):
        if any(plan.job.pk == poison.pk for plan in plans):
            raise SystemExit("the worker process died")
        return real_embed(plans)

    monkeypatch.setattr(pipeline_services, "embed_plans", kills_the_worker)
    for _ in range(settings.BULKHEAD_JOB_MAX_ATTEMPTS):  # the first delivery, then each redelivery
        with pytest.raises(SystemExit):
            jobs_run(ids, task_id="task-1")
    jobs_run(ids, task_id="task-1")  # the poison is over its attempts now

    poison.refresh_from_db()
    assert poison.status == "failed" and "gave up after 3 attempts" in poison.error, poison.error
    for job in neighbours:
        job.refresh_from_db()
        assert job.status == "succeeded", (job.status, job.attempts, job.error)
        assert job.attempts <= 2
