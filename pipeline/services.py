"""The ingestion pipeline: parse -> chunk -> embed -> store, for one or many document jobs.

Jobs are claimed under a row lock with a status guard, so a re-delivered task or a
second worker is harmless; every write that readers can see happens in one
transaction per document (the old chunks serve until the new set commits).
Errors that will not go away on retry (a corrupt file, a bad access marker) end
the job as ``failed``; database/broker hiccups propagate for the task to retry.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction
from django.utils import timezone

from accounts.errors import ApplicationError
from accounts.models import Group, Membership, Role
from accounts.policy import DocumentAccess, Policy, can_read
from accounts.selectors import reader_for
from accounts.tenancy import owner_path, tenant_activate
from ingestion import costs, limits
from ingestion.chunking.chunker import Chunk as PlannedChunk
from ingestion.chunking.config import ChunkingConfig
from ingestion.screening import screen_chunks
from ingestion.structure import ParsedDocument, ParseError, resolve_policies, restrict_context
from kb.embedder import embedder, embedder_name
from kb.index_versions import index_version_active
from kb.jobs import INTERACTIVE, enqueue_jobs, job_finish, job_move_to_bulk, job_progress, job_tenant_ids
from kb.models import (
    ID_NAMESPACE,
    Chunk,
    ChunkReview,
    Document,
    EmbeddingCacheEntry,
    IndexVersion,
    IngestionJob,
    Section,
)
from kb.services import apply_policies, document_access_of, document_title_follow, recompute_policies

logger = logging.getLogger(__name__)

EMBED_BATCH = 256  # texts per model call between progress updates; bigger calls sort by length better


class TerminalIngestionError(Exception):
    """The document itself is the problem; retrying cannot help."""


class PolicyChanged(Exception):
    """A policy the plan was built on changed before its chunks were stored: plan again.

    Chunks take their policy (and their embedded heading prefix) from the section rows as
    they are when the chunks are stored, never from a copy read earlier."""


class OverLane(Exception):
    """The document costs more than its lane (or the preview) takes: over the lane's cost budget
    (``ingestion.costs``) or its share of time. The small-upload lane hands the job to the bulk lane;
    the preview answers "too costly to preview"."""


class BuildSkipped(Exception):
    """A shadow-version build cannot use the document's stored sections (its content changed and
    is not re-ingested yet). Replacing the sections would delete the active version's chunks, so
    the document is skipped and reported; the build is rerun after its ingestion."""


def _is_shadow(job: IngestionJob) -> bool:
    """A job that builds an explicitly chosen, non-active version (``kb_index build``)."""
    return job.index_version_id is not None and not IndexVersion.objects.filter(
        pk=job.index_version_id, is_active=True
    ).exists()


# ----------------------------------------------------------------------------- claiming


def _lease() -> timedelta:
    return timedelta(seconds=settings.BULKHEAD_JOB_LEASE_SECONDS)


def job_claim(job_id: str | uuid.UUID, *, task_id: str | None) -> IngestionJob | None:
    """Take a job for this task, or None when it is finished or alive in another worker.

    A redelivery of the same task (same ``task_id``) may take it back at once; any
    other task only once the holder's heartbeat is older than the lease.
    """
    with transaction.atomic():
        job = IngestionJob.objects.select_for_update().filter(pk=job_id).first()
        if job is None or job.status in (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED):
            return None
        if job.status == IngestionJob.Status.RUNNING:
            same_task = task_id is not None and job.stats.get("task_id") == task_id
            stale = job.heartbeat_at is None or timezone.now() - job.heartbeat_at > _lease()
            if not (same_task or stale):
                return None
        now = timezone.now()
        job.status = IngestionJob.Status.RUNNING
        job.stage = "parsing"
        job.attempts += 1
        job.started_at = job.started_at or now
        job.heartbeat_at = now
        job.stats = {**job.stats, "task_id": task_id}
        job.save(update_fields=["status", "stage", "attempts", "started_at", "heartbeat_at", "stats"])
        if job.document_id and not _is_shadow(job):  # a shadow build leaves the document's own state alone
            Document.objects.filter(pk=job.document_id, status=Document.Status.PENDING).update(
                status=Document.Status.PROCESSING
            )
        return job


def _fail(job: IngestionJob, message: str) -> None:
    if job_finish(job, error=message) and job.document_id and not _is_shadow(job):
        # The previous chunks (if any) stay untouched and keep serving.
        Document.objects.filter(pk=job.document_id).update(status=Document.Status.FAILED, error=message[:4000])
    logger.info("ingestion job %s failed: %s", job.pk, message)


def _skip(job: IngestionJob, reason: str) -> None:
    # Finished (not failed): nothing is wrong with the document; the build reports it as skipped.
    job.stats = {**job.stats, "skipped": reason}
    job_finish(job)
    logger.info("index build job %s skipped document %s: %s", job.pk, job.document_id, reason)


# ----------------------------------------------------------------------------- planning


@dataclass
class Plan:
    """What :func:`plan_content` derived for one job: the parsed file, the section rows (stored ones
    reused, or new ones), the chunks (or the preview's counts), and the policy snapshot that
    ``_store`` re-checks under row locks."""

    job: IngestionJob
    document: Document
    version: IndexVersion
    parsed: ParsedDocument
    section_rows: list[Section]
    chunks: list[PlannedChunk]
    reuse_sections: bool
    shadow: bool = False
    snapshot: tuple = ()
    vectors: dict[str, list[float]] = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    counts: limits.ChunkCounts | None = None  # the preview's plan: counts instead of chunks
    access: DocumentAccess | None = None  # the access view the rows, paths and context were derived from
    screenings: list[dict] = field(default_factory=list)  # one verdict per chunk (``Screening.as_dict()``)


def _group_ids(tenant_id: int, parsed: ParsedDocument, default: Policy) -> dict[str, int]:
    """Ids of every group a policy of this document names: markers and the upload's default."""
    used = parsed.groups_used() | set(default.groups)
    found = dict(Group.objects.filter(tenant_id=tenant_id, slug__in=used).values_list("slug", "id"))
    missing = sorted(used - set(found))
    if missing:
        where = ""
        for section in parsed.sections:
            if section.policy and set(section.policy.groups) & set(missing) and section.line:
                where = f" (line {section.line})"
                break
        raise TerminalIngestionError(f"unknown group{'s' if len(missing) > 1 else ''} {', '.join(missing)}{where}")
    return found


def _section_id(document: Document, key: str) -> uuid.UUID:
    """Deterministic for the same bytes, but keyed with the server's secret: a plain hash of the raw
    bytes would let a reader confirm guesses of the hidden parts of a document offline."""
    keyed = hmac.new(settings.SECRET_KEY.encode(), document.sha256.encode(), hashlib.sha256).hexdigest()
    return uuid.uuid5(ID_NAMESPACE, f"section:{document.pk}:{keyed}:{key}")


def _chunk_id(version: IndexVersion, document: Document, chunk: PlannedChunk) -> uuid.UUID:
    return uuid.uuid5(ID_NAMESPACE, f"chunk:{version.pk}:{document.pk}:{chunk.ordinal}:{chunk.content_hash}")


def _upload_default(document: Document) -> Policy:
    # Group ids are mapped back to slugs so the parser-side policy model stays id-free.
    slugs = tuple(Group.objects.filter(id__in=document.access_groups).values_list("slug", flat=True))
    if len(slugs) != len(set(document.access_groups)):
        raise TerminalIngestionError("the document's default groups no longer exist")
    return Policy(document.access_level, slugs)


@dataclass(frozen=True)
class PlanBudget:
    """What planning one document may take: each of its two children (parse, chunking) gets ``memory_bytes``
    and ``seconds``, and no more than is left until ``deadline`` (``time.monotonic()``; the preview's web
    budget, shared by the files of a request); the parse is priced against ``pricing``. With ``lane``,
    going over the lane's cost budget or time is :class:`OverLane` instead of a failure; ``counts_only``
    (the preview) counts chunks and tokens in the child and brings back no chunk."""

    memory_bytes: int
    seconds: float
    pricing: costs.Pricing = field(default_factory=costs.Pricing)
    lane: str = ""  # who the budget is of, in messages: "the small-upload lane", "the preview"
    deadline: float | None = None
    counts_only: bool = False
    nice: int = 0  # the children's CPU priority, this much below their server's

    def step(self) -> dict:
        """The memory, time and CPU priority of the next child."""
        seconds = float(self.seconds)
        if self.deadline is not None:
            seconds = min(seconds, self.deadline - time.monotonic())
            if seconds <= 0.05:
                raise OverLane(f"it did not fit in {self.lane}'s {self.seconds:g} s")
        return {"memory_bytes": self.memory_bytes, "seconds": seconds, "nice": self.nice}


# Off the small-upload lane (the bulk lane, a command) parse and chunking children run at the lowest CPU
# priority: on a machine shared with the small-upload lane's worker and the web server, a bulk document
# takes the CPU they leave (measured in docs/benchmarks.md, "costly-document").
BULK_NICE = 19


def plan_budget(lane: str | None = None) -> PlanBudget:
    """The budget of a document's plan on ``lane``: the small-upload lane (``kb.jobs.INTERACTIVE``) prices
    against the lane's cost budget and gives each step ``BULKHEAD_PARSE_SECONDS_SMALL``; anything else
    (the bulk lane, a command) against a document's, with ``BULKHEAD_PARSE_SECONDS``."""
    memory = settings.BULKHEAD_PARSE_MEMORY_MB * 1024 * 1024
    if lane == INTERACTIVE:
        return PlanBudget(
            memory_bytes=memory, seconds=min(settings.BULKHEAD_PARSE_SECONDS_SMALL, settings.BULKHEAD_PARSE_SECONDS),
            pricing=costs.Pricing(lane=lane_budget()), lane="the small-upload lane",
        )
    return PlanBudget(memory_bytes=memory, seconds=settings.BULKHEAD_PARSE_SECONDS,
                      nice=BULK_NICE if lane is not None else 0)


def lane_budget() -> costs.Budget:
    """The small-upload lane's cost budget (the preview's too), with this deployment's small-upload size."""
    return costs.lane_budget(input_bytes=settings.BULKHEAD_BULK_DOCUMENT_BYTES)


def _stored_effective(parsed: ParsedDocument, existing: dict[str, Section]) -> None:
    """Fill each parsed section's effective policy from its stored row (groups by id)."""
    for section in parsed.sections:
        row = existing[section.key]
        section.effective = Policy(row.access_level, row.access_groups)


def _groups_by_id(parsed: ParsedDocument, group_ids: dict[str, int]) -> None:
    """The file's resolved policies with their groups named by id: from here on every policy of the
    plan names groups as the database does (the markers name them by slug, and messages about them
    are made before this)."""

    def by_id(policy: Policy | None) -> Policy | None:
        return None if policy is None else Policy(policy.rank, [group_ids[g] for g in policy.groups])

    parsed.default_policy = by_id(parsed.default_policy)
    for section in parsed.sections:
        section.policy, section.effective = by_id(section.policy), by_id(section.effective)


def _policy_snapshot(document: Document, rows: list[Section] | None, *, overrides: tuple = ()) -> tuple:
    """What a plan's policies were derived from: the document default, every stored section's
    effective policy when they are reused, and the API overrides carried over to new content."""
    sections = tuple(sorted((r.key, r.access_level, tuple(sorted(r.access_groups))) for r in rows or ()))
    return (document.access_level, tuple(sorted(document.access_groups)), sections, overrides)


def _overrides(existing: dict[str, Section]) -> tuple:
    return tuple(sorted(
        (r.key, r.own_level, tuple(sorted(r.own_groups or ())))
        for r in existing.values() if (r.metadata or {}).get("override")
    ))


def _title_chains(rows) -> dict:
    """Each section's titles from the root down (itself included) and its kind: how a section of new
    content is recognised as the same section as one of the old content."""
    by_id = {r.id: r for r in rows}
    chains = {}
    for row in rows:
        titles, node = [], row
        while node is not None:
            titles.append(node.title)
            node = by_id.get(node.parent_id)
        chains[row.id] = (tuple(reversed(titles)), row.kind)
    return chains


def _carry_overrides(rows: list[Section], existing: dict[str, Section]) -> None:
    """Give each new section the API policy of the old section with the same headings and kind.

    An override that matches no single new section fails the job rather than being dropped: the
    policy an admin set must never silently disappear with an edit of the text."""
    overrides = [r for r in existing.values() if (r.metadata or {}).get("override")]
    if not overrides:
        return
    old_chains = _title_chains(list(existing.values()))
    candidates: dict[tuple, list[Section]] = {}
    for row_id, chain in _title_chains(rows).items():
        candidates.setdefault(chain, []).append(next(r for r in rows if r.id == row_id))
    for override in overrides:
        matches = candidates.get(old_chains[override.id], [])
        if len(matches) != 1:
            title = " > ".join(t for t in old_chains[override.id][0] if t) or "(the document)"
            raise TerminalIngestionError(
                f"the section {title!r} has an access policy set through the API, and "
                f"{'no section' if not matches else 'more than one section'} of the new content has the same "
                "headings: return it to inheriting (PATCH the section with inherit: true), or replace the content "
                "keeping that heading"
            )
        target = matches[0]
        target.own_level, target.own_groups = override.own_level, list(override.own_groups or [])
        target.metadata = {**target.metadata, "override": True}


def _new_section_rows(document: Document, parsed: ParsedDocument) -> list[Section]:
    """Section rows for new content, with the file's policies (resolved, groups by id)."""
    ids = {s.key: _section_id(document, s.key) for s in parsed.sections}
    rows = []
    for order, section in enumerate(parsed.sections):
        # The file's own default (front matter) is the root's own policy, so that a later
        # re-derivation from the stored rows keeps it instead of falling back to the upload's.
        own = section.policy or (parsed.default_policy if section.parent is None else None)
        rows.append(
            Section(
                id=ids[section.key], tenant_id=document.tenant_id, document=document,
                parent_id=ids.get(section.parent) if section.parent is not None else None,
                key=section.key, order=order, depth=section.depth, title=section.title[:1000],
                heading_path=[], kind=section.kind, start=section.start, end=section.end,
                body_spans=[[b.start, b.end] for b in section.blocks],
                own_level=int(own.rank) if own else None,
                own_groups=list(own.groups) if own else None,
                access_level=int(section.effective.rank),
                access_groups=list(section.effective.groups),
                metadata=_jsonable(section.metadata),
                hidden_chars_removed=section.hidden_chars_removed,
                hidden_text_flags=list(section.hidden_text_flags),
            )
        )
    return rows


def _plan(job: IngestionJob, lane: str | None = None) -> Plan:
    document = Document.objects.get(pk=job.document_id)
    version = job.index_version or index_version_active(tenant=document.tenant)
    return plan_content(job, document, version, budget=plan_budget(lane))


def _over_lane(exc: ParseError, budget: PlanBudget) -> OverLane | None:
    """What a refusal of a step means on ``budget``'s lane: :class:`OverLane` when it is the lane's own
    (its cost budget, its share of time), None when any lane would refuse it."""
    if not budget.lane:
        return None
    if isinstance(exc, costs.OverLaneBudget):
        return OverLane(str(exc))
    if isinstance(exc, limits.OverTimeLimit):
        return OverLane(f"it did not fit in {budget.lane}'s {budget.seconds:g} s")
    return None


def plan_content(job: IngestionJob, document: Document, version: IndexVersion, *,
                 budget: PlanBudget | None = None) -> Plan:
    """Parse, resolve policies, derive heading paths and chunk ``document`` for ``version``: reads only.

    Ingestion plans every job with it; ``pipeline.preview`` runs it on an unsaved document and job
    (nothing stored, so it reuses nothing), so a preview is the plan ingestion would make. Raises
    :class:`OverLane` when the document costs more than ``budget``'s lane takes."""
    budget = budget or plan_budget()
    config = ChunkingConfig.from_dict(version.config)
    default = _upload_default(document)
    try:
        parsed = limits.parse_limited(
            bytes(document.raw), content_type=document.content_type, filename=document.source or None,
            pricing=budget.pricing, **budget.step(),
        )
        group_ids = _group_ids(document.tenant_id, parsed, default)
    except ParseError as exc:
        raise _over_lane(exc, budget) or TerminalIngestionError(str(exc)) from None
    existing = {s.key: s for s in Section.objects.filter(document_id=document.pk)}  # none for an unsaved one
    reuse = bool(existing) and document.text == parsed.text and all(
        _section_id(document, s.key) == getattr(existing.get(s.key), "id", None) for s in parsed.sections
    )
    shadow = _is_shadow(job)
    if shadow and not reuse:
        raise BuildSkipped("the document's content changed and is not re-ingested yet; rebuild after its ingestion")
    try:
        resolve_policies(parsed, default)
    except ParseError as exc:
        # An upload is checked against its own default. A build or a re-derivation of stored sections
        # keeps their stored policies: the markers were checked against the default they were stored
        # under, and only the API (with its own checks) changed them since.
        if not (reuse and (shadow or job.stats.get("rederive"))):
            raise TerminalIngestionError(str(exc)) from None
        _stored_effective(parsed, existing)
    else:
        _groups_by_id(parsed, group_ids)
    if reuse:
        # The stored policies (markers and API overrides) win over the file's markers for stored sections:
        # chunk policies and embedded heading prefixes both come from them, re-derived under the
        # document's current default.
        rows = [existing[s.key] for s in parsed.sections]
    else:
        rows = _new_section_rows(document, parsed)
        if existing:
            # New content: policies set through the API on the old sections carry over to the new ones.
            _carry_overrides(rows, existing)
    # The document's access view (kb.services.document_access_of), the one derivation: effective
    # policies; each heading path without the titles of ancestors that some reader of the section
    # may not read, so neither a returned path nor an embedded prefix tells them anything; the same
    # for context taken from other sections (a module's imports, an enclosing class's signature).
    access = document_access_of(rows, document, titles={row.id: s.title for row, s in zip(rows, parsed.sections, strict=True)})
    recompute_policies(rows, document, access=access)
    for row, section in zip(rows, parsed.sections, strict=True):
        section.heading_path = access.heading_paths[row.id]
    restrict_context(parsed, {row.key: access.effective[row.id] for row in rows})
    if not reuse:
        for row, section in zip(rows, parsed.sections, strict=True):
            row.heading_path = list(section.heading_path)
    snapshot = _policy_snapshot(document, rows if reuse else None, overrides=_overrides(existing) if not reuse else ())
    # The model is loaded only when the version asks for semantic splitting (never for counts only).
    counts = None
    try:
        if budget.counts_only:
            counts = limits.chunk_counts_limited(parsed, config, **budget.step())
            chunks = []
        else:
            step = budget.step()
            chunks = limits.chunk_limited(parsed, config, embed=embedder().embed if config.semantic_split else None,
                                          **step)
    except ParseError as exc:  # over the memory or time budget
        raise _over_lane(exc, budget) or TerminalIngestionError(str(exc)) from None
    made = counts.total if counts is not None else len(chunks)
    small = len(document.raw or b"") <= settings.BULKHEAD_BULK_DOCUMENT_BYTES
    limit = settings.BULKHEAD_MAX_CHUNKS_SMALL if small else settings.BULKHEAD_MAX_CHUNKS
    if made > limit:
        raise TerminalIngestionError(
            f"the document makes {made:,} chunks, more than the {limit:,} a"
            f"{' small' if small else ''} document may make: split it into several documents")
    return Plan(job, document, version, parsed, rows, chunks, reuse, shadow, snapshot=snapshot, counts=counts,
                access=access)


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


# ----------------------------------------------------------------------------- embedding


_Scope = tuple  # (tenant id, access level, sorted group ids): where a cached vector may be reused


def _chunk_scopes(plan: Plan) -> dict[str, _Scope]:
    """Each section key's cache scope: the tenant and the section's effective policy."""
    return {
        row.key: (plan.document.tenant_id, row.access_level, tuple(sorted(row.access_groups)))
        for row in plan.section_rows
    }


def _lookup_allowed(job: IngestionJob) -> callable:
    """Which cache scopes this job may take vectors from.

    A cache hit shows in a job's progress, stats and duration, so a job may only be sped up by
    text its creator could read anyway: vectors cached under a policy the creator may read, in
    the creator's own tenant. Jobs without a creator (the CLI, re-derivations) and jobs of
    tenant admins (who may grant themselves any access) use the tenant's whole cache.
    """
    member = None
    if job.created_by_id is not None:
        member = Membership.objects.filter(tenant_id=job.tenant_id, user_id=job.created_by_id, is_active=True).first()
        if member is None:
            return lambda scope: False
    if member is None or member.role == Role.ADMIN:
        return lambda scope: scope[0] == job.tenant_id
    reader = reader_for(member)
    return lambda scope: scope[0] == job.tenant_id and can_read(reader, level=scope[1], group_ids=scope[2])


def _embed(plans: list[Plan]) -> dict:
    """Fill each plan's vectors: the tenant's cache first, the model for the rest, in batches across documents.

    The cache is scoped by tenant and policy (see :func:`_lookup_allowed`); the model sees each
    distinct (scope, text) once. Stats are kept per job, never summed across tenants.
    """
    model_name = embedder_name()
    texts: dict[tuple, str] = {}  # (scope, content hash) -> embed text
    keys_by_plan: list[list[tuple]] = []
    for plan in plans:
        scopes = _chunk_scopes(plan)
        keys = [(scopes[c.section_key], c.content_hash) for c in plan.chunks]
        for key, chunk in zip(keys, plan.chunks, strict=True):
            texts.setdefault(key, chunk.embed_text)
        keys_by_plan.append(keys)

    vectors: dict[tuple, list[float]] = {}
    hits: dict[tuple, list[float]] = {}
    by_tenant: dict[int, set[str]] = {}
    for scope, h in texts:
        by_tenant.setdefault(scope[0], set()).add(h)
    for tenant_id, hashes in by_tenant.items():
        ordered = sorted(hashes)
        for i in range(0, len(ordered), 1000):
            rows = EmbeddingCacheEntry.objects.filter(
                tenant_id=tenant_id, model=model_name, content_hash__in=ordered[i : i + 1000]
            ).values_list("content_hash", "access_level", "access_groups", "embedding")
            for h, level, groups, vector in rows:
                hits[((tenant_id, level, tuple(sorted(groups))), h)] = vector
    # A key is served from the cache for a job only when that job may use its scope; anything
    # else is embedded in this run (and then serves every job of the run).
    served: list[set[tuple]] = []
    for keys, plan in zip(keys_by_plan, plans, strict=True):
        may_use = _lookup_allowed(plan.job)
        served.append({k for k in keys if k in hits and may_use(k[0])})
        # The document's own stored chunks (of any version) serve too, under the same rule: the
        # creator of a replacement may not learn what the old content held above their access.
        wanted = {k[1] for k in keys} - {k[1] for k in served[-1]}
        if wanted:
            own: dict[str, list[float]] = {}
            rows = Chunk.objects.filter(document_id=plan.document.pk, content_hash__in=sorted(wanted)).values_list(
                "content_hash", "access_level", "access_groups", "embedding"
            )
            for h, level, groups, vector in rows:
                if may_use((plan.document.tenant_id, level, tuple(sorted(groups)))):
                    own[h] = vector
            for key in keys:
                if key[1] in own:
                    hits.setdefault(key, own[key[1]])
                    served[-1].add(key)
    key_sets = [set(keys) for keys in keys_by_plan]
    missing = [key for key in texts if not all(key in done for done, keys in zip(served, key_sets, strict=True)
                                               if key in keys)]
    vectors.update({k: hits[k] for done in served for k in done})
    per_job = [
        {"chunks": len(keys), "cache_hits": len(done), "embedded": 0, "model_calls": 0}
        for keys, done in zip(keys_by_plan, served, strict=True)
    ]

    gone: set[int] = set()  # plans whose job went with its deleted document: nothing more is embedded for them

    def progress() -> None:
        for index, (plan, keys, done) in enumerate(zip(plans, keys_by_plan, served, strict=True)):
            if index not in gone and not job_progress(plan.job, done=sum(1 for k in keys if k in done),
                                                      stage="embedding"):
                gone.add(index)

    progress()
    pending = list(missing)
    if pending:
        model = embedder()
        while pending:
            if gone:
                live = [keys for index, keys in enumerate(key_sets) if index not in gone]
                pending = [key for key in pending if any(key in keys for keys in live)]
                if not pending:
                    break
            batch, pending = pending[:EMBED_BATCH], pending[EMBED_BATCH:]
            embedded = model.embed([texts[k] for k in batch])
            EmbeddingCacheEntry.objects.bulk_create(
                [
                    EmbeddingCacheEntry(tenant_id=scope[0], access_level=scope[1], access_groups=list(scope[2]),
                                        model=model_name, content_hash=h, embedding=v)
                    for (scope, h), v in zip(batch, embedded, strict=True)
                ],
                ignore_conflicts=True,
            )
            vectors.update(zip(batch, embedded, strict=True))
            in_batch = set(batch)
            for stats, keys, done in zip(per_job, keys_by_plan, served, strict=True):
                mine = {k for k in keys if k in in_batch} - done
                if mine:
                    stats["model_calls"] += 1
                    stats["embedded"] += len(mine)
                    done.update(mine)
            progress()
    for index, (plan, keys, stats) in enumerate(zip(plans, keys_by_plan, per_job, strict=True)):
        # A deleted document's plan stores nothing (_store finds no document), so needs no vectors.
        plan.vectors = {} if index in gone else {c.content_hash: vectors[k] for c, k in zip(plan.chunks, keys,
                                                                                          strict=True)}
        plan.stats = stats
    return {
        "chunks": sum(s["chunks"] for s in per_job), "cache_hits": sum(s["cache_hits"] for s in per_job),
        "embedded": len(missing), "model_calls": (len(missing) + EMBED_BATCH - 1) // EMBED_BATCH,
    }


# ----------------------------------------------------------------------------- screening


def _screen(plans: list[Plan]) -> None:
    """Screen every planned chunk once, with the whole document as context (``ingestion.screening``);
    the verdicts are stored with the chunks by :func:`_store` and never computed per query."""
    for plan in plans:
        if not plan.chunks:
            plan.screenings = []
            continue
        verdicts = screen_chunks([c.text for c in plan.chunks], document_text=plan.parsed.text)
        plan.screenings = [verdict.as_dict() for verdict in verdicts]


def screening_fields(verdict: dict) -> dict:
    """A verdict as the chunk's columns (the re-screen job writes the same ones)."""
    return {"screening": verdict, "screening_flagged": bool(verdict["flagged"]),
            "screening_detector": str(verdict["detector"])}


# ----------------------------------------------------------------------------- storing


def _store(plan: Plan) -> None:
    """Swap the document's chunks for this version in one transaction.

    The document row is locked first (as every policy change does), then the section rows; the
    chunks take their policy from the rows as they are now. Should a policy the plan was built
    on have changed meanwhile, :class:`PolicyChanged` sends the plan back to be made again.
    """
    if not job_progress(plan.job, stage="storing"):
        return  # the job is gone (with its deleted document): its embedding was stopped, nothing to store
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(pk=plan.document.pk).first()
        if document is None:
            # Deleted while we worked (its job went with it): nothing to store, and the other jobs
            # of this task go on (raising here left them running until the lease ran out).
            return
        if document.sha256 != plan.document.sha256:
            # Replaced while we worked: the newer job will store; this one has nothing to add.
            return
        if plan.shadow and not plan.reuse_sections:  # _plan refuses this already; never delete sections here
            raise BuildSkipped("a shadow build may not replace the document's sections")
        # A reviewer's decision follows the text: the same text of this document keeps it (kb.screening).
        decided = dict(
            Chunk.objects.filter(document=document, screening_flagged=True).exclude(review=ChunkReview.NONE)
            .values_list("content_hash", "review")
        )
        if plan.reuse_sections:
            # The stored policies under the document's current default: rows and every version's chunks follow.
            current = apply_policies(document)  # the rows, locked, as they are now
            if _policy_snapshot(document, current) != plan.snapshot:
                raise PolicyChanged(f"a policy of document {document.pk} changed while its chunks were built")
            sections = {s.key: s for s in current}
            renamed = []
            for parsed_section in plan.parsed.sections:
                row = sections[parsed_section.key]
                if list(row.heading_path) != list(parsed_section.heading_path):
                    row.heading_path = list(parsed_section.heading_path)
                    renamed.append(row)
            if renamed and not plan.shadow:
                Section.objects.bulk_update(renamed, ["heading_path"])
            Chunk.objects.filter(document=document, index_version=plan.version).delete()
        else:
            old = {r.key: r for r in Section.objects.select_for_update().filter(document=document)}
            if _policy_snapshot(document, None, overrides=_overrides(old)) != plan.snapshot:
                raise PolicyChanged(f"the default policy of document {document.pk} changed while it was ingested")
            # New content: the old sections (and every version's chunks of them) go in this same transaction.
            sections = {s.key: s for s in plan.section_rows}
            Section.objects.filter(document=document).delete()
            Section.objects.bulk_create(plan.section_rows)
        rows = []
        verdicts = plan.screenings or [None] * len(plan.chunks)
        for chunk, verdict in zip(plan.chunks, verdicts, strict=True):
            section = sections[chunk.section_key]
            if verdict is None:  # every path screens (_screen); a missing verdict is a bug: hold it (fail closed)
                verdict = {"flagged": True, "score": 1.0, "reasons": ["unscreened"], "detector": "", "spans": []}
            rows.append(
                Chunk(
                    id=_chunk_id(plan.version, document, chunk), tenant_id=document.tenant_id, document=document,
                    section_id=section.id, index_version=plan.version, ordinal=chunk.ordinal, start=chunk.start,
                    end=chunk.end, text=chunk.text, embed_text=chunk.embed_text, token_count=chunk.token_count,
                    content_hash=chunk.content_hash, embedding=plan.vectors[chunk.content_hash],
                    access_level=section.access_level, access_groups=section.access_groups,
                    **screening_fields(verdict),
                    review=decided.get(chunk.content_hash, ChunkReview.NONE) if verdict["flagged"] else ChunkReview.NONE,
                )
            )
        Chunk.objects.bulk_create(rows, batch_size=500)
        if plan.shadow:
            return  # the document (text, status) belongs to its own ingestion, not to a shadow build
        document.text = plan.parsed.text
        # The content's title, under the policies just stored (overrides carried over included).
        document_title_follow(document, list(sections.values()), content_title=plan.parsed.title or "",
                              access=None if plan.reuse_sections else plan.access)
        if plan.parsed.tags:  # front matter tags join the upload's
            document.tags = sorted(set(document.tags) | {str(t) for t in plan.parsed.tags})
        document.status, document.error = Document.Status.READY, ""
        document.metadata = {
            **document.metadata, **_jsonable(plan.parsed.metadata), "ingested": _fingerprint(document, plan.version)
        }
        document.save(update_fields=["text", "title", "tags", "status", "error", "metadata", "updated_at"])


# ----------------------------------------------------------------------------- the entry point


def _fingerprint(document: Document, version: IndexVersion) -> str:
    """What the stored chunks were built from: the raw bytes, how they were read, the upload's
    default policy (markers are checked against it) and the index version."""
    groups = ",".join(str(g) for g in sorted(document.access_groups))
    return f"{document.sha256}:{document.content_type}:{document.access_level}:{groups}:{version.pk}"


def _unchanged(job: IngestionJob) -> bool:
    """Finish a re-ingest of identical bytes, read the same way under the same default policy,
    without parsing, chunking or storing anything again."""
    if _is_shadow(job) or job.document_id is None:
        return False
    document = Document.objects.filter(pk=job.document_id).first()
    if document is None:
        return False
    version = job.index_version or index_version_active(tenant=document.tenant)
    if document.metadata.get("ingested") != _fingerprint(document, version):
        return False
    if not Chunk.objects.filter(document=document, index_version=version).exists():
        return False
    Document.objects.filter(pk=document.pk).update(status=Document.Status.READY, error="")
    job.stats = {**job.stats, "unchanged": True, "chunks": 0, "cache_hits": 0, "embedded": 0, "model_calls": 0}
    job.total = Chunk.objects.filter(document=document, index_version=version).count()
    job_progress(job, total=job.total, done=job.total, stage="storing")
    job_finish(job)
    return True


_TOTALS = ("chunks", "cache_hits", "embedded", "model_calls")  # what jobs_run returns, summed over its jobs
REPLANS = 3  # a document whose policies keep changing while it is stored is planned at most this often more


def _plan_or_finish(job: IngestionJob, lane: str | None = None) -> Plan | None:
    """Plan a claimed job, or end it (failed, skipped, or handed to the bulk lane) and return None."""
    try:
        plan = _plan(job, lane)
    except (TerminalIngestionError, ApplicationError) as exc:
        _fail(job, str(exc))
        return None
    except OverLane as exc:
        # Before the small-upload lane reads it for its whole budget: the bulk lane takes it.
        job_move_to_bulk(job, str(exc))
        logger.info("job %s moves to the bulk lane: %s", job.pk, exc)
        return None
    except BuildSkipped as exc:
        _skip(job, str(exc))
        return None
    except (OperationalError, InterfaceError):
        raise  # the database or broker: the task retries
    except Exception:  # a bug or an input no check foresaw: never leave the job running forever
        logger.exception("ingestion job %s failed unexpectedly while planning", job.pk)
        _fail(job, f"internal error while reading this document (reference {job.pk}); it has been logged")
        return None
    job_progress(job, total=len(plan.chunks), done=0, stage="chunking")
    return plan


def jobs_run(job_ids: Sequence[str | uuid.UUID], *, task_id: str | None = None, lane: str | None = None) -> dict:
    """Run document jobs; the model sees chunks of all of them in shared batches.

    Returns stats (chunks, cache hits, texts embedded, model calls) for tests and benchmarks;
    each job's own stats count only its own document.

    A task holding a job that was attempted before -- delivered again because its worker died, or
    re-sent by the sweeper -- runs its jobs one at a time, each claimed just before it runs: the
    document that killed the worker may be among them, and claiming them all up front would count
    an attempt for every neighbour each time it kills the worker again, until they all failed with
    it (other tenants' jobs too: the sweeper's re-sends mix tenants).

    The jobs run tenant by tenant, each group acting for its tenant (``accounts.tenancy``): the
    worker learns a job's tenant from its id alone (``kb.jobs.job_tenant_ids``).

    On the small-upload lane (``lane=kb.jobs.INTERACTIVE``) a document is planned under the lane's
    budget (:func:`plan_budget`); one that costs more is handed to the bulk lane (``kb.jobs.job_move_to_bulk``).
    """
    totals = dict.fromkeys(_TOTALS, 0)
    for tenant_id, ids in job_tenant_ids(job_ids).items():
        tenant_activate(tenant_id)
        stats = _jobs_run_in_tenant(ids, task_id=task_id, lane=lane)
        totals = {k: totals[k] + stats[k] for k in totals}
    return totals


def _jobs_run_in_tenant(job_ids: Sequence[str | uuid.UUID], *, task_id: str | None, lane: str | None) -> dict:
    if len(job_ids) > 1 and IngestionJob.objects.filter(id__in=list(job_ids), attempts__gt=0).exists():
        totals = dict.fromkeys(_TOTALS, 0)
        for job_id in job_ids:
            stats = _jobs_run([job_id], task_id=task_id, lane=lane)
            totals = {k: totals[k] + stats[k] for k in totals}
        return totals
    return _jobs_run(job_ids, task_id=task_id, lane=lane)


def _jobs_run(job_ids: Sequence[str | uuid.UUID], *, task_id: str | None, lane: str | None = None) -> dict:
    plans: list[Plan] = []
    for job_id in job_ids:
        job = job_claim(job_id, task_id=task_id)
        if job is None:
            continue
        if job.attempts > settings.BULKHEAD_JOB_MAX_ATTEMPTS:
            _fail(job, f"gave up after {job.attempts - 1} attempts: the worker stopped (crashed, was killed or "
                       "ran out of time or memory) each time it ingested this document")
            continue
        if _unchanged(job):
            continue
        plan = _plan_or_finish(job, lane)
        if plan is not None:
            plans.append(plan)
    totals = dict.fromkeys(_TOTALS, 0)
    for attempt in range(REPLANS + 1):
        if not plans:
            break
        stats = _embed(plans)
        totals = {k: totals[k] + stats[k] for k in totals}
        _screen(plans)
        stale: list[IngestionJob] = []
        for plan in plans:
            try:
                _store(plan)
            except BuildSkipped as exc:
                _skip(plan.job, str(exc))
                continue
            except PolicyChanged as exc:
                if attempt == REPLANS:
                    _fail(plan.job, f"{exc}, again and again; ingest it again")
                else:
                    logger.info("job %s: %s; planning it again", plan.job.pk, exc)
                    stale.append(plan.job)
                continue
            plan.job.stats = {**plan.job.stats, **plan.stats, "document_chunks": len(plan.chunks)}
            job_progress(plan.job, done=len(plan.chunks))
            job_finish(plan.job)
        plans = [p for p in (_plan_or_finish(job, lane) for job in stale) if p is not None]
    return totals


def jobs_interrupted(job_ids: Sequence[str | uuid.UUID], *, task_id: str | None, error: BaseException,
                     final: bool) -> None:
    """A task stopped on a transient failure (the database or the broker unavailable, the disk full).

    Its jobs still running under this task are handed back: the claim is not counted as an attempt
    (attempts bound workers that *die* on a document, and a full disk for a few seconds once used
    them all up, failing innocent documents as "the worker stopped each time"), and the job waits
    queued for the task's retry. When the task has no retry left (``final``), they fail with the
    error. Best effort: the database may still be unreachable, and then the attempt stays counted.
    """
    message = f"{type(error).__name__}: {error}".strip()[:500]
    try:
        # Tenant by tenant, as they ran: the connection may be a new one, acting for no tenant.
        for tenant_id, ids in job_tenant_ids(job_ids).items():
            tenant_activate(tenant_id)
            mine = IngestionJob.objects.filter(id__in=ids, status=IngestionJob.Status.RUNNING, stats__task_id=task_id)
            if final:
                for job in mine:
                    _fail(job, f"the database or broker failed on every try of this task; last error: {message}")
                continue
            with transaction.atomic():
                for job in mine.select_for_update():
                    job.attempts = max(job.attempts - 1, 0)
                    job.status = IngestionJob.Status.QUEUED
                    job.stage = "queued"
                    job.heartbeat_at = timezone.now()  # the sweeper leaves it to the task's retry
                    job.stats = {**job.stats, "last_error": message}
                    job.save(update_fields=["attempts", "status", "stage", "heartbeat_at", "stats"])
    except (OperationalError, InterfaceError):
        logger.warning("could not hand back the jobs of task %s after %s", task_id, message)


def jobs_requeue_stuck(*, older_than: timedelta | None = None) -> list[str]:
    """Find jobs that nobody is working on (queued too long, or running past the lease) and queue them again."""
    cutoff = timezone.now() - (older_than or _lease())
    # Every tenant's jobs: the owner path, past the tenant wall (accounts.tenancy).
    with owner_path() as owner:
        documents = IngestionJob.objects.filter(kind=IngestionJob.Kind.DOCUMENT)
        with transaction.atomic(using=owner):
            queued = documents.filter(status=IngestionJob.Status.QUEUED, created_at__lt=cutoff).exclude(
                heartbeat_at__gte=cutoff
            )
            running = documents.filter(status=IngestionJob.Status.RUNNING, heartbeat_at__lt=cutoff)
            stuck = [str(j) for j in queued.union(running).values_list("id", flat=True)]
            # Back to queued, so the new task can claim it; the heartbeat stops the next sweep re-sending it.
            IngestionJob.objects.filter(id__in=stuck).update(
                status=IngestionJob.Status.QUEUED, stage="queued", heartbeat_at=timezone.now()
            )
        if stuck:
            logger.warning("re-queueing %d stuck ingestion jobs", len(stuck))
            enqueue_jobs(stuck)
    return stuck
