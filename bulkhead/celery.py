"""The Celery application: broker and settings come from Django settings (CELERY_*).

Importing this module starts nothing (the web process imports it to enqueue). A worker or a
beat started with ``celery -A bulkhead`` starts the embedded servers it needs first, when
DATABASE_URL / REDIS_URL are unset."""

import os

from celery import Celery
from celery.signals import beat_init, celeryd_init, task_postrun, task_prerun, worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
# Celery's Django fixup runs Django's system checks when a worker or beat imports its task modules and throws their
# messages away: all it did was import the URLconf and every view (0.7 s of CPU at each start, a worker needing
# neither; docs/benchmarks.md, "The suite, twenty-fifth session"). The checks are `manage.py check`'s (and run
# before migrate); an operator who wants them at worker start too sets CELERY_SKIP_CHECKS= (empty).
os.environ.setdefault("CELERY_SKIP_CHECKS", "1")

app = Celery("bulkhead")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@celeryd_init.connect
@beat_init.connect
def _start_embedded_servers(**kwargs) -> None:
    # celeryd_init: a worker, before it connects to the broker; beat_init: `celery beat` on its own.
    from bulkhead import embedded_services

    embedded_services.ensure_started()


@worker_ready.connect
def _start_heartbeat(sender=None, **kwargs) -> None:
    # In the worker's main process, before anything else at worker start (the model's warm-up included):
    # /healthz counts the worker alive by this heartbeat, which a busy solo pool keeps writing.
    from bulkhead import heartbeat

    queues = []
    try:
        queues = sorted(sender.app.amqp.queues.consume_from)
    except Exception:  # noqa: BLE001 - the queues only describe the worker
        pass
    heartbeat.start(getattr(sender, "hostname", None) or "celery@unknown", queues)


@worker_shutdown.connect
def _stop_heartbeat(**kwargs) -> None:
    from bulkhead import heartbeat

    heartbeat.stop()


@task_postrun.connect
def _forget_tenant(**kwargs) -> None:
    # A pool process keeps its connection from task to task: each task starts and ends acting for no
    # tenant, and sets its own (pipeline.services.jobs_run, per job), so no task inherits another's.
    from accounts.tenancy import tenant_context_reset_if_connected

    tenant_context_reset_if_connected()


@task_prerun.connect
def _start_with_no_tenant(**kwargs) -> None:
    # Skipped when the previous task's clear at its end is known to have held (accounts.tenancy).
    from accounts.tenancy import tenant_context_reset_if_set

    tenant_context_reset_if_set()


@app.task(name="kb.ping")
def ping() -> str:
    """A no-op round trip used by health checks and tests."""
    return "pong"
