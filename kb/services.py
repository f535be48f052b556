"""Writes for documents, sections and index versions.

Every service takes the tenant (or an actor inside it) explicitly. Ingestion work is
enqueued with ``transaction.on_commit``, never inside an open transaction.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.access import AccessLevel, PathNode, visible_heading_paths
from accounts.errors import ApplicationError
from accounts.models import Tenant, User
from accounts.services import groups_by_slugs
from ingestion.chunking.config import ChunkingConfig
from kb.models import Chunk, Document, IndexVersion, IngestionJob, Section

# Namespace for deterministic ids (index versions, sections, chunks).
ID_NAMESPACE = uuid.UUID("6f1c5a0e-7b9e-4c1f-9a47-0d2d3b7e5a11")


class PayloadTooLarge(ApplicationError):
    code = "payload_too_large"
    status_code = 413


# ----------------------------------------------------------------------------- index versions


def index_version_id(tenant: Tenant, config_hash: str) -> uuid.UUID:
    return uuid.uuid5(ID_NAMESPACE, f"index-version:{tenant.pk}:{config_hash}")


@transaction.atomic
def index_version_create(*, tenant: Tenant, config: ChunkingConfig, name: str = "") -> IndexVersion:
    """Create (or return the existing) version of ``config`` for ``tenant``; its id derives from the config hash."""
    config_hash = config.config_hash()
    version, _ = IndexVersion.objects.get_or_create(
        id=index_version_id(tenant, config_hash),
        defaults={"tenant": tenant, "config": config.as_dict(), "config_hash": config_hash, "name": name},
    )
    return version


@transaction.atomic
def index_version_active(*, tenant: Tenant) -> IndexVersion:
    """The tenant's active version; the default configuration becomes active when there is none."""
    version = IndexVersion.objects.filter(tenant=tenant, is_active=True).first()
    if version is not None:
        return version
    Tenant.objects.select_for_update().get(pk=tenant.pk)  # serialise concurrent first activations
    version = IndexVersion.objects.filter(tenant=tenant, is_active=True).first()
    if version is None:
        version = index_version_create(tenant=tenant, config=ChunkingConfig(), name="default")
        version.is_active = True
        version.status = IndexVersion.Status.READY
        version.activated_at = timezone.now()
        version.save(update_fields=["is_active", "status", "activated_at"])
    return version


# ----------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Upload:
    """One file to ingest."""

    content: bytes
    title: str
    content_type: str = ""
    source: str = ""
    tags: Sequence[str] = ()
    access_level: str = "internal"
    groups: Sequence[str] = ()


def _check_size(content: bytes) -> None:
    limit = settings.BULKHEAD_MAX_UPLOAD_BYTES
    if len(content) > limit:
        raise PayloadTooLarge(f"document is {len(content)} bytes; the limit is {limit} bytes")


def _resolve_policy(tenant: Tenant, level: str, groups: Iterable[str]) -> tuple[int, list[int]]:
    try:
        rank = AccessLevel.from_name(level)
    except ValueError as exc:
        raise ApplicationError(str(exc), code="unknown_access_level") from None
    return int(rank), [g.id for g in groups_by_slugs(tenant=tenant, slugs=groups)]


def _detect_content_type(upload: Upload) -> str:
    from ingestion.parsers import detect_content_type

    declared = (upload.content_type or "").split(";", 1)[0].strip().lower()
    if declared and declared not in {"application/octet-stream", "binary/octet-stream"}:
        return declared
    return detect_content_type(upload.source or upload.title, upload.content) or "application/octet-stream"


def _enqueue(job_ids: list[uuid.UUID]) -> None:
    from ingestion.tasks import enqueue_jobs

    ids = [str(j) for j in job_ids]
    transaction.on_commit(lambda: enqueue_jobs(ids))


def _new_job(*, tenant: Tenant, document: Document | None, created_by: User | None, **fields) -> IngestionJob:
    return IngestionJob.objects.create(tenant=tenant, document=document, created_by=created_by, **fields)


def _document_write(
    *, tenant: Tenant, created_by: User | None, upload: Upload, document: Document | None
) -> Document:
    """Create ``document`` (None) or give it new content; the text and chunks follow at ingestion."""
    _check_size(upload.content)
    level, group_ids = _resolve_policy(tenant, upload.access_level, upload.groups)
    if document is None:
        document = Document(tenant=tenant, created_by=created_by, source=upload.source[:1000])
    elif upload.source:
        document.source = upload.source[:1000]
    document.title = upload.title[:500] or document.title or "untitled"
    document.content_type = _detect_content_type(upload)
    document.raw = upload.content
    document.sha256 = hashlib.sha256(upload.content).hexdigest()
    document.size_bytes = len(upload.content)
    document.tags = sorted({t.strip() for t in upload.tags if t.strip()})
    document.access_level, document.access_groups = level, group_ids
    document.status, document.error = Document.Status.PENDING, ""
    document.save()
    return document


@transaction.atomic
def document_create(*, tenant: Tenant, created_by: User | None, upload: Upload) -> tuple[Document, IngestionJob]:
    """Store the raw bytes, create an ingestion job, and enqueue it after commit."""
    document = _document_write(tenant=tenant, created_by=created_by, upload=upload, document=None)
    job = _new_job(tenant=tenant, document=document, created_by=created_by)
    _enqueue([job.id])
    return document, job


@transaction.atomic
def document_replace(
    *, document: Document, created_by: User | None, upload: Upload
) -> tuple[Document, IngestionJob]:
    """New content for an existing document: a new ingestion; old chunks serve until it commits."""
    document = Document.objects.select_for_update().get(pk=document.pk)
    document = _document_write(tenant=document.tenant, created_by=created_by, upload=upload, document=document)
    job = _new_job(tenant=document.tenant, document=document, created_by=created_by)
    _enqueue([job.id])
    return document, job


@transaction.atomic
def document_delete(*, document: Document) -> None:
    """Delete a document; its sections and chunks go in the same transaction."""
    Chunk.objects.filter(document=document).delete()
    Section.objects.filter(document=document).delete()
    document.delete()


@transaction.atomic
def batch_create(
    *, tenant: Tenant, created_by: User | None, uploads: Sequence[Upload], replace_by_source: bool = True
) -> IngestionJob:
    """One batch job over many documents (the bulk CLI). A document with the same source is replaced."""
    batch = _new_job(
        tenant=tenant, document=None, created_by=created_by, kind=IngestionJob.Kind.BATCH, total=len(uploads)
    )
    children: list[uuid.UUID] = []
    for upload in uploads:
        existing = None
        if replace_by_source and upload.source:
            existing = Document.objects.select_for_update().filter(tenant=tenant, source=upload.source).first()
        document = _document_write(tenant=tenant, created_by=created_by, upload=upload, document=existing)
        children.append(_new_job(tenant=tenant, document=document, created_by=created_by, batch=batch).id)
    if not uploads:
        batch.status, batch.stage, batch.finished_at = IngestionJob.Status.SUCCEEDED, "done", timezone.now()
        batch.save(update_fields=["status", "stage", "finished_at"])
    _enqueue(children)
    return batch


# ----------------------------------------------------------------------------- permissions


def recompute_policies(sections: list[Section], document: Document) -> list[Section]:
    """Effective policy of every section: own policy, else the parent's, else the document default."""
    by_id = {s.id: s for s in sections}
    changed = []
    for section in sorted(sections, key=lambda s: s.order):  # parents come first in document order
        parent = by_id.get(section.parent_id)
        if section.own_level is not None:
            level, groups = section.own_level, sorted(section.own_groups or [])
        elif parent is not None:
            level, groups = parent.access_level, sorted(parent.access_groups)
        else:
            level, groups = document.access_level, sorted(document.access_groups)
        if (level, groups) != (section.access_level, sorted(section.access_groups)):
            section.access_level, section.access_groups = level, groups
            changed.append(section)
    return changed


def apply_policies(document: Document, *, actor: User | None = None) -> list[Section]:
    """Re-derive effective policies from the stored ones; chunks follow in this transaction.

    Chunks carry their section's policy for the SQL filter, and their embedded text (and so their
    keyword vector and embedding) carries the heading path that every reader of the section may
    read. When a change alters that path, the section's chunks are deleted here -- hidden from
    search at once, in every index version -- and rebuilt by an ingestion job after commit.
    """
    sections = list(Section.objects.select_for_update().filter(document=document).order_by("order"))
    changed = recompute_policies(sections, document)
    if changed:
        Section.objects.bulk_update(changed, ["access_level", "access_groups"])
        for section in changed:
            Chunk.objects.filter(section=section).update(
                access_level=section.access_level, access_groups=section.access_groups
            )
    paths = visible_heading_paths(
        PathNode(s.id, s.parent_id, s.title, s.access_level, tuple(s.access_groups)) for s in sections
    )
    renamed = [s for s in sections if tuple(s.heading_path) != paths[s.id]]
    if renamed:
        for section in renamed:
            section.heading_path = list(paths[section.id])
        Section.objects.bulk_update(renamed, ["heading_path"])
        _rederive_chunks(document, [s.id for s in renamed], actor=actor)
    return sections


def _rederive_chunks(document: Document, section_ids: list[uuid.UUID], *, actor: User | None) -> None:
    """Hide the chunks of ``section_ids`` now and rebuild them (new prefix, keyword vector and
    embedding) with one job per index version that had chunks of the document."""
    stale = Chunk.objects.filter(document=document, section_id__in=section_ids)
    versions = set(Chunk.objects.filter(document=document).values_list("index_version_id", flat=True).distinct())
    stale.delete()
    # The stored chunks no longer match the bytes' fingerprint: the job must not skip as unchanged.
    document.metadata = {**document.metadata, "ingested": ""}
    Document.objects.filter(pk=document.pk).update(metadata=document.metadata)
    active = IndexVersion.objects.filter(tenant_id=document.tenant_id, is_active=True).first()
    rederive = {"rederive": True}  # rebuilds stored sections under their stored policies
    jobs = [_new_job(tenant=document.tenant, document=document, created_by=actor, stats=rederive)]
    for version_id in sorted(versions, key=str):
        if active is None or version_id != active.pk:
            jobs.append(_new_job(tenant=document.tenant, document=document, created_by=actor,
                                 index_version_id=version_id, stats=rederive))
    _enqueue([job.id for job in jobs])


@transaction.atomic
def section_set_access(
    *, section: Section, access_level: str | None, groups: Sequence[str] | None, inherit: bool = False,
    actor: User | None = None,
) -> Section:
    """Override a section's own policy (or return it to inheriting); chunks follow, no re-embedding."""
    document = Document.objects.select_for_update().get(pk=section.document_id)
    section = Section.objects.select_for_update().get(pk=section.pk)
    if inherit:
        section.own_level, section.own_groups = None, None
    else:
        current_level = AccessLevel(section.access_level).label
        level, group_ids = _resolve_policy(
            document.tenant,
            access_level if access_level is not None else current_level,
            groups if groups is not None else [],
        )
        if groups is None:
            group_ids = sorted(section.access_groups)
        section.own_level, section.own_groups = level, group_ids
    section.metadata = {**section.metadata, "override": not inherit}
    section.save(update_fields=["own_level", "own_groups", "metadata"])
    apply_policies(document, actor=actor)
    Document.objects.filter(pk=document.pk).update(updated_at=timezone.now())
    return Section.objects.get(pk=section.pk)


@transaction.atomic
def document_set_access(
    *, document: Document, access_level: str, groups: Sequence[str], actor: User | None = None
) -> Document:
    """Change a document's default policy; inheriting sections and their chunks follow, no re-embedding."""
    level, group_ids = _resolve_policy(document.tenant, access_level, groups)
    document = Document.objects.select_for_update().get(pk=document.pk)
    document.access_level, document.access_groups = level, group_ids
    document.save(update_fields=["access_level", "access_groups", "updated_at"])
    apply_policies(document, actor=actor)
    return document


def job_progress(job: IngestionJob, *, done: int | None = None, total: int | None = None, stage: str | None = None):
    """Record progress with one small UPDATE (autocommit), so any client can poll it."""
    fields: dict = {"heartbeat_at": timezone.now()}
    if stage is not None:
        fields["stage"] = job.stage = stage
    if total is not None:
        fields["total"] = job.total = total
    if done is not None:
        fields["done"] = job.done = min(done, job.total)
    IngestionJob.objects.filter(pk=job.pk).update(**fields)


__all__ = [
    "PayloadTooLarge",
    "Upload",
    "batch_create",
    "document_create",
    "document_delete",
    "document_replace",
    "apply_policies",
    "document_set_access",
    "index_version_active",
    "index_version_create",
    "job_progress",
    "section_set_access",
]
