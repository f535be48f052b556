"""Review of the 2026-12-04 fixes, attacked (review 12): what they missed.

- The console's index build report showed a failed child's error in full, unscreened, to any admin who may
  see the document -- not only to its uploader and admins who may read every section (``error_in_full``), as
  every other place that shows a job's error does.
- A local Git repository checked by ``sources.listing._local_repo`` read objects through an alternate's own
  alternates, and through links inside an alternate's object folder, neither of which was checked.
"""

from __future__ import annotations

import os
import uuid

import pytest

from accounts.models import Tenant
from accounts.policy import AccessLevel
from accounts.services import tenant_create
from kb.models import IngestionJob

pytestmark = pytest.mark.django_db


def test_a_builds_failure_is_quoted_in_full_only_to_who_may_read_every_section():
    """The build report quoted a failed child's error in full to an admin who sees the document but not its
    restricted section -- the error may quote any line of it -- and unscreened. Now it is shown as the job
    pages show it (``kb.serializers.error_for`` under ``error_in_full``): the line and the kind of problem."""
    from ingestion.chunking.config import ChunkingConfig
    from kb.index_versions import index_version_create
    from tests.api_helpers import console_client, make_document, member_with_token

    tenant = tenant_create(slug=f"build12-{uuid.uuid4().hex[:6]}", name="Build Co")
    try:
        low, _ = member_with_token(tenant, f"low@{tenant.slug}.test", "admin", "internal")
        high, _ = member_with_token(tenant, f"high@{tenant.slug}.test", "admin", "restricted")
        document = make_document(tenant, title="Handbook", default=AccessLevel.INTERNAL, sections=[
            ("root", None, "Handbook", AccessLevel.INTERNAL, [], "Ordinary words."),
            ("merger", "root", "Merger", AccessLevel.RESTRICTED, [], "The codename is Bluebird."),
        ])
        version, _ = index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=90), name="small")
        build = IngestionJob.objects.create(tenant=tenant, kind=IngestionJob.Kind.REINDEX, index_version=version,
                                            status=IngestionJob.Status.SUCCEEDED, total=1, done=1)
        IngestionJob.objects.create(tenant=tenant, document=document, batch=build, index_version=version,
                                    status=IngestionJob.Status.FAILED,
                                    error="line 4: a malformed access marker 'codename Bluebird'")
        body = console_client(low).get(f"/versions/{version.short_id}/").content.decode()
        assert "Handbook" in body and "line 4: a malformed access marker" in body, body  # they see the document
        assert "Bluebird" not in body
        full = console_client(high).get(f"/versions/{version.short_id}/").content.decode()
        assert "malformed access marker &#x27;codename Bluebird&#x27;" in full, full  # may read every section
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()


@pytest.fixture
def src_admin(db):
    from accounts.services import membership_create

    tenant = tenant_create(slug="src-review12", name="Sources reviewed")
    return membership_create(tenant=tenant, email="admin@review12.example", role="admin", clearance="restricted")


@pytest.mark.parametrize("escape", ["nested-alternates", "links-in-an-alternate"])
def test_a_local_repository_reads_no_object_of_another_tenant_through_its_alternates(src_admin, escape):
    """``_local_repo`` checked the repository's own alternates and the links inside its own Git folders. But an
    alternate is an object folder of its own: its ``info/alternates`` is followed in turn (dulwich, as Git, reads an
    alternate's alternates), and links inside it are read as objects. A repository in the tenant's folder whose
    branch names a commit of another tenant's repository, with an alternate in the tenant's folder leading there
    (by its own alternates, or by links to the other repository's object folders), synced that tenant's file.
    Now every object folder the fetch may read, down the alternates, is checked as the repository's own."""
    from dulwich import porcelain

    from accounts.services import tenant_create as make_tenant
    from kb.models import Document
    from sources.models import SourceSync
    from sources.services import source_create, sync_run
    from tests.sources_helpers import git_commit, new_folder

    other = make_tenant(slug=f"src-review12-{escape}", name="Other")
    theirs = new_folder(other, "theirs-")
    head = git_commit(theirs, {"secret.md": "# Secret\n\nThe other tenant's pelican plan.\n"})
    their_objects = theirs / ".git" / "objects"

    middle = new_folder(src_admin.tenant, "middle-")  # an object folder in this tenant's own folder
    if escape == "nested-alternates":
        (middle / "info").mkdir()
        (middle / "info" / "alternates").write_text(f"{their_objects}\n")
    else:
        for part in their_objects.iterdir():
            if len(part.name) == 2:
                os.symlink(part, middle / part.name)
    repo = new_folder(src_admin.tenant, "borrower-")
    porcelain.init(str(repo))
    (repo / ".git" / "objects" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "objects" / "info" / "alternates").write_text(f"{middle}\n")
    (repo / ".git" / "refs" / "heads" / "master").write_text(head.decode() + "\n")

    source = source_create(actor=src_admin, tenant=src_admin.tenant, kind="git", name="borrower", url=str(repo))
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    sync_run(str(sync.pk))
    sync = SourceSync.objects.get(pk=sync.pk)
    assert not Document.objects.filter(tenant=src_admin.tenant).exists(), (sync.status, sync.error)
    assert sync.status == "failed" and "outside this tenant's folder" in sync.error, sync.error


def test_a_running_jobs_progress_is_not_shown_before_its_bytes_have_sections():
    """``progress_shown`` admitted anyone who could see the job's document. A new document has no sections until
    its job stores them, and a document without sections is visible to whoever its upload default admits -- so
    while its job ran, an internal member read its total of chunks (its size) through the API and the console,
    though the bytes' own markers then put every section above them. Now a job's progress is shown, besides to
    its uploader, only once its document holds sections the member may see (the numbers of its error, as the
    document's own error, still where the document is visible)."""
    from kb.services import Upload, document_create, document_replace
    from pipeline.claim import job_claim
    from pipeline.services import _plan_or_finish, jobs_run
    from tests.api_helpers import console_client, member_with_token

    tenant = tenant_create(slug=f"window-{uuid.uuid4().hex[:6]}", name="Window Co")
    try:
        uploader, uploader_key = member_with_token(tenant, f"up@{tenant.slug}.test", "editor", "restricted")
        internal, internal_key = member_with_token(tenant, f"int@{tenant.slug}.test", "editor", "internal")
        text = "---\naccess: restricted\n---\n" + "".join(
            f"# Board item {i}\n\n" + f"The board discussed item {i} at length. " * 12 + "\n\n" for i in range(6))
        document, job = document_create(tenant=tenant, created_by=uploader, upload=Upload(
            content=text.encode(), title="Board", content_type="text/markdown", access_level="internal"))
        claimed = job_claim(job.pk, task_id=None)
        assert _plan_or_finish(claimed) is not None  # planned: its total is set, nothing stored yet
        total = IngestionJob.objects.get(pk=job.pk).total
        assert total > 1

        def api(key, job_id=job.pk):
            from rest_framework.test import APIClient

            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
            return client.get(f"/api/v1/jobs/{job_id}/").json()

        assert api(uploader_key)["progress"] == {"done": 0, "total": total}
        _, everything_key = member_with_token(tenant, f"top@{tenant.slug}.test", "admin", "restricted")
        assert api(everything_key)["progress"] == {"done": 0, "total": total}  # may read every section: any size
        seen = api(internal_key)
        # The document is theirs to see, by its default; the job, not even that since the sixteenth session (a job
        # whose document is being ingested anew is shown to others once it has finished: docs/security.md, "Job
        # times"), so neither is its size.
        assert "progress" not in seen and seen["error"]["code"] == "not_found", seen
        for page in ("/jobs/", f"/jobs/{job.pk}/", f"/jobs/{job.pk}/card/", "/"):
            body = console_client(internal).get(page).content.decode()
            assert f"/{total}<" not in body and "<progress" not in body, page

        # The same for new bytes replacing a document the member reads: the old content's sections serve while the
        # job runs, and its total is the new bytes' size. Shown again once the new content is stored and theirs.
        notes, first = document_create(tenant=tenant, created_by=uploader, upload=Upload(
            content=b"# Notes\n\nOrdinary notes for everyone.\n", title="Notes", content_type="text/markdown",
            access_level="internal"))
        jobs_run([first.pk])
        assert api(internal_key, first.pk)["progress"] == {"done": 1, "total": 1}  # stored, and theirs to read
        _, replacing = document_replace(document=notes, created_by=uploader, upload=Upload(
            content=text.encode(), title="Notes", content_type="text/markdown", access_level="internal"))
        claimed = job_claim(replacing.pk, task_id=None)
        assert _plan_or_finish(claimed) is not None
        assert api(uploader_key, replacing.pk)["progress"] == {"done": 0, "total": total}
        seen = api(internal_key, replacing.pk)
        assert "progress" not in seen and seen["error"]["code"] == "not_found", seen  # not shown before it finishes
    finally:
        Tenant.objects.filter(pk=tenant.pk).delete()
