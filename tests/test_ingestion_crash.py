"""Crash safety: SIGKILL a worker in the middle of an 80-document batch; a new worker finishes it
with exactly the chunks of a clean run -- no duplicates, none missing."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from accounts.services import tenant_create
from bench.private_worker import routed_to
from ingestion.chunking.chunker import chunk_document
from ingestion.chunking.config import ChunkingConfig
from ingestion.parsers import parse
from kb.index_versions import index_version_active
from kb.models import Chunk, Document, IngestionJob
from kb.services import Upload, batch_create
from pipeline.services import jobs_requeue_stuck
from tests.bounds import JOB_WAIT
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

QUEUE = "crash-test"
WORDS = "harbour ledger copper river signal meadow lantern orbit granite velvet pylon quarry".split()


def _document_text(i: int) -> str:
    words = [WORDS[(i * 7 + j) % len(WORDS)] for j in range(40)]
    return f"Report {i}\n\nReport number {i} covers " + " ".join(words) + ".\n"


@pytest.fixture
def crash_routing():
    # Only this test's workers consume this queue, so the session's worker cannot help out.
    with routed_to(QUEUE):
        yield


DOCUMENTS = 80  # several tasks' worth (a task takes a slice of the batch), so the kill lands mid-batch


def test_sigkill_mid_batch_then_new_worker_finishes_exactly(worker_factory, crash_routing):
    tenant = tenant_create(slug="crash-co", name="Crash Co")
    config = ChunkingConfig.from_dict(index_version_active(tenant=tenant).config)
    texts = [_document_text(i) for i in range(DOCUMENTS)]
    uploads = [
        Upload(content=t.encode(), title=f"report-{i}.txt", source=f"reports/report-{i}.txt", content_type="text/plain")
        for i, t in enumerate(texts)
    ]
    env = {"BULKHEAD_TASK_VISIBILITY_TIMEOUT": "5", "BULKHEAD_JOB_LEASE_SECONDS": "5"}
    first = worker_factory("crash-a", extra_env=env, queues=QUEUE)
    batch = batch_create(tenant=tenant, created_by=None, uploads=uploads)

    deadline = time.monotonic() + JOB_WAIT
    # Kill mid-task: at least 20 documents done and a task's jobs running (a kill between two tasks
    # would leave nothing to re-run).
    while (
        IngestionJob.objects.get(pk=batch.pk).done < 20
        or not IngestionJob.objects.filter(batch=batch, status="running").exists()
    ):
        assert time.monotonic() < deadline, "the first worker made no progress"
        time.sleep(0.05)
    first.kill()
    killed_at = IngestionJob.objects.get(pk=batch.pk).done
    assert killed_at < DOCUMENTS, "the batch finished before the kill; the test proves nothing"

    worker_factory("crash-b", extra_env=env, queues=QUEUE)
    time.sleep(6)  # past the lease: the dead worker's jobs are now stuck
    jobs_requeue_stuck(older_than=timedelta(seconds=5))

    children = list(IngestionJob.objects.filter(batch=batch).values_list("id", flat=True))
    jobs = wait_for_jobs(children, timeout=2 * JOB_WAIT)
    assert all(j.status == "succeeded" for j in jobs), [j.error for j in jobs if j.status != "succeeded"]
    assert wait_for_jobs([batch.id])[0].status == "succeeded"

    expected = {
        f"reports/report-{i}.txt": len(chunk_document(parse(t.encode(), content_type="text/plain"), config))
        for i, t in enumerate(texts)
    }
    stored = {
        d.source: Chunk.objects.filter(document=d).count() for d in Document.objects.filter(tenant=tenant)
    }
    assert stored == expected
    assert Document.objects.filter(tenant=tenant, status="ready").count() == DOCUMENTS
    assert any(j.attempts > 1 for j in IngestionJob.objects.filter(batch=batch)), "no job was actually re-run"
