"""Index versions: create, build, activate, drop and list a tenant's versions.

A version holds a whole chunking + embedding configuration; its id derives from the
config hash. A tenant searches its *active* version; any other version is a shadow:

- **build** re-indexes every ready document into the shadow version as one resumable
  ``reindex`` job whose children are document jobs with ``index_version`` set. A
  build only ever writes the shadow version's chunks (ingestion refuses to replace a
  document's sections for a shadow version, see ``pipeline.plan.BuildSkipped``),
  so searches on the active version are untouched while it runs. Embeddings come
  from the content-hash cache wherever the embedded text is unchanged. Running
  build again resumes: documents that already have the version's chunks are
  skipped, unfinished children are queued again.
- **activate** flips the tenant's searches in one transaction, and refuses unless
  the version covers every ready document (``force`` overrides).
- **drop** deletes a non-active version with its chunks.

Chunks of a version always belong to the document's current sections: new content
replaces the sections, and that deletes every version's chunks of the old ones. So
"the version has chunks of this document" means "it is built for its content".
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Iterable, Mapping

from django.db import transaction
from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.access import readable_q
from accounts.errors import ApplicationError, Conflict, NotFound
from accounts.models import Membership, Tenant, User
from accounts.policy import Reader
from audit.models import Action
from audit.services import audit_record
from ingestion.chunking.config import ChunkingConfig
from ingestion.chunking.tokens import DEFAULT_MODEL
from kb.jobs import UNFINISHED, batch_close_if_done, enqueue_after_commit
from kb.models import EMBEDDING_DIMENSIONS, Chunk, Document, IndexVersion, IngestionJob
from kb.selectors import (
    active_index_version_forget,
    document_visible_q,
    index_version_id,
    index_version_missing_documents,
)
from kb.titles import ROOT_READ, TITLE_READ, reader_annotations, screening_mode, shown_title_of, shown_title_sql

NOT_FOUND_MESSAGE = "Not found."
CONFIG_FIELDS = {f.name: f.type for f in dataclasses.fields(ChunkingConfig)}


# ----------------------------------------------------------------------------- configuration


def _parse_value(key: str, raw: str):
    kind = CONFIG_FIELDS[key]
    try:
        if kind == "int":
            return int(raw)
        if kind == "float":
            return float(raw)
        if kind == "bool":
            if raw.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(raw)
            return raw.lower() in ("true", "1", "yes")
    except ValueError:
        raise ApplicationError(f"{key} must be of type {kind}, got {raw!r}", code="invalid_config") from None
    return raw


def index_version_config(*, base: Mapping | None = None, settings: Iterable[str] = ()) -> ChunkingConfig:
    """A validated config: the defaults, updated by ``base`` (a JSON object), then by ``key=value`` strings.

    Raises ApplicationError naming the bad key or value.
    """
    data = dict(ChunkingConfig().as_dict())
    unknown = sorted(set(base or {}) - set(CONFIG_FIELDS))
    if unknown:
        raise ApplicationError(f"unknown config keys: {', '.join(unknown)}", code="invalid_config")
    data.update(base or {})
    for item in settings:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or key not in CONFIG_FIELDS:
            known = ", ".join(CONFIG_FIELDS)
            raise ApplicationError(f"expected key=value with a key from {known}; got {item!r}", code="invalid_config")
        data[key] = _parse_value(key, raw.strip())
    try:
        config = ChunkingConfig.from_dict(data)
    except (TypeError, ValueError) as exc:
        raise ApplicationError(f"invalid chunking config: {exc}", code="invalid_config") from None
    # One embedding model ships with the product and the vector column has one width: a config
    # naming another would build a version that can never be searched with the query embedder.
    if config.model != DEFAULT_MODEL:
        raise ApplicationError(f"model must be {DEFAULT_MODEL!r} (the deployed embedding model)", code="invalid_config")
    if config.embedding_dimensions != EMBEDDING_DIMENSIONS:
        raise ApplicationError(
            f"embedding_dimensions must be {EMBEDDING_DIMENSIONS} (the stored vector width)", code="invalid_config"
        )
    return config


def config_summary(config: Mapping) -> str:
    """One line for tables: the settings that differ between typical versions."""
    c = ChunkingConfig.from_dict(dict(config)) if config else ChunkingConfig()
    return (
        f"{c.strategy} target={c.target_tokens} overlap={c.overlap:g} max={c.max_tokens} prefix={c.prefix}"
        f"{' semantic' if c.semantic_split else ''} {c.model.rsplit('/', 1)[-1]}/{c.embedding_dimensions}d"
        f"{f' pieces={c.piece_weight:g}' if c.piece_weight else ''}"
    )


# ----------------------------------------------------------------------------- reads


def index_version_list(*, tenant: Tenant, reader: Reader | None, with_counts: bool = True) -> QuerySet[IndexVersion]:
    """The tenant's versions, active first then newest (then by id: each once across the API's pages), with ``chunk_count`` and ``document_count``
    (``with_counts=False`` leaves them out, for a list of names).

    The counts are of the chunks ``reader`` may read, and the documents they belong to -- a member's view,
    an admin's included (found attacking index versions, 2026-12-04: counted over every chunk, the console's
    and the API's versions showed an internal admin a restricted document's existence and its size in chunks,
    as the evaluation's figures once did). ``reader=None`` counts every chunk of the tenant: the command line,
    run by whoever holds the database."""
    if not with_counts:
        return IndexVersion.objects.filter(tenant=tenant).order_by("-is_active", "-created_at", "-id")
    chunks = Chunk.objects.filter(index_version=OuterRef("pk"))
    if reader is not None:
        chunks = chunks.filter(readable_q(reader))
    chunks = chunks.order_by().values("index_version")
    counted = chunks.annotate(n=Count("pk")).values("n")
    documents = chunks.annotate(n=Count("document_id", distinct=True)).values("n")
    return (
        IndexVersion.objects.filter(tenant=tenant)
        .annotate(
            chunk_count=Coalesce(Subquery(counted, output_field=IntegerField()), Value(0)),
            document_count=Coalesce(Subquery(documents, output_field=IntegerField()), Value(0)),
        )
        .order_by("-is_active", "-created_at", "-id")
    )


def index_version_get(*, tenant: Tenant, ref: str) -> IndexVersion:
    """A version of ``tenant`` by full uuid or by short id (a prefix of its config hash, normally 12 hex).

    Anything else -- another tenant's, unknown, malformed -- is NotFound with one message.
    """
    ref = str(ref).strip().lower()
    versions = IndexVersion.objects.filter(tenant=tenant)
    try:
        full = uuid.UUID(ref)
    except ValueError:
        full = None
    found = None
    if full is not None:
        found = versions.filter(pk=full).first()
    elif len(ref) >= 6 and all(ch in "0123456789abcdef" for ch in ref):
        matches = list(versions.filter(config_hash__startswith=ref)[:2])
        if len(matches) > 1:
            raise ApplicationError(f"short id {ref!r} is ambiguous; give more of it", code="ambiguous_version")
        found = matches[0] if matches else None
    if found is None:
        raise NotFound(NOT_FOUND_MESSAGE)
    return found


def index_version_build_job(*, version: IndexVersion) -> IngestionJob | None:
    """The version's latest build job, if it was ever built (of two made at one time, the newest by id, as
    :func:`index_version_build` picks the build it resumes)."""
    return (
        IngestionJob.objects.filter(index_version=version, kind=IngestionJob.Kind.REINDEX)
        .order_by("-created_at", "-id")
        .first()
    )


def index_version_build_report(*, job: IngestionJob, reader: Reader | None = None) -> dict:
    """Progress and outcome of a build job: done/total, and which documents were skipped or failed, in the order the
    build made their jobs (read in no order, the lists followed the jobs' last update); their titles as ``reader`` is
    shown them (``kb.titles.reader_title``; none: the stored titles, "untitled" for a content's)."""
    children = IngestionJob.objects.filter(batch=job).select_related("document").order_by("created_at", "id")
    if reader is not None:
        children = children.annotate(**{f"document_{k}": v for k, v in reader_annotations(reader, "document__").items()})
        children = list(children)
        for child in children:
            for key in (TITLE_READ, ROOT_READ):
                setattr(child.document, key, getattr(child, f"document_{key}"))
    skipped = [
        {"document_id": str(c.document_id), "title": shown_title_of(c.document), "reason": c.stats["skipped"]}
        for c in children if "skipped" in (c.stats or {})
    ]
    failed = [
        {"document_id": str(c.document_id), "job_id": str(c.pk), "title": shown_title_of(c.document), "error": c.error}
        for c in children if c.status == IngestionJob.Status.FAILED
    ]
    return {
        "job_id": str(job.id), "status": job.status, "done": job.done, "total": job.total,
        "skipped": skipped, "failed": failed, "left_out": job.stats.get("left_out", 0),
    }


# ----------------------------------------------------------------------------- writes


@transaction.atomic
def _get_or_create(*, tenant: Tenant, config: ChunkingConfig, name: str = "") -> IndexVersion:
    """Create (or return the existing) version of ``config`` for ``tenant``; its id derives from the config hash."""
    config_hash = config.config_hash()
    version, _ = IndexVersion.objects.get_or_create(
        id=index_version_id(tenant.pk, config_hash),
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
        version = _get_or_create(tenant=tenant, config=ChunkingConfig(), name="default")
        version.is_active = True
        version.status = IndexVersion.Status.READY
        version.activated_at = timezone.now()
        version.save(update_fields=["is_active", "status", "activated_at"])
        active_index_version_forget(tenant_id=tenant.pk)
    return version


def index_version_create(*, tenant: Tenant, config: ChunkingConfig, name: str = "") -> tuple[IndexVersion, bool]:
    """The shadow version of ``config`` (created ``empty``) and whether it is new.

    The same config in the same tenant is the same version (id = uuid5 of tenant and hash),
    so creating twice returns the first one.
    """
    existed = IndexVersion.objects.filter(tenant=tenant, config_hash=config.config_hash()).exists()
    version = _get_or_create(tenant=tenant, config=config, name=name[:100])
    return version, not existed


@transaction.atomic
def index_version_build(*, version: IndexVersion, created_by: User | None = None) -> IngestionJob:
    """Start or resume the build of ``version``; returns its ``reindex`` job (poll ``done``/``total``).

    Resuming (an unfinished build job exists, e.g. its worker was killed): children whose
    document already has the version's chunks are closed as done, the other unfinished
    ones go back to ``queued`` and are sent again; ready documents without a child get one.
    Otherwise a new job covers every ready document that lacks the version's chunks.
    Documents that are not ready (pending, processing, failed) are left out and counted.
    """
    version = IndexVersion.objects.select_for_update().get(pk=version.pk)
    built = set(
        Chunk.objects.filter(index_version=version).order_by().values_list("document_id", flat=True).distinct()
    )
    documents = Document.objects.filter(tenant_id=version.tenant_id)
    ready = list(documents.filter(status=Document.Status.READY).order_by("created_at", "id").values_list("id", flat=True))
    left_out = documents.exclude(status=Document.Status.READY).count()

    job = (
        IngestionJob.objects.select_for_update()
        .filter(index_version=version, kind=IngestionJob.Kind.REINDEX, status__in=UNFINISHED)
        .order_by("-created_at", "-id")
        .first()
    )
    if job is None:
        job = IngestionJob.objects.create(
            tenant_id=version.tenant_id, kind=IngestionJob.Kind.REINDEX, cause=IngestionJob.Cause.INDEX_BUILD,
            index_version=version, created_by=created_by, status=IngestionJob.Status.RUNNING, stage="building",
            started_at=timezone.now(), heartbeat_at=timezone.now(),
        )
    send: list[str] = []
    covered: set[uuid.UUID] = set()
    already = 0
    for child in job.children.select_for_update().filter(status__in=UNFINISHED):
        covered.add(child.document_id)
        if child.document_id in built:
            already += 1
            child.status, child.stage, child.finished_at = IngestionJob.Status.SUCCEEDED, "done", timezone.now()
            child.stats = {**child.stats, "already_built": True}
            child.save(update_fields=["status", "stage", "finished_at", "stats"])
        else:
            # Back to queued so the new task may claim it at once, without waiting out the dead holder's lease.
            child.status, child.stage, child.heartbeat_at = IngestionJob.Status.QUEUED, "queued", timezone.now()
            child.save(update_fields=["status", "stage", "heartbeat_at"])
            send.append(str(child.id))
    new_children = [
        IngestionJob(
            tenant_id=version.tenant_id, kind=IngestionJob.Kind.DOCUMENT, cause=IngestionJob.Cause.INDEX_BUILD,
            document_id=document_id, batch=job, index_version=version, created_by=created_by,
        )
        for document_id in ready
        if document_id not in built and document_id not in covered
    ]
    IngestionJob.objects.bulk_create(new_children)
    send += [str(c.id) for c in new_children]
    job.total += len(new_children)
    job.done += already
    job.stats = {**job.stats, "left_out": left_out}
    job.save(update_fields=["total", "done", "stats"])
    if not version.is_active:
        version.status = IndexVersion.Status.BUILDING
        version.save(update_fields=["status"])
    batch_close_if_done(job)
    if send:
        enqueue_after_commit(send)
    return job


def index_version_missing_conflict(*, version: IndexVersion, reader: Reader | None = None) -> Conflict | None:
    """The Conflict that refuses activating ``version`` while it lacks documents (None when it lacks none).

    With a ``reader`` (the acting member, through the API) the message names only documents
    that reader may see -- an admin is not above the access rule, and a title is document
    content -- and counts the others ("and 2 documents you cannot read"). Without one (the
    command line, run by whoever holds the database) it names any five.
    """
    missing = index_version_missing_documents(version=version)
    # In the order of the titles as shown: a held one sorts as its placeholder, never by its stored words.
    # As the reader is shown them (kb.titles.reader_title): a content title they may not read sorts as "untitled".
    named = (missing.annotate(title_shown=shown_title_sql(screening_mode(tenant_id=version.tenant_id), reader=reader),
                              **(reader_annotations(reader) if reader is not None else {}))
             .order_by("title_shown", "id").only("tenant_id", "title", "content_title", "title_section", "metadata"))
    if reader is not None:
        total = missing.count()
        if not total:
            return None
        visible = missing.filter(document_visible_q(reader))
        titles = [shown_title_of(d) for d in named.filter(document_visible_q(reader))[:6]]
        hidden = total - visible.count()
    else:
        titles = [shown_title_of(d) for d in named[:6]]
        if not titles:
            return None
        hidden = 0
    parts = [repr(t) for t in titles[:5]] + (["..."] if len(titles) > 5 else [])
    if hidden:
        parts.append(f"{'and ' if parts else ''}{hidden} document{'s' if hidden != 1 else ''} you cannot read")
    return Conflict(
        f"the version is not built for every ready document (missing: {', '.join(parts)}); run build first "
        "(or force)",
        details={"missing": titles[:5], "not_readable": hidden},
    )


@transaction.atomic
def index_version_activate(
    *, version: IndexVersion, force: bool = False, reader: Reader | None = None, actor: Membership | None = None
) -> IndexVersion:
    """Make ``version`` the tenant's active version, atomically (searches see the old or the new one).

    Refuses (Conflict) while a build of it runs, or when some ready document has no
    chunks in it -- searches would silently lose that document -- unless ``force``.
    The refusal names only documents ``reader`` may see (see :func:`index_version_missing_conflict`).
    ``actor``: the admin activating it, for the audit trail (None: an internal caller).
    """
    Tenant.objects.select_for_update().get(pk=version.tenant_id)  # serialise with index_version_active
    version = IndexVersion.objects.select_for_update().get(pk=version.pk)
    if version.is_active:
        return version
    if not force:
        if IngestionJob.objects.filter(
            index_version=version, kind=IngestionJob.Kind.REINDEX, status__in=UNFINISHED
        ).exists():
            raise Conflict("the version is still building; wait for the build to finish (or force)")
        conflict = index_version_missing_conflict(version=version, reader=reader)
        if conflict is not None:
            raise conflict
    previous = IndexVersion.objects.filter(tenant_id=version.tenant_id, is_active=True).first()
    IndexVersion.objects.filter(tenant_id=version.tenant_id, is_active=True).update(is_active=False)
    version.is_active = True
    version.activated_at = timezone.now()
    if not index_version_missing_documents(version=version).exists():
        version.status = IndexVersion.Status.READY
    version.save(update_fields=["is_active", "activated_at", "status"])
    active_index_version_forget(tenant_id=version.tenant_id)
    audit_record(action=Action.INDEX_VERSION_ACTIVATE, actor=actor, tenant_id=version.tenant_id,
                 target_type="index_version", target_id=version.pk,
                 details={"before": {"active": str(previous.pk) if previous else None},
                          "after": {"active": str(version.pk)}, "forced": force})
    return version


@transaction.atomic
def index_version_drop(*, version: IndexVersion, force: bool = False) -> int:
    """Delete a non-active version, its chunks and its build jobs; returns the number of chunks deleted.

    Refuses (Conflict) the active version, and a version whose build is running unless ``force``.
    """
    version = IndexVersion.objects.select_for_update().get(pk=version.pk)
    if version.is_active:
        raise Conflict("the active version cannot be dropped; activate another version first")
    running = IngestionJob.objects.filter(index_version=version, kind=IngestionJob.Kind.REINDEX, status__in=UNFINISHED)
    if running.exists() and not force:
        raise Conflict("the version is still building; wait for the build to finish (or force)")
    deleted, _ = Chunk.objects.filter(index_version=version).delete()
    version.delete()  # its build jobs (and their children) go with it
    return deleted


def version_as_dict(version: IndexVersion) -> dict:
    """Plain-JSON form of a listed version (``kb_index list --json``)."""
    return {
        "id": str(version.id), "short_id": version.short_id, "name": version.name, "status": version.status,
        "is_active": version.is_active, "config": version.config, "summary": config_summary(version.config),
        "chunk_count": getattr(version, "chunk_count", None), "document_count": getattr(version, "document_count", None),
        "created_at": version.created_at.isoformat(),
        "activated_at": version.activated_at.isoformat() if version.activated_at else None,
    }


def config_from_json_file(path: str) -> dict:
    """A config object from a JSON file (``--config``); errors name the file."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ApplicationError(f"cannot read config {path}: {exc}", code="invalid_config") from None
    if not isinstance(data, dict):
        raise ApplicationError(f"config {path} must hold a JSON object", code="invalid_config")
    return data
