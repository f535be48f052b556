"""Per-tenant vector indexes: a partial HNSW index for every large tenant.

Why: one HNSW index shared by all tenants serves a member who reads a small part of it
badly. A filtered HNSW scan has to walk past every other tenant's neighbours, so recall
drops (or the iterative scan runs long), and the exact fallback has to scan every row the
member may read. A partial index ``WHERE tenant_id = '<tenant>'`` holds only that
tenant's rows: the same member now reads a large share of a small index, where a
``relaxed_order`` iterative scan is fast and accurate (docs/benchmarks.md).

How it is used: :func:`kb.retrieval.vector_candidates` asks :func:`tenant_index_rows` whether
the member's tenant has a valid index and sizes its plan choice on that index instead of
the shared one. The planner picks the partial index by itself: Django binds parameters on
the client, so the tenant id is a literal in the statement and the index predicate is
provably implied; it is also far cheaper than the shared index. The access filter stays in
the same WHERE clause, so a partial index changes speed, never what may be returned.

Lifecycle: :func:`tenant_indexes_sync` (a Celery beat task, and ``kb_index tenant-indexes
sync``) builds an index for every tenant with at least ``BULKHEAD_TENANT_INDEX_MIN_ROWS``
chunks, concurrently (writes go on during the build), unless the tenant holds most of the
table anyway (``BULKHEAD_TENANT_INDEX_MAX_SHARE``, 0.5: a single-tenant install keeps one
graph), and drops the indexes of tenants that were deleted or shrank below half that. An interrupted concurrent build leaves an invalid
index, which search ignores and the next sync rebuilds. The catalogue (``pg_index``) is the
only record: there is nothing to drift.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, connections

from accounts.models import Tenant
from accounts.tenancy import owner_alias

logger = logging.getLogger(__name__)

PREFIX = "chunk_hnsw_t_"
MIN_ROWS = getattr(settings, "BULKHEAD_TENANT_INDEX_MIN_ROWS", 10_000)
# A tenant holding more than this share of all chunks is served as well by the shared index
# (its members' readable share of it is at least half what it would be of their own), so it
# gets no second copy of the graph to maintain on every insert.
MAX_SHARE = getattr(settings, "BULKHEAD_TENANT_INDEX_MAX_SHARE", 0.5)
BUILD_MEMORY = getattr(settings, "BULKHEAD_TENANT_INDEX_BUILD_MEMORY", "512MB")
_SYNC_LOCK = 0x6B625F746E6978  # pg advisory lock key: one sync at a time across workers


@dataclass(frozen=True)
class TenantIndex:
    tenant_id: int
    name: str
    valid: bool
    rows: int  # the planner's count of index entries (set by the build and by VACUUM/ANALYZE)
    size_bytes: int


def index_name(tenant_id: int) -> str:
    return f"{PREFIX}{int(tenant_id)}"


def _hnsw_parameters() -> tuple[int, int]:
    from kb.models import Chunk

    shared = next(i for i in Chunk._meta.indexes if i.name == "chunk_embedding_hnsw")
    return int(shared.m), int(shared.ef_construction)


def _owner():
    """The owner's connection: building and dropping indexes is DDL, and sizing tenants counts
    every tenant's chunks -- both past the tenant wall, which only the owner path goes
    (``accounts.tenancy``). The catalogue reads below work on either connection."""
    return connections[owner_alias()]


# ----------------------------------------------------------------------------- selectors


def tenant_indexes() -> list[TenantIndex]:
    """Every per-tenant vector index on the chunk table, valid or not, from the catalogue."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT c.relname, i.indisvalid AND i.indisready, greatest(c.reltuples, 0)::bigint,
                   pg_relation_size(c.oid)
            FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = 'kb_chunk'::regclass AND c.relname ~ %s
            ORDER BY c.relname
            """,
            [f"^{PREFIX}[0-9]+$"],
        )
        rows = cursor.fetchall()
    return [
        TenantIndex(tenant_id=int(name.removeprefix(PREFIX)), name=name, valid=bool(valid), rows=int(n),
                    size_bytes=int(size))
        for name, valid, n, size in rows
    ]


def tenant_index_rows(tenant_id: int) -> int | None:
    """Rows in the tenant's valid vector index, or None when it has none (an invalid leftover
    of an interrupted build counts as none). Search caches the answer briefly."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT greatest(c.reltuples, 0)::bigint FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
            WHERE i.indrelid = 'kb_chunk'::regclass AND c.relname = %s AND i.indisvalid AND i.indisready
            """,
            [index_name(tenant_id)],
        )
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def tenant_chunk_counts() -> dict[int, int]:
    """Chunks per tenant, every tenant: through the owner path (past the tenant wall)."""
    with _owner().cursor() as cursor:
        cursor.execute("SELECT tenant_id, count(*) FROM kb_chunk GROUP BY tenant_id")
        return {tenant_id: int(n) for tenant_id, n in cursor.fetchall()}


# ----------------------------------------------------------------------------- services


@contextmanager
def _exclusive(*, wait: bool) -> Iterator[bool]:
    """One builder at a time across workers and commands (a session-level advisory lock,
    re-entrant within a session); yields False when ``wait`` is off and another holds it."""
    with _owner().cursor() as cursor:
        cursor.execute(f"SELECT {'pg_advisory_lock' if wait else 'pg_try_advisory_lock'}(%s)", [_SYNC_LOCK])
        got = wait or bool(cursor.fetchone()[0])
    try:
        yield got
    finally:
        if got:
            with _owner().cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s)", [_SYNC_LOCK])


def tenant_index_build(*, tenant_id: int, concurrently: bool | None = None) -> TenantIndex:
    """Build the tenant's partial HNSW index (same m / ef_construction as the shared one).

    ``concurrently`` keeps the table writable during the build; it cannot run inside a
    transaction, so by default it is used whenever the caller is not in one. An invalid
    leftover of an interrupted build is dropped first; a valid index is left as it is.
    """
    tenant_id = int(tenant_id)
    if concurrently is None:
        concurrently = not _owner().in_atomic_block
    if concurrently and _owner().in_atomic_block:
        raise RuntimeError("a concurrent index build cannot run inside a transaction")
    with _exclusive(wait=True):
        return _build(tenant_id, concurrently=concurrently)


def _build(tenant_id: int, *, concurrently: bool) -> TenantIndex:
    name = index_name(tenant_id)
    existing = {index.name: index for index in tenant_indexes()}.get(name)
    if existing is not None and existing.valid:
        return existing
    if existing is not None:  # an interrupted build's leftover (the lock rules out a running one)
        _drop(name, concurrently=concurrently)
    m, ef_construction = _hnsw_parameters()
    with _owner().cursor() as cursor:
        cursor.execute("SELECT set_config('maintenance_work_mem', %s, false)", [BUILD_MEMORY])
        try:
            # DDL takes no parameters: the tenant id is formatted as an int (so is the name).
            cursor.execute(
                f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {name} ON kb_chunk "
                f"USING hnsw (embedding vector_cosine_ops) WITH (m = {m}, ef_construction = {ef_construction}) "
                f"WHERE tenant_id = {int(tenant_id)}"
            )
        finally:
            cursor.execute("RESET maintenance_work_mem")
    built = {index.name: index for index in tenant_indexes()}[name]
    logger.info("tenant vector index %s built (%d rows, %d bytes)", name, built.rows, built.size_bytes)
    return built


def tenant_index_drop(*, tenant_id: int, concurrently: bool | None = None) -> bool:
    """Drop the tenant's vector index; False when it had none."""
    name = index_name(tenant_id)
    if name not in {index.name for index in tenant_indexes()}:
        return False
    if concurrently is None:
        concurrently = not _owner().in_atomic_block
    _drop(name, concurrently=concurrently)
    return True


def _drop(name: str, *, concurrently: bool) -> None:
    with _owner().cursor() as cursor:
        cursor.execute(f"DROP INDEX {'CONCURRENTLY ' if concurrently else ''}IF EXISTS {name}")


@dataclass
class SyncReport:
    built: list[tuple[int, int, float]]  # tenant, rows, seconds
    dropped: list[int]
    skipped: bool = False  # another sync held the lock


def tenant_indexes_sync(
    *, min_rows: int | None = None, max_share: float | None = None, concurrently: bool | None = None,
    log: Callable[[str], None] | None = None,
) -> SyncReport:
    """Make the set of per-tenant indexes match the tenants' sizes (see the module docstring).

    A tenant gets an index when it has at least ``min_rows`` chunks and at most ``max_share``
    of all chunks; it loses it when deleted, below half of ``min_rows``, or above the midpoint
    between ``max_share`` and 1 (the gaps keep a tenant near a limit from flapping).
    """
    min_rows = MIN_ROWS if min_rows is None else min_rows
    max_share = MAX_SHARE if max_share is None else max_share
    if concurrently is None:
        concurrently = not _owner().in_atomic_block
    report = SyncReport(built=[], dropped=[])
    with _exclusive(wait=False) as got:
        if not got:
            report.skipped = True
            return report
        _sync(report, min_rows=min_rows, max_share=max_share, concurrently=concurrently, log=log)
    return report


def _sync(
    report: SyncReport, *, min_rows: int, max_share: float, concurrently: bool, log: Callable[[str], None] | None
) -> None:
    counts = tenant_chunk_counts()
    total = max(1, sum(counts.values()))
    tenants = set(Tenant.objects.values_list("id", flat=True))
    indexes = {index.tenant_id: index for index in tenant_indexes()}
    for tenant_id, index in indexes.items():
        rows = counts.get(tenant_id, 0)
        if tenant_id not in tenants or rows < min_rows // 2 or rows / total > (1 + max_share) / 2:
            _drop(index.name, concurrently=concurrently)
            report.dropped.append(tenant_id)
            if log:
                log(f"dropped {index.name} ({rows} chunks)")
    for tenant_id, rows in sorted(counts.items(), key=lambda item: -item[1]):
        current = indexes.get(tenant_id)
        if rows < min_rows or rows / total > max_share or tenant_id not in tenants or (current and current.valid):
            continue
        started = time.monotonic()
        if log:
            log(f"building {index_name(tenant_id)} ({rows} chunks)")
        _build(tenant_id, concurrently=concurrently)
        report.built.append((tenant_id, rows, time.monotonic() - started))
