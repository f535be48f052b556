"""Listing a source: what it holds now, each path with a cheap version (a Git blob id, a file's size
and modification time, a page's ETag), so a sync reads only what changed.

A lister raises :class:`ListingError` when it cannot list the whole source (a missing folder, an
unreachable repository, a start page that fails): the sync then fails and deletes nothing. A
listing that is whole but met errors on some items says so (``complete=False`` for a website that
could not fetch a page: nothing is deleted then either).

A preview lists in a web thread, so it gives the listing a deadline (``BULKHEAD_SOURCE_PREVIEW_SECONDS``):
past it the listing stops with :class:`OutOfTime`, saying how far it got -- a crawl between pages, a Git
fetch as its pack comes (dulwich's progress callback) or between the tree's paths, a folder between its
folders. A sync lists without one, in its worker.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings

from accounts.selectors import tenant_slug_inherited
from sources.addresses import ScpAddress, check_host, check_url_host, git_url_form, scp_address
from sources.entries import (  # noqa: F401 - content_hash re-exported
    AccessAbove,
    Entry,
    Listing,
    ListingError,
    OutOfTime,
    RenameFinder,
    Skip,
    content_hash,
    out_of_time,
)
from sources.models import Source


def tenant_folders(tenant_slug: str) -> list[Path]:
    """The folders a tenant's sources may read: ``<root>/<tenant slug>`` below each of
    ``BULKHEAD_SOURCE_ROOTS`` (the root resolved, the tenant's own folder not: a tenant folder that is itself a
    symbolic link leads nowhere). A root is shared by every tenant, so no tenant reads the root itself (found
    attacking sources: an admin of one tenant pointed a folder source at another tenant's files)."""
    if not tenant_slug or "/" in tenant_slug or tenant_slug in (".", ".."):
        raise ListingError("a local source belongs to a tenant")
    if tenant_slug_inherited(slug=tenant_slug):
        # The folders are named by the slug, not the tenant: what a deleted (or renamed) tenant left there is not
        # the new holder's to read (a known gap, closed in review 13). Until the operator moves them away.
        raise ListingError(
            f"the folders of the slug {tenant_slug!r} may hold another tenant's files: a tenant that held this slug "
            f"before was deleted or renamed; the operator moves those folders away, then releases the slug "
            f"(manage.py kb_tenant release-folder {tenant_slug})")
    return [Path(os.path.realpath(r)) / tenant_slug for r in settings.BULKHEAD_SOURCE_ROOTS]


def _allowed_places(tenant_slug: str) -> str:
    places = [str(Path(r) / tenant_slug) for r in settings.BULKHEAD_SOURCE_ROOTS]
    if not places:
        return "the operator allows no folder (BULKHEAD_SOURCE_ROOTS is empty)"
    return f"this tenant may read only below {' or '.join(places)} (BULKHEAD_SOURCE_ROOTS/<tenant slug>)"


def _within(real: Path, folders: list[Path]) -> bool:
    return any(real == folder or folder in real.parents for folder in folders)


def _private_folders() -> list[Path]:
    """What no tenant reads, whatever slug names its folder: the Git mirrors (``BULKHEAD_SOURCE_CACHE_DIR``, every
    tenant's), the embedded PostgreSQL's and Redis's files (every tenant's rows), and the outbox of an e-mail backend
    that writes files (``EMAIL_FILE_PATH``, set with ``BULKHEAD_EMAIL_DIR`` or the demo's ``mail/``: every tenant's
    invitation and password reset links; found attacking the demo, 2026-12-04: a tenant whose folder held the data
    folder synced it), resolved."""
    data = Path(settings.BULKHEAD_DATA_PATH)
    private = [settings.BULKHEAD_SOURCE_CACHE_DIR, data / "pg", data / "redis"]
    if getattr(settings, "EMAIL_FILE_PATH", None):  # a file backend's (bulkhead/settings.py sets it for no other)
        private.append(settings.EMAIL_FILE_PATH)
    return [Path(os.path.realpath(p)) for p in private]


def _tenant_may_read(real: Path, tenant_slug: str) -> bool:
    """Whether the resolved path ``real`` is the tenant's to read: below its folder of every root that holds it (a
    root configured inside another root is a root too: its other tenants' folders are not this one's), neither in
    nor above a private folder (:func:`_private_folders`: a folder above one would walk into it; found reviewing
    the rule: a root set above the data folder let a tenant whose slug named a folder on the way read the
    database's files, a tenant folder holding the mirrors listed them)."""
    folders = tenant_folders(tenant_slug)
    holding = [folder for folder in folders if _within(real, [folder.parent])]
    private = _private_folders()
    return (bool(holding) and all(_within(real, [folder]) for folder in holding)
            and not _within(real, private) and not any(_within(p, [real]) for p in private))


def allowed_local_path(path: str, tenant_slug: str) -> Path:
    """``path`` resolved, if it lies below the folder of the tenant ``tenant_slug`` under one of
    ``BULKHEAD_SOURCE_ROOTS`` (:func:`tenant_folders`; symbolic links and ``..`` resolved first, so neither
    leads out); else :class:`ListingError` naming the place it may be."""
    if not path or not os.path.isabs(path):
        raise ListingError(f"a local source needs an absolute path; {_allowed_places(tenant_slug)}")
    real = Path(os.path.realpath(path))
    if not _tenant_may_read(real, tenant_slug):
        raise ListingError(f"{path} is not below this tenant's folder: {_allowed_places(tenant_slug)}")
    return real


# ----------------------------------------------------------------------------- folders


def _read_file(full: Path, root: Path) -> Callable[[], bytes]:
    def read() -> bytes:
        # A file swapped meanwhile for a link is refused; for a named pipe or a device, opening never waits
        # (found attacking sources: a pipe hung the sync's worker) and it is skipped below.
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise Skip("not a regular file (it changed since the listing)")
            real = Path(os.path.realpath(f"/proc/self/fd/{fd}")) if os.path.exists("/proc/self/fd") else full
            if root not in real.parents:
                raise Skip("the file now leads outside the source's folder")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                return handle.read(settings.BULKHEAD_MAX_UPLOAD_BYTES + 1)
        finally:
            os.close(fd)

    return read


NOT_UTF8 = "the file name is not UTF-8; it is not read"


def _not_utf8(rel: str) -> dict | None:
    """The listing's error for a path whose name is not UTF-8 (decoded with ``surrogateescape``), or None.
    Such a path is no item: it could be stored nowhere (found attacking sources: it stopped every sync
    of its source at that item, so nothing after it synced and nothing deleted at the source was)."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        shown = rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        return {"path": shown, "error": NOT_UTF8}
    return None


def _not_utf8_shown(rel: str) -> str:
    """``rel`` as it can be stored and shown: a name that is not UTF-8 with U+FFFD in place."""
    return rel.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def list_folder(source: Source, deadline: float | None = None) -> Listing:
    root = allowed_local_path(source.path, source.tenant.slug)
    try:
        is_folder = root.is_dir()
    except OSError as exc:  # Path.is_dir raises what it does not take for "missing" (File name too long, EACCES)
        raise ListingError(f"could not read the folder {source.path}: {_reason(exc)}") from None
    if not is_folder:
        raise ListingError(f"the folder {source.path} does not exist or is not a folder")
    entries: list[Entry] = []
    errors: list[dict] = []
    # The access files above the root first, then the root's own (listed first): whatever subfolder fails to list
    # later, they decide who may read its name (ListingError.listing).
    above = _access_above(root, source.tenant.slug, deadline)
    stack = [root]
    while stack:
        if out_of_time(deadline):
            raise OutOfTime(f"while listing the folder ({len(entries)} files so far)")
        directory = stack.pop()
        try:
            children = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            if directory == root:  # the source's own folder: named by its setting (its real path may differ)
                raise ListingError(f"could not list the folder {source.path}: {_reason(exc)}") from None
            # A subfolder's name is a path of the source (found reviewing sources, review 14: "could not list
            # .../board/2027-layoffs" reached every admin): named only to who may read it.
            rel = _not_utf8_shown(str(directory.relative_to(root))) + "/"
            raise ListingError(
                f"could not list a folder of the source ({exc.strerror}; nothing was synced or deleted): {rel}", path=rel,
                without_path=f"a folder you may not read could not be listed ({exc.strerror}); nothing was synced "
                             "or deleted", listing=Listing(list(entries), errors=list(errors), above=above)) from None
        for child in children:
            rel = str(Path(child.path).relative_to(root))
            odd = _not_utf8(rel)
            if odd is not None:  # a folder of that name is not entered either
                if child.is_dir(follow_symlinks=False):
                    odd["path"] += "/"  # a folder: judged as one (sources.access.folder_access)
                errors.append(odd)
                continue
            if child.is_symlink():
                entries.append(Entry(rel, "", _never, skip="a symbolic link (not followed)"))
                continue
            if child.is_dir(follow_symlinks=False):
                if child.name != ".git":
                    stack.append(Path(child.path))
                continue
            if not child.is_file(follow_symlinks=False):
                continue
            try:
                st = child.stat(follow_symlinks=False)
            except OSError as exc:
                # Gone since the folder was read, or its path cannot be asked about (File name too long): as a file
                # that cannot be read -- the item fails (its document stays; a file gone is deleted by the next
                # sync), never the worker's walk (found reviewing sources, review 14: the OSError left the sync
                # "running" until its attempts ran out).
                entries.append(Entry(rel, "", _unreadable(exc)))
                continue
            entries.append(Entry(rel, f"{st.st_size}:{st.st_mtime_ns}", _read_file(Path(child.path), root),
                                 size=st.st_size))
    return Listing(entries, errors=errors, above=above)


def _reason(exc: OSError) -> str:
    """An OSError's reason without the path it names (a path of the source, named only where a rule allows)."""
    return exc.strerror or type(exc).__name__


def _unreadable(exc: OSError) -> Callable[[], bytes]:
    """A reader that fails as ``exc`` did, without its file name (the item's error names its path by the rule)."""
    errno, reason = exc.errno, _reason(exc)

    def read() -> bytes:
        raise OSError(errno, reason)

    return read


def _access_above(root: Path, tenant_slug: str, deadline: float | None = None) -> list[AccessAbove]:
    """The access files of the folders from the tenant's folder down to ``root``'s parent, outermost first (found
    reviewing sources, review 13: a source rooted at ``<tenant folder>/board`` read none of them, so its admin gave
    ``board/layoffs-2027.md`` whatever policy they liked). Each folder's files named :data:`ACCESS_FILE` or like it
    (``sources.access.lookalike_access_file``), read later as the source's own: a link is skipped, so refused. One
    listing of each folder on the way: at most the depth of the root."""
    from sources.access import ACCESS_FILE, lookalike_access_file

    holding = [f for f in tenant_folders(tenant_slug) if f in root.parents]
    if not holding:  # the root is the tenant's folder: nothing above it is the tenant's
        return []
    top = min(holding, key=lambda f: len(f.parts))  # a root configured inside the tenant's folder: the outer one
    above = []
    for folder in [top, *reversed([p for p in root.parents if top in p.parents])]:
        if out_of_time(deadline):
            raise OutOfTime("while reading the access files above the source's folder")
        try:
            children = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            # Named relative to the source's root ("../.."), never by its server path (fourteenth session).
            raise ListingError(f"could not list the folder {os.path.relpath(folder, root)} above the source's "
                               f"folder: {_reason(exc)}") from None
        found = []
        for child in children:
            if child.is_dir(follow_symlinks=False):
                continue
            if child.name != ACCESS_FILE and not lookalike_access_file(child.name):
                continue
            if child.is_symlink() or not child.is_file(follow_symlinks=False):
                found.append(Entry(child.name, "", _never, skip="a symbolic link or not a file (not followed)"))
                continue
            try:
                size = child.stat(follow_symlinks=False).st_size
            except OSError as exc:  # an access file that cannot be read: refused (every item fails)
                found.append(Entry(child.name, "", _unreadable(exc)))
                continue
            found.append(Entry(child.name, "", _read_file(Path(child.path), top), size=size))
        above.append(AccessAbove(str(folder.relative_to(top)) if folder != top else "",
                                 str(root.relative_to(folder)), found))
    return above


def _never() -> bytes:
    raise Skip("not read")


# ----------------------------------------------------------------------------- git

LFS_POINTER = b"version https://git-lfs.github.com/spec/"


GIT_URL_FORMS = "a local path, a file://, https:// or ssh:// URL, or user@host:path"


def git_location(url: str, tenant_slug: str) -> str | ScpAddress:
    """A Git source's ``url`` as the fetch uses it: a local path (below the folder of the tenant ``tenant_slug``
    under one of ``BULKHEAD_SOURCE_ROOTS``: :func:`allowed_local_path`), an
    http(s) or ssh URL, or an :class:`ScpAddress`; :class:`ListingError` for anything else. Git's own
    reading decides between a local path and the scp-like form (:func:`git_url_form`). No name is
    resolved here: the fetch checks the host's addresses."""
    url = url.strip()
    form = git_url_form(url)
    if form == "scp":
        return scp_address(url)
    if form == "local":
        return str(allowed_local_path(url, tenant_slug))
    if url.startswith("file://"):
        return str(allowed_local_path(url[len("file://"):], tenant_slug))
    if url.startswith(("https://", "http://", "ssh://")):
        if not urlsplit(url).hostname:
            raise ListingError("url: a Git URL names its host")
        return url
    raise ListingError(f"url: a Git source's url is {GIT_URL_FORMS}")


def git_cache_path(source: Source) -> Path:
    return Path(settings.BULKHEAD_SOURCE_CACHE_DIR) / f"t{source.tenant_id}-s{source.pk}.git"


def _secret_file(directory: Path, name: str, text: str) -> str:
    path = directory / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
    return str(path)


def _ssh_client(host: str, port: int | None, user: str, credentials: dict, directory: Path):
    """dulwich's SSH client for a fetch over ssh (``ssh://`` or ``user@host:path``, the same way). The
    connection goes to the address :func:`check_host` checked (``HostName``), the host key is checked
    under the URL's name (``HostKeyAlias``) and must be known (``StrictHostKeyChecking``; the source's
    ``known_hosts`` when given, else the worker's); nothing ever prompts (``BatchMode``). The user is the
    credentials' ``username``, else the URL's. The private key is written to a file of this fetch's own
    folder (0600), removed after the fetch; its path, never its text, is an argument. ssh authenticates
    with the key (or the agent), never a password. The command is ``BULKHEAD_SOURCE_SSH_COMMAND``
    through dulwich's subprocess vendor, never paramiko."""
    from dulwich.client import SSHGitClient, SubprocessSSHVendor

    address = check_host(host, port or 22)
    timeout = settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS
    options = [
        "BatchMode=yes", "StrictHostKeyChecking=yes", f"HostName={address}", f"HostKeyAlias={host}",
        f"ConnectTimeout={timeout}", f"ServerAliveInterval={max(1, timeout // 2)}", "ServerAliveCountMax=2",
    ]
    key_filename = None
    if credentials.get("known_hosts"):
        options.append(f"UserKnownHostsFile={_secret_file(directory, 'known_hosts', credentials['known_hosts'])}")
    if credentials.get("private_key"):
        options.append("IdentitiesOnly=yes")
        key_filename = _secret_file(directory, "key", credentials["private_key"])
    command = shlex.split(settings.BULKHEAD_SOURCE_SSH_COMMAND or "ssh")
    for option in options:
        command += ["-o", option]
    return SSHGitClient(host, port=port, username=credentials.get("username") or user or None,
                        vendor=SubprocessSSHVendor(), key_filename=key_filename, ssh_command=shlex.join(command))


def _pinned_pool_manager_cls(opened: list | None = None):
    """urllib3's pool manager whose every request (each redirect hop too) connects to the address
    :func:`check_host` returns for its host, checked then: the name is never resolved again by the HTTP
    library, so a DNS answer that changes between the check and the connection (rebinding: public for
    the check, internal for the fetch) leads nowhere. The request keeps the name in its Host header, its
    TLS server name and the certificate check. Each socket it opens is added to ``opened`` when given (for
    :func:`_cut_connections`)."""
    import urllib3

    class PinnedPoolManager(urllib3.PoolManager):
        def _new_pool(self, scheme, host, port, request_context=None):
            pool = super()._new_pool(scheme, host, port, request_context)
            if opened is not None:
                class Tracked(pool.ConnectionCls):
                    def _new_conn(self):  # the plain socket, before any TLS (http.client forgets it on a close)
                        sock = super()._new_conn()
                        opened.append(sock)
                        return sock

                pool.ConnectionCls = Tracked
            return pool

        def urlopen(self, method, url, redirect=True, **kw):
            headers = dict(kw.get("headers") or self.headers)
            headers["Host"] = urlsplit(url).netloc.rsplit("@", 1)[-1]
            return super().urlopen(method, url, redirect=redirect, **{**kw, "headers": headers})

        def connection_from_host(self, host, port=None, scheme="http", pool_kwargs=None):
            name = (host or "").strip("[]")
            address = check_host(name, port or (443 if scheme == "https" else 80))
            kwargs = dict(pool_kwargs or {})
            if scheme == "https":
                kwargs.update(server_hostname=name, assert_hostname=name)
            return super().connection_from_host(address, port, scheme, kwargs)

    return PinnedPoolManager


def _cut_connections(opened: list, cut: threading.Event) -> None:
    """Shut the sockets ``opened`` down, from another thread: a read blocked on one returns at once, however the
    server drips its answer (each read within the timeout, any number of reads)."""
    cut.set()
    for sock in list(opened):
        try:
            sock.shutdown(socket.SHUT_RDWR)  # under TLS too: the same descriptor
        except OSError:  # closed already
            pass


MAX_OBJECT_FOLDERS = 8  # a local repository's object folder and its alternates, down the chain (Git reads 5 deep)


def _check_folder(place: str, tenant_slug: str, walked: list[Path]) -> None:
    """:class:`ListingError` unless the folder ``place`` of a local repository, and every symbolic link inside it,
    stays in the tenant's folder (links not looked for again inside a folder of ``walked``, which gets this one)."""
    real = Path(os.path.realpath(place))
    # The folders a repository's Git files lead to, and the names inside them (a branch's ref, an alternate's folder
    # elsewhere in the tenant's folder), are no paths of the source: the source gives them no policy, so they are
    # named only to an admin who may read every level and group (ListingError without a listing: undecided).
    if not _tenant_may_read(real, tenant_slug):
        # Its path is no path of the tenant's (fourteenth session: it named the server's folder to the top admin).
        raise ListingError(f"the repository reads a folder outside this tenant's folder (not named here): "
                           f"{_allowed_places(tenant_slug)}", path=str(place), without_path="the repository reads a folder outside this tenant's folder "
                                                         f"(not named here): {_allowed_places(tenant_slug)}")
    if _within(real, walked):
        return
    walked.append(real)
    for directory, subdirs, files in os.walk(place):
        for name in subdirs + files:
            full = os.path.join(directory, name)
            if os.path.islink(full) and not _tenant_may_read(Path(os.path.realpath(full)), tenant_slug):
                raise ListingError(f"the repository's {os.path.relpath(full, place)} links outside this "
                                   f"tenant's folder: {_allowed_places(tenant_slug)}", path=full,
                                   without_path="a file of the repository's Git folders (not named here) links "
                                                f"outside this tenant's folder: {_allowed_places(tenant_slug)}")


def _local_repo(path: str, tenant_slug: str):
    """The local repository at ``path`` (below the tenant's folder), opened once, if nothing it reads leads out
    of the tenant's folder: a ``.git`` file's ``gitdir:``, a ``commondir``, ``objects/info/alternates`` (and each
    alternate's own, down the chain) and every symbolic link inside its Git folders and its alternates (a loose
    object or a pack linked to another tenant's repository would be read as this one's); else :class:`ListingError`."""
    from dulwich.repo import Repo

    try:
        repo = Repo(path)
    except Exception as exc:  # noqa: BLE001 - not a repository, unreadable
        raise ListingError(f"could not fetch the repository: {type(exc).__name__}") from None
    try:
        walked: list[Path] = []
        for place in sorted({repo.controldir(), repo.commondir()}):
            _check_folder(place, tenant_slug, walked)
        # Every object folder the fetch may read: the repository's, its alternates, and theirs in turn (an
        # alternate's own ``info/alternates`` is read as Git reads it; found reviewing the 2026-12-04 fix: only the
        # first ones were checked, and links inside an alternate were never looked at). Each is checked before its
        # own alternates are read.
        seen: set[str] = set()
        stores = [repo.object_store]
        while stores:
            store = stores.pop()
            real = os.path.realpath(store.path)
            if real in seen:
                continue
            seen.add(real)
            if len(seen) > MAX_OBJECT_FOLDERS:
                raise ListingError(f"the repository reads more than {MAX_OBJECT_FOLDERS} object folders "
                                   "(alternates); it is not read")
            _check_folder(store.path, tenant_slug, walked)
            stores.extend(store.alternates)
    except BaseException:
        repo.close()
        raise
    return repo


def _local_client(path: str, tenant_slug: str):
    """dulwich's local client reading only the repository :func:`_local_repo` checked (never opened again)."""
    from dulwich.client import LocalGitClient

    checked = _local_repo(path, tenant_slug)

    class CheckedLocalClient(LocalGitClient):
        def _open_repo(self, _path):
            return contextlib.closing(checked)

    client = CheckedLocalClient()
    client.checked = checked
    return client


def _repository_roots(worktree: Path, repo) -> list[Path]:
    """The folders whose access files above apply to a local repository opened at ``worktree`` (``repo``: as
    :func:`_local_repo` checked it): the working tree (or the bare repository) given, and the repository of every
    Git folder the fetch reads -- a ``.git`` file's ``gitdir:``, its ``commondir`` (a ``git worktree add`` tree
    reads its main repository's refs and objects: that repository's folders apply too), each alternate's -- a
    ``.git`` folder standing for the working tree that holds it, a bare one for itself. Each once, the one given
    first; the others as their real paths (each checked inside the tenant's folder by :func:`_local_repo`)."""
    def root_of(git_folder: Path) -> Path:
        if git_folder.parent.name == "worktrees" and git_folder.parent.parent.name == ".git":
            git_folder = git_folder.parent.parent  # a linked worktree's own folder: its main repository's
        return git_folder.parent if git_folder.name == ".git" else git_folder

    roots = [worktree.parent if worktree.name == ".git" else worktree]
    folders = [repo.controldir(), repo.commondir()]
    stores, seen = [repo.object_store], set()
    while stores:  # the object folders, as _local_repo walked them (bounded there)
        store = stores.pop()
        real = os.path.realpath(store.path)
        if real in seen:
            continue
        seen.add(real)
        folders.append(os.path.dirname(real))  # an object folder's repository (``<repo>/.git/objects``: ``.git``)
        stores.extend(store.alternates)
    known = {os.path.realpath(roots[0])}
    for folder in folders:
        root = root_of(Path(os.path.realpath(folder)))
        if str(root) not in known:
            known.add(str(root))
            roots.append(root)
    return roots


# The paths a Git listing may walk, per file a sync may take: include/exclude may narrow a larger listing to
# BULKHEAD_SOURCE_MAX_FILES, yet the walk is bounded (found attacking sources: a tree naming one subtree under
# many names, and that one another, made 10^9 paths of a few kilobytes).
LISTED_PATHS_PER_FILE = 10


FETCH_STOPPED = "while fetching the repository (the fetch had not finished; nothing of it was kept)"


def list_git(source: Source, credentials: dict | None = None, deadline: float | None = None) -> Listing:
    """The files of the source's branch at the commit fetched now; within ``deadline`` (``time.monotonic()``, a
    preview's) when given, else :class:`OutOfTime`."""
    from dulwich.client import default_urllib3_manager, get_transport_and_path
    from dulwich.objects import Commit, Tag
    from dulwich.repo import Repo

    location = git_location(source.url, source.tenant.slug)
    above: list[AccessAbove] = []  # a local repository's: the access files of the folders above it
    cache = git_cache_path(source)
    cache.parent.mkdir(parents=True, exist_ok=True)
    repo = Repo(str(cache)) if (cache / "objects").exists() else Repo.init_bare(str(cache), mkdir=True)
    credentials = credentials or {}
    secrets_dir = None
    timeout = settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS
    if deadline is not None:  # no request of the fetch waits past the deadline
        timeout = max(min(timeout, deadline - time.monotonic()), 0.001)

    def progress(_message: bytes) -> None:
        # dulwich calls this as the pack comes (and with the server's own messages): a fetch stops at the deadline.
        if out_of_time(deadline):
            raise OutOfTime(FETCH_STOPPED)

    # Over HTTP, the fetch's connections are cut at the deadline: the refs the server advertises first (before any
    # pack, so before any progress), or any answer dripped a byte within every read's timeout, end there too.
    opened: list = []
    cut = threading.Event()
    watchdog = None
    if deadline is not None:
        watchdog = threading.Timer(max(deadline - time.monotonic(), 0), _cut_connections, (opened, cut))
        watchdog.daemon = True
    try:
        if isinstance(location, ScpAddress) or location.startswith("ssh://"):
            secrets_dir = tempfile.mkdtemp(prefix="bulkhead-ssh-")  # 0700: the key and known hosts, this fetch only
            if isinstance(location, ScpAddress):
                host, port, user, path = location.host, None, location.user, location.path
            else:
                parts = urlsplit(location)
                host, port, user, path = parts.hostname or "", parts.port, parts.username or "", parts.path
            client = _ssh_client(host, port, user, credentials, Path(secrets_dir))
        elif location.startswith(("https://", "http://")):
            check_url_host(location)
            client, path = get_transport_and_path(
                location, username=credentials.get("username") or None, password=credentials.get("password") or None,
                # a timeout on every request of the fetch
                # and every request to the address its check passed (no second lookup: DNS rebinding)
                pool_manager=default_urllib3_manager(None, pool_manager_cls=_pinned_pool_manager_cls(opened),
                                                     timeout=timeout),
            )
            if watchdog is not None:
                watchdog.start()
        else:  # a local path, given to the local client as it is (never parsed again: "a:b" is not a host here)
            # A repository inside the tenant's folder is under the access files of the folders above it, as a folder
            # source is (found reviewing sources, review 14: it read only its own, so a repository an operator placed
            # in a folder restricted by an access file above gave its files whatever policy its source's admin set).
            # And under those above every folder the fetch reads (found following up review 14: a working tree's
            # ``.git`` file whose ``gitdir:`` led to a repository in a restricted folder of the tenant's got the
            # access files above the working tree only, so the restricted repository's files took the policy of
            # wherever its pointer was put): the Git folder, its common folder, each alternate's repository.
            worktree = Path(location)
            client, path = _local_client(location, source.tenant.slug), location
            above = []
            for root in _repository_roots(worktree, client.checked):
                above += _access_above(root, source.tenant.slug, deadline)
        result = client.fetch(path, repo, progress=progress if deadline is not None else None)
    except ListingError:
        raise
    except Exception as exc:  # noqa: BLE001 - dulwich raises many kinds; none may leak a credential
        if out_of_time(deadline) or cut.is_set():  # a request cut short by the deadline
            raise OutOfTime(FETCH_STOPPED) from None
        raise ListingError(f"could not fetch the repository: {type(exc).__name__}") from None
    finally:
        if watchdog is not None:
            watchdog.cancel()
        if secrets_dir is not None:
            shutil.rmtree(secrets_dir, ignore_errors=True)
    refs = result.refs
    branch = source.branch.strip()
    if branch:
        wanted = [f"refs/heads/{branch}".encode(), f"refs/tags/{branch}".encode()]
    else:
        wanted = [b"HEAD"]
    sha = next((refs[w] for w in wanted if refs.get(w)), None)
    if sha is None:
        raise ListingError(f"the repository has no branch or tag {branch or 'HEAD'!r}")
    obj = repo[sha]
    while isinstance(obj, Tag):
        obj = repo[obj.object[1]]
    if not isinstance(obj, Commit):
        raise ListingError(f"{branch or 'HEAD'} does not name a commit")
    entries: list[Entry] = []
    errors: list[dict] = []
    most = LISTED_PATHS_PER_FILE * settings.BULKHEAD_SOURCE_MAX_FILES
    for n, item in enumerate(repo.object_store.iter_tree_contents(obj.tree)):
        if out_of_time(deadline):
            raise OutOfTime(f"while listing the repository's files ({n} paths so far)")
        if n >= most:  # a tree may name one subtree many times: a few objects, any number of paths
            raise ListingError(f"the repository lists more than {most} paths ({LISTED_PATHS_PER_FILE} times "
                               "BULKHEAD_SOURCE_MAX_FILES); it is not read")
        rel = item.path.decode("utf-8", "surrogateescape")
        odd = _not_utf8(rel)
        if odd is not None:
            errors.append(odd)
            continue
        if stat.S_ISDIR(item.mode) or item.mode == 0o160000:
            entries.append(Entry(rel, "", _never, skip="a submodule (not followed)"))
            continue
        if stat.S_ISLNK(item.mode):
            entries.append(Entry(rel, "", _never, skip="a symbolic link (not followed)"))
            continue
        entries.append(Entry(rel, item.sha.decode(), _blob_reader(repo, item.sha)))
    return Listing(entries, revision=obj.id.decode(), renames=_git_renames(repo, deadline), errors=errors, above=above)


def _git_renames(repo, deadline: float | None = None) -> RenameFinder:
    """Git's rename detection (dulwich's ``RenameDetector``) between the blobs a source's vanished paths
    held and those of its new paths: a file moved with small edits is a rename (similarity at least
    ``BULKHEAD_SOURCE_RENAME_SIMILARITY`` percent, as ``git diff -M``), so it keeps its document. The two
    sides are trees built in memory over the mirror's blobs; a blob the mirror lacks, or one over the upload
    limit (:func:`_too_large`: never inflated), is left out (its path is then a delete and an add, as without
    detection). Like git, it gives up past
    ``RENAME_MAX_FILES`` adds or deletes (the comparison is quadratic). Within ``deadline`` (a preview's) when
    given, else :class:`OutOfTime`: checked between the paths and at each object the detection reads (once a
    pair it compares)."""

    def renames(old: dict[str, str], new: dict[str, str]) -> dict[str, str]:
        from dulwich.diff_tree import CHANGE_RENAME, RenameDetector, tree_changes
        from dulwich.index import commit_tree
        from dulwich.object_store import MemoryObjectStore, OverlayObjectStore

        def stopped() -> OutOfTime:
            return OutOfTime(f"while detecting renames ({len(old)} vanished and {len(new)} new files)")

        class TimedStore(OverlayObjectStore):
            def __getitem__(self, sha):  # the detector reads an object for each pair it compares
                if out_of_time(deadline):
                    raise stopped()
                return super().__getitem__(sha)

        memory = MemoryObjectStore()
        store = TimedStore([memory, repo.object_store], add_store=memory)

        def tree(files: dict[str, str]) -> bytes:
            blobs = []
            for path, version in files.items():
                if out_of_time(deadline):
                    raise stopped()
                sha = version.encode()
                # A blob over the upload limit is left out unread, as the sync leaves it (its headers tell; headers
                # that cannot be read fail the detection: no renames, see _similar_renames).
                if len(sha) == 40 and sha in repo.object_store and not _too_large(repo, sha):
                    blobs.append((path.encode("utf-8", "surrogateescape"), sha, 0o100644))
            return commit_tree(store, blobs)

        detector = RenameDetector(store, rename_threshold=settings.BULKHEAD_SOURCE_RENAME_SIMILARITY,
                                  max_files=RENAME_MAX_FILES)
        found = {}
        for change in tree_changes(store, tree(old), tree(new), rename_detector=detector):
            if change.type == CHANGE_RENAME:
                found[change.new.path.decode("utf-8", "surrogateescape")] = change.old.path.decode(
                    "utf-8", "surrogateescape")
        return found

    return renames


RENAME_MAX_FILES = 400  # adds or deletes past which no similarity is computed (at most 400**2 pairs)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A delta header's size (7 bits a byte, least significant first) at ``at``, and where it ends."""
    size = shift = 0
    while True:
        if at >= len(data):
            raise ValueError("truncated")
        byte = data[at]
        size |= (byte & 0x7F) << shift
        shift, at = shift + 7, at + 1
        if not byte & 0x80:
            return size, at


def _delta_target_size(read: Callable[[int], bytes]) -> int:
    """The size a delta makes, from the first bytes of its zlib stream (its header: the base's size, then the
    result's); at most 64 KiB of the stream is read and 32 bytes inflated."""
    import zlib

    inflate, head = zlib.decompressobj(), b""
    for _ in range(16):
        chunk = read(4096)
        if not chunk:
            break
        head += inflate.decompress(chunk, 32 - len(head))
        if len(head) >= 32 or inflate.eof:
            break
    _, at = _varint(head, 0)
    return _varint(head, at)[0]


def _inflated_size(repo, sha: bytes) -> int | None:
    """What reading the object ``sha`` inflates, told by headers alone (none of its content is inflated): a packed
    object's entry header and, for a delta, the size its delta header says it makes -- the largest along its delta
    chain, each of whose bases the read inflates whole (a 100-byte blob may be a delta on a 1 GB one); a loose
    object's ``blob <size>`` header. None when the mirror has no such object. ``ValueError`` for a header that
    cannot be read. (gitformat-pack: an entry's header holds its type and inflated size, 7 bits a byte after the
    first 4; an OFS_DELTA's base is an offset back in the same pack, a REF_DELTA's an object name.)"""
    import zlib

    from dulwich.objects import hex_to_sha, sha_to_hex
    from dulwich.pack import OFS_DELTA, REF_DELTA, take_msb_bytes

    store = repo.object_store
    name = hex_to_sha(sha) if len(sha) == store.object_format.hex_length else sha
    largest, seen = 0, set()
    while True:
        pack = next((p for p in store.packs if name in p), None)
        if pack is None:
            path = os.path.join(store.path, sha_to_hex(name)[:2].decode(), sha_to_hex(name)[2:].decode())
            if not os.path.exists(path):
                return None if not seen else largest  # a missing base: the read fails on its own
            with open(path, "rb") as handle:
                header = zlib.decompressobj().decompress(handle.read(4096), 64)
            size = header.partition(b"\0")[0].partition(b" ")[2]
            if b"\0" not in header or not size.isdigit():
                raise ValueError("unreadable loose object header")
            return max(largest, int(size))
        offset = pack.index.object_offset(name)
        with open(pack.data.path, "rb") as handle:
            while True:
                if (pack.data.path, offset) in seen:
                    return largest  # a cycle: the read refuses it on its own
                seen.add((pack.data.path, offset))
                handle.seek(offset)
                head = take_msb_bytes(handle.read)[0]
                kind, size = (head[0] >> 4) & 7, head[0] & 0x0F
                for i, byte in enumerate(head[1:]):
                    size |= (byte & 0x7F) << (i * 7 + 4)
                largest = max(largest, size)  # a delta's own instructions are inflated too
                if kind == OFS_DELTA:
                    back = take_msb_bytes(handle.read)[0]
                    distance = back[0] & 0x7F
                    for byte in back[1:]:
                        distance = ((distance + 1) << 7) | (byte & 0x7F)
                    largest = max(largest, _delta_target_size(handle.read))
                    offset -= distance
                elif kind == REF_DELTA:
                    name = handle.read(store.object_format.oid_length)
                    largest = max(largest, _delta_target_size(handle.read))
                    break  # its base: in any pack, or loose
                else:
                    return largest


def _too_large(repo, sha: bytes) -> str:
    """Why the blob ``sha`` is not read ("" when it may be): over ``BULKHEAD_MAX_UPLOAD_BYTES`` by its headers,
    checked before any of it is inflated (found attacking sources: a blob of 64 MB of zeros is 64 KB in the pack,
    and was inflated whole before the upload limit was checked). Headers that cannot be read are an ``OSError``:
    the item fails, its document stays."""
    import errno
    import zlib

    limit = settings.BULKHEAD_MAX_UPLOAD_BYTES
    try:
        size = _inflated_size(repo, sha)
    except (ValueError, TypeError, IndexError, KeyError, zlib.error):
        raise OSError(errno.EIO, "its Git headers cannot be read") from None
    if size is not None and size > limit:
        return (f"over the size limit ({limit} bytes, BULKHEAD_MAX_UPLOAD_BYTES): reading the blob would inflate "
                f"{size} bytes; it is not read")
    return ""


def _blob_reader(repo, sha: bytes) -> Callable[[], bytes]:
    def read() -> bytes:
        refused = _too_large(repo, sha)
        if refused:
            raise Skip(refused)
        data = repo[sha].data
        if data.startswith(LFS_POINTER):
            raise Skip("a Git LFS pointer (the content is not in the repository)")
        return data

    return read


def list_source(source: Source, *, credentials: dict | None = None, stored: dict | None = None,
                deadline: float | None = None) -> Listing:
    """The listing of ``source`` (``stored``: path -> (etag, last_modified, a loader of the stored bytes) of a
    website's pages, for conditional requests), before ``deadline`` (``time.monotonic()``; a preview's) if given, else
    :class:`OutOfTime`."""
    if source.kind == Source.Kind.FOLDER:
        return list_folder(source, deadline)
    if source.kind == Source.Kind.GIT:
        return list_git(source, credentials, deadline)
    if source.kind == Source.Kind.WEB:
        from sources.web import crawl

        return crawl(source, stored=stored or {}, deadline=deadline)
    raise ListingError(f"unknown kind {source.kind!r}")
