"""Per-tenant fairness: tenant A's heavy document does not hold up tenant B's small upload.

Real workers in the production layout (kb/jobs.py, enqueue_jobs): one
consuming both lanes, one the interactive lane alone.  No wall-time assertion:
B's job must have succeeded while A's is still running.  Before the lanes (one
worker on one first-in-first-out queue) B waited for all of A: 584 s for 5 MB of
text (``python -m bench.limits_bench fairness``, docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import time

import pytest

from accounts.services import tenant_create
from bench.limits_bench import heavy_text
from bench.private_worker import _set_routes
from bulkhead.celery import app
from kb.jobs import BULK, enqueue_jobs
from kb.jobs import INGEST_TASK as TASK
from kb.models import IngestionJob
from kb.services import Upload, batch_create, document_create
from tests.bounds import JOB_WAIT

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

# Queues of this test only (the broker is shared): the lanes as the router would send them.
FAST, SLOW = "fairness-interactive", "fairness-bulk"


def _lanes(name, args, kwargs, options, task=None, **kw):
    if name == TASK:
        return {"queue": SLOW if (kwargs or {}).get("lane") == BULK else FAST}
    return None


@contextlib.contextmanager
def routed_to_nobody():
    """An upload's own task goes to a queue no worker serves: the test sends its jobs itself."""
    from bench.private_worker import routed_to

    with routed_to("fairness-nobody"):
        yield


@pytest.fixture
def lanes():
    previous = app.conf.task_routes
    _set_routes(app, [_lanes])
    try:
        yield
    finally:
        _set_routes(app, previous)


def _status(job_id) -> str:
    return IngestionJob.objects.get(pk=job_id).status


def test_small_job_of_tenant_b_finishes_while_tenant_a_heavy_job_runs(worker_factory, lanes):
    both = worker_factory("fair-bulk", queues=f"{FAST},{SLOW}")
    fast = worker_factory("fair-fast", queues=FAST)
    a = tenant_create(slug="heavy-co", name="Heavy Co")
    b = tenant_create(slug="small-co", name="Small Co")
    try:
        _, heavy = document_create(
            tenant=a, created_by=None,
            upload=Upload(content=heavy_text(2, seed=42), title="Archive", source="archive.txt", content_type="text/plain"),
        )
        deadline = time.monotonic() + JOB_WAIT
        # A's job holds a worker. The status is read once a round: read twice, a job that started between
        # the two reads failed the wait (seen in a suite run).
        while (status := _status(heavy.pk)) != "running":
            assert status == "queued" and time.monotonic() < deadline, f"A's job never started ({status})"
            time.sleep(0.05)

        _, small = document_create(
            tenant=b, created_by=None,
            upload=Upload(content=b"# Note\n\nCall the front desk.\n", title="Note", content_type="text/markdown"),
        )
        while True:
            small_status, heavy_status = _status(small.pk), _status(heavy.pk)
            if small_status in ("succeeded", "failed") or heavy_status in ("succeeded", "failed"):
                break
            assert time.monotonic() < deadline, (small_status, heavy_status)
            time.sleep(0.05)
        assert small_status == "succeeded", IngestionJob.objects.get(pk=small.pk).error
        assert heavy_status == "running", "A's job finished first: B waited for it"
        # B's task went to the interactive lane and the worker that serves it alone.
        assert IngestionJob.objects.get(pk=small.pk).stats["task_id"] in fast.log_path.read_text()
        assert IngestionJob.objects.get(pk=heavy.pk).stats["task_id"] in both.log_path.read_text()
    finally:
        both.kill()  # A's job need not finish: the test's tables are flushed
        fast.stop()


def test_heavy_documents_and_batches_take_the_bulk_lane(settings, monkeypatch):
    sent = []
    monkeypatch.setattr("kb.jobs._send", lambda group, lane: sent.append((tuple(group), lane)))
    settings.BULKHEAD_BULK_DOCUMENT_BYTES = 1000
    tenant = tenant_create(slug="lanes-co", name="Lanes Co")
    small = Upload(content=b"small text", title="s", content_type="text/plain")
    big = Upload(content=b"x " * 600, title="b", content_type="text/plain")  # 1,200 bytes
    pdf = Upload(content=b"%PDF-1.4 " + b"x" * 300, title="p", content_type="application/pdf")  # counts 4x
    _, j_small = document_create(tenant=tenant, created_by=None, upload=small)
    _, j_big = document_create(tenant=tenant, created_by=None, upload=big)
    _, j_pdf = document_create(tenant=tenant, created_by=None, upload=pdf)
    assert sent == [((str(j_small.pk),), "interactive"), ((str(j_big.pk),), "bulk"), ((str(j_pdf.pk),), "bulk")]

    sent.clear()
    uploads = [Upload(content=f"doc {i}".encode(), title=f"d{i}", content_type="text/plain") for i in range(20)]
    batch = batch_create(tenant=tenant, created_by=None, uploads=uploads)
    children = [str(c) for c in IngestionJob.objects.filter(batch=batch).order_by("created_at").values_list("id", flat=True)]
    assert sorted(j for group, _ in sent for j in group) == sorted(children)
    assert {lane for _, lane in sent} == {"bulk"} and [len(g) for g, _ in sent] == [16, 4]

    sent.clear()
    enqueue_jobs([str(j_small.pk), str(j_big.pk)])  # a few jobs: small ones stay interactive
    assert sorted(sent) == sorted([((str(j_small.pk),), "interactive"), ((str(j_big.pk),), "bulk")])


def test_a_worker_on_both_lanes_takes_the_small_upload_lane_first(worker_factory, lanes):
    """With small uploads and bulk documents both waiting, the worker that serves both lanes takes the
    small uploads first (CELERY_BROKER_TRANSPORT_OPTIONS queue_order_strategy "priority"); with kombu's
    default round robin it took a bulk document after each small one (seen failing without the setting:
    the bulk jobs started first). Found with the costly-document load scenario: a moved costly PDF held
    that worker while small uploads queued."""
    from django.db import connections

    from kb.jobs import INTERACTIVE
    from tests.test_healthz import _wait, _waiting_on_a_lock

    worker_factory("lane-order", queues=f"{FAST},{SLOW}")
    tenant = tenant_create(slug="order-co", name="Order Co")

    def job(name: str) -> IngestionJob:
        with routed_to_nobody():
            return document_create(tenant=tenant, created_by=None, upload=Upload(
                content=f"# {name}\n\nA note.\n".encode(), title=name, content_type="text/markdown"))[1]

    held, bulk_one, bulk_two, small = job("held"), job("bulk one"), job("bulk two"), job("small")
    holder = connections.create_connection("default")
    try:
        holder.set_autocommit(False)
        with holder.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            holder_pid = cursor.fetchone()[0]
            cursor.execute("SELECT id FROM kb_ingestionjob WHERE id = %s FOR UPDATE", [str(held.pk)])
        app.send_task(TASK, args=[[str(held.pk)]], kwargs={"lane": INTERACTIVE})
        _wait(lambda: _waiting_on_a_lock(holder_pid), "the worker holds the first small job")
        for waiting in (bulk_one, bulk_two):
            app.send_task(TASK, args=[[str(waiting.pk)]], kwargs={"lane": BULK})
        app.send_task(TASK, args=[[str(small.pk)]], kwargs={"lane": INTERACTIVE})
    finally:
        holder.rollback()
        holder.close()
    from tests.ingestion_helpers import wait_for_jobs

    jobs = {j.pk: j for j in wait_for_jobs([held.pk, bulk_one.pk, bulk_two.pk, small.pk])}
    assert all(j.status == "succeeded" for j in jobs.values()), {j.pk: j.error for j in jobs.values()}
    started = sorted(jobs.values(), key=lambda j: j.started_at)
    assert [j.pk for j in started[:2]] == [held.pk, small.pk], [j.document.title for j in started]
