"""Helpers for the sources tests: Git repositories and folder trees made on the spot, and waiting
for a sync and the ingestion it started."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from dulwich import porcelain
from dulwich.repo import Repo

from accounts.models import Tenant
from kb.models import IngestionJob
from sources.models import Source, SourceSync
from sources.services import JOB_STATS_KEY, sync_run
from tests.bounds import JOB_WAIT
from tests.conftest import SOURCE_ROOT


def tenant_folder(tenant: Tenant | str) -> Path:
    """The tenant's own folder below the tests' source root, the only place its sources may read (made if new)."""
    folder = SOURCE_ROOT / (tenant if isinstance(tenant, str) else tenant.slug)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def new_folder(tenant: Tenant | str, prefix: str) -> Path:
    """A new folder in ``tenant``'s own folder (a tenant or its slug)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=tenant_folder(tenant)))


def write(root: Path, files: dict[str, str | bytes | None]) -> None:
    """Write (or, for None, remove) files below ``root``."""
    for rel, content in files.items():
        path = root / rel
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def deep_folders(base: Path, names: list[str]) -> None:
    """Folders ``names`` nested below ``base``, made one by one relative to the last (past PATH_MAX too)."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            try:
                os.mkdir(name, dir_fd=fd)
            except FileExistsError:
                pass
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def git_commit(root: Path, files: dict[str, str | bytes | None], message: str = "change") -> bytes:
    """Change ``files`` in the repository at ``root`` (made if new) and commit them all."""
    if not (root / ".git").exists():
        porcelain.init(str(root))
    write(root, files)
    removed = [rel for rel, content in files.items() if content is None]
    if removed:
        porcelain.remove(str(root), paths=[str(root / r) for r in removed], cached=True)
    added = [str(root / rel) for rel, content in files.items() if content is not None]
    if added:
        porcelain.add(str(root), paths=added)
    return porcelain.commit(str(root), message=message.encode(), author=b"T <t@example.com>",
                            committer=b"T <t@example.com>")


def git_reset_branch(root: Path, commit: bytes) -> None:
    """Point the branch back at ``commit`` and the work tree with it (the start of a force-push)."""
    repo = Repo(str(root))
    porcelain.reset(repo, "hard", commit)


def wait_for_sync(sync_id, timeout: float = JOB_WAIT) -> SourceSync:
    """Until the sync has ended and every ingestion job it started has too."""
    deadline = time.monotonic() + timeout
    while True:
        sync = SourceSync.objects.get(pk=sync_id)
        if sync.status in ("succeeded", "failed"):
            jobs = IngestionJob.objects.filter(**{f"stats__{JOB_STATS_KEY}": str(sync_id)})
            if not jobs.filter(status__in=("queued", "running")).exists():
                return sync
        if time.monotonic() > deadline:
            raise AssertionError(f"sync not finished after {timeout}s: {sync.status} {sync.stage} {sync.done}/{sync.total}")
        time.sleep(0.2)


def sync_now(actor, source) -> SourceSync:
    """Start a sync of ``source`` as ``actor`` and wait for it and the ingestion it started (:func:`wait_for_sync`)."""
    from sources.services import sync_start

    sync, _ = sync_start(actor=actor, source=source)
    return wait_for_sync(sync.pk)


def keyword_found(client, word: str) -> bool:
    """Whether ``word`` is anywhere in a keyword search's answer for ``client`` (an API client of a member)."""
    answer = client.post("/api/v1/search/", {"query": word, "mode": "keyword", "top_k": 20}, format="json")
    assert answer.status_code == 200, answer.content
    return word in answer.content.decode()


def synced_git_mirror(slug: str, files: dict[str, str]):
    """A tenant ``slug`` with an internal and a restricted admin, a local Git repository of ``files`` (``board/**``
    confidential, the rest internal) as a source synced once through its mirror (fetched anew): (tenant, internal
    admin, top admin, repository folder, commit, source, mirror path)."""
    import shutil

    from accounts.services import membership_create, tenant_create
    from sources.listing import git_cache_path
    from sources.services import source_create, sync_start

    tenant = tenant_create(slug=slug, name=slug)
    domain = slug.removeprefix("src-")
    internal = membership_create(tenant=tenant, email=f"internal@{domain}.example", role="admin", clearance="internal")
    top = membership_create(tenant=tenant, email=f"top@{domain}.example", role="admin", clearance="restricted")
    root = new_folder(tenant, f"{domain}-")
    commit = git_commit(root, files)
    source = source_create(actor=top, tenant=tenant, kind="git", name="mirror", url=str(root),
                           access_level="internal",
                           access_map=[{"path": "board/**", "access_level": "confidential", "groups": []}])
    cache = git_cache_path(source)
    shutil.rmtree(cache, ignore_errors=True)  # a mirror left by a run before (the same ids): fetched anew
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.added) == ("succeeded", len(files)), (sync.error, sync.errors, sync.skips)
    return tenant, internal, top, root, commit, source, cache


def sync_inline(source: Source, expect: str = "succeeded") -> SourceSync:
    """A sync of ``source`` run in this process (not through a worker), checked to have ended ``expect``."""
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    sync_run(str(sync.pk))
    sync.refresh_from_db()
    assert sync.status == expect, (sync.error, sync.errors)
    return sync
