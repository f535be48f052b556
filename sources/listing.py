"""Listing a source: what it holds now, each path with a cheap version (a Git blob id, a file's size
and modification time, a page's ETag), so a sync reads only what changed.

A lister raises :class:`ListingError` when it cannot list the whole source (a missing folder, an
unreachable repository, a start page that fails): the sync then fails and deletes nothing. A
listing that is whole but met errors on some items says so (``complete=False`` for a website that
could not fetch a page: nothing is deleted then either).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from sources.addresses import check_url_host
from sources.entries import Entry, Listing, ListingError, Skip, content_hash  # noqa: F401 - content_hash re-exported
from sources.models import Source


def _real_roots() -> list[Path]:
    return [Path(os.path.realpath(r)) for r in settings.BULKHEAD_SOURCE_ROOTS]


def allowed_local_path(path: str) -> Path:
    """``path`` resolved, if it lies below one of ``BULKHEAD_SOURCE_ROOTS`` (symbolic links resolved
    first, so a link cannot lead out); else :class:`ListingError`."""
    if not path or not os.path.isabs(path):
        raise ListingError("a folder source needs an absolute path")
    real = Path(os.path.realpath(path))
    if not any(real == root or root in real.parents for root in _real_roots()):
        raise ListingError(f"{path} is not below a folder the operator allows (BULKHEAD_SOURCE_ROOTS)")
    return real


# ----------------------------------------------------------------------------- folders


def _read_file(full: Path, root: Path) -> Callable[[], bytes]:
    def read() -> bytes:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW)  # a file swapped for a link meanwhile is refused
        try:
            real = Path(os.path.realpath(f"/proc/self/fd/{fd}")) if os.path.exists("/proc/self/fd") else full
            if root not in real.parents:
                raise Skip("the file now leads outside the source's folder")
            with os.fdopen(fd, "rb", closefd=False) as handle:
                return handle.read(settings.BULKHEAD_MAX_UPLOAD_BYTES + 1)
        finally:
            os.close(fd)

    return read


def list_folder(source: Source) -> Listing:
    root = allowed_local_path(source.path)
    if not root.is_dir():
        raise ListingError(f"the folder {source.path} does not exist or is not a folder")
    entries: list[Entry] = []
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            children = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise ListingError(f"could not list {directory}: {exc.strerror}") from None
        for child in children:
            rel = str(Path(child.path).relative_to(root))
            if child.is_symlink():
                entries.append(Entry(rel, "", _never, skip="a symbolic link (not followed)"))
                continue
            if child.is_dir(follow_symlinks=False):
                if child.name != ".git":
                    stack.append(Path(child.path))
                continue
            if not child.is_file(follow_symlinks=False):
                continue
            st = child.stat(follow_symlinks=False)
            entries.append(Entry(rel, f"{st.st_size}:{st.st_mtime_ns}", _read_file(Path(child.path), root),
                                 size=st.st_size))
    return Listing(entries)


def _never() -> bytes:
    raise Skip("not read")


# ----------------------------------------------------------------------------- git

LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def _git_location(source: Source) -> str:
    url = source.url.strip()
    if url.startswith("file://"):
        return str(allowed_local_path(url[len("file://"):]))
    if url.startswith("/"):
        return str(allowed_local_path(url))
    if url.startswith(("https://", "http://", "ssh://")):
        check_url_host(url)
        return url
    raise ListingError("a Git source's url is a local path, or a file://, https:// or ssh:// URL")


def git_cache_path(source: Source) -> Path:
    return Path(settings.BULKHEAD_SOURCE_CACHE_DIR) / f"t{source.tenant_id}-s{source.pk}.git"


def list_git(source: Source, credentials: dict | None = None) -> Listing:
    from dulwich.client import default_urllib3_manager, get_transport_and_path
    from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
    from dulwich.objects import Commit, Tag
    from dulwich.repo import Repo

    location = _git_location(source)
    cache = git_cache_path(source)
    cache.parent.mkdir(parents=True, exist_ok=True)
    repo = Repo(str(cache)) if (cache / "objects").exists() else Repo.init_bare(str(cache), mkdir=True)
    try:
        extra = {}
        if location.startswith(("https://", "http://")):  # a timeout on every request of the fetch
            extra["pool_manager"] = default_urllib3_manager(None, timeout=settings.BULKHEAD_SOURCE_TIMEOUT_SECONDS)
        client, path = get_transport_and_path(
            location, username=(credentials or {}).get("username") or None,
            password=(credentials or {}).get("password") or None, **extra,
        )
        result = client.fetch(path, repo)
    except (GitProtocolError, HangupException, NotGitRepository, OSError) as exc:
        raise ListingError(f"could not fetch the repository: {type(exc).__name__}") from None
    except Exception as exc:  # noqa: BLE001 - dulwich raises many kinds; none may leak a credential
        raise ListingError(f"could not fetch the repository: {type(exc).__name__}") from None
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
    for item in repo.object_store.iter_tree_contents(obj.tree):
        rel = item.path.decode("utf-8", "surrogateescape")
        if stat.S_ISDIR(item.mode) or item.mode == 0o160000:
            entries.append(Entry(rel, "", _never, skip="a submodule (not followed)"))
            continue
        if stat.S_ISLNK(item.mode):
            entries.append(Entry(rel, "", _never, skip="a symbolic link (not followed)"))
            continue
        entries.append(Entry(rel, item.sha.decode(), _blob_reader(repo, item.sha)))
    return Listing(entries, revision=obj.id.decode())


def _blob_reader(repo, sha: bytes) -> Callable[[], bytes]:
    def read() -> bytes:
        data = repo[sha].data
        if data.startswith(LFS_POINTER):
            raise Skip("a Git LFS pointer (the content is not in the repository)")
        return data

    return read


def list_source(source: Source, *, credentials: dict | None = None, stored: dict | None = None) -> Listing:
    """The listing of ``source`` (``stored``: path -> (etag, last_modified, raw) of a website's pages, for
    conditional requests)."""
    if source.kind == Source.Kind.FOLDER:
        return list_folder(source)
    if source.kind == Source.Kind.GIT:
        return list_git(source, credentials)
    if source.kind == Source.Kind.WEB:
        from sources.web import crawl

        return crawl(source, stored=stored or {})
    raise ListingError(f"unknown kind {source.kind!r}")
