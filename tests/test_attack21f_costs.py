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


# ----------------------------------------------------------------------------- a document as a member, a page at a time


def _long_document(slug: str, count: int):
    """A tenant whose document holds ``count`` sections below its root, every third restricted; an admin of the top
    clearance and an internal viewer."""
    from accounts.policy import AccessLevel
    from tests.api_helpers import make_document

    tenant = tenant_create(slug=slug, name=slug)
    admin = membership_create(tenant=tenant, email=f"admin@{slug}.example", role="admin", clearance="restricted")
    viewer = membership_create(tenant=tenant, email=f"viewer@{slug}.example", role="viewer", clearance="internal")
    sections = [("root", None, "", AccessLevel.INTERNAL, [], "Opening.")] + [
        (f"s{n}", "root", f"Part {n}", AccessLevel.RESTRICTED if n % 3 == 2 else AccessLevel.INTERNAL, [], f"Body {n}.")
        for n in range(count - 1)]
    return admin, viewer, make_document(tenant, title="Long", sections=sections)


@pytest.mark.django_db
def test_a_document_as_a_member_is_shown_a_page_of_sections_at_a_time(monkeypatch):
    """``GET /api/v1/documents/{id}/as/{member}/`` and the console's page made and sent every section of the document
    -- up to 100,000 -- in one answer. Now the API answers at most ``SECTIONS_PAGE_MAX`` sections (past that a 400
    saying how to page; ``?offset=&limit=``, ``X-Sections-Total``) and the console ``AS_MEMBER_PAGE`` a page; the
    counts are still the whole document's."""
    from console.views import effective_access
    from kb import apis

    monkeypatch.setattr(apis, "SECTIONS_PAGE_MAX", 5)
    monkeypatch.setattr(effective_access, "AS_MEMBER_PAGE", 5)
    admin, viewer, document = _long_document("c21f-as", 12)
    api = token_client(admin)
    url = f"/api/v1/documents/{document.pk}/as/{viewer.pk}/"

    whole = api.get(url)
    assert whole.status_code == 400 and whole.json()["error"]["code"] == "too_many_sections", whole.content
    assert "has 12 sections" in whole.json()["error"]["message"]
    pages = [api.get(url, {"offset": offset, "limit": 5}) for offset in (0, 5, 10)]
    assert [p.status_code for p in pages] == [200] * 3 and {p["X-Sections-Total"] for p in pages} == {"12"}
    assert [len(p.json()["sections"]) for p in pages] == [5, 5, 2]
    listed = [s for p in pages for s in p.json()["sections"]]
    assert [s["id"] for s in listed] == [str(document.section_ids[k]) for k in ["root"] + [f"s{n}" for n in range(11)]]
    assert [s["readable"] for s in listed] == [True] + [n % 3 != 2 for n in range(11)]
    for page in pages:  # the whole document's counts on every page
        answer = page.json()
        assert (answer["sections_readable"], answer["chunks"], answer["chunks_readable"]) == (9, 12, 9), answer
    assert api.get(url, {"limit": 10_001}).status_code == 400  # past the maximum a page

    # The console: a page of sections, each on exactly one page, the counts the whole document's.
    console = console_client(admin)
    shown = []
    for number in (1, 2, 3):
        html = console.get(f"/documents/{document.pk}/as/", {"member": viewer.pk, "page": number}).content.decode()
        assert "Reads 9 of 12 sections" in html and f"page {number} of 3" in html, html
        shown += [int(order) for order in re.findall(r'data-order="(\d+)"', html)]
    assert shown == list(range(12))
