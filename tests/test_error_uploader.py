"""An ingestion error is read in full only by the uploader of the bytes it quotes and by admins who may read
every section a document could hold -- not by
whoever retried the job or re-derived the document (found by attacking the demo: an editor retried a
colleague's failed job and then read its error, which quoted a restricted section, in full)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from accounts.services import api_token_create, membership_create, tenant_create
from kb.models import Document, IngestionJob
from kb.selectors import document_errors_in_full, error_in_full
from kb.services import Upload, document_create, job_retry
from tests.api_helpers import Actor

CANARY = "CANARY_7f3a"
ERROR = f"line 9: malformed access marker '<!-- acess {CANARY} -->'"
TEXT = f"# Doc\nIntro.\n\n## Secret <!-- access: restricted -->\n<!-- acess {CANARY} -->\n"


def _fail(job: IngestionJob) -> None:
    IngestionJob.objects.filter(pk=job.pk).update(status=IngestionJob.Status.FAILED, error=ERROR,
                                                  finished_at=timezone.now())
    Document.objects.filter(pk=job.document_id).update(status=Document.Status.FAILED, error=ERROR)


@pytest.mark.django_db
def test_a_retry_does_not_give_the_retrier_the_uploaders_error():
    tenant = tenant_create(slug="acme", name="Acme")
    uploader = membership_create(tenant=tenant, email="up@acme.test", role="editor", clearance="restricted")
    retrier = membership_create(tenant=tenant, email="re@acme.test", role="editor", clearance="restricted")
    admin = membership_create(tenant=tenant, email="ad@acme.test", role="admin", clearance="restricted")
    document, job = document_create(tenant=tenant, created_by=uploader, upload=Upload(
        content=TEXT.encode(), title="doc.md", content_type="text/markdown"))
    _fail(job)
    retry = job_retry(job=IngestionJob.objects.get(pk=job.pk), actor=retrier)
    _fail(retry)
    retry.refresh_from_db()
    document.refresh_from_db()
    assert retry.created_by_id == retrier.user_id  # the retrier started it ...
    assert not error_in_full(member=retrier, job=retry)  # ... but the bytes it quotes are the uploader's
    assert error_in_full(member=uploader, job=retry)
    assert error_in_full(member=admin, job=retry)
    assert document_errors_in_full(member=retrier, documents=[document]) == set()
    assert document_errors_in_full(member=uploader, documents=[document]) == {document.pk}
    # Through the API the retrier gets the error without the quoted text.
    client = Actor("retrier", retrier, api_token_create(membership=retrier, name="t")[1]).client()
    for url in (f"/api/v1/jobs/{retry.pk}/", f"/api/v1/documents/{document.pk}/"):
        body = client.get(url).content.decode()
        assert "malformed access marker" in body and CANARY not in body, url
    mine = Actor("uploader", uploader, api_token_create(membership=uploader, name="t")[1]).client()
    assert CANARY in mine.get(f"/api/v1/jobs/{retry.pk}/").content.decode()


@pytest.mark.django_db
def test_an_admin_below_the_quoted_line_reads_the_error_without_it():
    """An admin is not above the access rule (found attacking the product): an error quotes a line of a
    document that failed -- here the line after a heading narrowed to restricted -- and an internal admin
    read it in full from the job and the document. Now only an admin who may read every section a
    document could hold (the top clearance and every group of the tenant) gets the quote."""
    from accounts.models import Group
    from accounts.services import group_create, membership_set_groups

    tenant = tenant_create(slug="acme", name="Acme")
    uploader = membership_create(tenant=tenant, email="up@acme.test", role="editor", clearance="restricted")
    internal_admin = membership_create(tenant=tenant, email="in@acme.test", role="admin", clearance="internal")
    top_admin = membership_create(tenant=tenant, email="top@acme.test", role="admin", clearance="restricted")
    group_create(tenant=tenant, slug="legal")
    document, job = document_create(tenant=tenant, created_by=uploader, upload=Upload(
        content=TEXT.encode(), title="doc.md", content_type="text/markdown"))
    _fail(job)
    job.refresh_from_db()
    document.refresh_from_db()
    for admin in (internal_admin, top_admin):  # the top clearance, but not in "legal": not every section
        assert not error_in_full(member=admin, job=job)
        assert document_errors_in_full(member=admin, documents=[document]) == set()
        client = Actor("admin", admin, api_token_create(membership=admin, name="t")[1]).client()
        for url in (f"/api/v1/jobs/{job.pk}/", f"/api/v1/documents/{document.pk}/"):
            body = client.get(url).content.decode()
            assert "malformed access marker" in body and CANARY not in body, url
    membership_set_groups(membership=top_admin, groups=Group.objects.filter(tenant=tenant))
    assert error_in_full(member=top_admin, job=job)
    assert document_errors_in_full(member=top_admin, documents=[document]) == {document.pk}
    assert not error_in_full(member=internal_admin, job=job)
