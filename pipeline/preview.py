"""The access preview of an upload: what ingestion would make of a file, before anything is stored.

The preview runs ingestion's own planning step, :func:`pipeline.plan.plan_content`, on an
*unsaved* document and job built from the upload exactly as ``kb.services.document_create``
builds them: parse under the same budget, unknown groups with their line, policies resolved
against the upload's default, heading paths as every reader of a section may see them, chunks
under the tenant's active index version. So a preview cannot disagree with the result (a file
that previews cleanly ingests to the same sections and chunks; one that fails here fails the
job with the same message). It reads only: no row is written, nothing is embedded.

The upload is checked first as ``document_create`` checks it (role, size, content type, a default
policy the member may set), with the same errors.

A preview runs in a web thread, which every tenant's requests share, so it is bounded (found by the
third attack on the demo: a 36 KB PDF held a thread for the two-minute parse limit, and a 24 MB text
took 96 s and 3 GB of the web process). It gets at most ``BULKHEAD_PREVIEW_SECONDS`` of the thread
(the files of one request share them), is priced against the small-upload lane's cost budget
(``ingestion.costs``), parses and chunks in the budgeted child with ingestion's memory limit,
and counts tokens and chunks in that child (only the counts come back). A file that does not fit
is :class:`PreviewTooCostly` ("too costly to preview: ...; ingest it, or split it"): its ingestion
is held to the lanes' budgets instead. The preview lists at most :data:`MAX_SECTIONS_SHOWN`
sections (the counts cover all of them), and a tenant runs at most ``BULKHEAD_PREVIEWS_PER_TENANT``
previews at once (``kb.web_slots``; one more is 429 ``busy``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import InterfaceError, OperationalError

from accounts.errors import ApplicationError
from accounts.models import Membership
from accounts.policy import AccessLevel, can_read
from accounts.selectors import reader_for
from accounts.services import policy_from_names
from ingestion import costs
from kb.models import Document, IndexVersion, IngestionJob
from kb.selectors import group_slugs, index_version_for_reading
from kb.services import UNTITLED, Upload, document_title_follow, upload_check, upload_content_type, upload_size_check
from kb.web_slots import tenant_slot
from pipeline.plan import OverLane, PlanBudget, TerminalIngestionError, lane_budget, plan_content

logger = logging.getLogger(__name__)

_LINE = re.compile(r"\bline (\d+)\b")
# A preview lists at most this many sections (its counts are of every section).
MAX_SECTIONS_SHOWN = 1000
# A preview's parse and chunking children run this much below the web server's CPU priority: searches first.
PREVIEW_NICE = 5


class UnreadableDocument(ApplicationError):
    """The file would fail its ingestion job: the job's own message, and its line when it names one."""

    code = "unreadable_document"


class PreviewTooCostly(ApplicationError):
    """The file costs more than a preview may take of a web thread: ingest it (ingestion holds it to the
    lanes' budgets, and the bulk lane reads what the small-upload lane does not), or split it."""

    code = "too_costly_to_preview"


@dataclass(frozen=True)
class SectionPreview:
    key: str
    parent: str | None
    depth: int
    title: str
    kind: str
    line: int | None  # 1-based line of the heading or marker that opened the section
    heading_path: tuple[str, ...]  # as stored: without ancestors some reader of the section may not read
    access_level: str  # the effective policy: level name ...
    groups: tuple[str, ...]  # ... and group slugs
    marked: bool  # the policy is the section's own (a marker, or the file's front matter for the root)
    tokens: int  # model tokens of the section's own body
    chunks: int


@dataclass(frozen=True)
class DocumentPreview:
    title: str
    content_type: str
    size_bytes: int
    sha256: str
    access_level: str  # the upload's default policy
    groups: tuple[str, ...]
    index_version: str  # the version whose configuration chunked it
    sections: list[SectionPreview]  # the first MAX_SECTIONS_SHOWN
    section_count: int  # every section's
    tokens: int
    chunks: int

    @property
    def sections_hidden(self) -> int:
        return self.section_count - len(self.sections)


def _active_version(tenant_id: int) -> IndexVersion:
    """The version ingestion would chunk for (reads only: the unsaved default when none is active yet)."""
    return index_version_for_reading(tenant_id=tenant_id)


def preview_deadline() -> float:
    """When a preview starting now must be done (``time.monotonic()``): the files of one request share it."""
    return time.monotonic() + settings.BULKHEAD_PREVIEW_SECONDS


def document_preview(*, member: Membership, upload: Upload, deadline: float | None = None) -> DocumentPreview:
    """The section tree ``upload`` would be ingested into, as ``member`` uploading it.

    Raises what ``kb.services.document_create`` raises for the upload (403 role or policy,
    413 size, 415 content type, 400 unknown level or group of the default),
    :class:`UnreadableDocument` (400) with the message the ingestion job would end with
    (``details["line"]`` when it names a line), and :class:`PreviewTooCostly` (400) when the file
    costs more than the preview takes, by its price or by ``deadline`` (:func:`preview_deadline`).
    """
    tenant = member.tenant
    upload_check(member=member, tenant=tenant, upload=upload, document=None)
    upload_size_check(upload.content)
    policy = policy_from_names(tenant=tenant, access_level=upload.access_level, groups=upload.groups)
    # What kb.services builds and saves for the upload; here it stays in memory.
    document = Document(
        tenant=tenant, title=upload.title[:500] or UNTITLED, source=upload.source[:1000],
        content_type=upload_content_type(upload), raw=upload.content,
        sha256=hashlib.sha256(upload.content).hexdigest(), size_bytes=len(upload.content),
        access_level=int(policy.rank), access_groups=list(policy.groups),
    )
    job = IngestionJob(tenant=tenant, document=document, created_by=member.user)
    version = _active_version(tenant.pk)
    budget = PlanBudget(
        memory_bytes=settings.BULKHEAD_PARSE_MEMORY_MB * 1024 * 1024, seconds=settings.BULKHEAD_PREVIEW_SECONDS,
        pricing=costs.Pricing(lane=lane_budget()), lane="the preview",
        deadline=deadline if deadline is not None else preview_deadline(), counts_only=True, nice=PREVIEW_NICE,
    )
    try:
        # At most BULKHEAD_PREVIEWS_PER_TENANT of the tenant's previews at once (429 busy): web threads are shared.
        with tenant_slot("preview", tenant.pk, limit=settings.BULKHEAD_PREVIEWS_PER_TENANT,
                         seconds=settings.BULKHEAD_PREVIEW_SECONDS + 60, what="preview"):
            plan = plan_content(job, document, version, budget=budget)
    except OverLane as exc:
        raise PreviewTooCostly(f"too costly to preview: {exc}; ingest it, or split it") from None
    except TerminalIngestionError as exc:
        message = str(exc)
        line = _LINE.search(message)
        raise UnreadableDocument(message, details={"line": int(line.group(1))} if line else {}) from None
    except (ApplicationError, OperationalError, InterfaceError):
        raise
    except Exception:  # as ingestion does: a bug or an input no check foresaw ends with a plain message
        logger.exception("preview of an upload by membership %s failed unexpectedly", member.pk)
        raise UnreadableDocument("internal error while reading this document; it has been logged") from None

    slugs = group_slugs(member=member)
    counts = plan.counts  # made and counted in the child: no chunk, no tokenizer in this process
    sections = []
    for parsed, row, count in zip(plan.parsed.sections[:MAX_SECTIONS_SHOWN], plan.section_rows, counts.tokens,
                                  strict=False):
        sections.append(SectionPreview(
            key=parsed.key, parent=parsed.parent, depth=parsed.depth, title=parsed.title, kind=parsed.kind,
            line=parsed.line, heading_path=tuple(row.heading_path), access_level=AccessLevel(row.access_level).label,
            groups=tuple(sorted(slugs.get(g, str(g)) for g in row.access_groups)),
            marked=row.own_level is not None, tokens=count, chunks=counts.chunks.get(parsed.key, 0),
        ))
    title = document.title
    if title == UNTITLED:  # as ingestion names it when it stores the sections, as the member would be shown it
        document_title_follow(document, plan.section_rows, content_title=plan.parsed.title or "",
                              title_key=plan.parsed.title_key, candidates=plan.parsed.title_candidates)
        # The first title candidate of a section the member may read (kb.titles.reader_title).
        reader = reader_for(member)
        title = next((row.title_candidate for row in sorted(plan.section_rows, key=lambda r: r.order)
                      if document.content_title and row.title_candidate
                      and can_read(reader, level=row.access_level, group_ids=row.access_groups or ())), title)
    return DocumentPreview(
        title=title, content_type=document.content_type,
        size_bytes=document.size_bytes, sha256=document.sha256, access_level=AccessLevel(document.access_level).label,
        groups=tuple(sorted(slugs.get(g, str(g)) for g in document.access_groups)),
        index_version=version.name or str(version.pk), sections=sections,
        section_count=len(plan.parsed.sections), tokens=sum(counts.tokens), chunks=counts.total,
    )
