"""What started a job is a column of its own (``IngestionJob.cause``, seventeenth session), named by every creator.

Which jobs a member is shown turns on it (``kb.selectors.jobs_shown``: a re-derivation a policy change started is not
its creator's to follow). It was read from marks in ``stats`` (``rederive``, no ``retry_of``): a creator that wrote
other marks, or none, made a job of another kind without a word. Each creator in the code is run here for real and
its job's cause checked; the table refuses a job without a named cause; and the migration fills the column from
the old marks, in every tenant, as the owner and as a role the tenant wall holds, the same when run again.
"""

from __future__ import annotations

import importlib
import uuid

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import override_settings

from accounts.services import group_create, membership_create, tenant_create
from kb import index_versions as versions
from kb.jobs import job_create
from kb.models import Document, IngestionJob, Section
from kb.services import (
    Upload,
    batch_create,
    document_create,
    document_replace,
    document_store_for_source,
    job_retry,
    section_set_access,
)
from pipeline.services import jobs_run
from tests.application_role import run_data_step

pytestmark = pytest.mark.django_db

TEXT = """# Handbook
Alpha: the lunch menu is soup.

## Bravo <!-- access: restricted -->
Bravo: the merger code is heron.

### Bravo two <!-- access: restricted -->
Bravo two: the board meets at nine.
"""
UPLOAD = dict(title="Handbook", content_type="text/markdown", source="handbook.md")
Cause = IngestionJob.Cause


def _new_jobs(tenant, before: set) -> list[IngestionJob]:
    return list(IngestionJob.objects.filter(tenant=tenant).exclude(pk__in=before).order_by("created_at", "id"))


def _every_creator(slug: str) -> dict[str, str]:
    """Every path in the code that makes a job, run in a new tenant: each job's id and the cause it should have."""
    tenant = tenant_create(slug=slug, name=slug)
    for group in ("board", "kitchen"):
        group_create(tenant=tenant, slug=group)
    admin = membership_create(tenant=tenant, email=f"admin@{slug}.io", role="admin", clearance="restricted",
                              group_slugs=["board", "kitchen"])
    editor = membership_create(tenant=tenant, email=f"editor@{slug}.io", role="editor", clearance="restricted",
                               group_slugs=["board", "kitchen"])
    expected: dict[str, str] = {}
    document, job = document_create(tenant=tenant, created_by=editor, upload=Upload(content=TEXT.encode(), **UPLOAD))
    expected[str(job.pk)] = Cause.UPLOAD
    jobs_run([job.pk])
    document, job = document_replace(document=Document.objects.get(pk=document.pk), created_by=editor, upload=Upload(
        content=TEXT.replace("heron", "egret").encode(), tags=None, **UPLOAD))
    expected[str(job.pk)] = Cause.UPLOAD
    jobs_run([job.pk])
    before = set(IngestionJob.objects.values_list("pk", flat=True))
    batch = batch_create(tenant=tenant, created_by=editor, uploads=[
        Upload(content=b"# Notes\nThe first.", title="One", content_type="text/markdown", source="one.md"),
        Upload(content=b"# Notes\nThe second.", title="Two", content_type="text/markdown", source="two.md")])
    made = _new_jobs(tenant, before)
    assert len(made) == 3 and batch.pk in {j.pk for j in made}
    expected.update({str(j.pk): Cause.UPLOAD for j in made})
    jobs_run([j.pk for j in made if j.pk != batch.pk])
    _, job = document_store_for_source(tenant=tenant, upload=Upload(content=b"# Synced\nFrom a source.",
                                       title="Synced", content_type="text/markdown", source="synced.md"),
                                       document=None, metadata={}, job_stats={"source_sync": "a sync"})
    expected[str(job.pk)] = Cause.SOURCE_SYNC
    jobs_run([job.pk])
    # A second index version: the policy change re-derives the document in both, one job each.
    version, _ = versions.index_version_create(
        tenant=tenant, config=versions.index_version_config(settings=["target_tokens=40", "overlap=0"]), name="small")
    before = set(IngestionJob.objects.values_list("pk", flat=True))
    build = versions.index_version_build(version=version, created_by=admin.user)
    made = _new_jobs(tenant, before)
    assert build.pk in {j.pk for j in made} and len(made) > 1
    expected.update({str(j.pk): Cause.INDEX_BUILD for j in made})
    jobs_run([j.pk for j in made if j.pk != build.pk])
    before = set(IngestionJob.objects.values_list("pk", flat=True))
    bravo = Section.objects.get(document=document, title="Bravo")
    section_set_access(actor=editor, section=bravo, access_level="restricted", groups=["board"])
    changed = _new_jobs(tenant, before)
    assert len(changed) == 2, "the policy change started no re-derivation in each version: the test tests less"
    expected.update({str(j.pk): Cause.POLICY_CHANGE for j in changed})
    # One fails for real (an operator lowered the chunk limit), and is retried -- a retry is its retrier's.
    with override_settings(BULKHEAD_MAX_CHUNKS_SMALL=1):
        jobs_run([j.pk for j in changed])
    failed = IngestionJob.objects.get(pk=changed[0].pk)
    assert failed.status == IngestionJob.Status.FAILED, failed.error
    assert not IngestionJob.objects.filter(tenant=tenant, status__in=("queued", "running")).exclude(pk=build.pk)
    retry = job_retry(job=failed, actor=editor)
    expected[str(retry.pk)] = Cause.RETRY
    assert retry.stats.get("rederive") and retry.stats.get("retry_of") == str(failed.pk)
    assert set(IngestionJob.objects.filter(tenant=tenant).values_list("pk", flat=True)) == {
        uuid.UUID(pk) for pk in expected}, "a job made by a path this test does not name"
    return expected


def _causes(ids) -> dict[str, str]:
    return {str(pk): cause for pk, cause in IngestionJob.objects.filter(pk__in=list(ids)).values_list("pk", "cause")}


def test_every_creator_names_what_started_its_job():
    expected = _every_creator("cause-creators")
    assert _causes(expected) == expected


def test_a_job_without_a_named_cause_is_refused():
    tenant = tenant_create(slug="cause-none", name="Cause None")
    with pytest.raises(TypeError):
        job_create(tenant=tenant, document=None, created_by=None)  # every creator names it
    with pytest.raises(ValueError):
        job_create(tenant=tenant, document=None, created_by=None, cause="rederive")
    job = job_create(tenant=tenant, document=None, created_by=None, cause=Cause.UPLOAD)
    with pytest.raises(IntegrityError), transaction.atomic():
        IngestionJob.objects.filter(pk=job.pk).update(cause="")


@pytest.mark.parametrize("as_role", [False, True], ids=["as-the-owner", "as-a-role-under-the-wall"])
def test_the_migration_fills_each_jobs_cause_from_its_marks(as_role, settings):
    """Two tenants' jobs, every cause among them; each back at the column's default, as the migration's new column
    holds them: filled tenant by tenant, the same when run again, and no job of another tenant's marks moves."""
    expected = {**_every_creator("cause-fill-one"), **_every_creator("cause-fill-two")}
    IngestionJob.objects.filter(pk__in=list(expected)).update(cause=Cause.UPLOAD)
    fill = importlib.import_module("kb.migrations.0013_job_cause").fill_causes
    run_data_step(fill, as_role=as_role)  # twice: a rerun changes nothing
    assert _causes(expected) == expected  # read as the owner: the role reads no tenant's rows outside the wall


def test_the_migration_runs_back_and_forth():
    """The whole migration, as the owner: its column dropped (back to 0012) and added again, filled from the marks."""
    expected = _every_creator("cause-migrate")
    with connection.cursor() as cursor:  # the test's transaction: its deferred checks run now, before the DDL
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(connection)
    (leaf,) = executor.loader.graph.leaf_nodes("kb")
    executor.migrate([("kb", "0012_heading_paths_as_titles_are_stored")])
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([leaf])
    assert _causes(expected) == expected
