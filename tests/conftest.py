"""Test fixtures: a real PostgreSQL with pgvector (embedded unless DATABASE_URL is set),
a real Redis, and a real Celery worker process on it -- never ``task_always_eager``."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb.embedded_services import database_url_for

ROOT = Path(__file__).resolve().parent.parent


class WorkerProcess:
    """A real ``celery worker`` subprocess bound to the test database and broker."""

    def __init__(
        self, name: str, extra_env: dict | None = None, concurrency: int = 1, pool: str = "solo", queues: str = ""
    ):
        from django.conf import settings
        from django.db import connection

        self.name = name
        env = dict(os.environ)
        env["DATABASE_URL"] = database_url_for(connection.settings_dict)
        env["REDIS_URL"] = settings.REDIS_URL
        env["PYTHONUNBUFFERED"] = "1"
        env.update(extra_env or {})
        self.log_path = ROOT / ".data" / f"worker-{name}.log"
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.process = subprocess.Popen(
            [
                sys.executable, "-m", "celery", "-A", "kb", "worker", f"--pool={pool}",
                f"--concurrency={concurrency}", "--loglevel=INFO", "-n", f"{name}@%h", "--without-mingle",
                "--without-gossip", *(["-Q", queues] if queues else []),
            ],
            cwd=ROOT,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def wait_ready(self, timeout: float = 90) -> None:
        from kb.celery import app

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker exited early; see {self.log_path}:\n{self.log_path.read_text()[-3000:]}")
            replies = app.control.ping(timeout=0.5, destination=[f"{self.name}@{os.uname().nodename}"]) or []
            if replies:
                return
        raise RuntimeError(f"worker {self.name} did not answer a ping within {timeout}s; see {self.log_path}")

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 9)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, 15)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


@pytest.fixture(scope="session")
def worker_factory(django_db_setup, django_db_blocker):
    """Start extra real workers (e.g. to kill one mid-batch); all are stopped at the end."""
    started: list[WorkerProcess] = []

    def start(name: str, **kwargs) -> WorkerProcess:
        with django_db_blocker.unblock():
            worker = WorkerProcess(name, **kwargs)
            started.append(worker)
            worker.wait_ready()
            return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture(scope="session")
def celery_worker(worker_factory):
    """One real worker for the session. Tests using it must commit (``transaction=True``)."""
    return worker_factory("main")
