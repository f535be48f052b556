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

from kb.jobs import INGEST_TASK as TASK


def _set_routes(app, routes) -> None:
    app.conf.task_routes = routes
    # Celery caches its router on first use; without a flush a changed route is silently ignored.
    app.amqp.flush_routes()
    app.amqp.router = app.amqp.Router()


@contextmanager
def routed_to(queue: str) -> Iterator[None]:
    """Send ingestion tasks of this process to ``queue`` inside the block."""
    from bulkhead.celery import app

    previous = app.conf.task_routes
    _set_routes(app, {TASK: {"queue": queue}})
    try:
        yield
    finally:
        _set_routes(app, previous)


def _database_env() -> dict[str, str]:
    from bulkhead.embedded_services import database_env

    return database_env()


@contextmanager
def private_worker(prefix: str = "private", *, timeout: float = 120) -> Iterator[str]:
    """Start a worker on a fresh queue, route this process's ingestion tasks to it, stop it afterwards."""
    from bulkhead.celery import app

    queue = f"{prefix}-{uuid.uuid4().hex[:8]}"
    env = {**os.environ, **_database_env(), "REDIS_URL": settings.REDIS_URL}
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "bulkhead", "worker", "--pool=solo", "-Q", queue, "-n", f"{queue}@%h",
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
