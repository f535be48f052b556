"""Ingestion, stage 2: the plan of one document -- parse, resolve policies, take the document's access
view, chunk -- reading only (:func:`plan_content`). Ingestion plans every job with it, and the upload
preview (``pipeline.preview``) runs it on an unsaved document, so a preview is the plan ingestion would make.
"""

from __future__ import annotations

import hashlib
import hmac
import time
import uuid
from dataclasses import dataclass, field

from django.conf import settings

from accounts.models import Group, Membership
from accounts.policy import AccessLevel, DocumentAccess, Policy, Reader, can_read, policy_implies
from accounts.selectors import reader_for
from ingestion import costs, limits
from ingestion.chunking.chunker import Chunk as PlannedChunk
from ingestion.chunking.config import ChunkingConfig
from ingestion.structure import ParsedDocument, ParseError, resolve_policies, restrict_context
from kb.embedder import embedder
from kb.index_versions import index_version_active
from kb.jobs import INTERACTIVE
from kb.models import CONTENT_BY, ID_NAMESPACE, Document, IndexVersion, IngestionJob, Section
from kb.services import document_access_of, recompute_policies
from kb.titles import tag_refused, tags_with_content
from pipeline.claim import is_shadow


class TerminalIngestionError(Exception):
    """The document itself is the problem; retrying cannot help."""


class OverLane(Exception):
    """The document costs more than its lane (or the preview) takes: over the lane's cost budget
    (``ingestion.costs``) or its share of time. The small-upload lane hands the job to the bulk lane;
    the preview answers "too costly to preview"."""


class BuildSkipped(Exception):
    """A shadow-version build cannot use the document's stored sections (its content changed and
    is not re-ingested yet). Replacing the sections would delete the active version's chunks, so
    the document is skipped and reported; the build is rerun after its ingestion."""


@dataclass
class Plan:
    """What :func:`plan_content` derived for one job: the parsed file, the section rows (stored ones
    reused, or new ones), the chunks (or the preview's counts), and the policy snapshot that
    ``pipeline.store.store_plan`` re-checks under row locks."""

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
    # The chunks' stored pieces by content hash (``ingestion.pieces.pack_pieces``): only for a version with pieces.
    pieces: dict[str, bytes | None] = field(default_factory=dict)
    stats: dict = field(default_factory=dict)
    counts: limits.ChunkCounts | None = None  # the preview's plan: counts instead of chunks
    access: DocumentAccess | None = None  # the access view the rows, paths and context were derived from
    screenings: list[dict] = field(default_factory=list)  # one verdict per chunk (``Screening.as_dict()``)
    title_screenings: dict[str, dict] = field(default_factory=dict)  # per title and heading (``pipeline.screen``)
    head_screenings: dict[str, dict] = field(default_factory=dict)  # per section key: its head's record (the same)
    # The content hashes the model embedded for it: cached by the store step, under the policies it stores.
    embedded: set[str] = field(default_factory=set)


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


def section_id(document: Document, key: str) -> uuid.UUID:
    """Deterministic for the same bytes, but keyed with the server's secret: a plain hash of the raw
    bytes would let a reader confirm guesses of the hidden parts of a document offline."""
    keyed = hmac.new(settings.SECRET_KEY.encode(), document.sha256.encode(), hashlib.sha256).hexdigest()
    return uuid.uuid5(ID_NAMESPACE, f"section:{document.pk}:{keyed}:{key}")


def chunk_id(version: IndexVersion, document: Document, chunk: PlannedChunk) -> uuid.UUID:
    """Deterministic for the same text, but keyed with the server's secret, as :func:`section_id`: the plain hash of
    the embedded text (``content_hash``) let whoever is shown the id of a chunk they may not read -- an admin below its
    level, in a search's audit record -- confirm a guess of its words offline (found attacking the demo, 2026-12-04)."""
    keyed = hmac.new(settings.SECRET_KEY.encode(), chunk.content_hash.encode(), hashlib.sha256).hexdigest()
    return uuid.uuid5(ID_NAMESPACE, f"chunk:{version.pk}:{document.pk}:{chunk.ordinal}:{keyed}")


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


def policy_snapshot(document: Document, rows: list[Section] | None, *, overrides: tuple = ()) -> tuple:
    """What a plan's policies were derived from: the document default, every stored section's
    effective policy when they are reused, and the API overrides carried over to new content."""
    sections = tuple(sorted((r.key, r.access_level, tuple(sorted(r.access_groups))) for r in rows or ()))
    return (document.access_level, tuple(sorted(document.access_groups)), sections, overrides)


def overrides_of(existing: dict[str, Section]) -> tuple:
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


# Section.metadata key: the policy the file itself gave the section when it was stored (its markers, inherited
# within the file, under the document's default): {"level": rank, "groups": [id, ...]}. An API override is carried
# over to new content only while the new file does not narrow the section past it (see _carry_overrides).
FILE_POLICY = "file_policy"


def _file_policy(row: Section) -> tuple[int, list[int]] | None:
    recorded = (row.metadata or {}).get(FILE_POLICY)
    if not isinstance(recorded, dict):
        return None  # stored before file policies were recorded
    return int(recorded["level"]), list(recorded.get("groups") or ())


def _content_reader(job: IngestionJob, document: Document) -> Reader | None:
    """The access-rule view of whoever uploaded the bytes ``job`` parses (``CONTENT_BY``), in the document's
    tenant; :data:`NO_READER` when that person is no active member there any more; None for bytes no person
    uploaded (a source's sync, an internal caller)."""
    user_id = (job.stats or {}).get(CONTENT_BY)
    if user_id is None:
        return None
    membership = Membership.objects.filter(tenant_id=document.tenant_id, user_id=user_id, is_active=True).first()
    return reader_for(membership) if membership is not None else NO_READER


# Reads nothing: the uploader of a job's bytes who is no active member of the document's tenant.
NO_READER = Reader(tenant_id=0, clearance=-1, group_ids=frozenset())


def _carry_overrides(rows: list[Section], existing: dict[str, Section], uploader: Reader | None = None) -> None:
    """Give each new section the API policy of the old section with the same headings and kind.

    An override that matches no single new section fails the job rather than being dropped: the
    policy an admin set must never silently disappear with an edit of the text. Nor may it silently
    widen the section past what the new file says: an override that does not imply the new file's policy
    for the section is carried over only when that policy is no narrower than the one the old file gave
    it (the admin widened that very policy); else -- the new file's marker narrows the section, or the old
    section was stored before its file policy was recorded -- the job fails naming the section (found
    attacking policies: an override made for ``internal`` text silently opened text newly marked
    ``restricted``)."""
    overrides = [r for r in existing.values() if (r.metadata or {}).get("override")]
    if not overrides:
        return
    if uploader is not None and not all(can_read(uploader, level=r.access_level, group_ids=r.access_groups)
                                        for r in _with_ancestors(overrides, existing)):
        # Before any comparison with the new content, and naming no old heading: the error is the uploader's to
        # read in full (kb.selectors.error_in_full), and whether the new headings match an old section's would
        # confirm a guess of its title (found attacking review 13: an internal admin's replacement failed
        # quoting 'Handbook > Salaries', a restricted section's heading, and one with that heading went through).
        # Every section on an override's heading chain, its ancestors too: an override may widen a section past
        # its parent, and the chain compared and quoted holds the parent's title (found reviewing review 13).
        raise TerminalIngestionError(
            "a section of the present content has an access policy set through the API, and the new content's "
            "uploader may not read that section, so its policy is not carried over: a member who may read it "
            "replaces the content, or an admin returns the section to inheriting (PATCH it with inherit: true)")
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
        now, before = _file_policy(target), _file_policy(override)
        if now is not None and override.own_level is not None and not policy_implies(
                override.own_level, override.own_groups or (), *now) and (
                before is None or not policy_implies(*before, *now)):
            title = " > ".join(t for t in old_chains[override.id][0] if t) or "(the document)"
            raise TerminalIngestionError(
                f"the section {title!r} has an access policy set through the API that is wider than the new content "
                f"gives it ({AccessLevel(now[0]).name.lower()}{' and groups' if now[1] else ''}"
                f"{'' if before is not None else '; the old content recorded none to compare with'}); it is not "
                "carried over: return the section to inheriting (PATCH the section with inherit: true), replace the "
                "content, then set its policy again")
        target.own_level, target.own_groups = override.own_level, list(override.own_groups or [])
        target.metadata = {**target.metadata, "override": True}


def _with_ancestors(rows: list[Section], existing: dict[str, Section]) -> list[Section]:
    """``rows`` and every section above them (the sections whose titles :func:`_title_chains` gives them)."""
    by_id = {r.id: r for r in existing.values()}
    found: dict = {}
    for row in rows:
        node = row
        while node is not None and node.id not in found:
            found[node.id] = node
            node = by_id.get(node.parent_id)
    return list(found.values())


def _new_section_rows(document: Document, parsed: ParsedDocument) -> list[Section]:
    """Section rows for new content, with the file's policies (resolved, groups by id)."""
    ids = {s.key: section_id(document, s.key) for s in parsed.sections}
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
                metadata={**jsonable(section.metadata), FILE_POLICY: {
                    "level": int(section.effective.rank), "groups": sorted(section.effective.groups)}},
                hidden_chars_removed=section.hidden_chars_removed,
                hidden_text_flags=list(section.hidden_text_flags),
            )
        )
    return rows


def plan_job(job: IngestionJob, lane: str | None = None) -> Plan:
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
        section_id(document, s.key) == getattr(existing.get(s.key), "id", None) for s in parsed.sections
    )
    if not reuse and parsed.tags:
        # The file's own tags join the document's (pipeline.store): one that reads as an instruction to a model fails
        # the content as a typed one is refused (kb.services.tags_check); stored content keeps what it was stored with.
        # Read together with the document's typed tags, as they are kept and listed (found reviewing the rule,
        # 2026-12-04: half an instruction typed, half in the front matter, each passed and the union read as one) --
        # unless the document's are held: then the front matter's alone, which replace them (kb.titles.tags_give_way).
        joined = tags_with_content(document, parsed.tags)  # a retry's: joined before
        refused = tag_refused(tenant_id=document.tenant_id, tags=joined)
        if refused is not None:
            where = f" (line {parsed.tags_line})" if parsed.tags_line else ""
            place = f"tag {refused + 1} of the front matter reads" if refused < len(parsed.tags) else (
                "the front matter's tags, read together with the document's, read" if len(joined) > len(parsed.tags)
                else "the front matter's tags, read together, read")
            raise TerminalIngestionError(
                f"{place} as an instruction to a model (screening flagged it); a tag is a short label, listed to every "
                f"reader of the document and their agents{where}")
    shadow = is_shadow(job)
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
            _carry_overrides(rows, existing, _content_reader(job, document))
    # The document's access view (kb.services.document_access_of), the one derivation: effective
    # policies; each heading path without the titles of ancestors that some reader of the section
    # may not read, so neither a returned path nor an embedded prefix tells them anything; the same
    # for context taken from other sections (a module's imports, an enclosing class's signature).
    # From the rows' titles as stored (a parsed heading cut to 1,000 characters), as every re-derivation reads them.
    access = document_access_of(rows, document)
    recompute_policies(rows, document, access=access)
    for row, section in zip(rows, parsed.sections, strict=True):
        section.heading_path = access.heading_paths[row.id]
    restrict_context(parsed, {row.key: access.effective[row.id] for row in rows})
    if not reuse:
        for row, section in zip(rows, parsed.sections, strict=True):
            row.heading_path = list(section.heading_path)
    snapshot = policy_snapshot(document, rows if reuse else None, overrides=overrides_of(existing) if not reuse else ())
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


def jsonable(value):
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
