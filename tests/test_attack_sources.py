"""Attacking sources (a hostile folder or Git repository): what one file's name can do to a whole sync."""

from __future__ import annotations

import http.server
import os
import threading
import time

import pytest
from dulwich.objects import Blob, Tree
from dulwich.repo import Repo

from accounts.services import membership_create, tenant_create
from kb.models import Document
from sources.models import SourceItem, SourceSync
from sources.selectors import source_preview
from sources.services import source_create, sync_run
from tests.network_helpers import serve
from tests.sources_helpers import git_commit, new_folder, write

pytestmark = pytest.mark.django_db

ODD = b"\xff-planted.md"  # a file name that is not UTF-8: legal on Linux and in a Git tree


@pytest.fixture
def admin(db):
    tenant = tenant_create(slug="src-attack", name="Sources attacked")
    return membership_create(tenant=tenant, email="admin@attack.example", role="admin", clearance="restricted")


def _run(source) -> SourceSync:
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    sync_run(str(sync.pk))
    return SourceSync.objects.get(pk=sync.pk)


def _git_add_odd_file(root) -> None:
    """Commit a file named ``ODD`` next to what the branch holds (dulwich's objects: no work tree needed)."""
    repo = Repo(str(root))
    head = repo[repo.head()]
    tree = repo[head.tree]
    blob = Blob.from_string(b"# Odd\n\nodd\n")
    new = Tree()
    for item in tree.items():
        new.add(item.path, item.mode, item.sha)
    new.add(ODD, 0o100644, blob.id)
    repo.object_store.add_objects([(blob, None), (new, None)])
    repo.get_worktree().commit(message=b"odd name", tree=new.id, author=b"T <t@example.com>",
                               committer=b"T <t@example.com>")


@pytest.mark.parametrize("kind", ["folder", "git"])
def test_a_file_name_that_is_not_utf8_fails_its_item_and_never_the_sync(admin, kind):
    """Found attacking sources: a file whose name is not UTF-8 (``\\xff``, legal in a folder and a Git tree)
    stopped every sync of its source at that item ("the sync stopped: UnicodeEncodeError"), for good:
    the items after it were never synced and a file deleted at the source stayed in search. Now that
    item fails with the reason, the others sync, and what was deleted is deleted."""
    root = new_folder(admin.tenant, f"odd-{kind}-")
    files = {"a.md": "# A\n\nalpha\n", "gone.md": "# Gone\n\nwithdrawn text\n"}
    if kind == "git":
        git_commit(root, files)
        source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="odd", url=str(root))
    else:
        write(root, files)
        source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="odd", path=str(root))
    first = _run(source)
    assert (first.status, first.added) == ("succeeded", 2), (first.error, first.errors)
    gone = SourceItem.objects.get(source=source, path="gone.md").document_id
    if kind == "git":
        git_commit(root, {"gone.md": None, "z.md": "# Z\n\nzeta\n"}, message="withdraw gone.md")
        _git_add_odd_file(root)
    else:
        write(root, {"gone.md": None, "z.md": "# Z\n\nzeta\n"})
        with open(os.path.join(os.fsencode(root), ODD), "wb") as handle:
            handle.write(b"# Odd\n\nodd\n")
    preview = source_preview(member=admin, source=source)
    assert any("not UTF-8" in e["error"] for e in preview["errors"]), preview
    sync = _run(source)
    assert not Document.objects.filter(pk=gone).exists(), (sync.status, sync.error)  # withdrawn: out of search
    assert sync.error == "" and sync.added == 1 and sync.deleted == 1, (sync.error, sync.errors)
    assert sync.status == "failed" and [e["error"] for e in sync.errors] == [
        "the file name is not UTF-8; it is not read"]
    assert "\udcff" not in sync.errors[0]["path"] and sync.errors[0]["path"].endswith("-planted.md")
    assert set(SourceItem.objects.filter(source=source).values_list("path", flat=True)) == {"a.md", "z.md"}


def test_a_file_swapped_for_a_named_pipe_after_the_listing_is_skipped_not_read(admin):
    """Found attacking sources: a folder's file replaced by a named pipe between the listing and the read
    was opened as it was -- ``open`` waits for a writer, so the sync's worker hung for good (or read
    whatever the writer sent, content no file holds). A file that is not a regular file when opened is
    skipped with the reason; opening never waits."""
    import threading

    from sources.entries import Skip
    from sources.listing import list_folder

    root = new_folder(admin.tenant, "fifo-")
    write(root, {"a.md": "# A\n\nalpha\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="fifo", path=str(root))
    entry = next(e for e in list_folder(source).entries if e.path == "a.md")
    os.unlink(root / "a.md")
    os.mkfifo(root / "a.md")
    sent = []

    def writer():  # waits for a reader, as a hostile writer of the folder would
        fd = os.open(root / "a.md", os.O_WRONLY)
        try:
            os.write(fd, b"# Planted\n\ncontent no file holds\n")
            sent.append(True)
        except BrokenPipeError:
            pass
        finally:
            os.close(fd)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        with pytest.raises(Skip, match="not a regular file"):
            entry.read()
    finally:
        unblock = os.open(root / "a.md", os.O_RDONLY | os.O_NONBLOCK)  # lets a writer still waiting go on
        thread.join()
        os.close(unblock)


def test_a_git_host_that_rebinds_after_the_check_is_never_connected_to_its_new_address(admin, monkeypatch, settings):
    """DNS rebinding against a Git source over http(s): the host's name resolves to a public address when
    the server checks it and to an internal one when the HTTP library connects. Every request now connects
    to the address its own check passed (``sources.listing``'s pinned pool manager); the library never
    resolves the name again. The loopback network plays both parts: 127.0.0.1 is "the internet" (a Git
    server), 127.0.0.2 the server's own network (a service that records who asks)."""
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    from tests.network_helpers import INTERNAL, PUBLIC, json_server, loopback_is_the_internet, rebinding_name

    settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    internal_asked: list = []

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    internal = json_server(INTERNAL, 0, {}, internal_asked)
    port = internal.server_address[1]
    served = new_folder(admin.tenant, "rebind-served-")
    git_commit(served, {"guide.md": "# Guide\n\nThe pelican protocol.\n"})
    public = make_server(PUBLIC, port, make_wsgi_chain(DictBackend({"/repo.git": Repo(str(served))})),
                         handler_class=Quiet)
    threading.Thread(target=public.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    name = "git.rebind.test"
    answers = rebinding_name(monkeypatch, name, port)
    loopback_is_the_internet(monkeypatch)
    try:
        source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="rebind",
                               url=f"http://{name}:{port}/repo.git")
        answers[:] = [PUBLIC, INTERNAL]  # the first answer public, every later one internal
        sync = _run(source)
        assert sync.status == "failed" and "not public" in sync.error, (sync.status, sync.error)
        assert internal_asked == []  # the internal service was never asked
        answers[:] = [PUBLIC]  # a name that stays public: fetched, under its name
        sync = _run(source)
        assert (sync.status, sync.added) == ("succeeded", 1), (sync.status, sync.error)
    finally:
        for server in (internal, public):
            server.shutdown()
            server.server_close()


BOMB_BYTES = 64 << 20  # what the hostile page inflates to; its gzip is ~64 KB on the wire
DRIP_SECONDS = 8  # the dripping page's server gives up after this (a real one would not)


class _HostileSite(http.server.BaseHTTPRequestHandler):
    """A website that a source's admin means to sync and that turns hostile: a page that inflates
    (``Content-Encoding: gzip`` of zeros) and a page that never ends (a byte every 0.3 s, within any
    read timeout), beside an ordinary one."""

    protocol_version = "HTTP/1.1"
    bomb = b""

    def _send(self, body: bytes, kind: str = "text/html", extra: dict | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/docs/":
            self._send(b'<html><body><h1>Home</h1><p>The heron index.</p><a href="page.html">p</a>'
                       b'<a href="bomb.html">b</a><a href="drip.html">d</a></body></html>')
        elif self.path == "/docs/page.html":
            self._send(b"<html><body><h1>Page</h1><p>The egret page.</p></body></html>")
        elif self.path == "/docs/bomb.html":
            self._send(self.bomb, extra={"Content-Encoding": "gzip"})
        elif self.path == "/docs/drip.html":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Connection", "close")
            self.end_headers()
            stop = time.monotonic() + DRIP_SECONDS
            try:
                self.wfile.write(b"<html><body><p>")
                while time.monotonic() < stop:
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.3)
                self.wfile.write(b"</p></body></html>")
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
        else:
            self._send(b"", "text/plain")

    def log_message(self, *args):
        pass


def test_a_hostile_sites_page_is_read_within_the_size_and_time_of_one_upload(admin, settings):
    """Found attacking sources: a website source read each page whole (``httpx``'s ``response.content``),
    decoding any ``Content-Encoding`` without a bound and with a timeout per read only. A 64 KB gzip page
    inflated to 64 MB in the worker (or the admin's preview, in a web thread) before the upload limit was
    checked, one that never ends did so without end, and one that drips a byte within every read timeout
    held the sync (or the web thread) for as long as the site liked. Now a page is read up to one upload's
    bytes, decoded as it comes, within ``BULKHEAD_SOURCE_TIMEOUT_SECONDS`` in all; past either it is an
    error of the listing naming why (incomplete: nothing is deleted)."""
    import gzip
    import tracemalloc

    settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS = 1
    settings.BULKHEAD_MAX_UPLOAD_BYTES = 1 << 20
    _HostileSite.bomb = gzip.compress(b"\0" * BOMB_BYTES, compresslevel=9)
    server, site = serve(_HostileSite)
    try:
        source = source_create(actor=admin, tenant=admin.tenant, kind="web", name="hostile", url=f"{site}/docs/",
                               options={"rate_per_second": 50})
        tracemalloc.start()
        try:
            preview = source_preview(member=admin, source=source)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        errors = {e["path"].rsplit("/", 1)[-1]: e["error"] for e in preview["errors"]}
        assert "timed out" in errors.get("drip.html", ""), preview["errors"]
        assert "more than 1048576 bytes" in errors.get("bomb.html", ""), preview["errors"]
        assert peak < 16 << 20, f"the preview held {peak} bytes at once"
        sync = _run(source)
        assert sync.status == "failed" and sync.added == 2, (sync.error, sync.errors)
        assert {i.path.rsplit("/", 1)[-1] for i in SourceItem.objects.filter(source=source)} == {"", "page.html"}
    finally:
        server.shutdown()
        server.server_close()


def test_a_git_tree_that_names_one_subtree_many_times_is_listed_within_a_bound(admin, settings):
    """Found attacking sources: a Git tree may name one subtree under many names, and that subtree another,
    so a few kilobytes of objects stand for any number of paths (24 entries over 4 levels: 331,776 paths from
    five small objects; 1,000 over 3 levels would be 10^9). The listing walked them all -- in the sync's worker,
    or the admin's preview in a web thread -- before the file limit was counted. Now the walk stops past ten
    times ``BULKHEAD_SOURCE_MAX_FILES`` paths (include/exclude may still narrow a larger listing to the limit),
    failing the listing with the reason; nothing is synced or deleted."""
    from sources.entries import ListingError
    from sources.listing import list_git

    settings.BULKHEAD_SOURCE_MAX_FILES = 100
    root = new_folder(admin.tenant, "tree-bomb-")
    git_commit(root, {"guide.md": "# Guide\n\nThe pelican protocol.\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="bomb", url=str(root))
    first = _run(source)
    assert (first.status, first.added) == ("succeeded", 1), (first.error, first.errors)
    repo = Repo(str(root))
    blob = Blob.from_string(b"# Same\n\nsame\n")
    objects, inner = [(blob, None)], blob.id
    for level in range(4):
        tree = Tree()
        for i in range(24):
            tree.add(f"{'fd'[level > 0]}{i:02d}".encode() + (b".md" if level == 0 else b""),
                     0o100644 if level == 0 else 0o040000, inner)
        objects.append((tree, None))
        inner = tree.id
    top = Tree()
    top.add(b"guide.md", 0o100644, repo[repo[repo[repo.head()].tree][b"guide.md"][1]].id)
    top.add(b"docs", 0o040000, inner)
    objects.append((top, None))
    repo.object_store.add_objects(objects)
    repo.get_worktree().commit(message=b"many names", tree=top.id, author=b"T <t@example.com>",
                               committer=b"T <t@example.com>")
    with pytest.raises(ListingError, match="more than 1000 paths"):
        list_git(source)
    preview = source_preview(member=admin, source=source)
    assert "more than 1000 paths" in preview["error"] and preview["items"] == [], preview["error"]
    sync = _run(source)
    assert sync.status == "failed" and "more than 1000 paths" in sync.error, (sync.status, sync.error)
    assert set(SourceItem.objects.filter(source=source).values_list("path", flat=True)) == {"guide.md"}


class _SlowSite(http.server.BaseHTTPRequestHandler):
    """A website whose every page answers slowly, each well within ``BULKHEAD_SOURCE_TIMEOUT_SECONDS``: a crawl of
    it takes as long as its pages times their delay (a real one: up to the page limit times the per-page timeout)."""

    protocol_version = "HTTP/1.1"
    pages = 12
    delay = 0.25
    served: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/docs/":
            links = "".join(f'<a href="p{i}.html">{i}</a>' for i in range(self.pages))
            body = f"<html><body><h1>Home</h1><p>The ibis index.</p>{links}</body></html>".encode()
        elif self.path.startswith("/docs/p"):
            time.sleep(self.delay)
            body = f"<html><body><h1>{self.path}</h1><p>The spoonbill page.</p></body></html>".encode()
        else:
            body = b""
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.served.append(self.path)

    def log_message(self, *args):
        pass


def test_a_source_preview_has_one_deadline_for_a_whole_crawl(admin, settings):
    """Found attacking sources: the admin's preview of a source (the console's and ``POST /api/v1/sources/preview/``)
    lists the source in a web thread, and each page had its timeout but the crawl none: up to
    ``BULKHEAD_SOURCE_MAX_FILES`` pages times ``BULKHEAD_SOURCE_TIMEOUT_SECONDS`` (10,000 x 20 s) of one thread
    for a site that answers each page slowly. Now the preview has ``BULKHEAD_SOURCE_PREVIEW_SECONDS`` in all and then
    answers an error saying how far it got and to sync instead; the sync, in its worker, reads the whole site."""
    import re

    settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS = 5
    settings.BULKHEAD_SOURCE_PREVIEW_SECONDS = 1
    _SlowSite.served = []
    server, site = serve(_SlowSite)
    try:
        source = source_create(actor=admin, tenant=admin.tenant, kind="web", name="slow", url=f"{site}/docs/",
                               options={"rate_per_second": 50})
        started = time.monotonic()
        preview = source_preview(member=admin, source=source)
        assert time.monotonic() - started < 10  # generous: the whole crawl takes at least 3 s, and 10 s lets it end
        read = [p for p in _SlowSite.served if p.startswith("/docs/p")]
        assert len(read) < _SlowSite.pages, read  # it stopped before the end of the site
        assert preview["items"] == [] and "BULKHEAD_SOURCE_PREVIEW_SECONDS" in preview["error"], preview
        assert "Sync the source" in preview["error"], preview["error"]
        got = re.search(r"after reading (\d+) of the (\d+) pages found so far", preview["error"])
        assert got and int(got.group(1)) <= len(read) + 1 and int(got.group(2)) == _SlowSite.pages + 1, preview["error"]
        assert not SourceItem.objects.filter(source=source).exists()
        sync = _run(source)  # the sync has no such deadline: it reads every page
        assert (sync.status, sync.added) == ("succeeded", _SlowSite.pages + 1), (sync.error, sync.errors)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("kind", ["folder", "git"])
def test_a_source_preview_out_of_time_says_so_for_every_kind(admin, settings, kind):
    """The same deadline for a folder's walk and a local repository's fetch and tree (none left here: 0 s)."""
    settings.BULKHEAD_SOURCE_PREVIEW_SECONDS = 0
    root = new_folder(admin.tenant, f"late-{kind}-")
    files = {"a.md": "# A\n\nalpha\n"}
    if kind == "git":
        git_commit(root, files)
        source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="late", url=str(root))
    else:
        write(root, files)
        source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="late", path=str(root))
    preview = source_preview(member=admin, source=source)
    assert preview["items"] == [] and preview["error"].startswith(
        "The preview stopped at its time limit (0 s, BULKHEAD_SOURCE_PREVIEW_SECONDS) while "), preview["error"]
    sync = _run(source)
    assert (sync.status, sync.added) == ("succeeded", 1), (sync.error, sync.errors)


def test_a_source_preview_stops_a_git_fetch_at_its_deadline(admin, settings):
    """Found attacking sources: the preview of a Git source fetched the whole pack in the web thread, however long
    the server took to send it (each read within the timeout). Now the fetch stops at the preview's deadline
    (dulwich's progress callback, called as the pack comes) and keeps nothing of it; the sync fetches it all."""
    import base64
    import random
    import shutil
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from dulwich.server import DictBackend
    from dulwich.web import make_wsgi_chain

    from sources.listing import git_cache_path

    settings.BULKHEAD_SOURCE_PREVIEW_SECONDS = 1
    served = new_folder(admin.tenant, "slow-git-")
    noise = base64.b64encode(random.Random(7).randbytes(3 << 20)).decode()  # ~3 MB that does not compress much
    git_commit(served, {"guide.md": "# Guide\n\nThe stork protocol.\n", "data.md": f"# Data\n\n{noise}\n"})
    app = make_wsgi_chain(DictBackend({"/repo.git": Repo(str(served))}))
    delay, writes, finished = [0.25], [], []

    def slow(environ, start_response):  # each write of the answer (a pkt-line of the pack) after a pause
        def slow_start(status, headers, exc_info=None):
            write = start_response(status, headers, exc_info)

            def slow_write(data):
                time.sleep(delay[0])
                writes.append(len(data))
                return write(data)

            return slow_write

        body = app(environ, slow_start)
        if environ.get("PATH_INFO", "").endswith("git-upload-pack"):
            body = list(body)  # the pack is written through slow_write while this runs
            finished.append(True)
        return body

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    server = make_server("127.0.0.1", 0, slow, handler_class=Quiet)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="slow-git",
                               url=f"http://127.0.0.1:{server.server_address[1]}/repo.git")
        shutil.rmtree(git_cache_path(source), ignore_errors=True)  # a mirror left by another test of these ids
        started = time.monotonic()
        preview = source_preview(member=admin, source=source)
        assert time.monotonic() - started < 20  # generous: the whole pack takes more than 10 s to come
        assert preview["items"] == [] and "BULKHEAD_SOURCE_PREVIEW_SECONDS" in preview["error"], preview
        assert "while fetching the repository (the fetch had not finished" in preview["error"], preview["error"]
        assert writes and not finished  # the server was still sending the pack
        assert not list((git_cache_path(source) / "objects" / "pack").glob("*.pack"))  # nothing of it kept
        delay[0] = 0
        sync = _run(source)  # the sync has no such deadline
        assert (sync.status, sync.added) == ("succeeded", 2), (sync.error, sync.errors)
    finally:
        server.shutdown()
        server.server_close()


def _pack_entry_header(kind: int, size: int) -> bytes:
    """A pack entry's header (gitformat-pack): the type and the inflated size, 4 bits then 7 a byte."""
    out = [(kind << 4) | (size & 0x0F)]
    size >>= 4
    while size:
        out[-1] |= 0x80
        out.append(size & 0x7F)
        size >>= 7
    return bytes(out)


def _delta_size(size: int) -> bytes:
    out = []
    while True:
        out.append(size & 0x7F)
        size >>= 7
        if not size:
            return bytes(out)
        out[-1] |= 0x80


def _back_offset(distance: int) -> bytes:
    """An OFS_DELTA's distance back to its base (gitformat-pack's offset encoding)."""
    out = [distance & 0x7F]
    distance >>= 7
    while distance:
        distance -= 1
        out.insert(0, 0x80 | (distance & 0x7F))
        distance >>= 7
    return bytes(out)


def test_a_git_blob_that_inflates_past_the_upload_limit_is_refused_by_its_headers(admin, settings):
    """Found attacking sources: a Git blob was read whole (``repo[sha].data``) before the upload limit was checked,
    so 64 MB of zeros, 64 KB in the pack, took 64 MB of the sync's worker (or the admin's preview in a web thread)
    each time it was read, and again in the rename detection's similarity. A 100-byte blob stored as a delta on
    that one cost the same: reading it inflates its base. Now a blob's headers are read first -- the pack entry's
    inflated size and, down its delta chain, each delta's result and base -- and one over
    ``BULKHEAD_MAX_UPLOAD_BYTES`` is skipped naming the size, none of it inflated. (The fetch itself still inflates
    each object once to index the pack: not measured here.)"""
    import hashlib
    import struct
    import tracemalloc
    import zlib

    from dulwich.pack import OFS_DELTA

    from sources.listing import list_git

    settings.BULKHEAD_MAX_UPLOAD_BYTES = 1 << 20
    root = new_folder(admin.tenant, "blob-bomb-")
    git_commit(root, {"guide.md": "# Guide\n\nThe crane protocol.\n", "gone.md": "# Gone\n\nwithdrawn text\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="blob-bomb", url=str(root))
    first = _run(source)
    assert (first.status, first.added) == ("succeeded", 2), (first.error, first.errors)

    # A pack of two blobs: 64 MB of zeros, and 100 zero bytes as a delta on it (copy 100 bytes from offset 0).
    repo = Repo(str(root))
    bomb, small = Blob.from_string(b"\0" * BOMB_BYTES), Blob.from_string(b"\0" * 100)
    delta = _delta_size(BOMB_BYTES) + _delta_size(100) + bytes([0x90, 100])
    first_entry = _pack_entry_header(3, BOMB_BYTES) + zlib.compress(bomb.as_raw_string(), 9)
    body = (first_entry + _pack_entry_header(OFS_DELTA, len(delta)) + _back_offset(len(first_entry))
            + zlib.compress(delta))
    pack = b"PACK" + struct.pack(">II", 2, 2) + body
    handle, commit, _ = repo.object_store.add_pack()
    handle.write(pack + hashlib.sha1(pack).digest())
    commit()
    del bomb
    tree = Tree()
    tree.add(b"guide.md", 0o100644, repo[repo[repo.head()].tree][b"guide.md"][1])
    tree.add(b"bomb.md", 0o100644, Blob.from_string(b"\0" * BOMB_BYTES).id)
    tree.add(b"small.md", 0o100644, small.id)
    repo.object_store.add_object(tree)
    repo.get_worktree().commit(message=b"inflating blobs", tree=tree.id, author=b"T <t@example.com>",
                               committer=b"T <t@example.com>")
    list_git(source)  # the fetch, which indexes (inflates) each object once, outside what is measured

    tracemalloc.start()
    try:
        preview = source_preview(member=admin, source=source)
        sync = _run(source)  # gone.md vanished: the rename detection compares the new blobs with it
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20, f"the preview and the sync held {peak} bytes at once"
    wanted = (f"over the size limit ({1 << 20} bytes, BULKHEAD_MAX_UPLOAD_BYTES): reading the blob would inflate "
              f"{BOMB_BYTES} bytes; it is not read")
    rows = {i["path"]: (i["action"], i["reason"]) for i in preview["items"]}
    assert rows["bomb.md"] == rows["small.md"] == ("skip", wanted), rows
    assert {s["path"]: s["reason"] for s in sync.skips} == {"bomb.md": wanted, "small.md": wanted}, sync.skips
    assert (sync.status, sync.deleted, sync.unchanged) == ("succeeded", 1, 1), (sync.error, sync.errors)
    assert set(SourceItem.objects.filter(source=source).values_list("path", flat=True)) == {"guide.md"}


class _BigSite(http.server.BaseHTTPRequestHandler):
    """A website of many large pages (each within the upload limit), with ETags: a second crawl is all 304s."""

    protocol_version = "HTTP/1.1"
    pages = 16
    page_bytes = 1 << 20

    def do_GET(self):  # noqa: N802 - http.server's name
        if self.path == "/docs/":
            body = ("<html><body><h1>Home</h1>"
                    + "".join(f'<a href="p{i}.html">{i}</a>' for i in range(self.pages)) + "</body></html>").encode()
        elif self.path.startswith("/docs/p"):
            words = f"The {self.path} page of the heron guide. " * (self.page_bytes // 40)
            body = f"<html><body><h1>{self.path}</h1><p>{words}</p></body></html>".encode()
        else:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        etag = f'"{hash(body) & 0xffffff}"'
        if self.headers.get("If-None-Match") == etag:
            self.send_response(304)
            self.send_header("ETag", etag)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_a_website_crawl_holds_at_most_a_total_of_bytes(admin, settings):
    """Found attacking sources: a crawl kept every page it listed in memory until the sync read them -- up to
    ``BULKHEAD_SOURCE_MAX_FILES`` pages of ``BULKHEAD_MAX_UPLOAD_BYTES`` (10,000 x 25 MB) -- and the sync first
    loaded every stored page's bytes (with every document row of the source) to answer 304s. Now a crawl holds at
    most ``BULKHEAD_SOURCE_MAX_CRAWL_BYTES`` of pages in all, a 304's stored bytes counted as they are loaded (only
    then); past it the listing fails naming the setting, and nothing is synced or deleted."""
    import tracemalloc

    server, site = serve(_BigSite)
    try:
        source = source_create(actor=admin, tenant=admin.tenant, kind="web", name="big", url=f"{site}/docs/",
                               options={"rate_per_second": 100})
        settings.BULKHEAD_SOURCE_MAX_CRAWL_BYTES = 64 << 20
        first = _run(source)
        assert (first.status, first.added) == ("succeeded", _BigSite.pages + 1), (first.error, first.errors)
        documents = set(SourceItem.objects.filter(source=source).values_list("document_id", flat=True))

        settings.BULKHEAD_SOURCE_MAX_CRAWL_BYTES = 3 << 20  # three of the sixteen pages
        tracemalloc.start()
        try:
            sync = _run(source)  # every page answers 304: their stored bytes
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert sync.status == "failed" and f"pass {3 << 20} bytes in all (BULKHEAD_SOURCE_MAX_CRAWL_BYTES)" in sync.error, (
            sync.status, sync.error)
        assert "nothing was synced or deleted" in sync.error and sync.deleted == 0
        assert peak < 10 << 20, f"the sync held {peak} bytes at once ({_BigSite.pages} stored pages of 1 MB)"
        assert set(SourceItem.objects.filter(source=source).values_list("document_id", flat=True)) == documents
        assert Document.objects.filter(pk__in=documents).count() == len(documents)
        preview = source_preview(member=admin, source=source)  # no conditional requests: every page read anew, the same bound
        assert preview["items"] == [] and "BULKHEAD_SOURCE_MAX_CRAWL_BYTES" in preview["error"], preview["error"]
    finally:
        server.shutdown()
        server.server_close()


def test_a_tenant_runs_at_most_its_preview_slots_of_source_previews(admin, settings):
    """Found attacking sources: each source preview is bounded (``BULKHEAD_SOURCE_PREVIEW_SECONDS``, 30 s), but an
    admin sending several at once held that many web threads -- shared by every tenant's console and API -- for up
    to 30 s each. A source preview now takes one of the tenant's ``BULKHEAD_PREVIEWS_PER_TENANT`` preview slots, the
    upload preview's (``kb.web_slots``, across web processes); one more is the upload preview's 429 ``busy`` with
    Retry-After in the API, and said on the console's page. Another tenant previews as usual."""
    from contextlib import ExitStack

    from django.urls import reverse
    from rest_framework.test import APIClient

    import sources.listing
    from accounts.services import api_token_create
    from kb.web_slots import Busy, tenant_slot
    from tests.api_helpers import console_client

    root = new_folder(admin.tenant, "slots-")
    write(root, {"a.md": "# A\n\nThe heron rota.\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="slots", path=str(root))
    other = membership_create(tenant=tenant_create(slug="src-attack-b", name="Sources B"), email="admin@b.example",
                              role="admin", clearance="restricted")
    their_root = new_folder(other.tenant, "slots-")  # a tenant reads only its own folder
    write(their_root, {"a.md": "# A\n\nThe heron rota.\n"})
    theirs = source_create(actor=other, tenant=other.tenant, kind="folder", name="theirs", path=str(their_root))
    _, key = api_token_create(membership=admin, name="t")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    console = console_client(admin)
    listed = []
    real_list_source = sources.listing.list_source

    def counted(source, **kwargs):
        listed.append(source.name)
        return real_list_source(source, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sources.listing, "list_source", counted)
        with ExitStack() as held:  # the tenant's previews are running (any kind, in any web process)
            for _ in range(settings.BULKHEAD_PREVIEWS_PER_TENANT):
                held.enter_context(tenant_slot("preview", admin.tenant_id, limit=settings.BULKHEAD_PREVIEWS_PER_TENANT,
                                               seconds=60, what="preview"))
            with pytest.raises(Busy, match="previews of this tenant are running already"):
                source_preview(member=admin, source=source)
            saved = api.get(f"/api/v1/sources/{source.pk}/preview/")
            unsaved = api.post("/api/v1/sources/preview/", {"kind": "folder", "name": "new", "path": str(root),
                                                            "access_level": "internal"}, format="json")
            for answer in (saved, unsaved):
                assert answer.status_code == 429 and answer["Retry-After"] == "5", answer.content
                assert answer.json()["error"]["code"] == "busy", answer.json()
            page = console.get(reverse("console:source", args=[source.pk]) + "?preview=1")
            assert page.status_code == 429 and "running already" in page.content.decode()
            form = console.post(reverse("console:sources"), {"action": "preview", "kind": "folder", "name": "new",
                                                             "path": str(root), "access_level": "internal"})
            assert form.status_code == 429 and "running already" in form.content.decode()
            assert listed == []  # none of them read the source
            assert [i["path"] for i in source_preview(member=other, source=theirs)["items"]] == ["a.md"]  # not held up by A
        assert [i["path"] for i in source_preview(member=admin, source=source)["items"]] == ["a.md"]  # released: A previews again

        # A running source preview holds its slot: with one slot, an upload preview (or another) waits its turn.
        settings.BULKHEAD_PREVIEWS_PER_TENANT = 1
        refused = []

        def while_listing(source, **kwargs):
            try:
                with tenant_slot("preview", source.tenant_id, limit=1, seconds=60, what="preview"):
                    pass
            except Busy:
                refused.append(source.name)
            return real_list_source(source, **kwargs)

        patch.setattr(sources.listing, "list_source", while_listing)
        assert [i["path"] for i in source_preview(member=admin, source=source)["items"]] == ["a.md"]
        assert refused == ["slots"]


def test_a_source_preview_stops_rename_detection_at_its_deadline(admin, settings):
    """Found attacking sources: the preview's deadline was checked by every walk but Git's rename detection -- up to
    ``RENAME_MAX_FILES`` (400) vanished times 400 new files, each pair compared (an object read and scored), in the
    web thread after the deadline had passed. Now the detection checks the deadline between paths and at each
    object it reads: the preview stops there, saying so, and guesses no delete and add; the sync, without a
    deadline, detects every rename."""
    import dulwich.diff_tree

    settings.BULKHEAD_SOURCE_PREVIEW_SECONDS = 3
    n = 12
    root = new_folder(admin.tenant, "renames-late-")
    old = {f"old/{i:02d}.md": f"# Page {i}\n\n" + "".join(f"Line {j} of the page {i} on herons.\n" for j in range(12))
           for i in range(n)}
    git_commit(root, old)
    source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="renames-late", url=str(root))
    first = _run(source)
    assert (first.status, first.added) == ("succeeded", n), (first.error, first.errors)
    # Every file moved and edited: n vanished and n new paths, n x n pairs to compare.
    git_commit(root, {**dict.fromkeys(old), **{p.replace("old/", "new/"): text + "One more line.\n"
                                               for p, text in old.items()}}, message="move and edit")
    compared = []
    real_score = dulwich.diff_tree._similarity_score

    def slow_score(*args, **kwargs):  # the first pair takes the whole preview's time: the deadline passes here
        if not compared and settings.BULKHEAD_SOURCE_PREVIEW_SECONDS:
            time.sleep(settings.BULKHEAD_SOURCE_PREVIEW_SECONDS + 0.1)
        compared.append(1)
        return real_score(*args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dulwich.diff_tree, "_similarity_score", slow_score)
        preview = source_preview(member=admin, source=source)
        assert preview["items"] == [] and "BULKHEAD_SOURCE_PREVIEW_SECONDS" in preview["error"], preview
        assert f"while detecting renames ({n} vanished and {n} new files)" in preview["error"], preview["error"]
        assert len(compared) == 1  # it stopped at the next pair, not after all n x n
        settings.BULKHEAD_SOURCE_PREVIEW_SECONDS = 0  # (the spy no longer waits)
        compared.clear()
        sync = _run(source)  # the sync has no such deadline: every pair is compared, every move kept its document
    assert len(compared) >= n and (sync.status, sync.renamed) == ("succeeded", n), (sync.error, sync.errors)


class _DrippingRefs(http.server.BaseHTTPRequestHandler):
    """A Git server over HTTP whose ref advertisement -- the first answer of a fetch, before any pack -- comes a byte
    at a time, each well within the read timeout: one pkt-line (declared 255 bytes long) dripped for ``total``
    bytes, then the connection closes."""

    drip = 0.25
    total = 40
    sent: list[int] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        self.send_response(200)
        self.send_header("Content-Type", "application/x-git-upload-pack-advertisement")
        self.end_headers()
        self.wfile.write(b"001e# service=git-upload-pack\n0000" + b"00ff")
        try:
            for _ in range(self.total):
                time.sleep(self.drip)
                self.wfile.write(b"a")
                self.sent.append(1)
        except OSError:  # the client hung up
            pass

    def log_message(self, *args):
        pass


def test_a_source_preview_stops_a_git_ref_advertisement_dripped_at_its_deadline(admin, settings):
    """Found attacking sources: the preview's deadline reached a Git fetch's pack (dulwich's progress callback) but not
    the ref advertisement before it: a server dripping its refs a byte within every read's timeout held the web
    thread as long as it liked (and one read of a pkt-line is many socket reads). Now the fetch's connections are
    cut at the deadline, whatever they are waiting for: the preview stops there and says so."""
    settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS = 5
    settings.BULKHEAD_SOURCE_PREVIEW_SECONDS = 1
    _DrippingRefs.sent = []
    server, site = serve(_DrippingRefs)
    try:
        source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="dripping-refs",
                               url=f"{site}/repo.git")
        started = time.monotonic()
        preview = source_preview(member=admin, source=source)
        assert time.monotonic() - started < 30  # generous: only to prove it ends
        assert preview["items"] == [] and "BULKHEAD_SOURCE_PREVIEW_SECONDS" in preview["error"], preview
        assert "while fetching the repository (the fetch had not finished" in preview["error"], preview["error"]
        time.sleep(3 * _DrippingRefs.drip)  # the server notices the hang-up at its next byte or the one after
        assert len(_DrippingRefs.sent) < _DrippingRefs.total // 2, len(_DrippingRefs.sent)  # cut long before the end
        assert not SourceItem.objects.filter(source=source).exists()
    finally:
        server.shutdown()
        server.server_close()


def test_a_tenant_reads_only_its_own_folder_below_the_source_roots(admin, settings):
    """Found attacking sources: every tenant's folder and local Git sources could read anything below
    ``BULKHEAD_SOURCE_ROOTS``, so an admin of one tenant pointed a source at the folder holding another
    tenant's files and synced them into its own search. Now a tenant reads only ``<root>/<tenant slug>``:
    anything else -- another tenant's folder (even one whose slug starts with this one's), the root itself,
    a ``..`` or a symbolic link leading there, a tenant folder that is itself a link, another tenant's folder
    of a root configured inside this tenant's, the Git mirrors -- is refused naming the allowed place, when
    the source is saved and again when it is listed; a local repository whose ``.git`` file, alternates or
    linked objects lead out is refused too."""
    from pathlib import Path

    from accounts.errors import ApplicationError
    from sources.models import Source
    from tests.conftest import SOURCE_ROOT

    mine = Path(SOURCE_ROOT / admin.tenant.slug)
    other = tenant_create(slug=f"{admin.tenant.slug}-other", name="Other")  # "src-attack-other": a prefix of mine
    theirs = new_folder(other, "theirs-")
    write(theirs, {"secret.md": "# Secret\n\nThe other tenant's heron plan.\n"})
    git_commit(theirs, {"secret.md": "# Secret\n\nThe other tenant's heron plan.\n"})
    own = new_folder(admin.tenant, "own-")
    os.symlink(theirs, own / "to-theirs")
    refused = {
        "theirs": str(theirs), "the root": str(SOURCE_ROOT), "dotdot": f"{own}/../../{other.slug}/{theirs.name}",
        "link": str(own / "to-theirs"), "prefix": f"{mine}-other/{theirs.name}",
    }
    for name, path in refused.items():
        with pytest.raises(ApplicationError, match=f"only below {mine} ") as raised:
            source_create(actor=admin, tenant=admin.tenant, kind="folder", name=name, path=path)
        assert raised.value.details == {"field": "path"}, name
        for url in (path, f"file://{path}"):
            with pytest.raises(ApplicationError, match=f"only below {mine} "):
                source_create(actor=admin, tenant=admin.tenant, kind="git", name=name, url=url)

    # A source saved before the rule (or a folder swapped for a link since) is refused when listed: nothing read.
    for kind, field in (("folder", "path"), ("git", "url")):
        saved = Source.objects.create(tenant=admin.tenant, name=f"old-{kind}", kind=kind, **{field: str(theirs)})
        sync = _run(saved)
        assert sync.status == "failed" and f"only below {mine} " in sync.error, sync.error
    assert not Document.objects.filter(tenant=admin.tenant).exists()

    # A tenant folder that is itself a link to another tenant's folder leads nowhere.
    linked = tenant_create(slug="src-attack-linked", name="Linked")
    if (SOURCE_ROOT / linked.slug).is_symlink():  # from an earlier run
        (SOURCE_ROOT / linked.slug).unlink()
    os.symlink(theirs.parent, SOURCE_ROOT / linked.slug)
    linked_admin = membership_create(tenant=linked, email="admin@linked.example", role="admin", clearance="restricted")
    with pytest.raises(ApplicationError, match="only below"):
        source_create(actor=linked_admin, tenant=linked, kind="folder", name="l", path=str(SOURCE_ROOT / linked.slug))

    # A repository in the tenant's own folder whose Git folder, alternates or objects lead to another tenant's.
    pointer = new_folder(admin.tenant, "gitdir-")
    (pointer / ".git").write_text(f"gitdir: {theirs / '.git'}\n")
    alternate = new_folder(admin.tenant, "alternates-")
    git_commit(alternate, {"a.md": "# A\n\nalpha\n"})
    (alternate / ".git" / "objects" / "info" / "alternates").write_text(f"{theirs / '.git' / 'objects'}\n")
    linked_objects = new_folder(admin.tenant, "linked-objects-")
    git_commit(linked_objects, {"a.md": "# A\n\nalpha\n"})
    os.symlink(theirs / ".git" / "objects" / "pack", linked_objects / ".git" / "objects" / "theirs-pack")
    for n, repo in enumerate((pointer, alternate, linked_objects)):
        source = source_create(actor=admin, tenant=admin.tenant, kind="git", name=f"escape-{n}", url=str(repo))
        sync = _run(source)
        assert sync.status == "failed" and "outside this tenant's folder" in sync.error, (repo, sync.error)
    assert not Document.objects.filter(tenant=admin.tenant).exists()

    # Its own folder it reads.
    write(own, {"mine.md": "# Mine\n\nThe heron rota.\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="own", path=str(own))
    sync = _run(source)
    assert (sync.status, sync.added) == ("succeeded", 1), (sync.error, sync.errors)

    # A root configured inside another (this tenant's folder of the outer root is the inner root): the inner root's
    # other tenants' folders are not this tenant's. Nor are the Git mirrors, wherever the operator put them.
    inner = mine / "inner-root"
    (inner / other.slug).mkdir(parents=True, exist_ok=True)
    settings.BULKHEAD_SOURCE_ROOTS = [str(SOURCE_ROOT), str(inner)]
    with pytest.raises(ApplicationError, match="only below"):
        source_create(actor=admin, tenant=admin.tenant, kind="folder", name="nested", path=str(inner / other.slug))
    settings.BULKHEAD_SOURCE_ROOTS = [str(SOURCE_ROOT)]
    settings.BULKHEAD_SOURCE_CACHE_DIR = str(mine / "mirrors")
    (mine / "mirrors").mkdir(exist_ok=True)
    for name, path in (("mirrors", mine / "mirrors"), ("above the mirrors", mine)):  # above: the walk goes in
        with pytest.raises(ApplicationError, match="only below"):
            source_create(actor=admin, tenant=admin.tenant, kind="folder", name=name, path=str(path))
    settings.BULKHEAD_SOURCE_CACHE_DIR = str(SOURCE_ROOT.parent / "mirrors-elsewhere")
    # The data folder below the tenant's (a root set above it, a slug naming a folder on the way): the embedded
    # PostgreSQL's and Redis's files, every tenant's rows, are nobody's to list -- nor any folder above them.
    data = mine / "data-below"
    for private in ("pg", "redis"):
        (data / private).mkdir(parents=True, exist_ok=True)
    settings.BULKHEAD_DATA_PATH = str(data)
    for name, path in (("pg", data / "pg"), ("redis", data / "redis"), ("above them", data), ("mine", mine)):
        with pytest.raises(ApplicationError, match="only below"):
            source_create(actor=admin, tenant=admin.tenant, kind="folder", name=name, path=str(path))


@pytest.mark.parametrize("name", [
    ".bulkhead-access.yml", ".Bulkhead-Access.yaml", ".bulkhead-access.yaml.bak", ".bulkhеad-access.yaml",  # Cyrillic е
    "docs/.bulkhead-access.yaml", ".bulkhead\u200b-access.yaml", ".bulkhed-acess.yaml",
    ".bulkhead.access.yaml", "bulkhead.access.yml",  # a dot as the separator (review 12: was not one)
])
def test_a_file_named_like_the_access_file_fails_every_item(admin, name):
    """Found attacking sources: a file named like ``.bulkhead-access.yaml`` but not exactly it (another
    extension, case or separator, a backup copy, look-alike letters, one in a subfolder) was silently not
    read -- nor ingested, being YAML -- so every file got the wider policy its author meant it to narrow.
    Now such a name fails every item of the sync and of the preview, naming it; nothing is ingested
    until it is renamed or removed. A name merely about the subject (``bulkhead-access-guide.md``) is not
    one."""
    from accounts.policy import AccessLevel
    from sources.access import lookalike_access_file

    narrowing = "- path: 'secret/**'\n  access_level: restricted\n"
    root = new_folder(admin.tenant, "lookalike-")
    write(root, {"a.md": "# A\n\nalpha\n", "secret/b.md": "# B\n\nThe restricted heron plan.\n",
                 "bulkhead-access-guide.md": "# Guide\n\nHow access works.\n", name: narrowing})
    source = source_create(actor=admin, tenant=admin.tenant, kind="folder", name="lookalike", path=str(root))
    preview = source_preview(member=admin, source=source)
    assert name in preview["error"] and ".bulkhead-access.yaml" in preview["error"], preview["error"]
    rows = {i["path"]: i for i in preview["items"]}
    for path in ("a.md", "secret/b.md", "bulkhead-access-guide.md"):
        assert rows[path]["action"] == "fail" and name in rows[path]["reason"], rows[path]
    sync = _run(source)
    assert (sync.status, sync.added) == ("failed", 0), sync.errors
    failed = {e["path"]: e["error"] for e in sync.errors}
    assert {"a.md", "secret/b.md", "bulkhead-access-guide.md"} <= set(failed) and name in failed["a.md"], failed
    assert not Document.objects.filter(metadata__source_id=source.pk).exists()
    assert not lookalike_access_file("bulkhead-access-guide.md") and not lookalike_access_file(".bulkhead-access.yaml")

    # Renamed to exactly the access file: it is read, and narrows.
    os.replace(root / name, root / ".bulkhead-access.yaml")
    sync = _run(source)
    assert (sync.status, sync.added, sync.failed) == ("succeeded", 3, 0), sync.errors
    assert SourceItem.objects.get(source=source, path="secret/b.md").access_level == AccessLevel.RESTRICTED
