"""A source's detached paths a page at a time (twentieth session, detachedpage20).

The list (``GET /api/v1/sources/{id}/detached/``, the console's source page) read every tombstone of the source and
judged each one's access in Python on every request. Now a request reads one page of them -- ``?limit=&offset=`` as
the API's other lists (50 by default, at most 500; the same 400s), the console's ``?page=`` of 50 -- newest first,
and judges only those: ``count`` is how many the source holds (what ``results`` and ``hidden`` together told
before), ``hidden`` how many of the page's are left out. Paths a member may not read are never shown on any page
(docs/sources.md, "Detached documents"; docs/security.md, "A source's detached paths a page at a time")."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document
from sources.models import SourceDetached
from sources.selectors import DETACHED_PAGE
from sources.services import source_create
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import new_folder


def _world(slug: str):
    """A source whose access map makes ``secret/**`` restricted (its default: internal), a restricted admin of every
    group (``top``) and a confidential one (``low``)."""
    tenant = tenant_create(slug=slug, name=slug)
    group_create(tenant=tenant, slug="board")
    top = membership_create(tenant=tenant, email=f"top@{slug}.example", role="admin", clearance="restricted",
                            group_slugs=["board"])
    low = membership_create(tenant=tenant, email=f"low@{slug}.example", role="admin", clearance="confidential")
    source = source_create(actor=top, tenant=tenant, kind="folder", name="handbook",
                           path=str(new_folder(tenant, f"{slug}-")), access_level="internal",
                           access_map=[{"path": "secret/**", "access_level": "restricted", "groups": []}])
    return tenant, top, low, source


def _detached(tenant, source, paths: list[str], *, documents: bool = False) -> list[SourceDetached]:
    """Tombstones of ``paths`` in this order (each detached at the source's policy then: internal), with a document
    each when ``documents``."""
    made = []
    for path in paths:
        document = Document.objects.create(tenant=tenant, title=path, source=path) if documents else None
        made.append(SourceDetached.objects.create(tenant=tenant, source=source, path=path, document=document,
                                                  access_level=AccessLevel.INTERNAL, access_groups=[]))
    return made


def _paths(count: int) -> list[str]:
    """Every fourth path below ``secret/`` (restricted by the access map now), the others below ``open/``."""
    return [f"secret/s{n:03}.md" if n % 4 == 3 else f"open/o{n:03}.md" for n in range(count)]


def _pages(api, url: str) -> list[dict]:
    """Every page of the list, following ``next`` from ``url``."""
    pages = []
    while url:
        answer = api.get(url)
        assert answer.status_code == 200, answer.content
        pages.append(answer.json())
        url = pages[-1]["next"]
        assert len(pages) <= 100, "the pages never end"
    return pages


@pytest.mark.django_db
def test_every_path_is_on_one_page_and_the_hidden_ones_on_none():
    tenant, top, low, source = _world("dp20-pages")
    tombstones = _detached(tenant, source, _paths(60))
    shown = {t.path for t in tombstones if t.path.startswith("open/")}
    newest_first = [t.pk for t in reversed(tombstones)]
    url = f"/api/v1/sources/{source.pk}/detached/?limit=7"

    pages = _pages(token_client(low), url)
    listed = [row["path"] for page in pages for row in page["results"]]
    assert len(listed) == len(set(listed)) and set(listed) == shown, listed  # each readable path once
    assert not [p for p in pages if "secret" in str(p)], "a hidden path was shown"
    for n, page in enumerate(pages):  # a page of 7 tombstones: those the admin may see, and the others counted
        assert page["count"] == 60 and len(page["results"]) + page["hidden"] == min(7, 60 - 7 * n), (n, page)
    assert sum(page["hidden"] for page in pages) == 15
    assert [r["id"] for p in pages for r in p["results"]] == [pk for pk in newest_first if pk in
                                                               {t.pk for t in tombstones if t.path in shown}]

    # The top admin: every path, newest first, none hidden.
    pages = _pages(token_client(top), url)
    assert [r["id"] for p in pages for r in p["results"]] == newest_first
    assert [p["hidden"] for p in pages] == [0] * 9 and pages[0]["previous"] is None and pages[-1]["next"] is None

    # Past the end: an empty page of the same count.
    past = token_client(low).get(f"/api/v1/sources/{source.pk}/detached/?offset=60").json()
    assert (past["count"], past["results"], past["hidden"], past["next"]) == (60, [], 0, None), past


@pytest.mark.django_db
@pytest.mark.parametrize("query", ["limit=0", "limit=501", "limit=x", "limit=", "limit=1.5", "offset=-1",
                                   "offset=x", "limt=5", "limit=5&limit=6"])
def test_a_malformed_page_is_the_400_of_the_other_lists(query):
    tenant, top, low, source = _world("dp20-bad-" + re.sub(r"[^a-z0-9]+", "-", query).strip("-"))
    _detached(tenant, source, _paths(3))
    api = token_client(low)
    answer = api.get(f"/api/v1/sources/{source.pk}/detached/?{query}")
    the_other_lists = api.get(f"/api/v1/sources/{source.pk}/syncs/?{query}")
    assert (answer.status_code, answer.json()) == (400, the_other_lists.json()), (query, answer.content)
    assert "secret" not in answer.content.decode() and "open/" not in answer.content.decode()


def _detached_reads(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if 'FROM "sources_sourcedetached"' in q["sql"]]


@pytest.mark.django_db
def test_a_page_reads_the_same_queries_and_at_most_a_page_of_tombstones_however_many_there_are():
    tenant, top, low, source = _world("dp20-queries")
    _detached(tenant, source, ["open/first.md"], documents=True)
    api, console = token_client(low), console_client(low)
    api_url, console_url = f"/api/v1/sources/{source.pk}/detached/", f"/sources/{source.pk}/"

    def measured() -> tuple[int, int, list[str]]:
        api.get(api_url), console.get(console_url)  # the token's and the session's first use write once
        with CaptureQueriesContext(connection) as by_api:
            assert api.get(api_url).status_code == 200
        with CaptureQueriesContext(connection) as by_console:
            assert console.get(console_url).status_code == 200
        return len(by_api), len(by_console), _detached_reads(by_api) + _detached_reads(by_console)

    one = measured()
    _detached(tenant, source, _paths(3 * DETACHED_PAGE), documents=True)
    many = measured()
    assert many[:2] == one[:2], (one[:2], many[:2])
    # The tombstones: counted, and a page of them read -- never all of them.
    for sql in many[2]:
        limit = re.search(r"\bLIMIT (\d+)", sql)
        assert "COUNT(" in sql or (limit and int(limit.group(1)) <= DETACHED_PAGE), sql
    assert len(many[2]) == 4, many[2]  # a COUNT and a page, by the API and by the console


@pytest.mark.django_db
def test_the_console_pages_the_table_and_shows_no_hidden_path():
    tenant, top, low, source = _world("dp20-console")
    tombstones = _detached(tenant, source, _paths(DETACHED_PAGE + 10))
    shown = {t.path for t in tombstones if t.path.startswith("open/")}
    console = console_client(low)

    def table(query: str) -> tuple[list[str], str]:
        page = console.get(f"/sources/{source.pk}/{query}")
        assert page.status_code == 200
        html = page.content.decode()
        assert "secret/s" not in html, query
        rows = html.split('<table id="detached-paths">', 1)[1].split("</table>", 1)[0]
        return re.findall(r"<code>([^<]+)</code>", rows), html

    first, html = table("")
    assert "page 1 of 2 · 60 detached paths" in html and 'id="next-page"' in html, html
    hidden = sum(t.path.startswith("secret/") for t in tombstones[-DETACHED_PAGE:])  # of the newest page's
    assert f"{hidden} more detached paths on this page you may not read" in html, html
    second, html = table("?page=2")
    assert "page 2 of 2" in html and 'id="previous-page"' in html and 'id="next-page"' not in html
    assert len(first) + len(second) == len(shown) and set(first) | set(second) == shown, (first, second)
    assert first[0] == [t.path for t in tombstones if t.path in shown][-1]  # newest first
    # What is no page number is the first page; past the last, the last.
    assert table("?page=x")[0] == first and table("?page=99")[0] == second
