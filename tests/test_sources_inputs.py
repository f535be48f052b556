"""Sources (issue 29), run in this process against real folders and a real local web server: what
a sync refuses, skips and keeps. Jobs are created but never sent (the test's transaction never
commits), so no worker is needed: the sync's own decisions are what is checked here."""

from __future__ import annotations

import http.server
import os
import tempfile
import threading
import time
from pathlib import Path

import pytest

from accounts.errors import ApplicationError
from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document
from sources.addresses import UnsafeAddress, check_url_host
from sources.entries import ListingError
from sources.models import SourceItem, SourceSync
from sources.selectors import source_preview
from sources.services import source_create, source_update, sync_run
from tests.network_helpers import serve
from tests.sources_helpers import new_folder, write

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin(db):
    tenant = tenant_create(slug="src-in", name="Sources inputs")
    group_create(tenant=tenant, slug="eng")
    return membership_create(tenant=tenant, email="admin@in.example", role="admin", clearance="restricted")


def _run(source) -> SourceSync:
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    sync_run(str(sync.pk))
    return SourceSync.objects.get(pk=sync.pk)


def _paths(source) -> set[str]:
    return set(SourceItem.objects.filter(source=source).values_list("path", flat=True))


def test_a_folder_source_stays_below_its_root_and_fails_closed(admin, settings):
    outside = Path(tempfile.mkdtemp(prefix="outside-"))  # not below the tests' source root
    write(outside, {"secret.md": "# Secret\n\nOutside the source.\n"})
    root = new_folder(admin.tenant, "folder-")
    write(root, {"a.md": "# A\n\nalpha\n", "sub/b.md": "# B\n\nbeta\n", "blob.md": b"# x\0\0\0binary"})
    os.symlink(outside / "secret.md", root / "escape.md")
    os.symlink(outside, root / "escape-dir")
    with pytest.raises(ApplicationError, match="BULKHEAD_SOURCE_ROOTS"):
        source_create(actor=admin, tenant=admin.tenant, kind="folder", name="etc", path="/etc")
    with pytest.raises(ApplicationError, match="BULKHEAD_SOURCE_ROOTS"):
        source_create(actor=admin, tenant=admin.tenant, kind="folder", name="up", path=f"{root}/../../..")
    with pytest.raises(ApplicationError, match="BULKHEAD_SOURCE_ROOTS"):  # a link below a root leading out
        source_create(actor=admin, tenant=admin.tenant, kind="folder", name="link", path=str(root / "escape-dir"))
    viewer = membership_create(tenant=admin.tenant, email="v@in.example", role="editor", clearance="restricted")
    with pytest.raises(ApplicationError, match="admins"):
        source_create(actor=viewer, tenant=admin.tenant, kind="folder", name="x", path=str(root))
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="docs", path=str(root))

    preview = source_preview(member=admin, source=source)
    assert {i["path"]: (i["action"], i["access_level"]) for i in preview["items"]} == {
        "a.md": ("add", "internal"), "sub/b.md": ("add", "internal"), "blob.md": ("add", "internal"),
        "escape.md": ("skip", None), "escape-dir": ("skip", None)}
    assert not SourceItem.objects.exists()  # a preview writes nothing

    sync = _run(source)
    assert (sync.status, sync.added, sync.failed) == ("succeeded", 2, 0), sync.errors
    assert {s["path"]: s["reason"] for s in sync.skips} == {
        "escape.md": "a symbolic link (not followed)", "escape-dir": "a symbolic link (not followed)",
        "blob.md": "binary content (no parser reads it)"}
    assert _paths(source) == {"a.md", "sub/b.md"}
    assert "Outside the source" not in " ".join(bytes(d.raw).decode() for d in Document.objects.all())

    # An access file that widens the default fails every item, naming its line; nothing changes.
    write(root, {".bulkhead-access.yaml": "- path: a.md\n  access_level: confidential\n- path: sub/**\n  access_level: public\n",
                 "a.md": "# A\n\nalpha two\n"})
    sync = _run(source)
    assert sync.status == "failed" and sync.changed == 0
    assert {e["path"] for e in sync.errors} == {"a.md", "sub/b.md", "blob.md"}
    assert "line 3" in sync.errors[0]["error"] and "widen" in sync.errors[0]["error"]
    # A near miss (a misspelt key) too.
    write(root, {".bulkhead-access.yaml": "- path: a.md\n  acess_level: confidential\n"})
    sync = _run(source)
    assert sync.status == "failed" and "line 2" in sync.errors[0]["error"] and "acess_level" in sync.errors[0]["error"]
    write(root, {".bulkhead-access.yaml": "- path: a.md\n  access_level: confidential\n  groups: [eng]\n"})
    sync = _run(source)
    assert (sync.status, sync.changed) == ("succeeded", 1), sync.errors
    item = SourceItem.objects.get(source=source, path="a.md")
    assert item.access_level == 2 and len(item.access_groups) == 1

    # Too many files: the sync fails, nothing deleted.
    settings.BULKHEAD_SOURCE_MAX_FILES = 1
    sync = _run(source)
    assert sync.status == "failed" and "limit is 1" in sync.error and _paths(source) == {"a.md", "sub/b.md"}
    settings.BULKHEAD_SOURCE_MAX_FILES = 100
    # Too many new bytes: the item fails, and follows in the next sync.
    settings.BULKHEAD_SOURCE_MAX_BYTES = 10
    write(root, {"c.md": "# C\n\ngamma gamma gamma\n"})
    sync = _run(source)
    assert sync.status == "failed" and "byte limit" in sync.errors[0]["error"] and "c.md" not in _paths(source)
    settings.BULKHEAD_SOURCE_MAX_BYTES = 10_000
    # The folder disappears: the sync fails and deletes nothing.
    os.rename(root, str(root) + "-gone")
    sync = _run(source)
    assert sync.status == "failed" and "does not exist" in sync.error
    assert _paths(source) == {"a.md", "sub/b.md"} and Document.objects.filter(metadata__source_id=source.pk).count() == 2
    os.rename(str(root) + "-gone", root)
    # A file deleted at the source goes, document and all.
    write(root, {"sub/b.md": None})
    sync = _run(source)
    assert sync.deleted == 1 and _paths(source) == {"a.md", "c.md"}
    assert not Document.objects.filter(metadata__source_path="sub/b.md").exists()


# ----------------------------------------------------------------------------- a website


class _Site(http.server.BaseHTTPRequestHandler):
    pages = {
        "/robots.txt": (200, b"User-agent: *\nDisallow: /docs/private/\n", "text/plain"),
        "/docs/": (200, b'<html><head><title>Home</title></head><body><h1>Home</h1><p>The heron index.</p>'
                        b'<a href="page.html">p</a> <a href="private/x.html">x</a> <a href="/elsewhere.html">e</a>'
                        b'<a href="broken.html">b</a><a href="moved.html">m</a><a href="slow.html">s</a></body></html>',
                   "text/html"),
        "/docs/page.html": (200, b"<html><body><h1>Page</h1><p>The egret page.</p></body></html>", "text/html"),
        "/docs/private/x.html": (200, b"<html><body><p>robots keep this out</p></body></html>", "text/html"),
        "/elsewhere.html": (200, b"<html><body><p>outside the prefix</p></body></html>", "text/html"),
        "/docs/broken.html": (500, b"oops", "text/plain"),
        "/docs/moved.html": (302, b"", "file:///etc/passwd"),
        "/docs/slow.html": (200, b"<p>slow</p>", "text/html"),
    }
    requests: list[tuple[str, str]] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        self.requests.append((self.path, self.headers.get("If-None-Match", "")))
        if self.path == "/docs/slow.html" and self.path in self.pages:
            time.sleep(2)
        status, body, kind = self.pages.get(self.path, (404, b"", "text/plain"))
        etag = f'"{hash(body) & 0xffff}"'
        if status == 200 and self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.end_headers()
            return
        self.send_response(status)
        if status == 302:
            self.send_header("Location", kind)
        else:
            self.send_header("Content-Type", kind)
            self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server, url = serve(_Site)
    _Site.requests = []
    yield url
    server.shutdown()
    server.server_close()


def test_a_website_source_is_crawled_politely_and_guarded(admin, site, settings):
    settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS = 1
    source = source_create(actor=admin, tenant=admin.tenant, kind="web", name="site", url=f"{site}/docs/",
                           options={"rate_per_second": 50})
    sync = _run(source)
    assert _paths(source) == {f"{site}/docs/", f"{site}/docs/page.html"}  # not robots', not outside the prefix
    assert sync.added == 2
    errors = {e["path"].rsplit("/", 1)[-1]: e["error"] for e in sync.errors}
    assert "500" in errors["broken.html"] and "timed out" in errors["slow.html"]
    assert "not an http(s) URL" in errors["moved.html"]  # the redirect's target is checked as the first URL
    assert sync.status == "failed"
    assert not any(path.startswith("/docs/private/") for path, _ in _Site.requests)

    # Conditional requests: unchanged pages answer 304, and the site's failures delete nothing.
    _Site.requests = []
    _Site.pages = {**_Site.pages, "/docs/page.html": (500, b"down", "text/plain")}
    sync = _run(source)
    assert any(etag for path, etag in _Site.requests if path == "/docs/")
    assert sync.unchanged == 1 and sync.deleted == 0 and _paths(source) == {f"{site}/docs/", f"{site}/docs/page.html"}
    # Gone for real (404): deleted.
    _Site.pages = {k: v for k, v in _Site.pages.items() if k not in ("/docs/page.html", "/docs/broken.html",
                                                                    "/docs/slow.html", "/docs/moved.html")}
    sync = _run(source)
    assert sync.deleted == 1 and _paths(source) == {f"{site}/docs/"}

    # SSRF: with private addresses refused (the default), the same site is not reached at all.
    settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    before = len(_Site.requests)
    sync = _run(source)
    assert sync.status == "failed" and "not public" in sync.error and len(_Site.requests) == before
    assert _paths(source) == {f"{site}/docs/"}  # a failed listing deletes nothing
    for url in ("http://127.0.0.1/", "http://10.0.0.8/", "http://169.254.169.254/latest/", "http://[::1]/",
                "http://[::ffff:127.0.0.1]/", "http://0.0.0.0/", "http://localhost/"):
        with pytest.raises(UnsafeAddress):
            check_url_host(url)
    with pytest.raises(ListingError):
        check_url_host("gopher://example.com/")


def test_an_access_file_that_cannot_be_read_fails_every_item(admin):
    """``.bulkhead-access.yaml`` as a symbolic link (shared between repositories, say) is skipped like any
    link -- and was then silently left out, so every file got the wider default it was there to narrow.
    Found attacking the demo. Now every item fails, naming it, in the sync and the preview alike."""
    root = new_folder(admin.tenant, "access-link-")
    write(root, {"a.md": "# A\n\nalpha\n", "shared-access.yaml": "- path: '**'\n  access_level: restricted\n"})
    os.symlink(root / "shared-access.yaml", root / ".bulkhead-access.yaml")
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="linked", path=str(root),
                           include=["*.md"])
    preview = source_preview(member=admin, source=source)
    assert ".bulkhead-access.yaml" in preview["error"] and "symbolic link" in preview["error"]
    sync = _run(source)
    assert (sync.status, sync.added) == ("failed", 0), sync.errors
    assert [e["path"] for e in sync.errors] == ["a.md"] and "symbolic link" in sync.errors[0]["error"]
    assert not Document.objects.filter(metadata__source_id=source.pk).exists()


def test_ipv6_forms_that_lead_to_a_private_address_are_refused(settings):
    """6to4 addresses carry an IPv4 address a relay sends them to (``2002:7f00:1::1`` is 127.0.0.1,
    ``2002:a9fe:a9fe::1`` the metadata address), Teredo tunnels, site-local ``fec0::/10`` is routed inside a
    site: Python calls all of them global. Found attacking the demo: a website source at
    ``http://[2002:7f00:1::1]:8131/`` passed the address check and was connected to."""
    settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    for url in ("http://[2002:7f00:1::1]:8131/", "http://[2002:a9fe:a9fe::1]/", "http://[2002:808:808::1]/",
                "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", "http://[fec0::1]/", "ssh://[fec0::1]/repo.git"):
        with pytest.raises(UnsafeAddress):
            check_url_host(url)
    assert check_url_host("http://[2606:4700:4700::1111]/") == "2606:4700:4700::1111"  # a public IPv6 address


def test_a_name_that_does_not_resolve_is_refused_like_a_private_one(settings):
    """Found attacking the demo: the preview said "cannot resolve" for a missing name and "not public" for
    an internal one, so a tenant's admin could map which internal names exist. Both now read alike."""
    settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    messages = []
    for host in ("localhost", "no-such-host.invalid"):
        with pytest.raises(UnsafeAddress) as refused:
            check_url_host(f"http://{host}/docs/")
        messages.append(str(refused.value).replace(host, "HOST"))
    assert messages[0] == messages[1] == "HOST is not public or does not resolve; refused"


# ----------------------------------------------------------------------------- Git over HTTP, with credentials

PASSWORD = "s3cret-token-xyzzy"


@pytest.fixture
def git_server():
    """A Git smart-HTTP server (dulwich's WSGI app) that wants Basic credentials."""
    import base64
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from dulwich.repo import Repo
    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    from tests.sources_helpers import git_commit

    repo_dir = new_folder("git-server", "served-")
    git_commit(repo_dir, {"guide.md": "# Guide\n\nThe pelican protocol.\n"})
    app = make_wsgi_chain(DictBackend({"/repo.git": Repo(str(repo_dir))}))
    wanted = "Basic " + base64.b64encode(f"reader:{PASSWORD}".encode()).decode()

    def guarded(environ, start_response):
        if environ.get("HTTP_AUTHORIZATION") != wanted:
            start_response("401 Unauthorized", [("WWW-Authenticate", 'Basic realm="git"'), ("Content-Length", "0")])
            return [b""]
        return app(environ, start_response)

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    server = make_server("127.0.0.1", 0, guarded, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/repo.git"
    server.shutdown()


def test_git_over_http_with_credentials_that_are_never_shown_again(admin, git_server, caplog):
    from rest_framework.test import APIClient

    from accounts.services import api_token_create
    from audit.models import AuditEvent
    from sources.models import Source

    _, key = api_token_create(membership=admin, name="k")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    body = {"kind": "git", "name": "served", "url": git_server, "access_level": "internal",
            "credentials": {"username": "reader", "password": "wrong-pass-qq"}}
    created = client.post("/api/v1/sources/", body, format="json")
    assert created.status_code == 201, created.json()
    assert PASSWORD not in created.content.decode() and "wrong-pass-qq" not in created.content.decode()
    assert created.json()["has_credentials"] is True
    source = Source.objects.get(pk=created.json()["id"])
    sync = _run(source)
    assert sync.status == "failed" and sync.error.startswith("could not fetch the repository")
    changed = client.patch(f"/api/v1/sources/{source.pk}/", {"credentials": {"username": "reader", "password": PASSWORD}},
                           format="json")
    assert changed.status_code == 200 and PASSWORD not in changed.content.decode()
    stored = Source.objects.get(pk=source.pk).credentials
    assert stored and PASSWORD not in stored and "reader" not in stored  # encrypted at rest
    preview = client.post("/api/v1/sources/preview/", {**body, "name": "other",
                                                       "credentials": {"username": "reader", "password": PASSWORD}},
                          format="json")
    assert preview.status_code == 200 and [i["path"] for i in preview.json()["items"]] == ["guide.md"]
    sync = _run(source)
    assert (sync.status, sync.added) == ("succeeded", 1), (sync.error, sync.errors)
    detail = client.get(f"/api/v1/sources/{source.pk}/")
    assert detail.json()["last_sync"]["status"] == "running"  # its ingestion is queued (never sent here)
    assert detail.json()["last_sync"]["stage"] == "ingesting" and detail.json()["last_sync"]["added"] == 1
    history = client.get(f"/api/v1/sources/{source.pk}/syncs/").json()
    everything = " ".join([detail.content.decode(), str(history),
                           str(list(AuditEvent.objects.values_list("details", flat=True))),
                           str(list(SourceSync.objects.values_list("error", "errors"))), caplog.text])
    assert PASSWORD not in everything and "wrong-pass-qq" not in everything
    actions = list(AuditEvent.objects.filter(tenant_id=admin.tenant_id, target_type="source")
                   .values_list("action", "membership_id"))
    assert ("source.create", admin.pk) in actions and ("source.update", admin.pk) in actions
    update = AuditEvent.objects.get(action="source.update", tenant_id=admin.tenant_id)
    assert update.details["after"]["has_credentials"] is True and "credentials" not in update.details["after"]


def test_stored_git_credentials_never_follow_the_url_to_another_scheme_host_or_port(admin, git_server):
    """Found attacking sources: the url of a Git source with credentials could be edited to any other host
    (or to plain http, or another port) without giving them again, and the next fetch sent the stored
    password there -- to a host of the editor's choosing. Now such an edit is refused (400, ``details.field``
    ``credentials``) unless the credentials are given again or cleared in the same request; a url on the
    same scheme, host and port keeps them."""
    from rest_framework.test import APIClient

    from accounts.services import api_token_create
    from sources.addresses import credential_origin
    from sources.models import Source

    _, key = api_token_create(membership=admin, name="k")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    created = client.post("/api/v1/sources/", {"kind": "git", "name": "served", "url": git_server,
                                                "credentials": {"username": "reader", "password": PASSWORD}},
                          format="json")
    assert created.status_code == 201, created.json()
    source_id = created.json()["id"]
    stored = Source.objects.get(pk=source_id).credentials
    port = int(git_server.split(":")[2].split("/")[0])
    elsewhere = [git_server.replace("127.0.0.1", "localhost"), git_server.replace(f":{port}/", f":{port + 1}/"),
                 git_server.replace("http://", "https://"), f"ssh://reader@127.0.0.1:{port}/repo.git",
                 "git@127.0.0.1:repo.git"]
    for url in elsewhere:
        answer = client.patch(f"/api/v1/sources/{source_id}/", {"url": url}, format="json")
        assert answer.status_code == 400, (url, answer.json())
        error = answer.json()["error"]
        assert error["details"] == {"field": "credentials"} and "give the credentials again" in error["message"], url
        row = Source.objects.get(pk=source_id)
        assert (row.url, row.credentials) == (git_server, stored), url  # nothing changed
        with pytest.raises(ApplicationError, match="give the credentials again"):
            source_update(actor=admin, source=row, url=url)
    # The same scheme, host and port (another path, the default port written out) keeps them.
    same = git_server.replace("/repo.git", "/other.git")
    assert client.patch(f"/api/v1/sources/{source_id}/", {"url": same}, format="json").status_code == 200
    assert Source.objects.get(pk=source_id).credentials == stored
    # Given again, or cleared, with the new url: accepted.
    answer = client.patch(f"/api/v1/sources/{source_id}/", {"url": elsewhere[0], "credentials": {
        "username": "reader", "password": "another-pass-qq"}}, format="json")
    assert answer.status_code == 200 and Source.objects.get(pk=source_id).credentials != stored
    answer = client.patch(f"/api/v1/sources/{source_id}/", {"url": elsewhere[1], "credentials": {}}, format="json")
    assert answer.status_code == 200 and answer.json()["has_credentials"] is False
    # Without stored credentials a url moves freely.
    assert client.patch(f"/api/v1/sources/{source_id}/", {"url": git_server}, format="json").status_code == 200
    # Git's two ssh forms name one origin; http and https, or another port, do not.
    assert credential_origin("ssh://git@Example.com/org/repo.git") == credential_origin("git@example.com:org/r.git")
    assert credential_origin("https://example.com/r.git") == credential_origin("https://example.com:443/x.git")
    assert credential_origin("http://example.com/r.git") != credential_origin("https://example.com/r.git")


def test_a_source_owned_document_changes_only_with_its_sync_until_detached(admin):
    from rest_framework.test import APIClient

    from accounts.services import api_token_create
    from tests.api_helpers import console_client

    root = new_folder(admin.tenant, "owned-")
    write(root, {"a.md": "# A\n\nalpha\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="owned", path=str(root))
    _run(source)
    document = Document.objects.get(metadata__source_id=source.pk)
    editor = membership_create(tenant=admin.tenant, email="ed@in.example", role="editor", clearance="restricted")
    clients = {}
    for member in (admin, editor):
        _, key = api_token_create(membership=member, name="k")
        clients[member.role] = APIClient()
        clients[member.role].credentials(HTTP_AUTHORIZATION=f"Token {key}")
    new = {"title": "Mine", "content": "# Mine\n\nreplaced", "content_type": "text/markdown"}
    for client in clients.values():
        assert client.put(f"/api/v1/documents/{document.pk}/", new, format="json").status_code == 409
        answer = client.delete(f"/api/v1/documents/{document.pk}/")
        assert answer.status_code == 409 and answer.json()["error"]["code"] == "source_owned"
    page = console_client(editor).post(f"/documents/{document.pk}/delete/")
    assert page.status_code == 409
    assert Document.objects.filter(pk=document.pk).exists()
    # Another tenant's admin cannot detach it; an editor cannot; the source's admin can.
    assert clients["editor"].post(f"/api/v1/sources/{source.pk}/documents/{document.pk}/detach/").status_code == 403
    assert clients["admin"].post(f"/api/v1/sources/{source.pk}/documents/{document.pk}/detach/").status_code == 204
    assert clients["editor"].delete(f"/api/v1/documents/{document.pk}/").status_code == 204
    # The detached path is no longer the source's, and it is not brought back: the next sync skips it as detached
    # (tests/test_sources_detach.py).
    sync = _run(source)
    assert (sync.added, sync.skipped) == (0, 1) and sync.skips[0]["reason"].startswith("detached")
    assert not Document.objects.filter(metadata__source_id=source.pk).exists()


# ----------------------------------------------------------------------------- a Git source's url, as Git reads it


def test_a_git_url_in_the_scp_like_form_is_ssh_and_a_local_path_with_a_colon_stays_local(admin, settings):
    from rest_framework.test import APIClient

    from accounts.services import api_token_create
    from sources.addresses import ScpAddress
    from sources.listing import git_location
    from tests.sources_helpers import git_commit

    # Git's rule: no "scheme://", a ':' with no '/' before it -> [user@]host:path over ssh.
    for n, (url, wanted) in enumerate([
        ("git@github.com:org/repo.git", ScpAddress("git", "github.com", "org/repo.git")),
        ("deploy_bot@git.example.org:/srv/git/handbook.git", ScpAddress("deploy_bot", "git.example.org",
                                                                         "/srv/git/handbook.git")),
        ("example.com:repo.git", ScpAddress("", "example.com", "repo.git")),
        ("foo:bar", ScpAddress("", "foo", "bar")),  # as `git clone foo:bar`: the host foo, not a file
    ]):
        assert git_location(url, admin.tenant.slug) == wanted
        source = source_create(actor=admin, tenant=admin.tenant, kind="git", name=f"scp-{n}", url=url)
        assert source.url == url  # kept as written

    refused = {
        "-oProxyCommand=touch-x:repo.git": "not a host name",  # an option of ssh, not a host
        "git@-oProxyCommand=x:repo.git": "not a host name",
        "-l@example.com:repo.git": "the user before @",
        "git@example.com:-uploadpack=x": "starting with '-'",  # an option of git-upload-pack, not a path
        "example.com:": "no repository path",
        "git@example.com:": "no repository path",
        "[example.com:2222]:repo.git": "bracketed form",
        "git@[::1]:repo.git": "bracketed form",
        "bad host:repo.git": "not a host name",
        "git@example.com:re\npo.git": "control characters",
        "git://example.com/repo.git": "a Git source's url is",  # only file, http(s), ssh URLs
        "ssh:///srv/repo.git": "names its host",
        "repos/a:b": "absolute path",  # a '/' before the ':': a (relative) local path, as for git
    }
    _, token = api_token_create(membership=admin, name="k")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    for url, message in refused.items():
        with pytest.raises(ApplicationError, match=message) as raised:
            source_create(actor=admin, tenant=admin.tenant, kind="git", name="refused", url=url)
        assert raised.value.details == {"field": "url"}, url
        answer = client.post("/api/v1/sources/", {"kind": "git", "name": "refused", "url": url}, format="json")
        error = answer.json()["error"]
        assert answer.status_code == 400 and error["details"] == {"field": "url"} and message in error["message"], url
        assert error["message"].startswith("url: ") or "absolute path" in error["message"], error
    assert not SourceItem.objects.exists()

    # A '/' before the first ':' is a local path, fetched from the disk -- never a host named "/srv/...".
    repo = new_folder(admin.tenant, "colon-") / "team:handbook"
    git_commit(repo, {"guide.md": "# Guide\n\nThe colon is part of the folder's name.\n"})
    assert git_location(str(repo), admin.tenant.slug) == str(repo)
    local = source_create(actor=admin, tenant=admin.tenant, kind="git", name="colon", url=str(repo))
    sync = _run(local)
    assert (sync.status, sync.added) == ("succeeded", 1), (sync.error, sync.errors)

    # The scp-like form's host is checked as an ssh:// URL's is: a private address is refused before ssh runs.
    settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    settings.BULKHEAD_SOURCE_SSH_COMMAND = "/bin/false"
    private = source_create(actor=admin, tenant=admin.tenant, kind="git", name="private", url=f"git@localhost:{repo}")
    sync = _run(private)
    assert sync.status == "failed" and "not public" in sync.error, sync.error


# ----------------------------------------------------------------------------- a path a reader does not see whole


@pytest.mark.parametrize("name", ["notes\u200b.md", "a\U000e0049\U000e0067.md", "x\u202eb.md", "log\x1b[8m.md"])
def test_a_path_with_a_control_or_invisible_character_is_skipped_naming_the_character(admin, name):
    # The path is the document's source and its last part its title, listed to every reader and their agents: a
    # sync skips what an upload refuses (kb.services.typed_text_check), also a path it had stored before.
    root = new_folder(admin.tenant, "unseen-")
    write(root, {"plain.md": "# Plain\n\nvisible words\n", name: "# Hidden name\n\nbody words\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="unseen", path=str(root))
    sync = _run(source)
    assert _paths(source) == {"plain.md"}
    assert (sync.added, sync.skipped) == (1, 1)
    (skip,) = sync.skips
    assert skip["path"] == name and "U+" in skip["reason"] and "body words" not in skip["reason"]
    titles = set(Document.objects.filter(tenant=admin.tenant).values_list("title", flat=True))
    assert titles == {"plain.md"}


def test_a_path_stored_before_the_rule_is_skipped_and_its_document_goes(admin, monkeypatch):
    import sources.services

    root = new_folder(admin.tenant, "unseen-old-")
    write(root, {"a\u200bb.md": "# Old\n\nold words\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="unseen-old", path=str(root))
    with monkeypatch.context() as patched:  # as a sync before the rule stored it
        patched.setattr(sources.services, "_path_check", lambda path: "")
        assert _run(source).added == 1
    assert Document.objects.filter(metadata__source_id=source.pk).count() == 1
    sync = _run(source)  # unchanged since, and still skipped: the path is checked before the unchanged shortcut
    assert sync.skipped == 1 and sync.deleted == 1 and "U+200B" in sync.skips[0]["reason"]
    assert not Document.objects.filter(metadata__source_id=source.pk).exists()
