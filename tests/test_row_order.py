"""What the product writes and shows in an order does not follow the order PostgreSQL happens to read rows in
(twenty-second session; ``tests/row_order.py``: each test stores the row that should come first last and reads
tables in their stored order, so a read without an order, or with ties in it, fails every run)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from accounts.policy import AccessLevel
from accounts.services import membership_create, tenant_create
from audit.models import Action, AuditEvent
from kb.index_versions import (
    index_version_active,
    index_version_build,
    index_version_build_job,
    index_version_build_report,
)
from kb.models import Document, IndexVersion, IngestionJob
from sources.models import Source, SourceDetached, SourceItem, SourceSync
from sources.selectors import detached_page, last_sync, last_syncs, source_preview
from sources.services import DETACHED, source_create, syncs_tick
from tests import factories
from tests.api_helpers import token_client
from tests.row_order import store_last
from tests.sources_helpers import new_folder, write
from tests.sources_helpers import sync_inline as _sync

pytestmark = pytest.mark.django_db


def test_a_source_sync_takes_over_and_deletes_vanished_items_in_path_order_as_its_preview_says(stored_order_reads):
    """Two files of the same content vanish and a new path brings that content back: it takes over the first of
    them in path order (its document kept), the preview naming the same one; the rest are deleted in path order,
    one ``document.delete`` record each. Read in no order, the items came in stored order: the path written last
    was taken over, and the preview and the sync could each name another."""
    tenant = tenant_create(slug="order-src", name="order-src")
    admin = membership_create(tenant=tenant, email="admin@order-src.example", role="admin", clearance="restricted")
    root = new_folder(tenant, "order-")
    same = "# Twins\n\nThe twin lanterns are lit at dusk.\n"
    write(root, {"a.md": same, "b.md": same, "gone-1.md": "# One\n\nThe first ledger.\n",
                 "gone-2.md": "# Two\n\nThe second ledger.\n"})
    source = source_create(actor=admin, tenant=tenant, kind="folder", name="order", path=str(root),
                           access_level="internal")
    _sync(source)
    documents = dict(SourceItem.objects.filter(source=source).values_list("path", "document_id"))
    assert len(set(documents.values())) == 4, documents
    store_last(SourceItem.objects.filter(source=source, path__in=["a.md", "gone-1.md"]))

    write(root, {"a.md": None, "b.md": None, "gone-1.md": None, "gone-2.md": None, "c.md": same})
    rows = {row["path"]: row for row in source_preview(member=admin, source=source)["items"]}
    assert (rows["c.md"]["action"], rows["c.md"]["renamed_from"]) == ("rename", "a.md"), rows
    records = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()
    sync = _sync(source)
    assert (sync.renamed, sync.deleted) == (1, 3), (sync.errors, sync.skips)
    assert SourceItem.objects.get(source=source, path="c.md").document_id == documents["a.md"]
    deleted = list(AuditEvent.objects.filter(pk__gt=records, action=Action.DOCUMENT_DELETE).order_by("pk")
                   .values_list("target_id", flat=True))
    assert deleted == [str(documents[path]) for path in ("b.md", "gone-1.md", "gone-2.md")], (deleted, documents)


def test_the_sources_tick_starts_due_syncs_and_resends_stuck_ones_in_a_fixed_order(stored_order_reads):
    """Two scheduled sources due and two syncs nobody works on: the tick starts the due ones in the sources' id order
    (one ``source.sync`` record each, in that order) and re-sends the stuck ones oldest first. Read in no order, both
    followed the rows' last update."""
    tenant = tenant_create(slug="order-tick", name="order-tick")
    admin = membership_create(tenant=tenant, email="admin@order-tick.example", role="admin", clearance="restricted")
    due = [source_create(actor=admin, tenant=tenant, kind="folder", name=name, path=str(new_folder(tenant, "tick-")),
                         access_level="internal", schedule_minutes=60) for name in ("first", "second")]
    idle = [source_create(actor=admin, tenant=tenant, kind="folder", name=name, path=str(new_folder(tenant, "tick-")),
                          access_level="internal") for name in ("stuck-1", "stuck-2")]
    now = timezone.now()
    stuck = [SourceSync.objects.create(tenant_id=tenant.pk, source=source, heartbeat_at=now - timedelta(days=1))
             for source in idle]
    # The second stuck one made the oldest, which stores it last; the first source stored last.
    SourceSync.objects.filter(pk=stuck[1].pk).update(created_at=now - timedelta(days=1, minutes=1))
    store_last(Source.objects.filter(pk=due[0].pk))
    records = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first()

    ticked = syncs_tick(now=now)

    assert ticked["resent"] == [str(stuck[1].pk), str(stuck[0].pk)], (ticked, stuck)
    assert ticked["started"] == [str(SourceSync.objects.get(source=source).pk) for source in due], ticked
    recorded = list(AuditEvent.objects.filter(pk__gt=records, action=Action.SOURCE_SYNC).order_by("pk")
                    .values_list("target_id", flat=True))
    assert recorded == [str(source.pk) for source in due], recorded


def _tied_pages(api, url: str, created: list, model) -> list[str]:
    """The ids of the API list at ``url`` a page of one at a time, after the rows of ``created`` (made in that order)
    were given one creation time and the one that sorts first (by id, newest first) was stored last."""
    model.objects.filter(pk__in=[row.pk for row in created]).update(created_at=timezone.now())
    first = max(created, key=lambda row: row.pk)
    store_last(model.objects.filter(pk=first.pk))
    pages, offset, count = [], 0, 1
    while offset < count:
        answer = api.get(f"{url}?limit=1&offset={offset}")
        assert answer.status_code == 200, answer.content
        pages += [row["id"] for row in answer.json()["results"]]
        offset, count = offset + 1, answer.json()["count"]
    return pages


def test_a_sources_syncs_of_one_time_are_listed_newest_id_first_each_once_across_pages(stored_order_reads):
    """A source's syncs in the API (newest first), two made at one time: by id then, so pages of one give each once,
    and its last sync is the first of the list (the sources list's ``last_syncs`` already broke ties by id). Sorted
    by their time alone, the tie followed the stored order."""
    tenant = tenant_create(slug="order-syncs", name="order-syncs")
    admin = membership_create(tenant=tenant, email="admin@order-syncs.example", role="admin", clearance="restricted")
    source = source_create(actor=admin, tenant=tenant, kind="folder", name="syncs",
                           path=str(new_folder(tenant, "syncs-")), access_level="internal")
    syncs = [SourceSync.objects.create(tenant_id=tenant.pk, source=source, status="succeeded") for _ in range(2)]
    pages = _tied_pages(token_client(admin), f"/api/v1/sources/{source.pk}/syncs/", syncs, SourceSync)
    assert pages == [str(s.pk) for s in sorted(syncs, key=lambda s: s.pk, reverse=True)], (pages, syncs)
    assert last_sync(source) == last_syncs([source])[source.pk] == max(syncs, key=lambda s: s.pk)


def test_index_versions_of_one_time_are_listed_by_id_each_once_across_pages(stored_order_reads):
    """The tenant's index versions in the API (active first, then newest), two shadow versions made at one time: by
    id then, so pages of one give each once. Sorted by their time alone, the tie followed the stored order."""
    tenant = tenant_create(slug="order-versions", name="order-versions")
    admin = membership_create(tenant=tenant, email="admin@order-versions.example", role="admin", clearance="restricted")
    active = index_version_active(tenant=tenant)
    shadows = [factories.index_version(tenant, name=f"shadow {n}") for n in range(2)]
    pages = _tied_pages(token_client(admin), "/api/v1/index-versions/", shadows, IndexVersion)
    assert pages == [str(v.pk) for v in [active, *sorted(shadows, key=lambda v: v.pk, reverse=True)]], pages


def test_an_index_builds_report_lists_skipped_and_failed_documents_in_the_order_their_jobs_were_made(
        stored_order_reads):
    """A build's report (API, console, ``kb_index``): the documents it skipped and those that failed, each list in the
    order the build made their jobs -- the order of the documents it covers. Read in no order, it followed the jobs'
    last update."""
    tenant = tenant_create(slug="order-build", name="order-build")
    version = factories.index_version(tenant, name="shadow")
    build = IngestionJob.objects.create(tenant=tenant, kind=IngestionJob.Kind.REINDEX, index_version=version,
                                        cause=IngestionJob.Cause.INDEX_BUILD, status=IngestionJob.Status.SUCCEEDED)
    children = []
    for n, outcome in enumerate(["skipped", "skipped", "failed", "failed"]):
        document = factories.document(tenant, title=f"doc {n}", status=Document.Status.READY)
        children.append(IngestionJob.objects.create(
            tenant=tenant, document=document, batch=build, index_version=version, cause=IngestionJob.Cause.INDEX_BUILD,
            status=IngestionJob.Status.FAILED if outcome == "failed" else IngestionJob.Status.SUCCEEDED,
            error=f"error {n}" if outcome == "failed" else "", stats={"skipped": "content changed"} if n < 2 else {}))
    # The first skipped and the first failed stored last, their jobs and their documents (a join may read either).
    store_last(IngestionJob.objects.filter(pk__in=[children[0].pk, children[2].pk]))
    store_last(Document.objects.filter(pk__in=[children[0].document_id, children[2].document_id]))

    report = index_version_build_report(job=build)
    assert [row["document_id"] for row in report["skipped"]] == [str(c.document_id) for c in children[:2]], report
    assert [row["job_id"] for row in report["failed"]] == [str(c.pk) for c in children[2:]], report


def test_an_index_versions_build_jobs_of_one_time_resolve_to_the_newest_id_for_the_page_and_the_resume(
        stored_order_reads):
    """A version with two unfinished build jobs made at one time (a resume raced a build): its page's job
    (``index_version_build_job``) and the build a resume continues (``index_version_build``) are the same one, the
    newest by id, as the codebase's other newest-first reads break ties. Sorted by their time alone, each followed
    the stored order (the job written first)."""
    tenant = tenant_create(slug="order-build-job", name="order-build-job")
    version = factories.index_version(tenant, name="shadow")
    jobs = [IngestionJob.objects.create(tenant=tenant, kind=IngestionJob.Kind.REINDEX, index_version=version,
                                        cause=IngestionJob.Cause.INDEX_BUILD, status=IngestionJob.Status.RUNNING)
            for _ in range(2)]
    IngestionJob.objects.filter(pk__in=[job.pk for job in jobs]).update(created_at=timezone.now())
    newest = max(jobs, key=lambda job: job.pk)
    store_last(IngestionJob.objects.filter(pk=newest.pk))

    assert index_version_build_job(version=version) == newest, jobs
    assert index_version_build(version=version) == newest, jobs


def test_a_detached_paths_record_comes_from_the_newest_id_of_the_last_finished_syncs_of_one_time(stored_order_reads):
    """A detached path no sync has recorded on its tombstone is judged with the last finished sync's record of its
    skip; two finished syncs made at one time, the newer by id narrowing the path to restricted: that one is the
    record (the source's last sync, ``last_sync``), so a confidential admin is not shown the path. Sorted by their
    time alone, the tie followed the stored order and the older record showed it."""
    tenant = tenant_create(slug="order-skips", name="order-skips")
    low = membership_create(tenant=tenant, email="low@order-skips.example", role="admin", clearance="confidential")
    source = source_create(actor=low, tenant=tenant, kind="folder", name="skips",
                           path=str(new_folder(tenant, "skips-")), access_level="internal")
    SourceDetached.objects.create(tenant=tenant, source=source, path="gone.md", access_level=AccessLevel.INTERNAL)
    assert detached_page(member=low, source=source).hidden == 0

    def skip(level: AccessLevel) -> list[dict]:
        return [{"path": "gone.md", "reason": DETACHED, "access": {"level": int(level), "groups": []}}]

    syncs = [SourceSync.objects.create(tenant_id=tenant.pk, source=source, status=SourceSync.Status.SUCCEEDED)
             for _ in range(2)]
    SourceSync.objects.filter(pk__in=[s.pk for s in syncs]).update(created_at=timezone.now())
    newest, older = sorted(syncs, key=lambda s: s.pk, reverse=True)
    SourceSync.objects.filter(pk=older.pk).update(skips=skip(AccessLevel.INTERNAL))
    SourceSync.objects.filter(pk=newest.pk).update(skips=skip(AccessLevel.RESTRICTED))  # stored last
    assert last_sync(source) == newest

    page = detached_page(member=low, source=source)
    assert (page.rows, page.hidden) == ([], 1), page
