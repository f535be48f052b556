"""What a source's errors name (fourteenth session): only paths of the source, each to who may read it.

1. The preview showed an item's ``OSError`` as ``str(exc)`` -- its file name, a server path: a Git mirror's object in
   the data folder ("[Errno 21] Is a directory: '/.../t1-s2.git/objects/ab/...'"), or a folder source's file whole.
   Made for real: the mirror's objects loose, and a directory where one blob's object file is expected.
2. A listing's bare ``ValueError`` -- any library's, whatever its text says -- reached every admin as the sync's and
   the preview's error. Made for real with a website: urllib quotes what it cannot read ("'board-layoffs-2027' does
   not appear to be an IPv4 or IPv6 address") -- a restricted page's link (it failed the whole crawl: now not
   followed), and a robots.txt rule (any other ValueError: the sync fails with a sentence naming nothing, the
   worker's log has the text). A website source's start URL whose port is no number reads as not a URL (urllib's
   ValueError; the SSO settings' issuer is checked by the same function). Run by a real worker."""

from __future__ import annotations

import http.server
import os
from pathlib import Path

import pytest
from django.conf import settings
from dulwich.objects import sha_to_hex
from dulwich.repo import Repo

from accounts.services import membership_create, tenant_create
from sources.addresses import check_url_host
from sources.entries import ListingError
from sources.models import SourceSync
from sources.services import UNEXPECTED_LISTING, source_create, source_update, sync_run, sync_start
from tests.api_helpers import console_client, token_client
from tests.network_helpers import serve
from tests.sources_helpers import git_commit, new_folder, synced_git_mirror, wait_for_sync

SECRET = "board-layoffs-2027"


def _server_paths(cache: Path) -> list[str]:
    """The mirror's paths (in the data folder: every tenant's mirrors), as an OSError would name them."""
    return [str(cache), os.path.realpath(cache), str(settings.BULKHEAD_SOURCE_CACHE_DIR),
            os.path.realpath(settings.BULKHEAD_SOURCE_CACHE_DIR), "/objects/"]


def _loosen(cache: Path) -> None:
    """Every object of the mirror at ``cache`` written loose, its packs removed (as ``git unpack-objects``)."""
    repo = Repo(str(cache))
    try:
        packs = list(repo.object_store.packs)
        assert packs
        for pack in packs:
            for obj in pack.iterobjects():
                repo.object_store.add_object(obj)
    finally:
        repo.close()
    for name in os.listdir(cache / "objects" / "pack"):
        os.unlink(cache / "objects" / "pack" / name)


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_an_items_os_error_names_no_server_path_in_the_preview(celery_worker):
    tenant, internal, top, root, commit, source, cache = synced_git_mirror(
        "src-errpaths", {"a.md": "# A\n\nThe lighthouse keeper polishes the brass lamp.\n",
                               "board/plan.md": "# Plan\n\nThe severance plan for the spring, with its dates.\n"})
    repo = Repo(str(root))
    plan_blob = repo.object_store[repo[repo[commit].tree][b"board"][1]][b"plan.md"][1]
    repo.close()

    # The mirror's objects loose, and a directory where the plan's blob is expected: reading it is an OSError
    # naming the object's path in the data folder.
    _loosen(cache)
    hexsha = sha_to_hex(plan_blob).decode() if len(plan_blob) == 20 else plan_blob.decode()
    blob_path = cache / "objects" / hexsha[:2] / hexsha[2:]
    blob_path.unlink()
    blob_path.mkdir()
    with pytest.raises(IsADirectoryError) as raised:
        open(blob_path, "rb")
    assert str(cache) in str(raised.value)

    # The plan's policy changed: it is read again.
    source = source_update(actor=top, source=source, access_map=[{"path": "board/**", "access_level": "restricted", "groups": []}])
    for member in (internal, top):
        for page in (token_client(member).get(f"/api/v1/sources/{source.pk}/preview/"),
                     console_client(member).get(f"/sources/{source.pk}/?preview=1")):
            body = page.content.decode()
            assert page.status_code == 200, body[:300]
            assert not any(p in body for p in _server_paths(cache)), (member.clearance, body[:800])
            assert "Errno" not in body, body[:800]
    rows = {r["path"]: (r["action"], r["reason"])
            for r in token_client(top).get(f"/api/v1/sources/{source.pk}/preview/").json()["items"]}
    assert rows == {"a.md": ("unchanged", ""), "board/plan.md": ("fail", "unreadable: Is a directory")}, rows
    theirs = token_client(internal).get(f"/api/v1/sources/{source.pk}/preview/").json()
    assert ([r["path"] for r in theirs["items"]], theirs["hidden"]) == (["a.md"], 1), theirs  # by the item's rule

    # The sync says the same (its document stays).
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.error, sync.failed) == ("failed", "", 1), (sync.error, sync.errors)
    assert [(e["path"], e["error"]) for e in sync.errors] == [("board/plan.md", "unreadable: Is a directory")]
    for member in (internal, top):
        for url in (f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/", f"/api/v1/sources/{source.pk}/"):
            body = token_client(member).get(url).content.decode()
            assert not any(p in body for p in _server_paths(cache)), (member.clearance, url, body[:500])


class _Site(http.server.BaseHTTPRequestHandler):
    """``/docs/`` linking a restricted page that holds a link urllib cannot read; ``robots.txt`` with a rule it
    cannot read when ``bad_robots``."""

    bad_robots = False

    def log_message(self, *args):
        pass

    def _answer(self, body: bytes, kind: str = "text/html") -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/robots.txt":
            rule = f"Disallow: http://[{SECRET}]/\n" if self.bad_robots else "Disallow: /private/\n"
            self._answer(f"User-agent: *\n{rule}".encode(), "text/plain")
        elif self.path == "/docs/":
            self._answer(b"<html><body><h1>Docs</h1><p>The handbook for the harbour.</p>"
                         b"<a href='/docs/board/plan.html'>plan</a></body></html>")
        elif self.path == "/docs/board/plan.html":
            self._answer(f"<html><body><h1>Plan</h1><p>The severance plan for the spring.</p>"
                         f"<a href='http://[{SECRET}]/notes'>notes</a></body></html>".encode())
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_listings_value_error_reaches_no_admin(celery_worker):
    tenant = tenant_create(slug="src-errvalue", name="Sources value errors")
    internal = membership_create(tenant=tenant, email="internal@errvalue.example", role="admin", clearance="internal")
    top = membership_create(tenant=tenant, email="top@errvalue.example", role="admin", clearance="restricted")
    server, site = serve(_Site)
    try:
        source = source_create(actor=top, tenant=tenant, kind="web", name="site", url=f"{site}/docs/",
                               access_level="internal", options={"rate_per_second": 50},
                               access_map=[{"path": f"{site}/docs/board/**", "access_level": "restricted"}])
        answers = {
            "sync": lambda m, s: token_client(m).get(f"/api/v1/sources/{source.pk}/syncs/{s.pk}/"),
            "source": lambda m, s: token_client(m).get(f"/api/v1/sources/{source.pk}/"),
            "preview": lambda m, s: token_client(m).get(f"/api/v1/sources/{source.pk}/preview/"),
            "console preview": lambda m, s: console_client(m).get(f"/sources/{source.pk}/?preview=1"),
            "progress": lambda m, s: console_client(m).get(f"/sources/{source.pk}/progress/"),
        }
        # 1. A restricted page's link that urllib cannot read: not followed, the crawl goes on.
        sync, _ = sync_start(actor=top, source=source)
        sync = wait_for_sync(sync.pk)
        assert (sync.status, sync.error, sync.added, sync.failed) == ("succeeded", "", 2, 0), (sync.error, sync.errors)
        for member in (internal, top):
            for name, answer in answers.items():
                body = answer(member, sync).content.decode()
                assert answer(member, sync).status_code == 200, (name, body[:300])
                assert SECRET not in body and "does not appear" not in body, (member.clearance, name, body[:500])

        # 2. A robots.txt rule urllib cannot read: the listing fails, and no admin reads urllib's words.
        _Site.bad_robots = True
        sync, _ = sync_start(actor=top, source=source)
        sync = wait_for_sync(sync.pk)
        assert (sync.status, sync.error, sync.deleted) == ("failed", UNEXPECTED_LISTING, 0), sync.error
        for member in (internal, top):
            for name, answer in answers.items():
                body = answer(member, sync).content.decode()
                assert SECRET not in body and "does not appear" not in body, (member.clearance, name, body[:500])
        preview = token_client(internal).get(f"/api/v1/sources/{source.pk}/preview/").json()
        assert preview["error"] == UNEXPECTED_LISTING, preview
        log = celery_worker.log_path.read_text(errors="replace")
        assert f"sync {sync.pk}: the listing failed on an unexpected error" in log and SECRET in log
    finally:
        _Site.bad_robots = False
        server.shutdown()
        server.server_close()


def test_a_url_whose_port_is_no_number_is_not_a_url():
    """urllib's ValueError for it ("Port could not be cast to integer value as '...'") raised out of the check: a
    website source's sync failed on it as an unexpected error, the SSO settings' check too."""
    with pytest.raises(ListingError, match="not an http"):
        check_url_host(f"http://127.0.0.1:{SECRET}/robots.txt", allow_private=True)
    with pytest.raises(ListingError, match="not an http"):
        check_url_host(f"https://[{SECRET}]/", allow_private=True)


@pytest.mark.django_db(transaction=True)
def test_a_repositorys_folder_outside_the_tenants_is_not_named(tmp_path):
    """A local repository whose ``.git`` file leads outside the tenant's folder: refused naming that folder -- a
    server path, no path of the tenant's -- to the top admin (the others read it without)."""
    tenant = tenant_create(slug="src-errgitdir", name="Sources gitdir")
    top = membership_create(tenant=tenant, email="top@errgitdir.example", role="admin", clearance="restricted")
    outside = tmp_path / f"elsewhere-{SECRET}"
    git_commit(outside, {"a.md": "# A\n\nalpha\n"})
    pointer = new_folder(tenant, "gitdir-")
    (pointer / ".git").write_text(f"gitdir: {outside / '.git'}\n")
    source = source_create(actor=top, tenant=tenant, kind="git", name="pointer", url=str(pointer))
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    sync_run(str(sync.pk))
    sync = SourceSync.objects.get(pk=sync.pk)
    assert sync.status == "failed" and "outside this tenant's folder" in sync.error, sync.error
    for body in (sync.error, token_client(top).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").content.decode(),
                 token_client(top).get(f"/api/v1/sources/{source.pk}/preview/").content.decode()):
        assert "outside this tenant's folder" in body and SECRET not in body and str(tmp_path) not in body, body[:500]
