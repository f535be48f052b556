"""A worker whose pool process is killed mid-task (the OOM killer's choice) recovers and finishes the job.

Found by the load harness (``kb_bench load``, scenario ``poison``, docs/reliability.md): after
one pool process of a prefork worker was SIGKILLed, the worker never ran a task again. Each new
pool process loads the embedding model in ``worker_process_init`` before it reports itself up;
that took longer than Celery's ``worker_proc_alive_timeout`` (4 s by default) on a busy machine,
so the main process killed it and started another, forever ("Timed out waiting for UP message"
every 5 s). The setting is now long enough for a model load.

A real prefork worker on a queue of its own; the pool process is killed while it ingests.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from accounts.services import tenant_create
from bench.private_worker import routed_to
from kb.models import IngestionJob
from kb.services import Upload, document_create
from tests.bounds import JOB_WAIT
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

QUEUE = "child-killed-test"
WORDS = "harbour ledger copper river signal meadow lantern orbit granite velvet pylon quarry".split()


def _pool_children(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children]


def _long_document() -> bytes:
    paragraphs = [" ".join(WORDS[(i + j) % len(WORDS)] for j in range(60)) + "." for i in range(400)]
    return ("# Long report\n\n" + "\n\n".join(paragraphs)).encode()


def test_a_worker_recovers_after_its_pool_process_is_killed_mid_task(worker_factory):
    with routed_to(QUEUE):
        worker = worker_factory("child-killed", pool="prefork", queues=QUEUE)
        tenant = tenant_create(slug="child-killed", name="Child killed")
        _, long_job = document_create(tenant=tenant, created_by=None, upload=Upload(
            content=_long_document(), title="Long", source="long.md", content_type="text/markdown"))
        deadline = time.monotonic() + JOB_WAIT
        while IngestionJob.objects.get(pk=long_job.pk).status != "running":
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.05)
        (child,) = _pool_children(worker.process.pid)
        os.kill(child, signal.SIGKILL)
        _, note_job = document_create(tenant=tenant, created_by=None, upload=Upload(
            content=b"# Note\n\nCall the desk.\n", title="Note", content_type="text/markdown"))
        long_job, note_job = wait_for_jobs([long_job.id, note_job.id])
    assert long_job.status == "succeeded", long_job.error
    assert note_job.status == "succeeded", note_job.error
    assert "Timed out waiting for UP message" not in worker.log_path.read_text()
