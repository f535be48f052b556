"""A code chunk's embedded context (imports, enclosing class signatures) after a policy change:
only text of sections that every reader of the chunk may read, like the heading prefix (#4).

Reproduces an attack on the demo: with the class restricted and its method internal, an internal
viewer saw the heading path ``['nightjar.py', 'public_helper']`` but a keyword search for the class
name or its base found the method's chunk at rank 1 -- the class signature was embedded with it.
"""

from __future__ import annotations

import pytest

from accounts.services import group_create, membership_create, tenant_create
from kb import retrieval
from kb.models import Chunk, IngestionJob, Section
from kb.search import search
from kb.services import Upload, document_create, section_set_access
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

NIGHTJAR = b'''"""Acquisition desk."""
import os
from globex import holdings


class ProjectNightjarAcquisition(holdings.GlobexHoldingsBase):
    """Terms of the deal."""

    def public_helper(self, path):
        return os.path.basename(path).strip()
'''


@pytest.fixture
def tenant():
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="code-co", name="Code Co")
    group_create(tenant=tenant, slug="board")
    return tenant


def _wait_document_jobs(document) -> None:
    wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))


def _upload(tenant):
    document, job = document_create(tenant=tenant, created_by=None, upload=Upload(
        content=NIGHTJAR, title="nightjar.py", source="nightjar.py", content_type="text/x-python"))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    return document


def _method_chunks(document) -> list[Chunk]:
    method = Section.objects.get(document=document, title="public_helper")
    chunks = list(Chunk.objects.filter(section=method))
    assert chunks, "the method's chunks are rebuilt"
    return chunks


def test_restricting_a_class_rederives_its_methods_code_context(celery_worker, tenant):
    internal = membership_create(tenant=tenant, email="int@c.io", role="viewer", clearance="internal")
    board = membership_create(tenant=tenant, email="board@c.io", role="viewer", clearance="restricted",
                              group_slugs=["board"])
    document = _upload(tenant)
    assert any("ProjectNightjarAcquisition" in c.embed_text for c in _method_chunks(document))
    method = Section.objects.get(document=document, title="public_helper")
    section_set_access(actor=None, section=method, access_level="internal", groups=[])
    _wait_document_jobs(document)
    cls = Section.objects.get(document=document, title="ProjectNightjarAcquisition")
    section_set_access(actor=None, section=cls, access_level="restricted", groups=["board"])
    _wait_document_jobs(document)

    assert Section.objects.get(pk=method.pk).heading_path == ["nightjar.py", "public_helper"]
    for chunk in _method_chunks(document):
        assert "ProjectNightjarAcquisition" not in chunk.embed_text, chunk.embed_text
        assert "GlobexHoldingsBase" not in chunk.embed_text, chunk.embed_text
        assert "def public_helper(self, path):" in chunk.embed_text
    for word in ("ProjectNightjarAcquisition", "holdings.GlobexHoldingsBase"):
        keyword = search(member=internal, query=word, mode="keyword", top_k=10)
        assert keyword.results == [], [r.text for r in keyword.results]
        assert search(member=board, query=word, mode="keyword", top_k=3).results
    assert search(member=internal, query="public_helper basename", mode="keyword", top_k=3).results


def test_restricting_the_module_rederives_the_imports_out_of_its_definitions(celery_worker, tenant):
    internal = membership_create(tenant=tenant, email="int@c.io", role="viewer", clearance="internal")
    document = _upload(tenant)
    for title in ("ProjectNightjarAcquisition", "public_helper"):
        section = Section.objects.get(document=document, title=title)
        section_set_access(actor=None, section=section, access_level="internal", groups=[])
    _wait_document_jobs(document)
    root = Section.objects.get(document=document, parent__isnull=True)
    section_set_access(actor=None, section=root, access_level="restricted", groups=["board"])
    _wait_document_jobs(document)

    readable = Chunk.objects.filter(document=document).exclude(section=root)
    assert readable.exists()
    for chunk in readable:
        assert "import os" not in chunk.embed_text and "from globex" not in chunk.embed_text, chunk.embed_text
    # Only the module's readers find its import lines.
    keyword = search(member=internal, query="globex import", mode="keyword", top_k=10)
    assert keyword.results == [], [r.text for r in keyword.results]
