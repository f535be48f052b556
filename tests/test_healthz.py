"""``/healthz`` says whether the service can serve; ``/livez`` whether the web process answers (issue 23).

Found by the third attack on the demo: while two costly uploads held both solo-pool workers,
``/healthz`` answered 503 "no worker replied" for about 35 s -- a solo worker answers a broadcast
ping only between tasks -- and the compose healthcheck, which used it, would have had healthy web
containers restarted. Now a worker counts as alive by its heartbeat (``bulkhead.heartbeat``), which a
busy worker keeps writing and a dead one stops: its key expires within three beats.
"""

from __future__ import annotations

import os
import time

import pytest
from django.db import connections

from accounts.services import tenant_create
from bench.private_worker import routed_to
from bulkhead import heartbeat
from bulkhead.celery import app
from bulkhead.settings import _redis_db
from kb.jobs import INGEST_TASK
from kb.services import Upload, document_create
from tests.bounds import START_WAIT
from tests.ingestion_helpers import wait_for_jobs

QUEUE = "healthz-test"


def _wait(condition, what: str, timeout: float = START_WAIT):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.1)


def _waiting_on_a_lock(holder_pid: int) -> bool:
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> %s "
                       "AND query ILIKE %s", [holder_pid, "%kb_ingestionjob%"])
        return cursor.fetchone()[0] > 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_busy_solo_worker_is_alive_and_a_dead_one_fails_the_check(worker_factory, client, settings):
    with routed_to("healthz-unserved"):  # the upload's own task goes nowhere: this test sends it
        worker = worker_factory("healthz", queues=QUEUE, extra_env={"BULKHEAD_WORKER_HEARTBEAT_SECONDS": "1"})
        node = f"healthz@{os.uname().nodename}"
        tenant = tenant_create(slug="health-co", name="Health Co")
        _, job = document_create(tenant=tenant, created_by=None, upload=Upload(
            content=b"# Note\n\nCall the desk.\n", title="Note", content_type="text/markdown"))

    # Another session holds the job's row: the worker's claim waits for it in the worker's one thread,
    # as it waits on a parse or the model when it is busy with a document.
    holder = connections.create_connection("default")
    try:
        holder.set_autocommit(False)
        with holder.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            holder_pid = cursor.fetchone()[0]
            cursor.execute("SELECT id FROM kb_ingestionjob WHERE id = %s FOR UPDATE", [str(job.pk)])
        app.send_task(INGEST_TASK, args=[[str(job.pk)]], kwargs={"lane": "bulk"}, queue=QUEUE)
        _wait(lambda: _waiting_on_a_lock(holder_pid), "the worker waits for the job's row")

        assert not app.control.ping(destination=[node], timeout=1.0)  # what /healthz asked before: no answer
        assert node in {w["node"] for w in heartbeat.alive()}
        busy = client.get("/healthz")
        assert busy.status_code == 200, busy.json()
        assert busy.json()["workers"].split()[1] == "alive" and f"{QUEUE}: " in busy.json()["workers"]
    finally:
        holder.rollback()
        holder.close()
    (job,) = wait_for_jobs([job.pk])
    assert job.status == "succeeded", job.error

    worker.kill()  # SIGKILL: no clean shutdown, the key is left to expire
    _wait(lambda: node not in {w["node"] for w in heartbeat.alive()}, "the dead worker's heartbeat expires")

    # With no worker beating at all (a Redis database nobody's workers write to), /healthz fails.
    settings.REDIS_URL = _redis_db(settings.REDIS_URL, 15)
    down = client.get("/healthz")
    assert down.status_code == 503
    assert down.json()["failing"] == ["workers"] and down.json()["workers"] == "no live worker (no heartbeat)"


@pytest.mark.django_db(transaction=True)
def test_livez_answers_while_the_database_is_down_and_healthz_says_what_fails():
    from django.test import Client

    from tests.test_db_unavailable import _closed_port, connecting_with

    client = Client(raise_request_exception=False)
    with connecting_with(HOST="127.0.0.1", PORT=str(_closed_port())):
        live = client.get("/livez")
        ready = client.get("/healthz")
    assert live.status_code == 200 and live.json() == {"status": "ok"}
    assert ready.status_code == 503 and "db" in ready.json()["failing"]
