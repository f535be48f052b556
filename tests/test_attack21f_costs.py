"""Work in a web thread that grew with what a tenant holds (found attacking cost, twenty-first session, attack21f).

The lists of sources -- ``GET /api/v1/sources/`` and the console's ``/sources/`` -- read each source's last sync, its
state (the jobs it started, counted over the tenant's jobs), its documents and its groups' slugs with queries of
their own: four a source through the API (1,223 queries for a page of 303 sources, 23 for 3), two through the
console, which showed every source of the tenant on one page (616 queries for 303). Now a page is read in a few
queries whatever its size or the tenant's, and the console shows ``selectors.SOURCES_PAGE`` sources a page
(docs/security.md, "A list of sources read a source at a time")."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document, IngestionJob
from sources import selectors
from sources.models import Source, SourceItem, SourceSync
from sources.selectors import source_document_count
from sources.services import JOB_STATS_KEY, access_map_names
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import new_folder

JOB_STATES = ("succeeded", "failed", "running")


def _sources(tenant, groups, start: int, count: int) -> None:
    """``count`` folder sources, each but every fifth with two syncs (the newer one's jobs: one succeeded, one
    failed or running by turns) and a document; policies naming the tenant's groups."""
    for n in range(start, start + count):
        source = Source.objects.create(
            tenant=tenant, kind="folder", name=f"source-{n:04}", path=str(new_folder(tenant, "c21f-")),
            access_groups=[groups[n % 2].pk],
            access_map=[{"path": "board/**", "level": 3, "groups": [groups[(n + 1) % 2].pk]}])
        if n % 5 == 4:
            continue
        SourceSync.objects.create(tenant=tenant, source=source, status="succeeded")
        sync = SourceSync.objects.create(tenant=tenant, source=source, status="succeeded")
        document = Document.objects.create(tenant=tenant, title=f"d{n}", source=f"d{n}.md")
        SourceItem.objects.create(tenant=tenant, source=source, path=f"d{n}.md", document=document,
                                  access_level=1, access_groups=[])
        for status in ("succeeded", JOB_STATES[1 + n % 2]):
            IngestionJob.objects.create(tenant=tenant, document=document, status=status,
                                        stats={JOB_STATS_KEY: str(sync.pk)})


def _world(slug: str):
    tenant = tenant_create(slug=slug, name=slug)
    groups = [group_create(tenant=tenant, slug="board"), group_create(tenant=tenant, slug="finance")]
    admin = membership_create(tenant=tenant, email=f"admin@{slug}.example", role="admin", clearance="restricted",
                              group_slugs=["board", "finance"])
    return tenant, groups, admin


@pytest.mark.django_db
def test_a_page_of_sources_costs_the_same_queries_however_many_the_tenant_holds():
    tenant, groups, admin = _world("c21f-queries")
    api, console = token_client(admin), console_client(admin)

    def measured() -> tuple[int, int, int]:
        api.get("/api/v1/sources/"), console.get("/sources/")  # the token's and the session's first use write once
        with CaptureQueriesContext(connection) as by_api:
            assert api.get("/api/v1/sources/?limit=500").status_code == 200
        with CaptureQueriesContext(connection) as by_console:
            assert console.get("/sources/").status_code == 200
        jobs = [q for q in (*by_api.captured_queries, *by_console.captured_queries)
                if 'FROM "kb_ingestionjob"' in q["sql"]]
        return len(by_api), len(by_console), len(jobs)

    _sources(tenant, groups, 0, 3)
    few = measured()
    _sources(tenant, groups, 3, 2 * selectors.SOURCES_PAGE)
    many = measured()
    assert many == few, (few, many)
    assert many[2] <= 2, many  # the jobs of a page's last syncs counted once by each list


@pytest.mark.django_db
def test_the_lists_show_each_source_as_it_is_shown_alone():
    tenant, groups, admin = _world("c21f-shown")
    _sources(tenant, groups, 0, selectors.SOURCES_PAGE + 7)
    api, console = token_client(admin), console_client(admin)

    listed = []
    url = "/api/v1/sources/?limit=20"
    while url:
        answer = api.get(url).json()
        listed += answer["results"]
        url = answer["next"]
    sources = list(Source.objects.filter(tenant=tenant).order_by("name"))
    assert [s["id"] for s in listed] == [s.pk for s in sources]
    for shown, source in zip(listed, sources, strict=True):
        alone = api.get(f"/api/v1/sources/{source.pk}/").json()
        assert shown == alone, (shown, alone)
        assert shown["documents"] == source_document_count(source)
        assert shown["groups"] == [groups[int(source.name[-4:]) % 2].slug]
        assert shown["access_map"] == access_map_names(source)
        last = selectors.last_sync(source)
        assert (shown["last_sync"] or {}).get("id") == (str(last.pk) if last else None)
        if last:
            assert shown["last_sync"]["status"] == selectors.sync_state(last)["status"]
    assert {s["last_sync"]["status"] for s in listed if s["last_sync"]} == {"failed", "running"}

    # The console: every source on exactly one page, its last sync's state as the source's own page says it.
    pages = [console.get("/sources/").content.decode(), console.get("/sources/?page=2").content.decode()]
    assert "page 1 of 2" in pages[0] and "page 2 of 2" in pages[1]
    rows = [m for page in pages for m in re.findall(r'<tr id="source-(\d+)">(.*?)</tr>', page, re.S)]
    assert [int(pk) for pk, _ in rows] == [s.pk for s in sources]
    for (_, row), source in zip(rows, sources, strict=True):
        last = selectors.last_sync(source)
        expected = f'status-{selectors.sync_state(last)["status"]}' if last else "never"
        assert expected in row, (source.name, row)
