"""Worker heartbeats: how ``/healthz`` knows a worker is alive while it is busy.

A Celery worker with the solo pool (the demo's) runs its task in the thread that would answer a
broadcast ping, so a ping finds every busy worker dead: two uploads that held both demo workers
failed ``/healthz`` for half a minute (found by the third attack on the demo), and an orchestrator
acting on it restarts containers that are fine. Instead each worker process runs a small daemon
thread that writes ``bulkhead:worker:<node name>`` into the broker's Redis every
``BULKHEAD_WORKER_HEARTBEAT_SECONDS`` (10), with an expiry of three beats: a busy worker keeps
beating (the thread runs while the task waits on the parse child, the database or the model, and
Python switches threads under the GIL); a worker that is gone -- killed, crashed, its machine or
its network lost -- stops beating, and its key expires within three beats. A worker that stops
cleanly deletes its key at once.

What a heartbeat does not say: that the worker's task is making progress (a task stuck forever
still beats). That is the job lease's concern: a job whose heartbeat (``IngestionJob.heartbeat_at``)
is older than ``BULKHEAD_JOB_LEASE_SECONDS`` is queued again by the sweeper.

``python -m bulkhead.heartbeat NODE`` exits 0 when ``NODE`` (``celery@host``) beats, else 1: a
container's own liveness check that a busy worker passes (``celery inspect ping`` does not, with
the solo pool). ``python -m bulkhead.heartbeat`` lists the live workers.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time

logger = logging.getLogger(__name__)

PREFIX = "bulkhead:worker:"


def _interval() -> float:
    from django.conf import settings

    return max(float(settings.BULKHEAD_WORKER_HEARTBEAT_SECONDS), 0.1)


def _client():
    import redis
    from django.conf import settings

    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)


class Heartbeat(threading.Thread):
    """Beats for one worker until :meth:`stop`."""

    def __init__(self, name: str, queues: list[str]) -> None:
        super().__init__(name="bulkhead-heartbeat", daemon=True)
        self.node = name
        self.queues = sorted(queues)
        self.interval = _interval()
        self.stopped = threading.Event()
        self.client = _client()
        self.failing = False

    def beat(self) -> None:
        record = {"queues": self.queues, "pid": os.getpid(), "host": socket.gethostname(), "at": time.time()}
        self.client.set(PREFIX + self.node, json.dumps(record), px=int(self.interval * 3 * 1000))

    def run(self) -> None:
        while True:
            try:
                self.beat()
                if self.failing:
                    logger.info("worker heartbeat of %s is written again", self.node)
                self.failing = False
            except Exception as exc:  # noqa: BLE001 - Redis away: /healthz says so; keep trying
                if not self.failing:
                    logger.warning("worker heartbeat of %s cannot be written (%s)", self.node, type(exc).__name__)
                self.failing = True
            if self.stopped.wait(self.interval):
                return

    def stop(self) -> None:
        self.stopped.set()
        try:
            self.client.delete(PREFIX + self.node)
        except Exception:  # noqa: BLE001 - the key expires by itself
            pass


_CURRENT: Heartbeat | None = None


def start(name: str, queues: list[str]) -> Heartbeat:
    """Start beating for worker ``name`` (once per process)."""
    global _CURRENT
    if _CURRENT is None or not _CURRENT.is_alive():
        _CURRENT = Heartbeat(name, queues)
        _CURRENT.start()
    return _CURRENT


def stop() -> None:
    global _CURRENT
    if _CURRENT is not None:
        _CURRENT.stop()
        _CURRENT = None


def alive() -> list[dict]:
    """The workers that beat (their node name, queues, pid, host, last beat), in node-name order."""
    client = _client()
    keys = sorted(client.scan_iter(match=PREFIX + "*", count=500))
    if not keys:
        return []
    workers = []
    for key, value in zip(keys, client.mget(keys), strict=True):
        if value is None:  # expired between the scan and the read
            continue
        try:
            record = json.loads(value)
        except ValueError:
            continue
        node = key.decode() if isinstance(key, bytes) else key
        workers.append({"node": node[len(PREFIX):], **record})
    return workers


def main(argv: list[str]) -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    import django

    django.setup()
    workers = alive()
    if argv:
        return 0 if any(w["node"] == argv[0] for w in workers) else 1
    for worker in workers:
        print(f"{worker['node']}  queues={','.join(worker['queues'])}  pid={worker['pid']}")
    return 0 if workers else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
