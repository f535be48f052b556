"""Ingestion, stage 5: storing a plan -- its sections and chunks swapped in one transaction, under row
locks, with the policies re-checked against the plan (:func:`store_plan`); and finishing a re-ingest of
unchanged bytes without any stage (:func:`finish_if_unchanged`).
"""

from __future__ import annotations

import hashlib

from django.db import transaction
from django.utils import timezone

from accounts.policy import policy_implies
from kb.changed import content_gone, sections_carry, shown_fields, shown_follow
from kb.embedder import embedder_name
from kb.index_versions import index_version_active
from kb.jobs import job_finish, job_progress
from kb.models import DECISIONS_KEPT, TITLE_SCREENING, Chunk, ChunkReview, Document, IndexVersion, IngestionJob, Section
from kb.screening import flagging_titles
from kb.services import (
    apply_policies,
    decision_kept,
    document_tags_follow,
    document_tags_give_way,
    document_title_follow,
    text_digest,
)
from kb.titles import title_decisions
from pipeline.claim import is_shadow
from pipeline.embed import EmbeddingCache
from pipeline.plan import BuildSkipped, Plan, chunk_id, jsonable, overrides_of, policy_snapshot
from pipeline.screen import head_decisions, head_records_follow, planned_titles, screening_fields, title_records_follow


class PolicyChanged(Exception):
    """A policy the plan was built on changed before its chunks were stored: plan again.

    Chunks take their policy (and their embedded heading prefix) from the section rows as
    they are when the chunks are stored, never from a copy read earlier."""


def store_plan(plan: Plan) -> None:
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
        if plan.shadow and not plan.reuse_sections:  # plan_content refuses this already; never delete sections here
            raise BuildSkipped("a shadow build may not replace the document's sections")
        # One time for every change this store makes (kb.changed) and for ``updated_at``: whoever may read all of
        # it is shown the time ``updated_at`` holds.
        now = timezone.now()
        shown_before = shown_fields(document)
        # A reviewer's decision follows the text: the same text of this document keeps it (kb.screening).
        # Under the same flagging titles too (a new planted title over released text is held again).
        # Those of the chunks a policy change deleted to rebuild them too, by their text (kb.services.apply_policies).
        # A keep-out only hides more: it follows the text under any flagging titles. A release follows it only to a
        # chunk whose every reader may read the released one (its reviewer could: found attacking the queue,
        # 2026-12-04, the same text in a restricted section was released by an internal reviewer's decision).
        kept = [decision_kept(entry) for entry in document.metadata.get(DECISIONS_KEPT, ())
                if isinstance(entry, list) and len(entry) in (3, 5)]
        kept_out = {entry[0] for entry in kept if entry[2] == ChunkReview.KEPT_OUT}
        # Each as (("hash", content hash) or ("text", text digest), flagging titles' digest), review, policy or None.
        decisions = [((("hash", content_hash), flagging_titles(verdict)), review, (level, tuple(groups)))
                     for content_hash, verdict, review, level, groups in Chunk.objects.filter(
                         document=document, screening_flagged=True).exclude(review=ChunkReview.NONE)
                     .values_list("content_hash", "screening", "review", "access_level", "access_groups")]
        decisions += [((("text", entry[0]), entry[1]), entry[2], entry[3:] if len(entry) == 5 else None)
                      for entry in kept]
        if plan.reuse_sections:
            # The stored policies under the document's current default: rows and every version's chunks follow.
            current = apply_policies(document, at=now)  # the rows, locked, as they are now
            if policy_snapshot(document, current) != plan.snapshot:
                raise PolicyChanged(f"a policy of document {document.pk} changed while its chunks were built")
            sections = {s.key: s for s in current}
            before = [(s.metadata.get(TITLE_SCREENING), (s.access_level, s.access_groups)) for s in current]
            heads_before = head_decisions(current)
            renamed = []
            for parsed_section in plan.parsed.sections:
                row = sections[parsed_section.key]
                if list(row.heading_path) != list(parsed_section.heading_path):
                    row.heading_path, row.changed_at = list(parsed_section.heading_path), now
                    renamed.append(row)
            if renamed and not plan.shadow:
                Section.objects.bulk_update(renamed, ["heading_path", "changed_at"])
            Chunk.objects.filter(document=document, index_version=plan.version).delete()
        else:
            old = {r.key: r for r in Section.objects.select_for_update().filter(document=document)}
            if policy_snapshot(document, None, overrides=overrides_of(old)) != plan.snapshot:
                raise PolicyChanged(f"the default policy of document {document.pk} changed while it was ingested")
            # New content: the old sections (and every version's chunks of them) go in this same transaction.
            sections = {s.key: s for s in plan.section_rows}
            before = [(s.metadata.get(TITLE_SCREENING), (s.access_level, s.access_groups)) for s in old.values()]
            _title_records(document, plan, sections, before, head_decisions(old.values()))
            # Each new section keeps the time of an old one its readers read the same of, else changes now; content
            # under the policies of the old ones none matched went away now, for their readers (kb.changed).
            unmatched = sections_carry(list(old.values()), document.text, plan.section_rows, plan.parsed.text, at=now)
            content_gone(document, ((r.access_level, r.access_groups) for r in unmatched), at=now)
            Section.objects.filter(document=document).delete()
            Section.objects.bulk_create(plan.section_rows)
        rows = []
        verdicts = plan.screenings or [None] * len(plan.chunks)
        for chunk, verdict in zip(plan.chunks, verdicts, strict=True):
            section = sections[chunk.section_key]
            if verdict is None:  # every path screens (pipeline.screen); a missing verdict is a bug: hold it (fail closed)
                verdict = {"flagged": True, "score": 1.0, "reasons": ["unscreened"], "detector": "", "spans": []}
            rows.append(
                Chunk(
                    id=chunk_id(plan.version, document, chunk), tenant_id=document.tenant_id, document=document,
                    section_id=section.id, index_version=plan.version, ordinal=chunk.ordinal, start=chunk.start,
                    end=chunk.end, text=chunk.text, embed_text=chunk.embed_text, token_count=chunk.token_count,
                    content_hash=chunk.content_hash, embedding=plan.vectors[chunk.content_hash],
                    pieces=plan.pieces.get(chunk.content_hash),  # a version with pieces only (pipeline.embed)
                    access_level=section.access_level, access_groups=section.access_groups,
                    **screening_fields(verdict),
                    review=carried_review(decisions, kept_out, chunk=chunk, verdict=verdict,
                                          policy=(section.access_level, section.access_groups)),
                )
            )
        Chunk.objects.bulk_create(rows, batch_size=500)
        # What the model embedded, cached under the policies just stored (the locked rows'), never the plan's.
        # With its pieces, for a version with pieces (an entry cached before without them gets them).
        cached = {(row.content_hash, row.access_level, tuple(sorted(row.access_groups))): (row.embedding, row.pieces)
                  for row in rows if row.content_hash in plan.embedded}
        EmbeddingCache(embedder_name()).put(
            [((document.tenant_id, level, groups), h) for h, level, groups in cached],
            [vector for vector, _ in cached.values()], [stored for _, stored in cached.values()])
        if plan.shadow:
            return  # the document (text, status) belongs to its own ingestion, not to a shadow build
        if plan.reuse_sections:  # the stored rows' records, made again (the new rows' were made before they were)
            _title_records(document, plan, sections, before, heads_before)
            Section.objects.bulk_update(list(sections.values()), ["metadata"], batch_size=500)
        document.text = plan.parsed.text
        # The content's title and the section bearing it: shown to each reader who may read that section
        # (kb.titles.reader_title).
        stored = {row.key: row.title_candidate for row in sections.values()}
        document_title_follow(document, list(sections.values()), content_title=plan.parsed.title or "",
                              title_key=plan.parsed.title_key, candidates=plan.parsed.title_candidates)
        # Each section's title candidate (the first a member may read is their title): written where it changed.
        Section.objects.bulk_update([row for row in sections.values() if row.title_candidate != stored[row.key]],
                                    ["title_candidate"], batch_size=500)
        # Front matter tags, listed to each reader of the root they are text of beside the upload's; their verdicts, as
        # screening read them (pipeline.screen). New content's front matter tags replace the document's when those are
        # held (kb.titles.tags_give_way): the typed ones go with them, never listed again.
        content_tags = [str(t) for t in plan.parsed.tags or ()]
        document_tags_give_way(document, content_tags, reuse=bool(plan.reuse_sections))
        document_tags_follow(document, content_tags=content_tags)
        document.status, document.error = Document.Status.READY, ""
        document.metadata = {
            **document.metadata, **jsonable(plan.parsed.metadata), "ingested": fingerprint(document, plan.version),
            TITLE_SCREENING: document.metadata[TITLE_SCREENING],  # _title_records' (nothing parsed replaces it)
        }
        document.metadata.pop(DECISIONS_KEPT, None)  # on the chunks now
        shown_follow(document, shown_before, now)  # a title or tags that followed the content (kb.changed)
        document.save(update_fields=["text", "title", "content_title", "title_section", "tags", "content_tags",
                                     "status", "error", "metadata", "shown_changed_at"])
        Document.objects.filter(pk=document.pk).update(updated_at=now)  # the save's own clock would differ


def carried_review(decisions: list, kept_out: set, *, chunk, verdict: dict, policy: tuple) -> str:
    """The review a new (planned) ``chunk`` with ``verdict`` under ``policy`` (level, group ids) takes from the
    earlier ``decisions`` -- ((("hash", content hash) or ("text", text digest)), flagging titles' digest), review,
    the decided chunk's policy or None) -- and the texts ``kept_out``: a keep-out of the same text under any
    titles, or of the same text and titles, wins; a release of the same text and titles follows only when its
    policy implies ``policy`` (every reader of the released chunk may read this one: so may its reviewer); else
    none (held until reviewed)."""
    if not verdict["flagged"]:
        return ChunkReview.NONE
    titles, digest = flagging_titles(verdict), text_digest(chunk.text)
    keys = {(("hash", chunk.content_hash), titles), (("text", digest), titles)}
    same = [(review, decided) for key, review, decided in decisions if key in keys]
    if digest in kept_out or any(review == ChunkReview.KEPT_OUT for review, _ in same):
        return ChunkReview.KEPT_OUT
    level, groups = policy
    if any(review == ChunkReview.RELEASED and decided is not None
           and policy_implies(decided[0], decided[1], level, groups) for review, decided in same):
        return ChunkReview.RELEASED
    return ChunkReview.NONE


def _title_records(document: Document, plan: Plan, sections: dict, before: list, heads_before: list) -> None:
    """The records of the document's titles and of its sections' headings and heads, each screened on its own
    (``pipeline.screen``), into the rows in memory, keeping the reviewers' decisions of the stored records
    (``before``: each with its row's policy; and the document's own) on the same titles, a release only where every
    reader of the released row may read (``kb.titles.TitleDecisions.for_row``); and those on the heads of the same
    text (``heads_before``: ``pipeline.screen.head_decisions`` of the stored rows), likewise."""
    parsed = {s.key: s.title for s in plan.parsed.sections}
    decided = title_decisions([((document.metadata or {}).get(TITLE_SCREENING), None), *before])
    title_records_follow(document, planned_titles(plan),
                         ((row, parsed.get(key, row.title)) for key, row in sections.items()), plan.title_screenings,
                         decided=decided)
    # Each section's head's verdict (pipeline.screen.head_records), as screened with the chunks.
    head_records_follow(((row, plan.head_screenings.get(key)) for key, row in sections.items()), heads_before)


def fingerprint(document: Document, version: IndexVersion) -> str:
    """What the stored chunks were built from: the raw bytes, how they were read, the upload's
    default policy (markers are checked against it), the index version, and the title (screened with
    every chunk, ``pipeline.screen``: the same bytes under a new title are screened again -- found
    attacking the demo, a planted title over unchanged bytes skipped screening)."""
    groups = ",".join(str(g) for g in sorted(document.access_groups))
    title = hashlib.sha256(document.title.encode()).hexdigest()[:16]
    return f"{document.sha256}:{document.content_type}:{document.access_level}:{groups}:{version.pk}:{title}"


def finish_if_unchanged(job: IngestionJob) -> bool:
    """Finish a re-ingest of identical bytes, read the same way under the same default policy,
    without parsing, chunking or storing anything again."""
    if is_shadow(job) or job.document_id is None:
        return False
    document = Document.objects.filter(pk=job.document_id).first()
    if document is None:
        return False
    version = job.index_version or index_version_active(tenant=document.tenant)
    if document.metadata.get("ingested") != fingerprint(document, version):
        return False
    if not Chunk.objects.filter(document=document, index_version=version).exists():
        return False
    Document.objects.filter(pk=document.pk).update(status=Document.Status.READY, error="")
    job.stats = {**job.stats, "unchanged": True, "chunks": 0, "cache_hits": 0, "embedded": 0, "model_calls": 0}
    job.total = Chunk.objects.filter(document=document, index_version=version).count()
    job_progress(job, total=job.total, done=job.total, stage="storing")
    job_finish(job)
    return True
