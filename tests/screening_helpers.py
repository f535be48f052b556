"""Helpers for the screening tests (planted titles, held chunks, reviews), run in the test's own process."""

from __future__ import annotations

from kb.models import TITLE_SCREENING, ChunkReview, Document, IngestionJob, Section
from pipeline.services import jobs_run
from tests import factories


def ingest_markdown(tenant, uploader, title: str, text: str) -> Document:
    """A Markdown document of ``text``, ingested here (``jobs_run``: no worker claims it first)."""
    document = factories.document(tenant, title=title, text="", raw=text.encode(), content_type="text/markdown",
                                  created_by=uploader.user)
    job = IngestionJob.objects.create(tenant=tenant, document=document, created_by=uploader.user)
    jobs_run([job.id])
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    document.refresh_from_db()
    return document


def undecide(tenant) -> None:
    """Every review decision of ``tenant`` undone, on chunks and on titles' records."""
    from kb.models import Chunk

    Chunk.objects.filter(tenant=tenant).update(review=ChunkReview.NONE)
    for row in [*Document.objects.filter(tenant=tenant), *Section.objects.filter(tenant=tenant)]:
        record = row.metadata[TITLE_SCREENING]
        record["titles"] = {k: {**entry, "review": ""} for k, entry in record["titles"].items()}
        type(row).objects.filter(pk=row.pk).update(metadata=row.metadata)
