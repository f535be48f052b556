"""The per-document budget through a real worker: a document over it fails with a clear message,
and the worker lives on to ingest the next one.
"""

from __future__ import annotations

import pytest

from accounts.services import tenant_create
from bench.private_worker import routed_to
from kb.models import Document
from kb.services import Upload, document_create
from tests.ingestion.test_limits import _inflating_docx
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.worker,
]

QUEUE = "parse-budget-test"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def test_a_document_over_the_memory_budget_fails_and_the_worker_carries_on(worker_factory):
    with routed_to(QUEUE):
        worker = worker_factory("budget", extra_env={"BULKHEAD_PARSE_MEMORY_MB": "400"}, queues=QUEUE)
        tenant = tenant_create(slug="budget-co", name="Budget Co")
        big, big_job = document_create(
            tenant=tenant, created_by=None,
            upload=Upload(content=_inflating_docx(90_000), title="Big", source="big.docx", content_type=DOCX),
        )
        small, small_job = document_create(
            tenant=tenant, created_by=None,
            upload=Upload(content=b"# Note\n\nCall the desk.\n", title="Note", content_type="text/markdown"),
        )
        big_job, small_job = wait_for_jobs([big_job.id, small_job.id], timeout=300)
    assert big_job.status == "failed"
    assert big_job.error == "document exceeded the parse memory limit of 400 MB"
    assert Document.objects.get(pk=big.pk).status == "failed"
    assert small_job.status == "succeeded", small_job.error
    assert worker.process.poll() is None  # the worker itself never ran out of memory
