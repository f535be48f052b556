"""Attacking sources, 14b (review 14's follow-up).

1. A folder's walk that met an ``OSError`` outside its ``scandir`` -- a file whose ``stat`` fails between the folder's
   reading and the file's (gone meanwhile, or a path the system will not take) -- raised out of ``sync_run``: the sync
   stayed "running" until the tick sent it again and its attempts ran out. Made for real, also for a worker running as
   root: a file whose folder's path is under PATH_MAX (4096 bytes) but whose own path is past it is listed by the
   folder's ``scandir`` and refused by its ``stat`` ("File name too long"); a source folder whose real path is past
   PATH_MAX is refused by ``Path.is_dir`` (Python 3.11 raises what it does not take for "missing").
2. A website request that failed after a redirect named the hop it failed at -- an address the site chose -- to whoever
   could read the page it asked for (the start page: every admin); the hop is now judged as a path of the source."""

from __future__ import annotations

import http.server
import os

import pytest

from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document
from sources import access
from sources.services import source_create, source_update, sync_start
from tests.api_helpers import console_client, token_client
from tests.network_helpers import serve
from tests.sources_helpers import deep_folders, new_folder, wait_for_sync, write

NAME = 250  # a folder name's length (the limit is 255)


def _segments(length: int) -> list[str]:
    """Folder names that, joined by ``/``, are ``length`` characters long."""
    names = []
    while length > NAME:
        names.append("d" * (NAME - 10))
        length -= NAME - 9
    return [*names, "d" * length]


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_file_whose_stat_fails_mid_walk_fails_its_item_and_ends_the_sync(celery_worker):
    tenant = tenant_create(slug="src14b", name="Sources 14b")
    group_create(tenant=tenant, slug="finance")
    internal = membership_create(tenant=tenant, email="internal@s14b.example", role="admin", clearance="internal")
    top = membership_create(tenant=tenant, email="top@s14b.example", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    home = new_folder(tenant, "s14b-")
    long = home
    while len(str(long)) < 3500:
        long = long / ("l" * min(NAME, 3500 - len(str(long))))
    long = long / "root"
    # board/<folders>/: a folder path of 3,960 bytes once moved below ``long``; its file's path passes 4,096.
    folder = "board/" + "/".join(_segments(3960 - len(str(long)) - len("/board/")))
    name = "layoffs-" + "p" * 200 + ".md"
    assert len(str(long / folder)) < 4096 < len(str(long / folder / name)), len(str(long / folder))
    short = home / "short"
    write(short, {".bulkhead-access.yaml": "- path: 'board/**'\n  access_level: restricted\n",
                  "handbook/welcome.md": "# Welcome\n\nThe lighthouse keeper polishes the brass lamp.\n",
                  f"{folder}/{name}": "# Plan\n\nThe severance plan for the spring.\n"})
    link = home / "source"
    link.symlink_to(short)
    source = source_create(actor=top, tenant=tenant, kind="folder", name="s14b", path=str(link),
                           access_level="internal")
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.added) == ("succeeded", 2), (sync.error, sync.errors, sync.skips)
    plan = Document.objects.get(tenant=tenant, source=f"{folder}/{name}"[:1000])

    long.parent.mkdir(parents=True)
    os.rename(short, long)
    link.unlink()
    link.symlink_to(long)
    # 1. The file's stat fails: its item fails (as a file that cannot be read), its document stays, the sync ends.
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.failed, sync.deleted, sync.unchanged) == ("failed", 1, 0, 1), (
        sync.status, sync.error, sync.errors)
    assert [(e["path"], e["error"]) for e in sync.errors] == [(f"{folder}/{name}", "unreadable: File name too long")]
    assert Document.objects.filter(pk=plan.pk).exists()
    # Its path is named as an item's: to who may read its policy (restricted by the access file) and its document.
    theirs = token_client(internal).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/")
    assert theirs.status_code == 200 and "layoffs-" not in theirs.content.decode(), theirs.content[:300]
    assert (theirs.json()["status"], theirs.json()["errors_hidden"], theirs.json()["errors"]) == ("failed", 1, [])
    seen = token_client(top).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").json()
    assert [e["path"] for e in seen["errors"]] == [f"{folder}/{name}"] and seen["errors_hidden"] == 0, seen
    preview = token_client(internal).get(f"/api/v1/sources/{source.pk}/preview/")
    assert preview.status_code == 200 and "layoffs-" not in preview.content.decode(), preview.content[:300]
    # What decides who reads the row (its ``access``: the document it is stored as) never leaves the server.
    assert sync.errors[0]["access"]["document"] == str(plan.pk)
    for member in (internal, top):
        for url in (f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/", f"/api/v1/sources/{source.pk}/syncs/",
                    f"/api/v1/sources/{source.pk}/", f"/api/v1/sources/{source.pk}/preview/"):
            body = token_client(member).get(url).content.decode()
            assert str(plan.pk) not in body and '"access"' not in body, (member.clearance, url, body[:300])
        body = console_client(member).get(f"/sources/{source.pk}/progress/").content.decode()
        assert str(plan.pk) not in body, (member.clearance, body[:300])

    # 2. The source's own folder is now past PATH_MAX: the listing fails naming the source's path (its setting).
    deeper = long / folder
    deep_folders(deeper, ["e" * NAME])
    (deeper / "inner").symlink_to("e" * NAME)
    link.unlink()
    link.symlink_to(deeper / "inner")
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.deleted) == ("failed", 0), (sync.status, sync.error)
    assert sync.error == f"could not read the folder {link}: File name too long", sync.error
    assert Document.objects.filter(pk=plan.pk).exists()


# 2. A website's redirect hop named to every admin: a page (or the start page) redirected to an address the site chose
# -- here a restricted page with a token in its query -- that then failed was named in the error to whoever could read
# the page (the start page: every admin). The hop is now judged as a path of the source too.

SECRET = "layoffs-2027?token=s3cret"


class _RedirectingSite(http.server.BaseHTTPRequestHandler):
    """``/docs/`` (``/docs/start/`` redirects to the hop), linking ``/docs/a.html``; both redirect to a restricted page
    whose answer cannot be read (an encoding the crawl refuses)."""

    start_redirects = False

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path in ("/docs/a.html", "/docs/start/") and (self.path == "/docs/a.html" or self.start_redirects):
            self.send_response(302)
            self.send_header("Location", f"/docs/board/{SECRET}")
            self.end_headers()
        elif self.path.startswith("/docs/board/"):
            body = b"compressed"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Encoding", "br")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path in ("/docs/", "/docs/start/"):
            body = b"<html><body><h1>Docs</h1><p>The handbook.</p><a href='/docs/a.html'>a</a></body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_failed_crawl_names_a_redirects_hop_only_to_admins_who_may_read_it(celery_worker):
    tenant = tenant_create(slug="src14w", name="Sources 14 web")
    internal = membership_create(tenant=tenant, email="internal@s14w.example", role="admin", clearance="internal")
    top = membership_create(tenant=tenant, email="top@s14w.example", role="admin", clearance="restricted")
    server, site = serve(_RedirectingSite)
    try:
        board = {"path": f"{site}/docs/board/**", "access_level": "restricted"}
        source = source_create(actor=top, tenant=tenant, kind="web", name="site", url=f"{site}/docs/",
                               access_level="internal", access_map=[board], options={"rate_per_second": 50})
        # 1. A page's redirect: the page is internal, the hop restricted.
        sync, _ = sync_start(actor=top, source=source)
        sync = wait_for_sync(sync.pk)
        assert (sync.status, sync.added, sync.failed) == ("failed", 1, 1), (sync.error, sync.errors)
        assert SECRET in sync.errors[0]["error"] and "hop" not in sync.errors[0], sync.errors
        answers = {
            "sync": lambda m: token_client(m).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/"),
            "preview": lambda m: token_client(m).get(f"/api/v1/sources/{source.pk}/preview/"),
            "progress": lambda m: console_client(m).get(f"/sources/{source.pk}/progress/"),
        }
        for name, answer in answers.items():
            theirs, seen = answer(internal), answer(top)
            assert theirs.status_code == seen.status_code == 200, (name, theirs.status_code, seen.status_code)
            assert "s3cret" not in theirs.content.decode(), (name, theirs.content[:500])
            assert "s3cret" in seen.content.decode() and "hop" not in seen.content.decode(), (name, seen.content[:500])
        assert token_client(internal).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").json()["errors_hidden"] == 1

        # 2. The start page's redirect: the sync's own error names the hop only to who may read it.
        source = source_update(actor=top, source=source, url=f"{site}/docs/start/")
        _RedirectingSite.start_redirects = True
        sync, _ = sync_start(actor=top, source=source)
        sync = wait_for_sync(sync.pk)
        assert sync.status == "failed" and SECRET in sync.error and sync.deleted == 0, sync.error
        for name, answer in answers.items():
            theirs, seen = answer(internal), answer(top)
            assert "s3cret" not in theirs.content.decode(), (name, theirs.content[:500])
            assert "redirected to an address you may not read" in theirs.content.decode(), (name, theirs.content[:500])
            assert "s3cret" in seen.content.decode(), (name, seen.content[:500])
    finally:
        _RedirectingSite.start_redirects = False
        server.shutdown()
        server.server_close()


def test_a_pages_record_with_its_hop_asks_for_both():
    """``all_of``: every policy and document of each record; undecided when one is."""
    page = access.item_access((int(AccessLevel.INTERNAL), ()), document_id="d1")
    hop = access.item_access((int(AccessLevel.RESTRICTED), (7,)))
    both = access.all_of([page, hop])
    assert both["policies"] == [[int(AccessLevel.INTERNAL), []], [int(AccessLevel.RESTRICTED), [7]]]
    assert both["documents"] == ["d1"]
    assert access.all_of([page, access.item_access(None)]) == access.UNDECIDED


# 3. What decides who reads a listing's error stays on the server (``access``: never in an answer, see the test of 1)
# and is bounded: a folder's record names every document stored below it, and a sync's row keeps up to 500 such rows.


def test_the_documents_a_syncs_folder_records_name_are_bounded(settings):
    """At most ``BULKHEAD_SOURCE_MAX_FILES`` documents in all the records of one listing's errors (and in its own
    error's): a folder past what is left is undecided, read only by the top admin."""
    import uuid

    from sources.entries import Listing, ListingError
    from sources.models import Source, SourceItem
    from sources.services import DocumentBudget, listing_error_access, listing_error_row

    settings.BULKHEAD_SOURCE_MAX_FILES = 3
    source = Source(kind="folder", access_level=int(AccessLevel.INTERNAL), access_groups=[], access_map=[])
    stored = {p: SourceItem(path=p, document_id=uuid.uuid4())
              for p in ("n1/a.md", "n1/b.md", "n2/a.md", "n2/b.md", "n3/a.md", "n3/b.md", "n3/c.md", "n3/d.md")}
    default = (int(AccessLevel.INTERNAL), ())
    budget = DocumentBudget()
    rows = [listing_error_row({"path": f"{n}/", "error": "the file name is not UTF-8"}, source=source, stored=stored,
                              default=default, access_map=(), access_file=access.AccessFile(), budget=budget)
            for n in ("n1", "n2")]
    assert len(rows[0]["access"]["documents"]) == 2 and rows[1]["access"] == access.UNDECIDED, rows
    # The sync's own error: one record, at most BULKHEAD_SOURCE_MAX_FILES documents.
    for folder, named in (("n1/", 2), ("n3/", None)):
        record, _ = listing_error_access(ListingError("x", path=folder, without_path="y", listing=Listing([])),
                                         source=source, stored=stored, group_ids={})
        assert (len(record["documents"]) if named else record) == (named or access.UNDECIDED), record
