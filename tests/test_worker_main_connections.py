"""A prefork worker's main process holds no database connection once it has started.

At worker start the main process asks which tenants hold chunks an older detector screened, to queue their
re-screen (``pipeline.tasks._send_rescreen``, on the owner path). It runs no task, so nothing closed that connection
afterwards (Celery's Django fixup closes connections around tasks, and in a new pool process): each worker's main
process kept an idle owner-role session for its life, one of PostgreSQL's connections per worker.

A real prefork worker on a queue nobody sends to, with the re-screen at start on; its processes name themselves to
PostgreSQL (``PGAPPNAME``, read by libpq), so its sessions are told apart from the test's and other workers'. Its pool
process runs no task, so a session of that name is the main process's (or a pool process's start, which must hold
none either)."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from tests.bounds import START_WAIT
from tests.parallel import xdist_suffix

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

QUEUE = "main-connections-unserved"


def _sessions(name: str) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid, usename, state FROM (SELECT pg_stat_clear_snapshot()) AS cleared, pg_stat_activity "
                       "WHERE application_name = %s", [name])
        return cursor.fetchall()


def test_a_prefork_workers_main_process_keeps_no_database_session_after_start(worker_factory):
    name = f"bulkhead-main-connections{xdist_suffix()}"
    assert _sessions(name) == []
    worker_factory("main-connections", pool="prefork", queues=QUEUE,
                   extra_env={"BULKHEAD_RESCREEN_AT_WORKER_START": "1", "PGAPPNAME": name})
    # It answered a ping, so its start (worker_ready: the re-screen's query) is over. A session it closed may take a
    # moment to leave pg_stat_activity; one it keeps never does.
    deadline = time.monotonic() + START_WAIT
    while (sessions := _sessions(name)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sessions == [], sessions
