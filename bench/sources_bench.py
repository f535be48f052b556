"""Benchmark of a Git source (``kb_bench sources DOCS_DIR``, docs/benchmarks.md): a repository made from a
real documentation tree, its first sync, a one-file-changed re-sync and an unchanged one, each timed by
stage -- listing (fetch and tree), items (compare, read, store, send), deletions -- and the ingestion the
sync started, through a private worker, until its last job ends."""

from __future__ import annotations

import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from django.conf import settings
from dulwich import porcelain

from accounts.services import membership_create, tenant_create
from bench.private_worker import private_worker, routed_to
from kb.models import IngestionJob
from sources.models import SourceSync
from sources.services import JOB_STATS_KEY, source_create, sync_run

TEXT_SUFFIXES = {".txt", ".md", ".rst", ".html"}


def _commit(repo: Path, message: str, paths: list[str]) -> None:
    porcelain.add(str(repo), paths=paths)
    porcelain.commit(str(repo), message=message.encode(), author=b"B <b@example.com>", committer=b"B <b@example.com>")


def _sync(source, ingest: bool = True) -> tuple[SourceSync, float, float]:
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    started = time.perf_counter()
    sync_run(str(sync.pk))
    sync_seconds = time.perf_counter() - started
    while ingest and IngestionJob.objects.filter(**{f"stats__{JOB_STATS_KEY}": str(sync.pk)},
                                      status__in=("queued", "running")).exists():
        time.sleep(0.2)
    total = time.perf_counter() - started
    return SourceSync.objects.get(pk=sync.pk), sync_seconds, total - sync_seconds


def run(docs: str, *, out: Callable[[str], None], ingest: bool = True, ingest_changes_only: bool = False) -> dict:
    """``ingest=False``: the sync's own stages only; its jobs go to a queue nobody serves (and stay queued).
    ``ingest_changes_only``: the first sync's jobs go nowhere, the re-syncs' go through a private worker (the
    one-file-changed re-sync's ingestion measured on a machine where the whole first one would take hours)."""
    root = Path(tempfile.mkdtemp(prefix="bench-sources-"))
    slug = f"bench-sources-{uuid.uuid4().hex[:8]}"
    repo = root / slug / "docs"  # below the tenant's own folder, the only one its sources read
    files = [p for p in Path(docs).rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES]
    for path in files:
        target = repo / path.relative_to(docs)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    porcelain.init(str(repo))
    _commit(repo, "docs", [str(p) for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts])
    megabytes = sum(p.stat().st_size for p in files) / 1e6
    out(f"repository: {len(files)} files, {megabytes:.1f} MB")
    settings.BULKHEAD_SOURCE_ROOTS = [str(root)]
    settings.BULKHEAD_SOURCE_CACHE_DIR = str(root / "cache")
    tenant = tenant_create(slug=slug, name="sources benchmark")
    admin = membership_create(tenant=tenant, email="bench@example.com", role="admin", clearance="restricted")
    source = source_create(actor=admin, tenant=tenant, kind="git", name="docs", url=str(repo))
    rows = {}
    nobody = f"nobody-{uuid.uuid4().hex[:8]}"
    worker = private_worker("bench-sources", timeout=600) if ingest else routed_to(nobody)
    if ingest_changes_only:
        with routed_to(nobody):
            rows["first sync"] = _sync(source, False)
    with worker:
        if not ingest_changes_only:
            rows["first sync"] = _sync(source, ingest)
        texts = sorted(repo.rglob("*.txt"), key=lambda p: (p.stat().st_size, str(p)))
        changed = texts[len(texts) // 2]  # a page of the median size
        out(f"the one file changed: {changed.relative_to(repo)} ({changed.stat().st_size} bytes)")
        changed.write_text(changed.read_text() + "\n\nA sentence added for the benchmark.\n")
        _commit(repo, "one file", [str(changed)])
        rows["one file changed"] = _sync(source, ingest)
        rows["unchanged"] = _sync(source, ingest)
    result = {}
    for name, (sync, sync_s, ingest_s) in rows.items():
        result[name] = {"added": sync.added, "changed": sync.changed, "unchanged": sync.unchanged,
                        "skipped": sync.skipped, "failed": sync.failed, **sync.timings,
                        "sync_seconds": round(sync_s, 2), "ingestion_seconds": round(ingest_s, 2)}
        out(f"{name}: {result[name]}")
    shutil.rmtree(root, ignore_errors=True)
    return result
