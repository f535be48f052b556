"""Attacking sources (a hostile folder or Git repository): what one file's name can do to a whole sync."""

from __future__ import annotations

import os

import pytest
from dulwich.objects import Blob, Tree
from dulwich.repo import Repo

from accounts.services import membership_create, tenant_create
from kb.models import Document
from sources.models import SourceItem, SourceSync
from sources.selectors import source_preview
from sources.services import source_create, sync_run
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
    root = new_folder(f"odd-{kind}-")
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
    preview = source_preview(source=source)
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

    root = new_folder("fifo-")
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
    served = new_folder("rebind-served-")
    git_commit(served, {"guide.md": "# Guide\n\nThe pelican protocol.\n"})
    public = make_server(PUBLIC, port, make_wsgi_chain(DictBackend({"/repo.git": Repo(str(served))})),
                         handler_class=Quiet)
    threading.Thread(target=public.serve_forever, daemon=True).start()
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
