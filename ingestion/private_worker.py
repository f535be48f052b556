"""A private Celery worker for one command's duration (``kb_eval --load-corpora``, tests).

The broker is shared by every process of the checkout (and every developer's test run on
it), so a command that needs its jobs done *now, against this database* routes its
ingestion tasks to a queue of its own and starts a worker that consumes only that queue.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

TASK = "ingestion.tasks.ingest_documents"


def _set_routes(app, routes) -> None:
    app.conf.task_routes = routes
    # Celery caches its router on first use; without a flush a changed route is silently ignored.
    app.amqp.flush_routes()
    app.amqp.router = app.amqp.Router()


@contextmanager
def routed_to(queue: str) -> Iterator[None]:
    """Send ingestion tasks of this process to ``queue`` inside the block."""
    from kb.celery import app

    previous = app.conf.task_routes
    _set_routes(app, {TASK: {"queue": queue}})
    try:
        yield
    finally:
        _set_routes(app, previous)


def _database_url() -> str:
    from django.db import connection

    from kb.embedded_services import database_url_for

    return database_url_for(connection.settings_dict)


@contextmanager
def private_worker(prefix: str = "private", *, timeout: float = 120) -> Iterator[str]:
    """Start a worker on a fresh queue, route this process's ingestion tasks to it, stop it afterwards."""
    from kb.celery import app

    queue = f"{prefix}-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": _database_url(), "REDIS_URL": settings.REDIS_URL}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "kb", "worker", "--pool=solo", "-Q", queue, "-n", f"{queue}@%h",
         "--loglevel=WARNING", "--without-mingle", "--without-gossip"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout
        while not app.control.ping(timeout=0.5, destination=[f"{queue}@{os.uname().nodename}"]):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the private ingestion worker did not start")
        with routed_to(queue):
            yield queue
    finally:
        if process.poll() is None:
            os.killpg(process.pid, 15)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait(10)
