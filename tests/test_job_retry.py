"""Retrying a failed ingestion job (``kb.services.job_retry``): who may, which jobs, and the real story --
a job fails on an unknown group, an admin creates the group, the retry succeeds."""

from __future__ import annotations

import pytest

from accounts.errors import NotFound, PermissionRefused
from accounts.models import Membership
from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document, IngestionJob
from kb.services import JobNotRetryable, Upload, document_create, job_retry
from tests.api_helpers import POLICY_SECTIONS, make_document, snapshot
from tests.ingestion_helpers import wait_for_jobs

UNKNOWN_GROUP = "# Handbook\nHello.\n\n## Payroll <!-- access: confidential; groups: payroll -->\nSalaries.\n"


@pytest.fixture
def world(db):
    tenant = tenant_create(slug="retry-co", name="Retry Co")
    group_create(tenant=tenant, slug="security-team")
    other = tenant_create(slug="other-co", name="Other Co")
    members = {
        "admin": membership_create(tenant=tenant, email="admin@retry.test", role="admin", clearance="restricted",
                                   group_slugs=["security-team"]),
        "editor": membership_create(tenant=tenant, email="editor@retry.test", role="editor",
                                    clearance="confidential"),
        "low_editor": membership_create(tenant=tenant, email="low@retry.test", role="editor", clearance="public"),
        "viewer": membership_create(tenant=tenant, email="viewer@retry.test", role="viewer", clearance="restricted",
                                    group_slugs=["security-team"]),
        "other_admin": membership_create(tenant=other, email="admin@other.test", role="admin",
                                         clearance="restricted"),
    }
    # A plain internal document every editor may change, and one with a restricted section.
    plain = make_document(tenant, title="Plain", sections=[("root", None, "", AccessLevel.INTERNAL, [], "Hello.")])
    mixed = make_document(tenant, title="Mixed", sections=POLICY_SECTIONS)
    return {"tenant": tenant, "members": members, "plain": plain, "mixed": mixed}


def _failed(world, document, **fields) -> IngestionJob:
    fields = {"status": IngestionJob.Status.FAILED, "stage": "failed", "error": "line 4: boom", **fields}
    return IngestionJob.objects.create(tenant=world["tenant"], document=document,
                                       created_by=world["members"]["admin"].user, **fields)


@pytest.mark.parametrize("who", ["admin", "editor"])
def test_an_editor_who_may_change_the_document_and_an_admin_retry(world, who):
    member = world["members"][who]
    failed = _failed(world, world["plain"])
    Document.objects.filter(pk=world["plain"].pk).update(status=Document.Status.FAILED, error="line 4: boom")
    retry = job_retry(job=failed, actor=member)
    assert retry.pk != failed.pk
    assert (retry.kind, retry.status, retry.document_id) == ("document", "queued", world["plain"].pk)
    assert retry.created_by_id == member.user_id and retry.stats["retry_of"] == str(failed.pk)
    # Who uploaded the bytes travels with the job (not the retrier): only they read its error in full.
    assert retry.stats["content_by"] == world["plain"].metadata.get("content_by")
    failed.refresh_from_db()
    assert failed.status == "failed"  # the failed job stays as it was: its error is history
    document = Document.objects.get(pk=world["plain"].pk)
    assert (document.status, document.error) == ("pending", "")


@pytest.mark.parametrize(
    ("who", "document", "creator", "refusal"),
    [
        ("viewer", "plain", "admin", PermissionRefused),  # a viewer may see the job, but not retry it
        ("other_admin", "plain", "admin", NotFound),  # another tenant's job is as missing
        ("low_editor", "mixed", "admin", NotFound),  # a job of a document they cannot see, made by someone else
        # Sees the document, not its restricted sections: nor its jobs, made by someone else (a job of a document they
        # read part of would date a change to the rest: docs/security.md, "Job times").
        ("editor", "mixed", "admin", NotFound),
        ("editor", "mixed", "editor", PermissionRefused),  # their own job: theirs to see, not the document to change
    ],
)
def test_who_may_not_retry(world, who, document, creator, refusal):
    failed = _failed(world, world[document])
    IngestionJob.objects.filter(pk=failed.pk).update(created_by=world["members"][creator].user)
    before = snapshot()
    with pytest.raises(refusal):
        job_retry(job=failed, actor=world["members"][who])
    assert snapshot() == before


def test_which_jobs_may_not_be_retried(world):
    admin, plain = world["members"]["admin"], world["plain"]
    tenant = world["tenant"]
    succeeded = _failed(world, plain, status="succeeded", error="")
    batch = IngestionJob.objects.create(tenant=tenant, kind="batch", status="failed", error="1 of 1 documents failed")
    build = IngestionJob.objects.create(tenant=tenant, kind="reindex", status="failed")
    in_build = _failed(world, plain, batch=build)
    cases = [(succeeded, "only a failed job"), (batch, "only a document's job"), (in_build, "index build")]
    before = snapshot()
    for job, message in cases:
        with pytest.raises(JobNotRetryable, match=message):
            job_retry(job=job, actor=admin)
    older = _failed(world, plain)
    running = _failed(world, plain, status="running", error="")
    with pytest.raises(JobNotRetryable, match="queued or running"):
        job_retry(job=older, actor=admin)
    running.status = "failed"
    running.save()
    with pytest.raises(JobNotRetryable, match="newer job"):
        job_retry(job=older, actor=admin)
    assert job_retry(job=running, actor=admin).status == "queued"  # the newest failed job may be
    with pytest.raises(JobNotRetryable, match="queued or running"):  # and only once at a time
        job_retry(job=running, actor=admin)
    assert snapshot()["documents"] != before["documents"]  # (the one retry set its document pending)


def test_a_retry_needs_a_member(world):
    with pytest.raises(TypeError):
        job_retry(job=_failed(world, world["plain"]), actor=None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_job_failed_on_an_unknown_group_succeeds_once_the_group_exists(celery_worker):
    tenant = tenant_create(slug="retry-live", name="Retry Live")
    admin = membership_create(tenant=tenant, email="admin@live.test", role="admin", clearance="restricted")
    upload = Upload(content=UNKNOWN_GROUP.encode(), title="Handbook", content_type="text/markdown")
    document, job = document_create(tenant=tenant, created_by=admin, upload=upload)
    (job,) = wait_for_jobs([job.id])
    assert job.status == "failed" and job.error == "unknown group payroll (line 4)"
    group_create(tenant=tenant, slug="payroll")
    retry = job_retry(job=job, actor=Membership.objects.get(pk=admin.pk))
    (retry,) = wait_for_jobs([retry.id])
    assert retry.status == "succeeded", retry.error
    document.refresh_from_db()
    assert (document.status, document.error) == ("ready", "")
