"""Writes of the audit trail: recording events, the tenant's audit settings, and expiry.

Two ways to record, on purpose:

* :func:`audit_record` -- an administrative act (an upload, a policy change, a role change, a
  token, an activation). It writes in the caller's transaction: the record commits with the act
  or not at all, and an act that cannot be recorded fails with it.
* :func:`audit_record_read` (searches, content reads, sign-ins) -- never fails and never holds up
  what it records: the insert runs in a savepoint under a short ``lock_timeout`` and
  ``statement_timeout`` (``BULKHEAD_AUDIT_READ_TIMEOUT_MS``); a database error there (a locked,
  full or broken audit table) rolls back the savepoint alone and is logged as a warning. Its
  commit does not wait for the disk (``synchronous_commit = off``). During a request these
  records are kept and written once the answer has been sent (:func:`audit_reads_deferred`,
  ``audit.middleware``), so the member never waits for them.

This module sits below ``accounts`` (docs/architecture.md): it takes the acting membership as
any object with ``pk``, ``tenant_id``, ``user_id`` and ``user`` and imports no project model.
"""

from __future__ import annotations

import contextvars
import hashlib
import hmac
import logging
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError, connection, transaction

from audit.models import Action, AuditEvent, AuditSettings

logger = logging.getLogger(__name__)

EXPIRY_BATCH = 10_000


def query_hash(*, tenant_id: int | None, query: str) -> str:
    """A search text's fingerprint: HMAC-SHA256 keyed with the server's secret and the tenant, so
    equal queries of a tenant match but a short query cannot be confirmed by hashing guesses."""
    key = settings.SECRET_KEY.encode()
    return hmac.new(key, f"audit-query\x00{tenant_id}\x00{query}".encode(), hashlib.sha256).hexdigest()


_channel: contextvars.ContextVar[str | None] = contextvars.ContextVar("bulkhead_audit_channel", default=None)


@contextmanager
def audit_channel(name: str) -> Iterator[None]:
    """Every record made inside is marked with the way in it came by (``details["via"]``, e.g.
    "mcp"), unless the record names one itself: the MCP server calls the services and selectors the
    API calls, and this tells its records apart without a parameter through each of them."""
    token = _channel.set(name)
    try:
        yield
    finally:
        _channel.reset(token)


_operator: contextvars.ContextVar[object | None] = contextvars.ContextVar("bulkhead_audit_operator", default=None)


@contextmanager
def audit_operator(user) -> Iterator[None]:
    """Every record made inside without an acting membership names ``user`` (an account, with ``pk`` and ``email``)
    as its actor: the installation's operator, who has no membership in the tenants the records go to -- the Django
    admin's requests (``bulkhead.admin_site``). Such a record has no ``membership_id``, the operator's account in
    ``user_id`` and ``actor_email``, and ``details["operator"]`` true (a failed single sign-on also has an e-mail
    and no membership: the mark tells them apart). Found attacking identity, 2026-12-04: the admin's records named
    no one ("Bulkhead itself"), so a tenant could not tell which operator deactivated a member or revoked a token."""
    token = _operator.set(user)
    try:
        yield
    finally:
        _operator.reset(token)


def _event(
    *, action: str, actor=None, tenant_id: int | None = None, target_type: str = "", target_id: object = "",
    document_ids: Iterable[uuid.UUID] = (), details: dict | None = None, **fields,
) -> AuditEvent:
    operator = _operator.get()
    if actor is not None:
        tenant_id = actor.tenant_id
        fields.update(membership_id=actor.pk, user_id=actor.user_id, actor_email=actor.user.email)
    elif operator is not None and not fields.get("actor_email"):
        fields.update(user_id=operator.pk, actor_email=operator.email)
        details = {"operator": True, **(details or {})}
    channel = _channel.get()
    if channel is not None:
        details = {"via": channel, **(details or {})}
    return AuditEvent(
        action=Action(action), tenant_id=tenant_id, target_type=target_type,
        target_id="" if target_id is None else str(target_id)[:64],
        document_ids=sorted(set(document_ids), key=str), details=details or {}, **fields,
    )


def audit_record(
    *, action: str, actor=None, tenant_id: int | None = None, target_type: str = "", target_id: object = "",
    document_ids: Iterable[uuid.UUID] = (), details: dict | None = None,
) -> AuditEvent:
    """Record an administrative act by ``actor`` (a membership; None: an internal caller, then
    ``tenant_id`` names the tenant) in the caller's transaction. ``details`` holds what the act
    changed, as ``{"before": ..., "after": ...}`` where there is a before."""
    event = _event(action=action, actor=actor, tenant_id=tenant_id, target_type=target_type, target_id=target_id,
                   document_ids=document_ids, details=details)
    event.save(force_insert=True)
    return event


# Local to the insert's transaction: a short wait for locks and for the statement, and a commit
# that does not wait for the WAL to reach the disk (that fsync cost a search 20-40 ms on a busy
# machine; a crash of PostgreSQL may lose the last fraction of a second of read records, while
# acts, recorded by audit_record, stay synchronous).
# The read record's settings, for its own statement or savepoint only: short waits, no wait for the
# disk, and the record's tenant (the wall admits a row of the tenant the connection acts for, or of
# none; a record written after the answer comes when the request has already cleared its tenant).
_READ_SETTINGS = ("SELECT set_config('lock_timeout', %s, true), set_config('statement_timeout', %s, true),"
                  " set_config('synchronous_commit', %s, true), set_config('app.tenant_id', %s, true)")


def _read_settings(event: AuditEvent, timeout: str) -> list[str]:
    return [timeout, timeout, "off", "" if event.tenant_id is None else str(int(event.tenant_id))]


def _insert_in_one_round_trip(event: AuditEvent, timeout: str) -> None:
    """Outside a transaction: the settings and the INSERT as one simple query, which PostgreSQL
    runs as one implicit transaction -- one round trip, and nothing left behind if it fails."""
    fields = [f for f in AuditEvent._meta.concrete_fields if not f.primary_key and f.name != "created_at"]
    columns = ", ".join(connection.ops.quote_name(f.column) for f in fields)
    values = [f.get_db_prep_save(getattr(event, f.attname), connection) for f in fields]
    placeholders = ", ".join(["%s"] * len(fields))
    with connection.cursor() as cursor:
        cursor.execute(f"{_READ_SETTINGS}; INSERT INTO audit_event ({columns}) VALUES ({placeholders})",
                       [*_read_settings(event, timeout), *values])


def _insert_in_a_savepoint(event: AuditEvent, timeout: str) -> None:
    """Inside the caller's transaction: a savepoint (a failure rolls back only the record), and the
    caller's settings put back after it."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('lock_timeout'), current_setting('statement_timeout'),"
            " current_setting('synchronous_commit'), current_setting('app.tenant_id', true)"
        )
        before = cursor.fetchone()
        cursor.execute(_READ_SETTINGS, _read_settings(event, timeout))
        event.save(force_insert=True)
        cursor.execute(_READ_SETTINGS, [*before[:3], before[3] or ""])  # the caller's, put back


def _write_read_record(event: AuditEvent, timeout: str) -> bool:
    try:
        if connection.get_autocommit() and not connection.in_atomic_block:
            _insert_in_one_round_trip(event, timeout)
        else:
            _insert_in_a_savepoint(event, timeout)
    except DatabaseError as exc:
        logger.warning("audit: the %s record of tenant %s was not written (%s: %s)", event.action, event.tenant_id,
                       type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else "")
        return False
    return True


# The read records of the request this thread is answering, kept until its answer has been sent
# (None: not in a request -- a command, a task, a benchmark -- so written at once).
_deferred: contextvars.ContextVar[list[tuple[AuditEvent, str] | Callable[[], None]] | None] = contextvars.ContextVar(
    "bulkhead_audit_deferred", default=None)


def audit_reads_defer() -> None:
    """From here, keep this thread's read records instead of writing them, until
    :func:`audit_reads_flush` (``audit.middleware`` calls both around each request). Records still
    kept from before (a request whose answer was never closed) are written first."""
    audit_reads_flush()
    _deferred.set([])


def audit_reads_flush() -> int:
    """Write the kept read records (and do the work kept by :func:`audit_after_answer`, in order), and stop
    keeping them; how many records were written from the list itself."""
    pending = _deferred.get()
    _deferred.set(None)
    written = 0
    for item in pending or ():
        if callable(item):
            _run_after_answer(item)
        else:
            written += _write_read_record(*item)
    return written


def audit_after_answer(work: Callable[[], None]) -> None:
    """Do ``work`` -- the lookups and records of an answer that must not take longer for one input than for
    another (a failed sign-in of a known address and of an unknown one: ``accounts.services.sign_in_record``)
    -- after this request's answer has been sent, with its read records; outside a request, at once. Best
    effort, as a read record: an error is logged, never raised."""
    pending = _deferred.get()
    if pending is not None:
        pending.append(work)
    else:
        _run_after_answer(work)


def _run_after_answer(work: Callable[[], None]) -> None:
    try:
        work()
    except Exception:  # noqa: BLE001 -- best effort, as every read record; the answer is gone already
        logger.exception("audit: work kept for after the answer failed")


@contextmanager
def audit_reads_deferred() -> Iterator[None]:
    """The block's read records are written when it ends (as a request's are after its answer)."""
    audit_reads_defer()
    try:
        yield
    finally:
        audit_reads_flush()


def audit_record_read(
    *, action: str, actor=None, tenant_id: int | None = None, target_type: str = "", target_id: object = "",
    document_ids: Iterable[uuid.UUID] = (), details: dict | None = None, **fields,
) -> bool:
    """Record a read (a search, a document's content) or a sign-in without ever failing or waiting
    long for it: True when written (or kept, in a request, to be written after its answer), False
    (and a logged warning) when the database refused or was too slow. ``fields``: the search's own
    columns (see :class:`audit.models.AuditEvent`)."""
    event = _event(action=action, actor=actor, tenant_id=tenant_id, target_type=target_type, target_id=target_id,
                   document_ids=document_ids, details=details, **fields)
    timeout = f"{int(settings.BULKHEAD_AUDIT_READ_TIMEOUT_MS)}ms"
    pending = _deferred.get()
    if pending is not None:
        pending.append((event, timeout))
        return True
    return _write_read_record(event, timeout)


def audit_record_search(
    *, member, query: str, mode: str, index_version_id: uuid.UUID | None, chunk_ids: Iterable[uuid.UUID],
    section_ids: Iterable[uuid.UUID], document_ids: Iterable[uuid.UUID], latency_ms: float,
    searched_as=None,
) -> bool:
    """A search by ``member`` (``searched_as``: the member whose eyes an admin searched with, in the
    console), best effort (:func:`audit_record_read`). The text is kept unless the tenant keeps
    only its hash (then the database blanks it); the hash is always kept. The plan is not kept (the
    column stays blank): it is chosen against the shared index, every tenant's chunks, and the trail is
    the tenant's to read."""
    details = {"as_member": searched_as.pk} if searched_as is not None else {}
    return audit_record_read(
        action=Action.SEARCH, actor=member, document_ids=document_ids, details=details,
        query_text=query, query_hash=query_hash(tenant_id=member.tenant_id, query=query), mode=mode[:16],
        index_version_id=index_version_id, chunk_ids=list(chunk_ids),
        section_ids=list(dict.fromkeys(section_ids)), latency_ms=round(latency_ms, 3),
    )


# ----------------------------------------------------------------------------- settings


def audit_settings_get(*, tenant_id: int) -> AuditSettings:
    """The tenant's audit settings (the defaults when it never changed them; nothing is written)."""
    return AuditSettings.objects.filter(tenant_id=tenant_id).first() or AuditSettings(tenant_id=tenant_id)


@transaction.atomic
def audit_settings_update(
    *, actor, retention_days: int | None = None, hash_queries: bool | None = None
) -> AuditSettings:
    """Change the acting admin's tenant's retention or query hashing; recorded with before and after.
    Bounds are the database's (``audit_settings_retention_bounds``) and checked by the caller's
    serializer or form."""
    current = AuditSettings.objects.select_for_update().filter(tenant_id=actor.tenant_id).first()
    current = current or AuditSettings(tenant_id=actor.tenant_id)
    before = {"retention_days": current.retention_days, "hash_queries": current.hash_queries}
    if retention_days is not None:
        current.retention_days = retention_days
    if hash_queries is not None:
        current.hash_queries = hash_queries
    current.save()
    after = {"retention_days": current.retention_days, "hash_queries": current.hash_queries}
    if after != before:
        audit_record(action=Action.AUDIT_SETTINGS, actor=actor, target_type="tenant", target_id=actor.tenant_id,
                     details={"before": before, "after": after})
    return current


# ----------------------------------------------------------------------------- expiry


def audit_expire(*, batch: int = EXPIRY_BATCH) -> int:
    """Delete the records older than their tenant's retention, ``batch`` at a time, each batch its
    own transaction; returns how many. The database's ``audit_expire`` function is the only path
    the append-only trigger lets a DELETE through."""
    removed = 0
    while True:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT audit_expire(%s)", [batch])
            count = cursor.fetchone()[0]
        removed += count
        if count < batch:
            return removed
