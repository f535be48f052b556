"""A document deleted while its job runs ends that job quietly; the other jobs of the task still finish.

Found by the load harness (``kb_bench load``, docs/reliability.md): a worker logged
``ingest_documents raised unexpected: DoesNotExist('Document matching query does not exist.')``
when an editor deleted a document between its planning and its storing. The exception ended
the whole task, so every other job the task carried (up to 16: a batch import, the sweeper's
re-sends) stayed ``running`` until the lease ran out (15 minutes by default) and the sweeper sent
it again. Now storing a deleted document stores nothing, and the task goes on.

In-process ``jobs_run`` on two jobs; the first document is deleted after both are planned.
"""

from __future__ import annotations

import pytest

from accounts.services import tenant_create
from kb.models import Chunk, Document, IngestionJob
from kb.services import Upload, batch_create, document_delete
from pipeline import services as pipeline_services
from pipeline.services import jobs_run

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_document_deleted_before_its_chunks_are_stored_does_not_stop_the_rest_of_the_task(unserved_queue, monkeypatch):
    tenant = tenant_create(slug="delete-mid-ingest", name="Delete mid ingest")
    uploads = [Upload(content=f"# Note {i}\n\nCall desk {i}.\n".encode(), title=f"Note {i}", source=f"n{i}.md",
                      content_type="text/markdown") for i in range(2)]
    batch = batch_create(tenant=tenant, created_by=None, uploads=uploads)
    first, second = IngestionJob.objects.filter(batch=batch).order_by("document__source")
    real_embed = pipeline_services.embed_plans

    def deleted_meanwhile(plans):
        document_delete(document=Document.objects.get(pk=first.document_id))  # an editor's DELETE
        return real_embed(plans)

    monkeypatch.setattr(pipeline_services, "embed_plans", deleted_meanwhile)
    jobs_run([first.pk, second.pk], task_id="delete-mid-ingest")
    second.refresh_from_db()
    assert second.status == "succeeded", (second.status, second.error)
    assert Chunk.objects.filter(document_id=second.document_id).exists()
    assert not IngestionJob.objects.filter(pk=first.pk).exists()  # went with its document
    assert not Chunk.objects.filter(document_id=first.document_id).exists()
