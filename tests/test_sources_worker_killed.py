"""A sync whose worker process is killed mid-sync resumes when the task is delivered again, with no
item lost and none twice (issue 29). A real prefork worker on a queue of its own; its pool process
is SIGKILLed while the sync is writing items. Ingestion is routed to a queue nobody serves: the
sync's own bookkeeping is what is checked. The sync runs in the worker process, so the worker's own
bulk lane (where a sync's ingestion goes) is that queue too: else the session's main worker, if this
process started one, would embed the 240 documents while the next tests wait for it."""

from __future__ import annotations

import os
import signal
import time
import uuid
from pathlib import Path

import pytest

from accounts.services import membership_create, tenant_create
from bench.private_worker import _set_routes
from bulkhead.celery import app
from kb.jobs import INGEST_TASK
from kb.models import Document, IngestionJob
from sources.models import SourceItem, SourceSync
from sources.services import JOB_STATS_KEY, SYNC_TASK, source_create, sync_start
from tests.bounds import JOB_WAIT
from tests.sources_helpers import new_folder, write

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

QUEUE = "sources-killed-test"
FILES = 240
NOBODY = f"nobody-{uuid.uuid4().hex[:8]}"


def _pool_children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def test_a_sync_resumes_without_duplicates_after_its_worker_is_killed(worker_factory):
    previous = app.conf.task_routes
    _set_routes(app, {SYNC_TASK: {"queue": QUEUE}, INGEST_TASK: {"queue": NOBODY}})
    try:
        worker = worker_factory(
            "sources-killed", pool="prefork", queues=QUEUE, extra_env={"BULKHEAD_BULK_QUEUE": NOBODY}
        )
        tenant = tenant_create(slug="src-killed", name="Killed")
        admin = membership_create(tenant=tenant, email="a@killed.example", role="admin", clearance="restricted")
        root = new_folder(tenant, "killed-")
        write(root, {f"d{i // 40}/f{i:03}.md": f"# File {i}\n\nThe body of file number {i}.\n" for i in range(FILES)})
        source = source_create(actor=admin, tenant=tenant, kind="folder", name="many", path=str(root))
        sync, _ = sync_start(actor=admin, source=source)
        deadline = time.monotonic() + JOB_WAIT
        while SourceSync.objects.get(pk=sync.pk).added < 20:
            assert time.monotonic() < deadline, "the sync never started writing items"
            time.sleep(0.02)
        assert SourceSync.objects.get(pk=sync.pk).added < FILES, "the sync ended before the kill"
        (child,) = _pool_children(worker.process.pid)
        os.kill(child, signal.SIGKILL)
        deadline = time.monotonic() + JOB_WAIT
        while (sync := SourceSync.objects.get(pk=sync.pk)).status in ("queued", "running"):
            assert time.monotonic() < deadline, f"the sync did not resume: {sync.status} {sync.done}/{sync.total}"
            time.sleep(0.2)
    finally:
        _set_routes(app, previous)
    assert (sync.status, sync.attempts) == ("succeeded", 2), (sync.error, sync.errors)
    assert (sync.added, sync.unchanged, sync.failed) == (FILES, 0, 0)
    items = SourceItem.objects.filter(source=source)
    assert items.count() == FILES == len(set(items.values_list("path", flat=True)))
    documents = Document.objects.filter(metadata__source_id=source.pk)
    assert documents.count() == FILES == len(set(documents.values_list("source", flat=True)))
    assert IngestionJob.objects.filter(**{f"stats__{JOB_STATS_KEY}": str(sync.pk)}).count() == FILES
