"""Ingestion end to end through a real Celery worker, a real model and a real pgvector."""

from __future__ import annotations

import pytest

from accounts.policy import AccessLevel, Reader
from accounts.services import group_create, tenant_create
from kb.models import Chunk, Document, EmbeddingCacheEntry, IngestionJob, Section
from kb.services import Upload, document_create, document_replace, document_set_access, section_set_access
from kb.titles import reader_title, reader_view
from tests.ingestion_helpers import POLICY_DOC, wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


@pytest.fixture
def tenant():
    tenant = tenant_create(slug="ingest-co", name="Ingest Co")
    group_create(tenant=tenant, slug="security-team")
    return tenant


def _ingest(tenant, text: str, **kw) -> tuple[Document, IngestionJob]:
    upload = Upload(content=text.encode(), title=kw.pop("title", "Security policy"),
                    content_type=kw.pop("content_type", "text/markdown"), **kw)
    document, job = document_create(tenant=tenant, created_by=None, upload=upload)
    (job,) = wait_for_jobs([job.id])
    document.refresh_from_db()
    return document, job


def test_upload_runs_to_succeeded_with_embeddings_and_access_columns(celery_worker, tenant):
    document, job = _ingest(tenant, POLICY_DOC)
    assert job.status == "succeeded", job.error
    assert job.stage == "done" and job.total > 0 and job.done == job.total
    assert document.status == "ready"
    # A front matter's tags are the content's, kept apart from the upload's (listed to readers of the root).
    assert "security" in document.content_tags and "security" not in document.tags
    chunks = list(Chunk.objects.filter(document=document).select_related("section"))
    assert chunks
    security = tenant.groups.get(slug="security-team")
    by_text = {c.text: c for c in chunks}
    restricted = next(c for t, c in by_text.items() if "Only the security team" in t)
    assert (restricted.access_level, restricted.access_groups) == (AccessLevel.RESTRICTED, [security.id])
    region = next(c for t, c in by_text.items() if "names of past reporters" in t)
    assert (region.access_level, region.access_groups) == (AccessLevel.CONFIDENTIAL, [])
    intro = next(c for t, c in by_text.items() if "Intro for everyone" in t)
    assert (intro.access_level, intro.access_groups) == (AccessLevel.INTERNAL, [])
    for chunk in chunks:
        assert document.text[chunk.start : chunk.end] == chunk.text
        assert len(chunk.embedding) == 384
        assert "<!--" not in chunk.embed_text  # markers never reach a chunk
        # A chunk's policy is its section's.
        assert (chunk.access_level, chunk.access_groups) == (chunk.section.access_level, chunk.section.access_groups)


def test_reingest_unchanged_makes_no_model_call_and_edit_reembeds_only_that_section(celery_worker, tenant):
    document, job = _ingest(tenant, POLICY_DOC)
    assert job.stats["model_calls"] >= 1 and job.stats["embedded"] == job.total
    first_ids = set(Chunk.objects.filter(document=document).values_list("id", flat=True))

    upload = Upload(content=POLICY_DOC.encode(), title="Security policy", content_type="text/markdown")
    _, again = document_replace(document=document, created_by=None, upload=upload)
    (again,) = wait_for_jobs([again.id])
    assert again.status == "succeeded"
    assert again.stats["model_calls"] == 0 and again.stats["embedded"] == 0
    assert set(Chunk.objects.filter(document=document).values_list("id", flat=True)) == first_ids  # deterministic

    edited_text = POLICY_DOC.replace("Call the on-call engineer first.", "Page the incident commander first.")
    cache_before = EmbeddingCacheEntry.objects.count()
    upload = Upload(content=edited_text.encode(), title="Security policy", content_type="text/markdown")
    _, edit = document_replace(document=document, created_by=None, upload=upload)
    (edit,) = wait_for_jobs([edit.id])
    assert edit.status == "succeeded"
    changed = [c for c in Chunk.objects.filter(document=document) if "incident commander" in c.text]
    assert len(changed) == 1
    assert edit.stats["embedded"] == 1  # only the edited section's chunk
    assert EmbeddingCacheEntry.objects.count() == cache_before + 1


def test_unknown_group_fails_and_leaves_previous_chunks(celery_worker, tenant):
    document, job = _ingest(tenant, POLICY_DOC)
    before = sorted(Chunk.objects.filter(document=document).values_list("id", "text"))
    bad = POLICY_DOC.replace("groups: security-team", "groups: red-team")
    upload = Upload(content=bad.encode(), title="Security policy", content_type="text/markdown")
    _, failing = document_replace(document=document, created_by=None, upload=upload)
    (failing,) = wait_for_jobs([failing.id])
    assert failing.status == "failed"
    assert "red-team" in failing.error and "line 9" in failing.error
    document.refresh_from_db()
    assert document.status == "failed" and "red-team" in document.error
    assert sorted(Chunk.objects.filter(document=document).values_list("id", "text")) == before


def test_corrupt_file_fails_with_a_message_and_is_not_retried(celery_worker, tenant):
    document, job = _ingest(tenant, "\x00\x01binary\xff garbage", title="junk.bin", content_type="text/plain")
    assert job.status == "failed" and job.error
    assert job.attempts == 1
    assert not Chunk.objects.filter(document=document).exists()


def test_permission_change_updates_chunks_without_reembedding(celery_worker, tenant):
    document, _ = _ingest(tenant, POLICY_DOC)
    cache_before = EmbeddingCacheEntry.objects.count()
    reporting = Section.objects.get(document=document, title="Reporting")
    region = Section.objects.get(document=document, parent=reporting, kind="region")
    untouched = set(Chunk.objects.filter(document=document).exclude(section=region).values_list("id", "embed_text"))
    section_set_access(actor=None, section=reporting, access_level="confidential", groups=["security-team"])
    security = tenant.groups.get(slug="security-team")
    reporting_chunks = Chunk.objects.filter(section=reporting)
    assert reporting_chunks.exists()
    assert set(reporting_chunks.values_list("access_level", flat=True)) == {AccessLevel.CONFIDENTIAL}
    assert all(groups == [security.id] for groups in reporting_chunks.values_list("access_groups", flat=True))
    # The confidential region inside Reporting keeps its own marker. Its readers need not be in
    # security-team, so "Reporting" leaves its embedded prefix: only its chunks are embedded again.
    region.refresh_from_db()
    assert region.access_level == AccessLevel.CONFIDENTIAL and region.access_groups == []
    wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))
    assert set(Chunk.objects.filter(document=document).exclude(section=region).values_list("id", "embed_text")) == untouched
    rebuilt = list(Chunk.objects.filter(section=region))
    assert rebuilt and all("Reporting" not in c.embed_text.split("\n\n", 1)[0] for c in rebuilt)  # the prefix
    assert EmbeddingCacheEntry.objects.count() == cache_before + len(rebuilt)

    # The front matter (access: internal) is the root's own marker: a new document default
    # does not override it; a change of the section itself does, with no model call.
    cache_before = EmbeddingCacheEntry.objects.count()
    document_set_access(actor=None, document=document, access_level="public", groups=[])
    intro = Chunk.objects.get(document=document, text__contains="Intro for everyone")
    assert (intro.access_level, intro.access_groups) == (AccessLevel.INTERNAL, [])
    root = Section.objects.get(document=document, parent=None)
    section_set_access(actor=None, section=root, access_level="public", groups=[])
    intro = Chunk.objects.get(document=document, text__contains="Intro for everyone")
    assert (intro.access_level, intro.access_groups) == (AccessLevel.PUBLIC, [])
    wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))
    assert EmbeddingCacheEntry.objects.count() == cache_before  # no model call, nothing new embedded


def test_document_title_never_comes_from_a_stricter_heading(celery_worker, tenant):
    secret = "# Project Nightjar <!-- access: restricted -->\nThe acquisition target.\n"
    document, job = _ingest(tenant, secret, title="")
    assert job.status == "succeeded", job.error
    internal = Reader(tenant_id=tenant.pk, clearance=AccessLevel.INTERNAL, group_ids=frozenset())
    reader_view([document], internal)
    assert "Nightjar" not in document.title and "Nightjar" not in reader_title(document)
    plain, job = _ingest(tenant, "# Onboarding guide\nWelcome aboard.\n", title="")
    reader_view([plain], internal)
    assert reader_title(plain) == "Onboarding guide"
