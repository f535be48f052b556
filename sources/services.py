"""Writes for sources: setting one up, changing it, starting a sync and running it (docs/sources.md).

A sync is incremental and idempotent. It lists the source (``sources.listing``), compares each path's
cheap version and then its content hash with what the last sync stored (``SourceItem``), and hands
what is new or changed to the normal ingestion pipeline (``kb.services.document_store_for_source``;
the jobs go on the bulk lane, with the pipeline's budgets). A path that disappeared is deleted --
document, sections and chunks, out of search -- in the transaction that records it. Content that
reappears at a new path (a rename) keeps its document, its id and its API policy overrides. Each
item is its own transaction, with the sync's counts: a worker killed mid-sync leaves every item
either done or not, and the sync, sent again, finds the done ones unchanged. A listing that fails
or is incomplete deletes nothing.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import PurePosixPath

from celery import current_app
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from accounts.errors import ApplicationError, Conflict, NotFound, PermissionRefused
from accounts.models import Group, Membership, Role, Tenant
from accounts.policy import AccessLevel, policy_implies, policy_meet
from accounts.services import groups_by_slugs, parse_level
from accounts.tenancy import owner_path, tenant_activate
from audit.models import Action
from audit.services import audit_record
from kb.changed import shown_fields, shown_follow
from kb.jobs import BULK, enqueue_after_commit
from kb.models import Chunk, Document, Section
from kb.services import CONTENT_TITLE, SOURCE_ID, SOURCE_PATH, Upload, document_delete, document_store_for_source
from kb.titles import document_title_screen, source_flagging
from sources import access
from sources.addresses import credential_origin
from sources.crypto import CredentialsError, credentials_decrypt, credentials_encrypt
from sources.entries import Entry, Listing, ListingError, OutOfTime, Skip, content_hash
from sources.listing import allowed_local_path, git_location, list_source
from sources.models import Source, SourceDetached, SourceItem, SourceSync

logger = logging.getLogger(__name__)

SYNC_TASK = "sources.tasks.sync_source"
RESCREEN_TASK = "pipeline.tasks.rescreen_chunks"  # chunks marked stale are screened again (a renamed source)
UNFINISHED = (SourceSync.Status.QUEUED, SourceSync.Status.RUNNING)
MAX_LISTED_ERRORS = 500  # errors and skips kept per sync (the counts count them all)
JOB_STATS_KEY = "source_sync"
# A database error while syncing an item: not that item's failure (the connection may be unusable) -- it ends the
# sync (:func:`sync_run`), or, the database gone, the task's retry resumes it (``sources.tasks``).
DATABASE_GONE = (OperationalError, InterfaceError)
# What an admin reads of an error no rule of the sync foresaw (a Git mirror's corrupt object, a library's bug): none
# of its text -- which may name a server's path, a host, another tenant's folder -- only that it happened; the
# server's log has it whole. The sync ends (no item is left "running"), and the next one may start.
UNEXPECTED_LISTING = ("the listing failed on an unexpected error (the server's log has its details); nothing was "
                      "synced or deleted; sync again")
UNEXPECTED_ITEM = ("not synced: an unexpected error (the server's log has its details); nothing of it changed, "
                   "and the next sync tries it again")
# A detached path's skip (docs/sources.md, "Detached documents"): the sync and the preview leave it alone.
DETACHED = ("detached (an admin detached its document from the source; every sync leaves the path alone until an "
            "admin re-attaches it)")
UNEXPECTED_SYNC = ("the sync stopped on an unexpected error (the server's log has its details); the items done so "
                   "far stay done; sync again")


# ----------------------------------------------------------------------------- checks


def _admin_check(actor: Membership | None, tenant_id: int) -> None:
    if actor is None:
        return
    if not isinstance(actor, Membership):
        raise TypeError("the acting member is a Membership or None")
    if actor.tenant_id != tenant_id or actor.role != Role.ADMIN:
        raise PermissionRefused("only the tenant's admins manage sources")


def _check_globs(globs: Sequence[str], field: str) -> list[str]:
    out = []
    for i, glob in enumerate(globs or ()):
        try:
            access.glob_regex(glob)
        except access.GlobError as exc:
            raise ApplicationError(f"{field}[{i}]: {exc}", details={"field": field}) from None
        out.append(glob)
    return out


def _access_map_from_names(tenant: Tenant, entries: Sequence[dict]) -> list[dict]:
    """The API's access map (``[{"path", "access_level", "groups"}]``, names) as stored (ranks, ids)."""
    stored = []
    for i, entry in enumerate(entries or ()):
        unknown = set(entry) - {"path", "access_level", "groups"}
        if unknown or "path" not in entry or "access_level" not in entry:
            raise ApplicationError(f"access_map[{i}]: an entry is {{path, access_level, groups}}",
                                   details={"field": "access_map"})
        try:
            access.glob_regex(str(entry["path"]))
        except access.GlobError as exc:
            raise ApplicationError(f"access_map[{i}]: {exc}", details={"field": "access_map"}) from None
        level = parse_level(str(entry["access_level"]))
        groups = groups_by_slugs(tenant=tenant, slugs=list(entry.get("groups") or ()))
        stored.append({"path": str(entry["path"]), "level": int(level), "groups": sorted(g.id for g in groups)})
    return stored


def access_map_names(source: Source, slugs: dict[int, str] | None = None) -> list[dict]:
    """The source's access map with its groups named: by ``slugs`` (id -> slug; a list's, read once for a page of
    sources) or the tenant's groups read here."""
    if slugs is None:
        slugs = dict(Group.objects.filter(tenant_id=source.tenant_id).values_list("id", "slug"))
    return [{"path": e["path"], "access_level": AccessLevel(e["level"]).name.lower(),
             "groups": sorted(slugs.get(g, "?") for g in e.get("groups") or ())} for e in source.access_map]


def _check_location(kind: str, url: str, path: str, tenant_slug: str) -> None:
    if kind == Source.Kind.FOLDER:
        try:
            allowed_local_path(path, tenant_slug)
        except ListingError as exc:
            raise ApplicationError(str(exc), details={"field": "path"}) from None
    elif kind == Source.Kind.GIT:
        try:
            git_location(url, tenant_slug)  # the fetch's own reading of the url (Git's: a local path, a URL or user@host:path)
        except ListingError as exc:
            raise ApplicationError(str(exc), details={"field": "url"}) from None
    elif kind == Source.Kind.WEB:
        if not url.startswith(("https://", "http://")):
            raise ApplicationError("a website source's url is an http(s) URL", details={"field": "url"})
    else:
        raise ApplicationError(f"unknown kind {kind!r}; expected git, folder or web", details={"field": "kind"})


def _view(source: Source) -> dict:
    """A source as the audit trail records it (never its credentials)."""
    return {"name": source.name, "kind": source.kind, "url": source.url, "path": source.path,
            "branch": source.branch, "include": list(source.include), "exclude": list(source.exclude),
            "access_level": AccessLevel(source.access_level).name.lower(), "access_groups": list(source.access_groups),
            "access_map": source.access_map, "schedule_minutes": source.schedule_minutes,
            "has_credentials": bool(source.credentials)}


CREDENTIAL_KEYS = {"username", "password", "private_key", "known_hosts"}

EDITABLE = ("name", "url", "path", "branch", "include", "exclude", "access_level", "groups", "access_map",
            "options", "credentials", "schedule_minutes")


def _apply(source: Source, tenant: Tenant, fields: dict) -> None:
    stored_origin = credential_origin(source.url) if source.pk is not None and source.credentials else None
    for key in fields:
        if key not in EDITABLE:
            raise ApplicationError(f"unknown field {key!r}", details={"field": key})
    if "name" in fields:
        source.name = str(fields["name"]).strip()[:200]
    for key in ("url", "path", "branch"):
        if key in fields:
            setattr(source, key, str(fields[key] or "").strip())
    if "include" in fields:
        source.include = _check_globs(fields["include"], "include")
    if "exclude" in fields:
        source.exclude = _check_globs(fields["exclude"], "exclude")
    if "access_level" in fields:
        source.access_level = int(parse_level(str(fields["access_level"])))
    if "groups" in fields:
        source.access_groups = sorted(g.id for g in groups_by_slugs(tenant=tenant, slugs=fields["groups"] or ()))
    if "access_map" in fields:
        source.access_map = _access_map_from_names(tenant, fields["access_map"])
    if "options" in fields:
        options = dict(fields["options"] or {})
        unknown = set(options) - {"prefix", "rate_per_second", "max_pages"}
        if unknown:
            raise ApplicationError(f"unknown option {sorted(unknown)[0]!r}", details={"field": "options"})
        source.options = options
    if "credentials" in fields:
        credentials = {k: v for k, v in (fields["credentials"] or {}).items() if v not in (None, "")}
        if set(credentials) - CREDENTIAL_KEYS:
            raise ApplicationError("credentials are {username, password} (https) or {username, private_key, "
                                   "known_hosts} (ssh)", details={"field": "credentials"})
        key = str(credentials.get("private_key") or "")
        if key and not (key.lstrip().startswith("-----BEGIN ") and "PRIVATE KEY-----" in key):
            # The message never quotes the key.
            raise ApplicationError("credentials.private_key is not a private key (-----BEGIN ... PRIVATE KEY-----)",
                                   details={"field": "credentials"})
        source.credentials = credentials_encrypt(credentials)
    if "schedule_minutes" in fields:
        minutes = fields["schedule_minutes"]
        source.schedule_minutes = int(minutes) if minutes else None
    if not source.name:
        raise ApplicationError("a source needs a name", details={"field": "name"})
    _check_location(source.kind, source.url, source.path, tenant.slug)
    if stored_origin is not None and "credentials" not in fields and credential_origin(source.url) != stored_origin:
        # Found attacking sources: a url edited to another host took the stored password or key there with the
        # next fetch (an admin who may edit a source never sees its credentials, and may not send them elsewhere).
        raise ApplicationError(
            "the url now names another scheme, host or port than the stored credentials were given for: give the "
            "credentials again with the new url (or clear them: credentials: {})", details={"field": "credentials"})


# ----------------------------------------------------------------------------- sources


def source_unsaved(*, actor: Membership | None, tenant: Tenant, kind: str, **fields) -> Source:
    """A source checked as :func:`source_create` checks it, not saved (for a preview)."""
    _admin_check(actor, tenant.pk)
    if kind not in Source.Kind.values:
        raise ApplicationError(f"unknown kind {kind!r}; expected git, folder or web", details={"field": "kind"})
    source = Source(tenant=tenant, kind=kind)
    _apply(source, tenant, fields)
    return source


@transaction.atomic
def source_create(*, actor: Membership | None, tenant: Tenant, kind: str, **fields) -> Source:
    _admin_check(actor, tenant.pk)
    if kind not in Source.Kind.values:
        raise ApplicationError(f"unknown kind {kind!r}; expected git, folder or web", details={"field": "kind"})
    source = Source(tenant=tenant, kind=kind, created_by=actor.user if actor else None)
    _apply(source, tenant, fields)
    if Source.objects.filter(tenant=tenant, name=source.name).exists():
        raise Conflict(f"a source named {source.name!r} exists")
    source.save()
    audit_record(action=Action.SOURCE_CREATE, actor=actor, tenant_id=tenant.pk, target_type="source",
                 target_id=source.pk, details={"after": _view(source)})
    return source


@transaction.atomic
def source_update(*, actor: Membership | None, source: Source, **fields) -> Source:
    _admin_check(actor, source.tenant_id)
    source = Source.objects.select_for_update().get(pk=source.pk)
    before = _view(source)
    _apply(source, source.tenant, fields)
    if Source.objects.filter(tenant_id=source.tenant_id, name=source.name).exclude(pk=source.pk).exists():
        raise Conflict(f"a source named {source.name!r} exists")
    source.save()
    audit_record(action=Action.SOURCE_UPDATE, actor=actor, tenant_id=source.tenant_id, target_type="source",
                 target_id=source.pk, details={"before": before, "after": _view(source)})
    return source


@transaction.atomic
def source_delete(*, actor: Membership | None, source: Source) -> int:
    """Delete a source and the documents it owns (out of search in this transaction); their number."""
    _admin_check(actor, source.tenant_id)
    source = Source.objects.select_for_update().get(pk=source.pk)
    if source.syncs.filter(status__in=UNFINISHED).exists():
        raise Conflict("the source is syncing; delete it when the sync has ended")
    documents = list(Document.objects.filter(tenant_id=source.tenant_id, metadata__source_id=source.pk))
    for document in documents:
        document_delete(document=document, actor=None)
    audit_record(action=Action.SOURCE_DELETE, actor=actor, tenant_id=source.tenant_id, target_type="source",
                 target_id=source.pk, document_ids=[d.pk for d in documents], details={"before": _view(source)})
    source.delete()
    return len(documents)


@transaction.atomic
def source_document_detach(*, actor: Membership | None, source: Source, document: Document) -> Document:
    """The document stays, no longer the source's: its sync leaves it, members may change it.

    Its path is left a tombstone (:class:`SourceDetached`) that every sync skips ("detached") until an admin
    re-attaches it (:func:`source_path_reattach`). Found attacking sources (seventeenth session): detach deleted the
    path's item alone, so the next sync added the same file again as a new document at the source's policy -- an
    admin who had detached a document to narrow it had its text back, readable by all the source's policy allows.
    Refused while a sync of the source is unfinished (it read the path's item before; it would write it back)."""
    _admin_check(actor, source.tenant_id)
    source = Source.objects.select_for_update().get(pk=source.pk)  # against a sync starting (sync_start locks it)
    if source.syncs.filter(status__in=UNFINISHED).exists():
        raise Conflict("the source is syncing; detach its document when the sync has ended")
    document = Document.objects.select_for_update().get(pk=document.pk, tenant_id=source.tenant_id)
    metadata = document.metadata or {}
    if metadata.get(SOURCE_ID) != source.pk:
        raise Conflict("the document does not belong to this source")
    items = list(SourceItem.objects.filter(source=source, document=document))
    paths = {i.path: (i.access_level, i.access_groups, i.admin_default) for i in items}
    if not paths and metadata.get(SOURCE_PATH):  # no item left (never so, but fail closed): its path as recorded
        paths[str(metadata[SOURCE_PATH])] = (document.access_level, list(document.access_groups or ()), None)
    document.metadata = {k: v for k, v in metadata.items() if k not in (SOURCE_ID, SOURCE_PATH)}
    document.save(update_fields=["metadata"])
    SourceItem.objects.filter(pk__in=[i.pk for i in items]).delete()
    for path, (level, groups, kept) in paths.items():
        SourceDetached.objects.update_or_create(
            source=source, path=path, defaults=dict(tenant_id=source.tenant_id, document=document, access_level=level,
                                                    access_groups=list(groups), admin_default=kept,
                                                    detached_by=actor.user if actor else None))
    audit_record(action=Action.SOURCE_DETACH, actor=actor, tenant_id=source.tenant_id, target_type="source",
                 target_id=source.pk, document_ids=[document.pk], details={})
    return document


@transaction.atomic
def source_path_reattach(*, actor: Membership | None, source: Source, detached: SourceDetached) -> Document | None:
    """Undo a detach: the path follows the source again (docs/sources.md, "Detached documents").

    The detached document, if it still exists, is the source's again -- its item is written back with the policy the
    source gave the path when it was detached and no version or content hash, so the next sync stores the source's
    content in it (the same id; a default an admin set on it since is kept or fails the item as
    :func:`default_kept` says) or deletes it if the path is no longer listed. If it was deleted, the next sync adds
    the path as a new document. Refused while a sync of the source is unfinished, as a detach is. The document
    taken back, or None."""
    _admin_check(actor, source.tenant_id)
    source = Source.objects.select_for_update().get(pk=source.pk)
    if source.syncs.filter(status__in=UNFINISHED).exists():
        raise Conflict("the source is syncing; re-attach the path when the sync has ended")
    detached = SourceDetached.objects.select_for_update().filter(pk=detached.pk, source=source).first()
    if detached is None:
        raise NotFound("detached path not found")
    document = None
    if detached.document_id:
        document = Document.objects.select_for_update().filter(pk=detached.document_id,
                                                               tenant_id=source.tenant_id).first()
    if document is not None and (document.metadata or {}).get(SOURCE_ID) not in (None, source.pk):
        raise Conflict("the detached document belongs to another source now")  # never so; fail closed
    if SourceItem.objects.filter(source=source, path=detached.path).exists():
        raise Conflict("the path is already the source's")  # never so: a sync skips a detached path; fail closed
    if document is not None:
        if SourceItem.objects.filter(source=source, document=document).exists():
            raise Conflict("the detached document is already the source's at another path")  # never so; fail closed
        document.metadata = {**(document.metadata or {}), SOURCE_ID: source.pk, SOURCE_PATH: detached.path[:1000]}
        document.save(update_fields=["metadata"])
        SourceItem.objects.create(tenant_id=source.tenant_id, source=source, path=detached.path, document=document,
                                  version="", etag="", last_modified="", content_hash="",
                                  access_level=detached.access_level, access_groups=list(detached.access_groups),
                                  admin_default=detached.admin_default)
    audit_record(action=Action.SOURCE_REATTACH, actor=actor, tenant_id=source.tenant_id, target_type="source",
                 target_id=source.pk, document_ids=[document.pk] if document is not None else [],
                 details={"detached_at": detached.detached_at.isoformat()})
    detached.delete()
    return document


# ----------------------------------------------------------------------------- starting a sync


def _send(sync_id: str) -> None:
    try:
        current_app.send_task(SYNC_TASK, args=[sync_id])
    except Exception:  # the broker is down: the tick sends it again
        logger.exception("could not send sync %s; the sources tick will", sync_id)


@transaction.atomic
def sync_start(*, actor: Membership | None, source: Source) -> tuple[SourceSync, bool]:
    """Queue a sync of ``source`` (and send it after commit); a sync already unfinished is answered
    instead of a second one. (sync, created)."""
    _admin_check(actor, source.tenant_id)
    source = Source.objects.select_for_update().get(pk=source.pk)
    running = source.syncs.filter(status__in=UNFINISHED).first()
    if running is not None:
        return running, False
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source,
                                     created_by=actor.user if actor else None, heartbeat_at=timezone.now())
    audit_record(action=Action.SOURCE_SYNC, actor=actor, tenant_id=source.tenant_id, target_type="source",
                 target_id=source.pk, details={"sync": str(sync.pk)})
    sync_id = str(sync.pk)
    transaction.on_commit(lambda: _send(sync_id))
    return sync, True


def syncs_tick(*, now=None) -> dict:
    """Every tenant's (the owner path): re-send syncs nobody works on (oldest first), and start those a schedule makes
    due (in the sources' id order: their records too). Read in no order, both followed the rows' last update."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.BULKHEAD_SOURCE_LEASE_SECONDS)
    resent, started = [], []
    with owner_path() as owner:
        with transaction.atomic(using=owner):
            stuck = list(SourceSync.objects.filter(status__in=UNFINISHED, heartbeat_at__lt=cutoff)
                         .order_by("created_at", "id").values_list("id", flat=True))
            SourceSync.objects.filter(id__in=stuck).update(heartbeat_at=now)
        for sync_id in stuck:
            _send(str(sync_id))
            resent.append(str(sync_id))
        for source in Source.objects.filter(schedule_minutes__isnull=False).order_by("pk"):
            last = source.syncs.order_by("-created_at", "-id").first()
            if last is None or last.created_at <= now - timedelta(minutes=source.schedule_minutes):
                with transaction.atomic(using=owner):
                    if not source.syncs.filter(status__in=UNFINISHED).exists():
                        sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source, heartbeat_at=now)
                        audit_record(action=Action.SOURCE_SYNC, actor=None, tenant_id=source.tenant_id,
                                     target_type="source", target_id=source.pk,
                                     details={"sync": str(sync.pk), "scheduled": True})
                        started.append(str(sync.pk))
        for sync_id in started:
            _send(sync_id)
    return {"resent": resent, "started": started}


# ----------------------------------------------------------------------------- running a sync


def _sync_tenant(sync_id: str) -> int | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT bulkhead_source_sync_tenant(%s::uuid)", [sync_id])
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else None


def _level_name(level: int) -> str:
    return AccessLevel(level).name.lower()


class _Run:
    """One attempt at one sync: the source, what is stored, and the counts to write with each item."""

    def __init__(self, sync: SourceSync, source: Source):
        self.sync, self.source = sync, source
        self.errors = {e["path"]: e for e in sync.errors}
        self.skips = {e["path"]: e for e in sync.skips}
        self.bytes_read = 0
        self.slugs = dict(Group.objects.filter(tenant_id=source.tenant_id).values_list("id", "slug"))
        self.job_ids: list[str] = []
        self.unchanged = 0  # counted in memory, written with the next progress that writes (or every 500)
        self.renames = RenamePlan(vanished={}, by_hash={}, similar={})  # which vanished item a new path takes over
        self.detached: dict[str, SourceDetached] = {}  # paths an admin detached: skipped, nothing of them touched

    def unchanged_seen(self, done: int, counted: bool) -> None:
        """An unchanged item: no write for it, so an unchanged source syncs in time proportional to its listing."""
        if not counted:
            self.unchanged += 1
        if done % 500 == 0:
            self.progress(done)

    def progress(self, done: int, **increments) -> None:
        if self.unchanged:
            increments["unchanged"] = increments.get("unchanged", 0) + self.unchanged
            self.unchanged = 0
        fields = {k: F(k) + v for k, v in increments.items() if v}
        SourceSync.objects.filter(pk=self.sync.pk).update(
            done=done, heartbeat_at=timezone.now(), errors=list(self.errors.values())[:MAX_LISTED_ERRORS],
            skips=list(self.skips.values())[:MAX_LISTED_ERRORS], failed=len(self.errors), skipped=len(self.skips),
            **fields,
        )

    def upload(self, entry: Entry, content: bytes, policy: tuple[int, Sequence[int]]) -> Upload:
        return Upload(content=content, title=PurePosixPath(entry.path).name or entry.path, source=entry.path[:1000],
                      content_type=entry.content_type, access_level=_level_name(policy[0]),
                      groups=[self.slugs[g] for g in policy[1]])

    def store(self, entry: Entry, content: bytes, policy, document: Document | None,
              given: tuple[int, Sequence[int]] | None = None,
              recorded: dict | None = None) -> tuple[Document, dict | None]:
        """Store new content (or a new policy) of ``entry``. ``given``: the policy this source gave ``document`` when it
        last stored it, and ``recorded`` the admin's default its syncs keep (its item's ``admin_default``), so that a
        default an admin set through the API is kept (:func:`default_kept`). The document, and the admin's default for
        its item (None: it follows the source)."""
        kept = None
        if document is not None:
            document = Document.objects.select_for_update().get(pk=document.pk)  # against a racing policy change
            policy, kept = default_kept(document, given=given, policy=policy, recorded=recorded)
        document, job = document_store_for_source(
            tenant=self.source.tenant, upload=self.upload(entry, content, policy), document=document,
            metadata={SOURCE_ID: self.source.pk, SOURCE_PATH: entry.path[:1000]},
            job_stats={JOB_STATS_KEY: str(self.sync.pk)},
        )
        enqueue_after_commit([job.id], lane=BULK)
        return document, kept


class DefaultWider(ApplicationError):
    """A document's default policy, set through the API, is wider than the one its source now gives it."""

    code = "default_wider"
    status_code = 409


def _policy_key(level: int, groups: Sequence[int]) -> tuple[int, frozenset]:
    return int(level), frozenset(groups)


def _recorded_policy(recorded: dict) -> tuple[int, tuple]:
    return int(recorded["level"]), tuple(sorted(int(g) for g in recorded.get("groups") or ()))


def default_left(recorded: dict | None, given: tuple[int, Sequence[int]]) -> tuple[int, tuple]:
    """The default the last sync that stored a document left it at: the source's policy ``given`` (no admin's default
    ``recorded``), the admin's opening kept, or an admin's narrowing met with ``given`` (:func:`policy_kept`)."""
    if not recorded:
        return int(given[0]), tuple(sorted(given[1] or ()))
    admin = _recorded_policy(recorded)
    if recorded.get("narrowing"):
        return policy_meet(admin, given) or admin
    return admin


def admin_default(own: tuple[int, Sequence[int]], *, given: tuple[int, Sequence[int]],
                  recorded: dict | None) -> dict | None:
    """The default an admin set on a synced document whose default is now ``own``, as its syncs keep it (its item's
    ``admin_default``): ``recorded``, the one its syncs kept so far, while the document's default is where the last
    sync left it (:func:`default_left`); else an admin set it since -- back to the source's policy ``given`` (the
    document follows the source again: None), or to another: a **narrowing** when it implies ``given``, else an
    **opening**. Recorded, a narrowing stays a bound after the document's default has met the source's (found attacking
    sources, eighteenth session: told only by the default differing from the source's policy, an admin's narrowing to
    ``confidential`` was forgotten once the source gave the path ``confidential`` too, and the next widening of the
    source opened the document to every ``public`` reader)."""
    own = (int(own[0]), tuple(sorted(own[1] or ())))
    if _policy_key(*own) == _policy_key(*default_left(recorded, given)):
        return recorded or None
    if _policy_key(*own) == _policy_key(*given):
        return None
    return {"level": own[0], "groups": list(own[1]), "narrowing": policy_implies(*own, *given)}


def default_kept(document: Document, *, given: tuple[int, Sequence[int]] | None, policy,
                 recorded: dict | None = None) -> tuple[tuple[int, tuple], dict | None]:
    """The default policy a sync gives ``document`` (locked) with new content or a new policy of its path, and the admin's
    default its item keeps (:func:`admin_default`; None: the document follows the source).

    The source's ``policy``, unless an admin set the document's default through the API since this source stored it
    (``given``: the policy the source gave it then; ``recorded``: the admin's default the syncs kept so far): such a
    default survives syncs, as a section's override does (found attacking sources, seventeenth session: a sync of an
    edit wrote the source's policy over it, so a document an admin had narrowed to ``restricted`` was open to every
    ``internal`` reader again at the next commit). An admin's **narrowing** is a bound: the document gets the narrower
    of it and the source's policy (:func:`policy_meet`) -- the source's, where the source now narrows past it (found in
    the eighteenth session: the item failed there, and the document stayed open at the admin's narrowing, wider than
    the source said, until an admin set it again). An admin's **opening** is kept when the source's policy is no
    narrower than the one it gave before (the admin widened that very policy); else -- the source now narrows the path
    past what the admin opened, or no policy is within both -- the item fails (:class:`DefaultWider`), nothing of it
    changed, and the old content keeps serving under the admin's default."""
    return policy_kept((document.access_level, tuple(sorted(document.access_groups or ()))), given=given,
                       policy=policy, recorded=recorded)


def policy_kept(own: tuple[int, Sequence[int]], *, given: tuple[int, Sequence[int]] | None, policy,
                recorded: dict | None = None) -> tuple[tuple[int, tuple], dict | None]:
    """:func:`default_kept`'s decision, given the document's default policy ``own``: the policy a sync gives a document
    it stores new content (or a new policy) for -- ``policy``, the source's, an admin's default kept, or the two met --
    and the admin's default to record; else :class:`DefaultWider`. The preview asks it too
    (``sources.selectors._preview_of``), so that what it shows is what the sync does."""
    policy = (int(policy[0]), tuple(sorted(policy[1] or ())))
    if given is None:
        return policy, None
    admin = admin_default(own, given=given, recorded=recorded)
    if admin is None:
        return policy, None
    kept = _recorded_policy(admin)
    if admin.get("narrowing"):
        met = policy_meet(kept, policy)
        if met is not None:
            return met, admin
        why = "shares no group with what"
    elif policy_implies(*kept, *policy) or policy_implies(*given, *policy):
        return kept, admin
    else:
        why = "is wider than"
    raise DefaultWider(
        f"the document's default policy was set through the API ({_level_name(kept[0])}"
        f"{' and groups' if kept[1] else ''}) and {why} this source now gives the path "
        f"({_level_name(policy[0])}{' and groups' if policy[1] else ''}); it is not synced: an admin sets the "
        "document's policy again (to the source's, or narrower), and the next sync takes the new content")


def _path_check(path: str) -> str:
    """Why a path's content is not ingested whatever it holds ("" when it may be): a path holding a control or
    invisible character. The path is the document's source and its last part its title, listed to every reader and
    their agents: what an upload refuses (``kb.services.typed_text_check``) a sync skips, naming the character, never
    the words -- also for a path stored before, unchanged since (found in the twenty-first session, attack21c's
    left-alone: a file named with tag characters reached every agent as its title)."""
    import unicodedata

    from ingestion.parsers.visible_text import unseen_character

    found = unseen_character(path)
    if found is None:
        return ""
    return (f"the path holds U+{ord(found):04X} ({unicodedata.name(found, 'a control character')}), which a reader "
            "does not see as text and a model reads")


def _content_check(entry: Entry, content: bytes) -> str:
    """Why ``content`` is not ingested ("" when it is)."""
    from ingestion.parsers import detect_content_type
    from ingestion.parsers.registry import ParseError, parser_for

    if len(content) > settings.BULKHEAD_MAX_UPLOAD_BYTES:
        return f"over the size limit ({settings.BULKHEAD_MAX_UPLOAD_BYTES} bytes)"
    content_type = entry.content_type or detect_content_type(entry.path, content) or "application/octet-stream"
    if content_type.startswith("text/") and b"\0" in content[:8192]:
        return "binary content (no parser reads it)"
    try:
        parser_for(content_type, entry.path, content)
    except ParseError:
        # A website's type is its server's ``Content-Type`` header, any length and any character the HTTP client
        # decodes (UTF-8 or Latin-1: tag characters, C1 controls); quoted as other remote text is, bounded and escaped
        # to ASCII, at most 80 characters of it (twenty-second session, attack22x: it reached every admin whole).
        quoted = ascii(content_type[:80])
        return f"binary or unsupported content ({quoted[:80]}{'...' if len(quoted) > 80 else ''}: no parser reads it)"
    return ""


def _stored_raw(document_id) -> Callable[[], bytes]:
    def load() -> bytes:
        raw = Document.objects.filter(pk=document_id).values_list("raw", flat=True).first()
        if raw is None:
            raise ListingError("a stored page's document is gone; sync again")
        return bytes(raw)

    return load


def sync_run(sync_id: str) -> str:
    """Run (or resume) one sync; its final status."""
    tenant_id = _sync_tenant(sync_id)
    if tenant_id is None:
        return "missing"
    tenant_activate(tenant_id)
    with transaction.atomic():
        sync = SourceSync.objects.select_for_update().filter(pk=sync_id).first()
        if sync is None or sync.status not in UNFINISHED:
            return sync.status if sync else "missing"
        if sync.attempts >= settings.BULKHEAD_SOURCE_MAX_ATTEMPTS:
            _finish(sync, error=f"the sync's worker stopped {sync.attempts} times; it was given up")
            return sync.status
        SourceSync.objects.filter(pk=sync.pk).update(
            # Unchanged items are counted again by each attempt (those an earlier attempt wrote are not: item_counted).
            unchanged=0, status=SourceSync.Status.RUNNING, stage="listing", attempts=F("attempts") + 1,
            started_at=sync.started_at or timezone.now(), heartbeat_at=timezone.now(),
        )
        sync.refresh_from_db()
    source = Source.objects.get(pk=sync.source_id)
    run = _Run(sync, source)
    timings: dict[str, float] = dict(sync.timings or {})
    t0 = time.perf_counter()
    run.detached = detached_paths(source)
    # A detached path has no item (its detach removed it); one found anyway is left alone, never deleted or renamed.
    stored = stored_items(source, run.detached)
    try:
        web_stored = {}
        if source.kind == Source.Kind.WEB:
            # A page's stored bytes are loaded when its server answers 304, and counted by the crawl then (every
            # stored page's bytes were loaded before the crawl, with every document of the source).
            web_stored = {p: (i.etag, i.last_modified, _stored_raw(i.document_id))
                          for p, i in stored.items() if i.document_id}
        listing = list_source(source, credentials=credentials_decrypt(source.credentials), stored=web_stored)
    except (ListingError, CredentialsError) as exc:
        # Ours, each written for who reads it. A bare ValueError is any library's, its text whatever it says (found
        # in the fourteenth session: a robots.txt rule "http://[board-layoffs-2027]/" failed the crawl with
        # "'board-layoffs-2027' does not appear to be an IPv4 or IPv6 address", read by every admin): unexpected.
        shown_to, without_path = listing_error_access(exc, source=source, stored=stored,
                                                      group_ids={s: g for g, s in run.slugs.items()})
        _finish(sync, error=str(exc)[:2000], error_access=shown_to, error_without_path=without_path[:2000])
        return SourceSync.Status.FAILED
    except OSError as exc:
        # Any other OSError of a listing (a file or folder gone or unreadable mid-walk, a full disk under the Git
        # mirror) ends the sync failed, never "running" until its attempts run out; its reason names no path.
        logger.exception("sync %s: the listing failed", sync_id)
        _finish(sync, error=listing_os_error(exc))
        return SourceSync.Status.FAILED
    except Exception:  # noqa: BLE001 - any other (a Git mirror's corrupt tree: zlib.error): ended, never "running"
        # Found in the fourteenth session: it raised out of the task, and the sync stayed "running" -- no other sync
        # of the source could start -- until the tick had sent it BULKHEAD_SOURCE_MAX_ATTEMPTS times.
        logger.exception("sync %s: the listing failed on an unexpected error", sync_id)
        _finish(sync, error=UNEXPECTED_LISTING)
        return SourceSync.Status.FAILED
    timings["listing"] = round(time.perf_counter() - t0, 3)
    try:
        _apply_listing(run, listing, stored, timings)
    except Exception:  # noqa: BLE001 - recorded on the sync; the items done so far stay done
        logger.exception("sync %s failed", sync_id)
        _finish(SourceSync.objects.get(pk=sync.pk), error=UNEXPECTED_SYNC, timings=timings)
        return SourceSync.Status.FAILED
    return SourceSync.objects.get(pk=sync.pk).status


def _apply_listing(run: _Run, listing: Listing, stored: dict[str, SourceItem], timings: dict) -> None:
    sync, source = run.sync, run.source
    t0 = time.perf_counter()
    entries = [e for e in listing.entries if e.path != access.ACCESS_FILE
               and access.path_selected(e.path, source.include, source.exclude)]
    if len(entries) > settings.BULKHEAD_SOURCE_MAX_FILES:
        _finish(sync, error=f"the source lists {len(entries)} files; the limit is {settings.BULKHEAD_SOURCE_MAX_FILES} "
                            "(BULKHEAD_SOURCE_MAX_FILES): narrow it with include/exclude", timings=timings)
        return
    access_file = access.listing_access_file(
        listing, group_ids={slug: gid for gid, slug in run.slugs.items()}, default_level=source.access_level,
        default_groups=source.access_groups)
    rules = access.map_rules(source.access_map)
    default = (source.access_level, tuple(source.access_groups))
    SourceSync.objects.filter(pk=sync.pk).update(stage="syncing", total=len(entries), listed=len(listing.entries),
                                                 revision=listing.revision, heartbeat_at=timezone.now())
    budget = DocumentBudget()
    for error in listing.errors:  # a path, shown as an item would be (sources.access.item_access)
        run.errors[error["path"]] = listing_error_row(error, source=source, stored=stored, default=default,
                                                      access_map=rules, access_file=access_file, budget=budget)
    t_renames = time.perf_counter()
    run.renames = rename_plan(listing, [e for e in entries if e.path not in run.detached], stored)
    timings["renames"] = round(time.perf_counter() - t_renames, 3)
    vanished = run.renames.vanished  # what no new path takes over is deleted below
    for n, entry in enumerate(entries, start=1):
        try:
            _sync_entry(run, n, entry, stored.get(entry.path), default, rules, access_file)
        except DATABASE_GONE:
            raise
        except Exception:  # noqa: BLE001 - this item fails (its transaction undone); the others sync, deletions happen
            # Found in the fourteenth session: a blob the Git mirror could not inflate (zlib.error) stopped every sync
            # of its source at that item -- those after it never synced, a file withdrawn stayed in search.
            logger.exception("sync %s: an item failed on an unexpected error", sync.pk)
            run.errors[entry.path] = {"path": entry.path, "error": UNEXPECTED_ITEM,
                                      "access": _unexpected_item_access(entry, stored.get(entry.path), default, rules,
                                                                        access_file)}
            run.progress(n)
    timings["items"] = round(time.perf_counter() - t0, 3)
    t1 = time.perf_counter()
    if listing.complete:
        for item in vanished.values():
            with transaction.atomic():
                if item.document_id:
                    document = Document.objects.filter(pk=item.document_id).first()
                    if document is not None:
                        document_delete(document=document, actor=None)
                item.delete()
                run.progress(len(entries), deleted=1)
    elif vanished:
        run.errors.setdefault("(deletions)", {"path": "(deletions)", "error": (
            f"the listing was incomplete: {len(vanished)} missing items were not deleted"),
            "access": access.item_access((AccessLevel.PUBLIC, ()))})  # names no item: every admin sees it
    timings["deletions"] = round(time.perf_counter() - t1, 3)
    run.progress(len(entries))
    _finish(SourceSync.objects.get(pk=sync.pk), timings=timings)


def stored_items(source: Source, detached: dict[str, SourceDetached]) -> dict[str, SourceItem]:
    """What the syncs of ``source`` stored, by path, in path order: the order a new path takes over the first vanished
    item of its content in (:class:`RenamePlan`) and vanished items are deleted in, so the sync and its preview decide
    alike, on every run (read in no order, PostgreSQL's order followed the items' last update). A detached path's
    item (none: its detach removed it) is left out: one found anyway is left alone, never deleted or renamed."""
    return {item.path: item for item in SourceItem.objects.filter(source=source).order_by("path")
            if item.path not in detached}


def detached_paths(source: Source) -> dict[str, SourceDetached]:
    """The paths of ``source`` an admin detached (none for an unsaved source)."""
    if not source.pk:
        return {}
    return {d.path: d for d in SourceDetached.objects.filter(source=source)}


def source_path_policies(source: Source, paths: Iterable[str]) -> dict[str, tuple[int, tuple] | None]:
    """The policy ``source`` gives each of ``paths`` now, decided as its sync decides an item's
    (:func:`sources.access.item_policy`: its access map's first match, else its default), in one pass over the
    source's settings. Without its access file, which only a listing reads (that narrowing is known from a sync's
    record of the path). None -- undecided, fail closed -- for a path the source no longer selects
    (include/exclude: no sync gives it a policy) and for every path when the access map cannot be read."""
    paths = list(paths)
    try:
        rules = access.map_rules(source.access_map)
        default = (int(source.access_level), tuple(sorted(int(g) for g in source.access_groups or ())))
        for rule in rules:
            access.glob_regex(rule.path)
    except (KeyError, TypeError, ValueError, AttributeError):
        return dict.fromkeys(paths)
    found: dict[str, tuple[int, tuple] | None] = {}
    for path in paths:
        try:
            if not access.path_selected(path, source.include or (), source.exclude or ()):
                found[path] = None
                continue
            found[path] = access.item_policy(path, default=default, access_map=rules, access_file=access.AccessFile())
        except ValueError:  # a glob refused (GlobError), an item's policy undecided (ItemAccessError)
            found[path] = None
    return found


@dataclass
class RenamePlan:
    """Which stored item whose path is no longer listed (``vanished``) a new path takes over, keeping
    its document: first one whose content is identical (``by_hash``), else the one the lister's rename
    detection pairs the path with (``similar``: Git's, for files moved with edits). Each vanished item
    is taken once, in the order the paths ask; what is left is deleted. The sync and the preview both
    ask this one plan, so the preview's "renamed from" is the sync's decision."""

    vanished: dict[str, SourceItem]
    by_hash: dict[str, list[SourceItem]]
    similar: dict[str, str]  # new path -> vanished path

    def open(self) -> bool:
        """Whether a new path could still take a document over (else its content need not be read for it)."""
        return bool(self.by_hash)

    def take(self, path: str, digest: str) -> tuple[SourceItem | None, bool]:
        """The vanished item the new ``path`` (content hash ``digest``) takes over, and whether its
        content changed (a move with edits); (None, False) when none: the path is an add."""
        renamed, edited = next(iter(self.by_hash.get(digest) or ()), None), False
        if renamed is None and self.similar.get(path) in self.vanished:
            renamed, edited = self.vanished[self.similar[path]], True
        if renamed is None:
            return None, False
        same = self.by_hash[renamed.content_hash]  # every vanished item with a document is there until taken
        same.remove(renamed)
        if not same:
            del self.by_hash[renamed.content_hash]
        del self.vanished[renamed.path]
        return renamed, edited


def rename_plan(listing: Listing, entries: list[Entry], stored: dict[str, SourceItem]) -> RenamePlan:
    """The :class:`RenamePlan` of a listing (``entries``: its selected entries) against what the last
    sync stored. Only an item with a document can be taken over (there is nothing else to keep)."""
    listed = {e.path for e in entries}
    vanished = {p: i for p, i in stored.items() if p not in listed}
    by_hash: dict[str, list[SourceItem]] = {}
    for item in vanished.values():
        if item.document_id:
            by_hash.setdefault(item.content_hash, []).append(item)
    return RenamePlan(vanished=vanished, by_hash=by_hash, similar=_similar_renames(listing, entries, stored, vanished))


def _similar_renames(listing: Listing, entries: list[Entry], stored: dict[str, SourceItem],
                     vanished: dict[str, SourceItem]) -> dict[str, str]:
    """New path -> vanished path for files moved with edits, where the lister detects them (Git). A
    detection that fails finds none: those paths are then a delete and an add, which loses the
    document's id but nothing of its access."""
    if listing.renames is None:
        return {}
    old = {p: i.version for p, i in vanished.items() if i.document_id and i.version}
    new = {e.path: e.version for e in entries
           if not e.skip and e.version and (stored.get(e.path) is None or not stored[e.path].document_id)}
    if not old or not new:
        return {}
    try:
        found = listing.renames(old, new)
    except OutOfTime:  # a preview's deadline: the preview stops (never a guess of delete and add)
        raise
    except Exception:  # noqa: BLE001 - a missing object, a corrupt mirror: fall back to delete and add
        logger.exception("rename detection failed; moved files are deleted and added")
        return {}
    return {n: o for n, o in found.items() if n in new and o in old}


def _sync_entry(run: _Run, n: int, entry: Entry, item: SourceItem | None, default, rules, access_file) -> None:
    sync = run.sync
    run.errors.pop(entry.path, None)
    run.skips.pop(entry.path, None)
    try:
        policy, refused = access.item_policy(entry.path, default=default, access_map=rules, access_file=access_file), ""
    except access.ItemAccessError as exc:
        policy, refused = None, str(exc)
    detached = run.detached.get(entry.path)
    if detached is not None:  # nothing of it is read or written: the detached document stays as the admin left it
        record = access.item_access(policy, document_id=detached.document_id)
        run.skips[entry.path] = {"path": entry.path, "reason": DETACHED, "access": record}
        # Kept on the tombstone too (the detached list reads it): the next sync may list no row of the path.
        SourceDetached.objects.filter(pk=detached.pk).update(skip_access=record)
        run.progress(n)
        return
    skip = entry.skip or _path_check(entry.path)
    if skip:
        _skip(run, n, entry, item, skip, policy)
        return
    if policy is None:
        run.errors[entry.path] = {"path": entry.path, "error": refused, "access": access.item_access(None)}
        run.progress(n)
        return
    # Who may see this item's error: who may read its policy and see the document it is stored as.
    shown_to = access.item_access(policy, document_id=item.document_id if item is not None else None)
    same_policy = item is not None and (item.access_level, tuple(sorted(item.access_groups))) == policy
    if item is not None and item.document_id and item.version == entry.version and entry.version and same_policy:
        run.unchanged_seen(n, item_counted(item, sync))
        return
    try:
        content = entry.read()
    except Skip as exc:
        _skip(run, n, entry, item, str(exc), policy)
        return
    except OSError as exc:
        run.errors[entry.path] = {"path": entry.path, "error": unreadable_reason(exc), "access": shown_to}
        run.progress(n)
        return
    digest = content_hash(content)
    if item is not None and item.document_id and digest == item.content_hash and same_policy:
        SourceItem.objects.filter(pk=item.pk).update(version=entry.version, etag=entry.etag,
                                                     last_modified=entry.last_modified, synced_by=sync.pk)
        run.progress(n, unchanged=0 if item_counted(item, sync) else 1)
        return
    reason = _content_check(entry, content)
    if reason:
        _skip(run, n, entry, item, reason, policy)
        return
    run.bytes_read += len(content)
    if run.bytes_read > settings.BULKHEAD_SOURCE_MAX_BYTES:
        run.errors[entry.path] = {"path": entry.path, "error": (
            f"over the sync's byte limit ({settings.BULKHEAD_SOURCE_MAX_BYTES} bytes, BULKHEAD_SOURCE_MAX_BYTES); "
            "it follows in the next sync"), "access": shown_to}
        run.progress(n)
        return
    fields = dict(version=entry.version, etag=entry.etag, last_modified=entry.last_modified, content_hash=digest,
                  access_level=policy[0], access_groups=list(policy[1]), synced_by=sync.pk)
    taken_over = None  # the document a new path takes over (a rename): who sees the item's error must see it too
    try:
        with transaction.atomic():
            if item is None or not item.document_id:
                # A rename (the same content, or a Git move with edits): the same document, edited content re-ingested.
                renamed, edited = run.renames.take(entry.path, digest)
                if renamed is not None:
                    taken_over = renamed.document_id
                    document = Document.objects.select_for_update().get(pk=renamed.document_id)
                    if edited or (renamed.access_level, tuple(sorted(renamed.access_groups))) != policy:
                        document, fields["admin_default"] = run.store(
                            entry, content, policy, document, given=(renamed.access_level, renamed.access_groups),
                            recorded=renamed.admin_default)
                    else:
                        shown_before = shown_fields(document)
                        document.source = entry.path[:1000]
                        document.metadata = {**document.metadata, SOURCE_PATH: entry.path[:1000]}
                        # The new path is listed as the source: screened as an upload's is (found attacking the demo:
                        # a file renamed to a planted name was shown verbatim, a source without a verdict as it is).
                        document_title_screen(document)
                        shown_follow(document, shown_before, timezone.now())  # every reader is shown it (kb.changed)
                        document.save(update_fields=["source", "metadata", "shown_changed_at"])
                        if source_flagging(document, (document.title, document.metadata.get(CONTENT_TITLE, ""))):
                            # A held source flags every chunk of its document, so that a reviewer can release it
                            # (kb.titles.source_flagging): the chunks are re-screened in the background with it,
                            # as ingestion would (marked stale: pipeline.rescreen; no re-embedding).
                            Chunk.objects.filter(tenant_id=document.tenant_id, document_id=document.pk).update(
                                screening_detector="")
                            tenant_id = document.tenant_id
                            transaction.on_commit(lambda: current_app.send_task(RESCREEN_TASK, args=[[tenant_id]]))
                    if item is not None:
                        item.delete()
                    SourceItem.objects.filter(pk=renamed.pk).update(path=entry.path, document=document, **fields)
                    run.progress(n, renamed=1)
                    return
                document, fields["admin_default"] = run.store(entry, content, policy, None)
                if item is None:
                    SourceItem.objects.create(tenant_id=sync.tenant_id, source_id=sync.source_id, path=entry.path,
                                              document=document, **fields)
                else:
                    SourceItem.objects.filter(pk=item.pk).update(document=document, **fields)
                run.progress(n, added=1)
                return
            document = Document.objects.filter(pk=item.document_id).first()
            document, fields["admin_default"] = run.store(entry, content, policy, document,
                                                          given=(item.access_level, item.access_groups),
                                                          recorded=item.admin_default)
            SourceItem.objects.filter(pk=item.pk).update(document=document, **fields)
            run.progress(n, changed=1)
    except DefaultWider as exc:  # its transaction undone: nothing of the item changed
        # It tells of the document's default: a rename's is the document it takes over (found in the eighteenth
        # session: the error of a new path failing to take a document over was shown to who may read the path alone).
        if taken_over is not None:
            shown_to = access.item_access(policy, document_id=taken_over)
        run.errors[entry.path] = {"path": entry.path, "error": exc.message, "access": shown_to}
        run.progress(n)


def _unexpected_item_access(entry: Entry, item: SourceItem | None, default, rules, access_file) -> dict:
    """Who may read an item's unexpected error (it names the item's path): as its other errors -- its policy and the
    document it is stored as; undecided (only an admin who may read every level and group) when its policy cannot
    be told."""
    try:
        policy = access.item_policy(entry.path, default=default, access_map=rules, access_file=access_file)
    except Exception:  # noqa: BLE001 - fail closed
        return access.item_access(None)
    return access.item_access(policy, document_id=item.document_id if item is not None else None)


def item_counted(item: SourceItem, sync: SourceSync) -> bool:
    """Whether an earlier attempt of this very sync already wrote (and counted) ``item``."""
    return item.synced_by == sync.pk


def _skip(run: _Run, n: int, entry: Entry, item: SourceItem | None, reason: str,
          policy: tuple[int, tuple[int, ...]] | None) -> None:
    """Not ingested, with the reason; a document the path had before goes (it no longer stands for the source).
    ``policy``: the one the source gives the path (None: undecided), for who may see the skip
    (:func:`sources.access.item_access`; with the policies of the deleted document's sections)."""
    with transaction.atomic():
        deleted, sections = 0, None
        if item is not None:
            if item.document_id:
                document = Document.objects.filter(pk=item.document_id).first()
                if document is not None:
                    sections = _section_policies(document)
                    document_delete(document=document, actor=None)
                    deleted = 1
            item.delete()
        run.skips[entry.path] = {"path": entry.path, "reason": reason,
                                 "access": access.item_access(policy, sections=sections)}
        run.progress(n, deleted=deleted)


def _section_policies(document: Document) -> list[tuple[int, tuple[int, ...]]]:
    """The distinct policies of ``document``'s sections (its own policy when it has none): who could see it
    (``kb.selectors.document_visible_q``: a readable section), kept with a skip that deletes it."""
    found = {(level, tuple(sorted(groups))) for level, groups in
             Section.objects.filter(document=document).values_list("access_level", "access_groups")}
    return sorted(found) or [(document.access_level, tuple(sorted(document.access_groups)))]


def error_path_access(path: str, *, stored: dict[str, SourceItem], default, access_map, access_file,
                      web: bool = False, max_documents: int | None = None) -> dict:
    """Who may see a path a listing names in an error (``sources.access.path_access``): a file's by its policy and
    the document it is stored as, a folder's (``a/b/``) by every policy a file below it could get and every document
    stored below it. A website's address (``web``) is a page, never a folder, whatever it ends with: judged as an
    item's path (found reviewing sources, review 14b: a page ending in ``/`` named every document stored below it). A folder's record names at most ``max_documents`` (else
    ``BULKHEAD_SOURCE_MAX_FILES``) documents: one with more below it is undecided (only the top admin reads it)."""
    item = stored.get(path)
    if max_documents is None:
        max_documents = settings.BULKHEAD_SOURCE_MAX_FILES
    if web:
        try:
            policy = access.item_policy(path, default=default, access_map=access_map, access_file=access_file)
        except access.ItemAccessError:
            return access.item_access(None)
        return access.item_access(policy, document_id=item.document_id if item is not None else None)
    below = [i.document_id for p, i in stored.items() if p.startswith(path)] if path.endswith("/") else ()
    return access.path_access(path, default=default, access_map=access_map, access_file=access_file,
                              document_id=item.document_id if item is not None else None, folder_documents=below,
                              max_documents=max_documents)


class DocumentBudget:
    """The documents the records of one sync's (or preview's) listing errors may name in all:
    ``BULKHEAD_SOURCE_MAX_FILES`` (a folder's record names every document stored below it, and a sync's row keeps up
    to ``MAX_LISTED_ERRORS`` rows; found reviewing sources, review 14b: nothing bounded their sum). A record past it is
    undecided: only the top admin reads its row."""

    def __init__(self) -> None:
        self.left = settings.BULKHEAD_SOURCE_MAX_FILES

    def spend(self, record: dict) -> dict:
        self.left -= len(record.get("documents") or ())
        return record


def listing_error_row(error: dict, *, source: Source, stored: dict[str, SourceItem], default, access_map,
                      access_file, budget: DocumentBudget | None = None) -> dict:
    """A listing's error about one path (a file's, a folder's, a page's), with who may see it (``access``): as the
    path would be; a page's that names the redirect's hop it failed at (``hop``, dropped from the row) as the page
    and the hop both (``sources.web._at_hop``; found reviewing sources, review 14b: the hop -- a private address, a
    token in its query -- was named to whoever could read the page)."""
    web = source.kind == Source.Kind.WEB
    row = {k: v for k, v in error.items() if k != "hop"}
    budget = budget or DocumentBudget()
    records = [budget.spend(error_path_access(p, stored=stored, default=default, access_map=access_map,
                                              access_file=access_file, web=web, max_documents=max(budget.left, 0)))
               for p in (error["path"], *([error["hop"]] if error.get("hop") else []))]
    return {**row, "access": records[0] if len(records) == 1 else access.all_of(records)}


# A failed listing's error that names no path: every admin of the source reads it.
EVERY_ADMIN = access.item_access((int(AccessLevel.PUBLIC), ()))
LISTING_FAILED_ON_A_PATH = "the listing failed on a path you may not read (not named here); nothing was synced or deleted"


def listing_error_access(exc: Exception, *, source: Source, stored: dict[str, SourceItem],
                         group_ids: dict[str, int]) -> tuple[dict, str]:
    """Who may read a failed listing's error, and what the others read instead (docs/sources.md, "Who sees a
    source's paths"; found reviewing sources, review 14: "could not list .../board/2027-layoffs" reached every
    admin). An error naming no path of the source: every admin (``""``). One naming a subfolder or a page
    (``ListingError.path``): who may read it by the access files read before the listing failed -- the root's and
    those above it (``ListingError.listing``; a folder: :func:`sources.access.folder_access`); without them
    (a Git folder's, no path of the source): only an admin who may read every level and group."""
    path = getattr(exc, "path", "")
    if not path:
        return dict(EVERY_ADMIN), ""
    without_path = exc.without_path or LISTING_FAILED_ON_A_PATH
    if exc.listing is None:
        return dict(access.UNDECIDED), without_path
    try:
        access_file = access.listing_access_file(exc.listing, group_ids=group_ids, default_level=source.access_level,
                                                 default_groups=source.access_groups)
        return error_path_access(path, stored=stored, default=(source.access_level, tuple(source.access_groups)),
                                 access_map=access.map_rules(source.access_map), access_file=access_file,
                                 web=source.kind == Source.Kind.WEB), without_path
    except Exception:  # noqa: BLE001 - an access file that cannot be read now (gone, unreadable): fail closed
        logger.exception("who may read a failed listing's error could not be decided")
        return dict(access.UNDECIDED), without_path


def unreadable_reason(exc: OSError) -> str:
    """An item that could not be read, as its error reads (the row names its path by the rule): the OSError's reason
    alone, never its file name -- a server path (the source's folder whole, a Git mirror's object in the data
    folder)."""
    return f"unreadable: {exc.strerror or type(exc).__name__}"


def listing_os_error(exc: OSError) -> str:
    """A listing's unexpected OSError as every admin reads it: its reason, never the path it names."""
    return (f"the listing failed ({exc.strerror or type(exc).__name__}); nothing was synced or deleted; "
            "sync again")


def _finish(sync: SourceSync, *, error: str = "", timings: dict | None = None, error_access: dict | None = None,
            error_without_path: str = "") -> None:
    """End the sync. ``error``: its own failure, read by who ``error_access`` says (every admin when not given: it
    names no path), the others reading ``error_without_path``."""
    sync.refresh_from_db()
    failed = bool(error) or sync.failed > 0
    if error and error_access is None:
        error_access = dict(EVERY_ADMIN)
    SourceSync.objects.filter(pk=sync.pk, status__in=UNFINISHED).update(
        status=SourceSync.Status.FAILED if failed else SourceSync.Status.SUCCEEDED, stage="done",
        error=error, error_access=error_access, error_without_path=error_without_path,
        finished_at=timezone.now(), heartbeat_at=timezone.now(),
        **({"timings": timings} if timings is not None else {}),
    )
    sync.refresh_from_db()


def new_sync_id() -> uuid.UUID:
    return uuid.uuid4()
