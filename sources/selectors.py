"""Reads for sources: the tenant's sources, a sync as it stands (with the ingestion it started), the
history, and the preview of what a sync would do (listing and policies; nothing is written)."""

from __future__ import annotations

import logging
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Count, Q
from django.db.models.fields.json import KeyTextTransform

from accounts.errors import NotFound
from accounts.models import Group, Membership
from accounts.policy import AccessLevel, Reader
from accounts.selectors import reader_for
from kb.models import Document, IngestionJob
from kb.selectors import document_visible_q, reads_every_section
from kb.services import SOURCE_ID
from kb.web_slots import tenant_slot
from sources import access
from sources.crypto import CredentialsError, credentials_decrypt
from sources.entries import ListingError, OutOfTime, Skip, content_hash, out_of_time
from sources.models import Source, SourceDetached, SourceItem, SourceSync
from sources.services import (
    DETACHED,
    JOB_STATS_KEY,
    UNEXPECTED_LISTING,
    DefaultWider,
    DocumentBudget,
    detached_paths,
    listing_error_access,
    listing_error_row,
    listing_os_error,
    policy_kept,
    rename_plan,
    source_path_policies,
    stored_items,
    unreadable_reason,
)

logger = logging.getLogger(__name__)

PREVIEW_MAX_ITEMS = 2000
# A preview's item whose reading met an error no rule foresaw (as the sync's: none of its text, the log has it).
PREVIEW_UNEXPECTED_ITEM = "an unexpected error (the server's log has its details); the sync fails this item"


def _uuid(value) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def source_list(*, member: Membership):
    return Source.objects.filter(tenant_id=member.tenant_id).order_by("name")


def source_get(*, member: Membership, source_id) -> Source:
    try:
        pk = int(source_id)
        if not 0 < pk < 2**63:
            raise ValueError
        return Source.objects.get(tenant_id=member.tenant_id, pk=pk)
    except (ValueError, TypeError, Source.DoesNotExist):
        raise NotFound("source not found") from None


def document_source(*, member: Membership, document: Document) -> Source | None:
    """The source of the member's tenant that ``document`` belongs to (its ``metadata.source_id``), or None: a document
    no source owns (uploaded, or detached)."""
    source_id = (document.metadata or {}).get(SOURCE_ID)
    if document.tenant_id != member.tenant_id or not isinstance(source_id, int) or isinstance(source_id, bool):
        return None
    return Source.objects.filter(tenant_id=member.tenant_id, pk=source_id).first()


def sync_list(*, source: Source):
    """Newest first; syncs of one time by id (as :func:`last_syncs`): each once across the API's pages."""
    return source.syncs.order_by("-created_at", "-id")


def sync_get(*, source: Source, sync_id) -> SourceSync:
    pk = _uuid(sync_id)
    sync = source.syncs.filter(pk=pk).first() if pk else None
    if sync is None:
        raise NotFound("sync not found")
    return sync


# What a sync's state counts of the ingestion jobs it started.
_JOB_COUNTS = {"total": Count("id"), "open": Count("id", filter=Q(status__in=("queued", "running"))),
               "failed": Count("id", filter=Q(status="failed"))}


def sync_state(sync: SourceSync) -> dict:
    """The sync as the API and the console show it: its own status until the listing and items are
    done, then ``running`` (stage ``ingesting``) while the pipeline works on its documents; a document
    whose ingestion failed counts as failed (its error is on the document, for those who may read it)."""
    return sync_states([sync])[sync.pk]


def sync_states(syncs: Iterable[SourceSync]) -> dict[uuid.UUID, dict]:
    """:func:`sync_state` of each of ``syncs`` (the last syncs of a page of sources), by id: their jobs counted in one
    query -- not one per sync (found attacking cost, twenty-first session, attack21f: the source lists counted each
    source's last sync's jobs on their own, a query per source, each over the tenant's jobs)."""
    syncs = list(syncs)
    if not syncs:
        return {}
    counted = {
        row["sync"]: row for row in
        IngestionJob.objects.filter(**{f"stats__{JOB_STATS_KEY}__in": [str(s.pk) for s in syncs]})
        .annotate(sync=KeyTextTransform(JOB_STATS_KEY, "stats")).order_by().values("sync").annotate(**_JOB_COUNTS)
    }
    none = {"total": 0, "open": 0, "failed": 0}
    return {s.pk: _state_of(s, {k: counted.get(str(s.pk), none)[k] for k in none}) for s in syncs}


def _state_of(sync: SourceSync, jobs: dict) -> dict:
    status, stage = sync.status, sync.stage
    if status in (SourceSync.Status.SUCCEEDED, SourceSync.Status.FAILED) and jobs["open"]:
        status, stage = SourceSync.Status.RUNNING, "ingesting"
    elif status == SourceSync.Status.SUCCEEDED and jobs["failed"]:
        status = SourceSync.Status.FAILED
    return {"status": status, "stage": stage, "ingestion": jobs,
            "failed": sync.failed + jobs["failed"]}


def last_sync(source: Source) -> SourceSync | None:
    return source.syncs.order_by("-created_at", "-id").first()  # the first of sync_list, as last_syncs picks


def last_syncs(sources: Iterable[Source]) -> dict[int, SourceSync]:
    """:func:`last_sync` of each of ``sources`` (a page of them) that has one, by source id: one query."""
    ids = [s.pk for s in sources]
    if not ids:
        return {}
    syncs = SourceSync.objects.filter(source_id__in=ids).order_by("source_id", "-created_at", "-id").distinct("source_id")
    return {s.source_id: s for s in syncs}


def source_document_count(source: Source) -> int:
    return source_document_counts([source])[source.pk]


def source_document_counts(sources: Iterable[Source]) -> dict[int, int]:
    """:func:`source_document_count` of each of ``sources`` (a page of them), by source id: one query."""
    ids = [s.pk for s in sources]
    if not ids:
        return {}
    counted = (SourceItem.objects.filter(source_id__in=ids, document__isnull=False).order_by().values("source_id")
               .annotate(n=Count("pk")).values_list("source_id", "n"))
    return {pk: 0 for pk in ids} | dict(counted)


SOURCES_PAGE = 50  # the console's sources a page


@dataclass(frozen=True)
class SourcesListed:
    """What the lists of sources show beside a page of them, read for the page at once (a few queries, whatever the
    page's or the tenant's size): each source's last sync (by source id), its state (by sync id), its documents
    (by source id) and the slugs of the groups their policies name (by group id)."""

    last: dict[int, SourceSync]
    states: dict[uuid.UUID, dict]
    documents: dict[int, int]
    slugs: dict[int, str]


def sources_listed(sources: Iterable[Source], *, documents: bool = True) -> SourcesListed:
    """:class:`SourcesListed` of ``sources`` (a page of one tenant's): their documents counted only when
    ``documents``."""
    sources = list(sources)
    last = last_syncs(sources)
    groups = {g for s in sources for g in (*s.access_groups, *(g for e in s.access_map for g in e.get("groups") or ()))}
    slugs = (dict(Group.objects.filter(tenant_id=sources[0].tenant_id, id__in=groups).values_list("id", "slug"))
             if groups else {})
    return SourcesListed(last=last, states=sync_states(last.values()),
                         documents=source_document_counts(sources) if documents else {}, slugs=slugs)


# ----------------------------------------------------------------------------- preview


def source_preview(*, member: Membership, source: Source) -> dict:
    """What a sync of ``source`` (saved or not) would do now, item by item, and under which policy, as the admin
    ``member`` may see it (:func:`preview_shown`). Reads the source (a fetch, a crawl) but writes nothing to the
    database.

    It runs in a web thread, so it has ``BULKHEAD_SOURCE_PREVIEW_SECONDS`` in all -- the listing (a whole crawl,
    a Git fetch) and the comparison together; past them it answers an error saying how far it got and to sync
    the source instead (a sync lists in a worker, under its own limits). It takes one of the tenant's
    ``BULKHEAD_PREVIEWS_PER_TENANT`` preview slots, shared with the upload preview (``kb.web_slots``): one more
    raises :class:`kb.web_slots.Busy` (429 ``busy``)."""
    return preview_shown(member=member, preview=_preview(source))


def _preview(source: Source) -> dict:
    """:func:`source_preview` whole: every row with what decides who sees it (``access``)."""
    from sources.listing import list_source

    deadline = time.monotonic() + settings.BULKHEAD_SOURCE_PREVIEW_SECONDS
    detached = detached_paths(source)
    stored = stored_items(source, detached) if source.pk else {}  # as the sync reads them
    slugs = dict(Group.objects.filter(tenant_id=source.tenant_id).values_list("id", "slug"))
    with ExitStack() as stack:
        # At most BULKHEAD_PREVIEWS_PER_TENANT of the tenant's previews (these and uploads') at once: web threads are shared.
        stack.enter_context(tenant_slot("preview", source.tenant_id, limit=settings.BULKHEAD_PREVIEWS_PER_TENANT,
                                        seconds=settings.BULKHEAD_SOURCE_PREVIEW_SECONDS + 60, what="preview"))
        if source.kind == Source.Kind.GIT and not source.pk:
            from django.test.utils import override_settings

            cache = stack.enter_context(tempfile.TemporaryDirectory())
            stack.enter_context(override_settings(BULKHEAD_SOURCE_CACHE_DIR=cache))
        try:
            listing = list_source(source, credentials=credentials_decrypt(source.credentials), deadline=deadline)
        except OutOfTime as exc:
            return {"error": _stopped(source, exc), "items": [], "counts": {}}
        except (ListingError, CredentialsError) as exc:  # ours, each written for who reads it (never a bare ValueError)
            shown_to, without_path = listing_error_access(exc, source=source, stored=stored,
                                                          group_ids={s: g for g, s in slugs.items()})
            return {"error": str(exc), "error_access": shown_to, "error_without_path": without_path,
                    "items": [], "counts": {}}
        except OSError as exc:  # as the sync: its reason, naming no path
            return {"error": listing_os_error(exc), "items": [], "counts": {}}
        except Exception:  # noqa: BLE001 - as the sync (a Git mirror's corrupt tree): none of its text, never a 500
            logger.exception("the preview of source %s: the listing failed on an unexpected error", source.pk)
            return {"error": UNEXPECTED_LISTING, "items": [], "counts": {}}
        try:
            return _preview_of(source, listing, stored, slugs, deadline, detached)
        except OutOfTime as exc:
            return {"error": _stopped(source, exc), "items": [], "counts": {}}


def _stopped(source: Source, exc: OutOfTime) -> str:
    """What a preview that ran out of time answers: how far it got, and how to proceed."""
    seconds = settings.BULKHEAD_SOURCE_PREVIEW_SECONDS
    then = "Sync the source" if source.pk else "Save the source and sync it"
    narrow = " (or narrow it: options.prefix, options.max_pages)" if source.kind == Source.Kind.WEB else ""
    return (f"The preview stopped at its time limit ({seconds} s, BULKHEAD_SOURCE_PREVIEW_SECONDS) {exc.done}. "
            f"{then}{narrow}: a sync lists the whole source in a worker, under its own limits.")


def _preview_of(source: Source, listing, stored: dict, slugs: dict, deadline: float | None = None,
                detached: dict | None = None) -> dict:
    access_file = access.listing_access_file(
        listing, group_ids={s: g for g, s in slugs.items()}, default_level=source.access_level,
        default_groups=source.access_groups)
    rules = access.map_rules(source.access_map)
    default = (source.access_level, tuple(source.access_groups))
    entries = [e for e in listing.entries
               if e.path != access.ACCESS_FILE and access.path_selected(e.path, source.include, source.exclude)]
    # The sync's own rename decision over what this source stored (``stored``: this source's items only).
    detached = detached or {}
    renames = rename_plan(listing, [e for e in entries if e.path not in detached], stored)
    defaults = _document_defaults(source, stored)
    items = []
    for n, entry in enumerate(entries):
        if out_of_time(deadline):  # reading each changed item's content takes time too
            raise OutOfTime(f"after listing {len(listing.entries)} items and comparing {n} of them")
        shown = len(items) < PREVIEW_MAX_ITEMS
        row = {"path": entry.path, "action": "", "access_level": None, "groups": [], "reason": "", "renamed_from": "",
               "default_kept": False, "source_access_level": None, "source_groups": []}
        item = stored.get(entry.path)
        if entry.path in detached:  # as the sync: skipped, shown as the policy and the detached document say
            try:
                policy = access.item_policy(entry.path, default=default, access_map=rules, access_file=access_file)
            except access.ItemAccessError:
                policy = None
            row.update(action="skip", reason=DETACHED,
                       access=access.item_access(policy, document_id=detached[entry.path].document_id))
            if shown:
                items.append(row)
            continue
        try:
            level, groups = access.item_policy(entry.path, default=default, access_map=rules, access_file=access_file)
        except access.ItemAccessError as exc:
            row.update(action="skip" if entry.skip else "fail", reason=entry.skip or str(exc),
                       access=access.item_access(None))
            if shown:
                items.append(row)
            continue
        # Who may see the row: who may read the policy and see the document the path is (or takes over).
        row["access"] = access.item_access((level, groups), document_id=item.document_id if item else None)
        if entry.skip:
            row.update(action="skip", reason=entry.skip)
            if shown:
                items.append(row)
            continue
        row.update(access_level=AccessLevel(level).name.lower(), groups=sorted(slugs.get(g, "?") for g in groups))
        row.update(source_access_level=row["access_level"], source_groups=row["groups"])
        try:
            if item is None or not item.document_id:
                # As the sync: a new path may take over a vanished one's document (read only if one is left).
                renamed, edited = renames.take(entry.path, content_hash(entry.read())) if renames.open() else (None, False)
                if renamed is not None:
                    row.update(action="rename", renamed_from=renamed.path,
                               reason="moved with edits: ingested again" if edited else "",
                               access=access.item_access((level, groups), document_id=renamed.document_id))
                    # As the sync: the document is stored again (its default decided) only when edited or its
                    # policy changed; else it moves as it is.
                    policy_after(row, own=defaults.get(renamed.document_id), policy=(level, groups),
                                 given=(renamed.access_level, renamed.access_groups), slugs=slugs,
                                 stored_again=edited or _given(renamed) != (level, groups),
                                 recorded=renamed.admin_default)
                else:
                    row["action"] = "add"
            elif not shown:
                continue  # past the shown rows only renames are worked out (so that no delete is listed wrongly)
            else:
                if item.version == entry.version and entry.version and _given(item) == (level, groups):
                    row["action"] = "unchanged"
                else:
                    row["action"] = "unchanged" if content_hash(entry.read()) == item.content_hash and _given(
                        item) == (level, groups) else "change"
                policy_after(row, own=defaults.get(item.document_id), policy=(level, groups),
                             given=(item.access_level, item.access_groups), slugs=slugs,
                             stored_again=row["action"] == "change", recorded=item.admin_default)
        except Skip as exc:
            row.update(action="skip", reason=str(exc))
        except OSError as exc:
            # As the sync's item (sources.services.unreadable_reason): its reason alone -- an OSError's text names the
            # file it was opening by its server path (a Git mirror's object in the data folder, the source's folder
            # whole; found in the fourteenth session: the preview showed "[Errno 21] Is a directory: '/srv/...'").
            row.update(action="fail", reason=unreadable_reason(exc))
        except OutOfTime:
            raise
        except Exception:  # noqa: BLE001 - as the sync's item (sources.services.UNEXPECTED_ITEM): the row fails
            logger.exception("the preview of source %s: an item failed on an unexpected error", source.pk)
            row.update(action="fail", reason=PREVIEW_UNEXPECTED_ITEM)
        if shown:
            items.append(row)
    for path, item in sorted(renames.vanished.items()):
        items.append({"path": path, "action": "delete" if listing.complete else "keep (listing incomplete)",
                      "access_level": None, "groups": [], "reason": "", "renamed_from": "", "default_kept": False,
                      "source_access_level": None, "source_groups": [],
                      "access": access.item_access((item.access_level, item.access_groups),
                                                   document_id=item.document_id)})
    errors, budget = [], DocumentBudget()
    for error in listing.errors:  # a path (a file's, a folder's), shown as an item would be
        errors.append(listing_error_row(error, source=source, stored=stored, default=default, access_map=rules,
                                        access_file=access_file, budget=budget))
    return {"error": access_file.error, "error_without_words": access_file_words(access_file), "items": items,
            "listed": len(entries), "errors": errors, "revision": listing.revision}


def _key(level: int, groups) -> tuple[int, tuple]:
    return int(level), tuple(sorted(groups or ()))


def _given(item: SourceItem) -> tuple[int, tuple]:
    """The policy the source gave ``item``'s path when it last stored it, compared as the sync compares it."""
    return item.access_level, tuple(sorted(item.access_groups))


def _document_defaults(source: Source, stored: dict) -> dict:
    """The default policy of each document this source stored (id -> (level, sorted groups)): one query. The sync keeps
    an admin's default for them (``sources.services.default_kept``), so the preview shows what the sync does."""
    ids = {i.document_id for i in stored.values() if i.document_id}
    if not ids:
        return {}
    return {pk: _key(level, groups) for pk, level, groups in Document.objects.filter(
        tenant_id=source.tenant_id, pk__in=ids).values_list("pk", "access_level", "access_groups")}


def policy_after(row: dict, *, own, policy, given, slugs: dict, stored_again: bool, recorded: dict | None = None) -> None:
    """A preview's ``row`` of a path stored as a document whose default policy is ``own`` (None: no such document --
    the sync stores a new one at the source's ``policy``, as the row says already), as the sync leaves it.

    Not ``stored_again`` (unchanged, a move as it is): the sync writes nothing of the document, so its default stays as
    it is. Stored again (a change, a move with edits or a new policy): the sync's own decision
    (``sources.services.policy_kept``, given the policy the source gave it last, ``given``, and the admin's default its
    syncs keep, ``recorded``) -- the source's policy, an admin's default kept, the two met (an admin's narrowing and
    the source's), or the item fails (:class:`sources.services.DefaultWider`: ``fail`` with the sync's reason; the
    document keeps its default and its content). ``access_level``/``groups`` are then the document's default
    after the sync, ``default_kept`` whether that is not the source's (``source_access_level``/``source_groups``).
    Who sees the row is unchanged: who may read the source's policy and see the document -- who sees its default on its
    page too."""
    if own is None:
        return
    after = own
    if stored_again:
        try:
            after, _ = policy_kept(own, given=given, policy=policy, recorded=recorded)
        except DefaultWider as exc:
            row.update(action="fail", reason=exc.message)
    if _key(*after) != _key(*policy):
        row.update(access_level=AccessLevel(after[0]).name.lower(), groups=sorted(slugs.get(g, "?") for g in after[1]),
                   default_kept=True)


def access_file_words(access_file: access.AccessFile) -> str:
    """The access file's error as an admin who may not read every level and group reads it ("" when none)."""
    return access.access_file_error_without_words(access_file) if access_file.error else ""


# ----------------------------------------------------------------------------- what an admin may see of items


@dataclass(frozen=True)
class Viewer:
    """What decides which items of a source a member may see (:func:`viewer_of`), read once per answer."""

    member: Membership | None
    reader: Reader | None
    everything: bool  # may read every level and group (``kb.selectors.reads_every_section``)


def viewer_of(member: Membership | None) -> Viewer:
    """``member``'s :class:`Viewer`: their reader and whether they may read every level and group. Read once for a
    whole answer (a page of syncs, a list of sources): two queries, not two per row."""
    if member is None:
        return Viewer(None, None, False)
    return Viewer(member, reader_for(member), reads_every_section(member))


def _visible_documents(viewer: Viewer, rows: Iterable[dict]) -> set[str]:
    """The documents named by ``rows``' records that ``viewer`` can see: one query for all of them (a folder's
    record names every document stored below it)."""
    if viewer.reader is None or viewer.everything:
        return set()
    documents = set()
    for row in rows:
        record = row.get("access")
        if isinstance(record, dict):
            documents.update(str(d) for d in (record.get("documents") or ()) if d)
            if record.get("document"):
                documents.add(str(record["document"]))
    if not documents:
        return set()
    return {str(pk) for pk in Document.objects.filter(tenant_id=viewer.member.tenant_id, pk__in=documents)
            .filter(document_visible_q(viewer.reader)).values_list("pk", flat=True)}


def _shown(viewer: Viewer, visible: set[str], rows: list[dict]) -> tuple[list[dict], int]:
    if viewer.reader is None:
        return [], len(rows)
    shown = [{k: v for k, v in row.items() if k != "access"} for row in rows
             if access.item_shown(row.get("access"), viewer.reader, everything=viewer.everything,
                                  visible_documents=visible)]
    return shown, len(rows) - len(shown)


def rows_shown(*, member: Membership | None, rows: list[dict]) -> tuple[list[dict], int]:
    """The rows of a source's items (a preview's items or errors, a sync's errors or skips) that ``member`` may see,
    each without its ``access``, and how many others there are: an admin sees an item -- its path, its action,
    policy, reason, error, the path it was renamed from -- only when :func:`sources.access.item_shown` says so (the
    policy the source gives it, the document it is stored as); the others are left out, counted (their place in
    the list would tell where their names sort). Without a member: none (fail closed)."""
    viewer = viewer_of(member)
    return _shown(viewer, _visible_documents(viewer, rows), rows)


# A sync's own error recorded before who may read it was (``SourceSync.error_access``): it may name a subfolder.
ERROR_RECORDED_BEFORE = ("the sync failed; its error was recorded before errors were checked for the paths they "
                         "name, so only an admin who may read every level and group reads it (sync again to see yours)")


def _error_shown(viewer: Viewer, visible: set[str], error: str, record, without_path: str) -> tuple[str, int]:
    """A failed listing's ``error`` as ``viewer`` may read it (its :func:`sources.services.listing_error_access`
    ``record``): itself, or ``without_path`` -- "a folder you may not read could not be listed" -- and 1 counted
    hidden. No error: ("", 0)."""
    if not error:
        return "", 0
    if record is None:
        record, without_path = dict(access.UNDECIDED), ERROR_RECORDED_BEFORE
    if viewer.reader is not None and access.item_shown(record, viewer.reader, everything=viewer.everything,
                                                       visible_documents=visible):
        return error, 0
    return without_path or ERROR_RECORDED_BEFORE, 1


def preview_shown(*, member: Membership | None, preview: dict) -> dict:
    """A preview (:func:`_preview`) as ``member`` may see it: the rows of :func:`rows_shown` (``hidden``,
    ``errors_hidden``: how many are left out), the counts of the rows shown, the access file's error without
    its words below the top clearance and every group, and a failed listing's error without the path it names to
    an admin who may not read that path (counted in ``errors_hidden``)."""
    viewer = viewer_of(member)
    failed = {"access": preview["error_access"]} if "error_access" in preview else {}
    visible = _visible_documents(viewer, [*preview.get("items", []), *preview.get("errors", []), failed])
    items, hidden = _shown(viewer, visible, preview.get("items", []))
    errors, errors_hidden = _shown(viewer, visible, preview.get("errors", []))
    shown = {k: v for k, v in preview.items() if k not in ("error_without_words", "error_access", "error_without_path")}
    if preview.get("error_without_words") and not viewer.everything:
        shown["error"] = preview["error_without_words"]
    if "error_access" in preview:
        shown["error"], error_hidden = _error_shown(viewer, visible, preview.get("error", ""),
                                                    preview["error_access"], preview.get("error_without_path", ""))
        errors_hidden += error_hidden
    return {**shown, "items": items, "counts": dict(Counter(i["action"] for i in items)), "hidden": hidden,
            "errors": errors, "errors_hidden": errors_hidden}


def sync_rows_shown(*, member: Membership | None, sync: SourceSync, viewer: Viewer | None = None) -> dict:
    """A sync's ``error`` (its failed listing's: :func:`_error_shown`), ``errors`` and ``skips`` as ``member`` may
    see them (:func:`rows_shown`), with ``errors_hidden`` (the error too, when it is not shown) and
    ``skips_hidden``."""
    return syncs_rows_shown(member=member, syncs=[sync], viewer=viewer)[sync.pk]


def syncs_rows_shown(*, member: Membership | None, syncs: Iterable[SourceSync],
                     viewer: Viewer | None = None) -> dict:
    """:func:`sync_rows_shown` of each of ``syncs`` (a page of a source's syncs), by id: the member read once
    (``viewer``, or read here) and the documents of all their rows in one query -- not a few queries per sync
    (found reviewing review 13: the list of syncs read the member and their documents again for each one)."""
    syncs = list(syncs)
    viewer = viewer or viewer_of(member)
    visible = _visible_documents(viewer, [r for s in syncs for r in (*(s.errors or ()), *(s.skips or ()),
                                                                     {"access": s.error_access})])
    found = {}
    for sync in syncs:
        errors, errors_hidden = _shown(viewer, visible, list(sync.errors or ()))
        skips, skips_hidden = _shown(viewer, visible, list(sync.skips or ()))
        # The sync's own error (a failed listing's) may name a subfolder or a page: read as its record says.
        error, error_hidden = _error_shown(viewer, visible, sync.error, sync.error_access, sync.error_without_path)
        found[sync.pk] = {"error": error, "errors": errors, "skips": skips, "errors_hidden": errors_hidden + error_hidden,
                          "skips_hidden": skips_hidden}
    return found


# ----------------------------------------------------------------------------- detached paths


def _detached_rows(source: Source, tombstones: list[SourceDetached]) -> list[dict]:
    """The rows of ``tombstones`` (detached paths of ``source``), each with what decides who sees it (``access``):
    every policy that applies to the path now or applied then (:func:`_detached_access`). Bounded whatever their
    number: the source's policies for all the paths in one pass, the documents' defaults in one query, the last
    finished sync's skips in one (only for a tombstone without a sync's record of its own)."""
    if not tombstones:
        return []
    current = source_path_policies(source, [t.path for t in tombstones])
    ids = {t.document_id for t in tombstones if t.document_id}
    defaults = {pk: _key(level, groups) for pk, level, groups in Document.objects.filter(
        tenant_id=source.tenant_id, pk__in=ids).values_list("pk", "access_level", "access_groups")} if ids else {}
    # The sync's record of each path's skip, kept on its tombstone by every sync that lists the path (attack19: read
    # from the last finished sync alone, a sync that wrote no row of the path -- a failed listing, the file gone --
    # forgot an access file's narrowing). A tombstone no sync has written one on since: the last sync's row, if any.
    paths = {t.path for t in tombstones if t.skip_access is None}
    last = []
    if paths:
        last = (SourceSync.objects.filter(source=source, status__in=(SourceSync.Status.SUCCEEDED,
                                                                     SourceSync.Status.FAILED))
                .order_by("-created_at", "-id").values_list("skips", flat=True).first()) or []
    recorded = {r["path"]: r.get("access") for r in last
                if isinstance(r, dict) and r.get("path") in paths and r.get("reason") == DETACHED}
    return [{"id": t.pk, "path": t.path, "document_id": str(t.document_id) if t.document_id else None,
             "detached_at": t.detached_at,
             "access": _detached_access(t, current=current[t.path], own=defaults.get(t.document_id),
                                        recorded=t.skip_access if t.skip_access is not None
                                        else recorded.get(t.path, ()))}
            for t in tombstones]


def _detached_access(tombstone: SourceDetached, *, current, own, recorded) -> dict:
    """What decides who sees a detached path (docs/sources.md, "Detached documents"): all of (``access.all_of``)
    the policy the source gave it when it was detached (and the detached document, to be seen), the source's policy
    for it now (``current``: :func:`sources.services.source_path_policies`; None, undecided, fails it closed), the
    record of its skip by the last sync that listed it, if one did (``recorded``: the tombstone's ``skip_access``; it
    knows the access file's narrowing), an admin's
    default the tombstone carries back to a re-attach, and, while the document is left (``own``: its default), that
    default and the one a sync would give it after a re-attach (:func:`sources.services.policy_kept`). Found in the
    nineteenth session: judged by the policy at the detach alone, a path the access map narrowed since was listed
    (and re-attached) by an admin below it, while the sync's skip rows and the preview hid it."""
    given = _key(tombstone.access_level, tombstone.access_groups)
    records = [access.item_access(given, document_id=tombstone.document_id), access.item_access(current)]
    if recorded != ():
        records.append(recorded if isinstance(recorded, dict) else dict(access.UNDECIDED))
    try:
        if tombstone.admin_default:
            admin = tombstone.admin_default
            records.append(access.item_access(_key(int(admin["level"]), [int(g) for g in admin.get("groups") or ()])))
        if own is not None:
            records.append(access.item_access(own))
            if current is not None:
                try:
                    after, _ = policy_kept(own, given=given, policy=current, recorded=tombstone.admin_default)
                    records.append(access.item_access(after))
                except DefaultWider:  # the item would fail, the document keep its default (``own``, above)
                    pass
    except (KeyError, TypeError, ValueError):  # an admin's default recorded unreadably: fail closed
        return dict(access.UNDECIDED)
    return access.all_of(records)


# A page of a source's detached paths: as the API's other lists (accounts.apis.StrictLimitOffsetPagination, whose bounds
# the API's page takes); the console's pages are this long.
DETACHED_PAGE = 50
DETACHED_PAGE_MAX = 500
DETACHED_ORDER = ("-detached_at", "-id")  # newest first: never by path (a hidden row's place would tell where it sorts)


@dataclass
class DetachedPage:
    """A page of a source's detached paths (:func:`detached_page`): the rows of the page's tombstones ``member`` may see,
    how many of the page's tombstones are left out (``hidden``), and how many the source holds (``count``: what the
    list told before pages, as its rows and ``hidden`` together)."""

    rows: list[dict]
    hidden: int
    count: int
    offset: int
    limit: int


def detached_page(*, member: Membership | None, source: Source, offset: int = 0,
                  limit: int = DETACHED_PAGE) -> DetachedPage:
    """Tombstones ``offset`` to ``offset + limit`` (``limit`` 1 to :data:`DETACHED_PAGE_MAX`) of ``source``'s detached
    paths, newest first, as ``member`` may see them (:func:`rows_shown`: every policy that applies to the path now or
    applied then, and the detached document, if it is left: :func:`_detached_access`); ``hidden``: the others of the
    page.

    Bounded, whatever the source holds: one COUNT, at most ``limit`` tombstones read and judged (their rows in the
    queries of :func:`_detached_rows` and :func:`rows_shown`, the same number for one as for the page's most). Found
    in the twentieth session: every tombstone of the source was read and judged on each request. A page is cut in
    the order the tombstones were detached -- never by path: a page of fewer rows than it holds tombstones tells where
    a hidden one is, and its place among paths would tell where its name sorts (docs/security.md, "never a row in
    place"); its place among detaches tells when it was detached, which every admin reads dated in the audit trail
    (each ``source.detach``, naming its source) and, from sync to sync, in the syncs' ``skips_hidden``."""
    limit, offset = max(1, min(limit, DETACHED_PAGE_MAX)), max(0, offset)
    tombstones = SourceDetached.objects.filter(source=source)
    count = tombstones.count()
    page = list(tombstones.order_by(*DETACHED_ORDER)[offset:offset + limit]) if offset < count else []
    rows, hidden = rows_shown(member=member, rows=_detached_rows(source, page))
    return DetachedPage(rows=rows, hidden=hidden, count=count, offset=offset, limit=limit)


def detached_get(*, member: Membership | None, source: Source, detached_id) -> SourceDetached:
    """One detached path of ``source`` that ``member`` may see; else a 404, as a missing one (its path is not told)."""
    try:
        pk = int(detached_id)
        if not 0 < pk < 2**63:
            raise ValueError
        detached = SourceDetached.objects.get(source=source, pk=pk)
    except (ValueError, TypeError, SourceDetached.DoesNotExist):
        raise NotFound("detached path not found") from None
    # As the list judges it (a re-attach asks this too: an admin who may not see it gets the same 404).
    shown, _ = rows_shown(member=member, rows=_detached_rows(source, [detached]))
    if not shown:
        raise NotFound("detached path not found")
    return detached
