"""A policy narrowed while a document is ingested leaves no copy of the old policy behind (round 5).

Found attacking policy-change races (2026-12-03): the chunks were safe -- the store step re-checks the
policies under row locks and plans again (``pipeline.store.PolicyChanged``) -- but the embedding cache is a
copy of the policy too (a vector is cached under the scope of the section it was embedded for, and a job
takes one only from a scope its creator may read: a hit shows in the job's stats). The embedding stage
cached the vectors under the policy the plan was made with, *before* the store step saw the narrowing. So
a document uploaded as internal and narrowed to restricted while its job ran left its text's vectors
cached under "internal" -- text that no internal reader ever could read -- and an internal editor who
uploaded a guess of it saw ``cache_hits`` confirm the guess, word for word.

The interleaving is deterministic: a statement hook narrows the document (through the service, as an
admin would through the API) right after the job reports its embedding stage, on the same connection.
"""

from __future__ import annotations

import contextlib
import uuid

import pytest
from django.db import connection

from accounts.models import Tenant
from accounts.policy import AccessLevel
from accounts.services import membership_create, tenant_create
from kb.models import Chunk, Document, EmbeddingCacheEntry, IngestionJob
from kb.services import document_set_access
from pipeline.services import jobs_run
from tests import factories

pytestmark = pytest.mark.django_db

SECRET = "The acquisition of Northwind closes on the ninth of March at forty dollars a share."
TEXT = f"# Board notes\n\n{SECRET}\n"


@contextlib.contextmanager
def narrowed_while_embedding(document_id, admin):
    """Narrow the document to restricted right after its job says it is embedding (once)."""
    state = {"narrowed": False}

    def hook(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not state["narrowed"] and sql.startswith('UPDATE "kb_ingestionjob"') and "embedding" in (params or ()):
            state["narrowed"] = True
            document_set_access(actor=admin, document=Document.objects.get(pk=document_id),
                                access_level="restricted", groups=[])
        return result

    with connection.execute_wrapper(hook):
        yield state


def _ingest(tenant, member, title: str) -> IngestionJob:
    document = factories.document(tenant, title=title, text="", raw=TEXT.encode(), content_type="text/markdown",
                                  created_by=member.user, access_level=AccessLevel.INTERNAL)
    return IngestionJob.objects.create(tenant=tenant, document=document, created_by=member.user)


@pytest.fixture
def tenant():
    tenant = tenant_create(slug=f"narrow-{uuid.uuid4().hex[:6]}", name="Narrow Co")
    yield tenant
    Tenant.objects.filter(pk=tenant.pk).delete()


def test_a_narrowing_during_ingestion_leaves_no_vector_cached_under_the_old_policy(tenant):
    admin = membership_create(tenant=tenant, email="admin@narrow.test", role="admin", clearance="restricted")
    job = _ingest(tenant, admin, "Board notes")
    with narrowed_while_embedding(job.document_id, admin) as state:
        jobs_run([job.id])
    assert state["narrowed"], "the narrowing never ran while the job embedded; the test proves nothing"
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    stored = list(Chunk.objects.filter(document_id=job.document_id))
    assert stored and {c.access_level for c in stored} == {AccessLevel.RESTRICTED}  # the chunks were always safe
    hashes = {c.content_hash for c in stored}
    cached = set(EmbeddingCacheEntry.objects.filter(tenant=tenant, content_hash__in=hashes)
                 .values_list("access_level", flat=True))
    assert cached == {AccessLevel.RESTRICTED}, cached

    # The oracle it made: an internal editor's upload of a guess is served from the cache.
    editor = membership_create(tenant=tenant, email="editor@narrow.test", role="editor", clearance="internal")
    probe = _ingest(tenant, editor, "A guess")
    jobs_run([probe.id])
    probe.refresh_from_db()
    assert probe.status == "succeeded", probe.error
    assert probe.stats["cache_hits"] == 0, probe.stats
