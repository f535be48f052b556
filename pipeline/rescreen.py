"""The re-screen job: chunks screened by another detector version are screened again, without re-embedding.

A chunk's verdict is stored with it at ingestion (``pipeline.screen.screen_plans``) together with the
detector version that made it and what it screened (``Chunk.screening_detector``,
``pipeline.screen.SCREENED_BY``). When either changes (``ingestion.screening.DETECTOR_VERSION``; a verdict
made on the body alone, before headings and titles were screened), :func:`rescreen` re-runs the detector
on the stored text, headings and titles of every stale chunk -- per document
and index version, with the document's text as context, like ingestion -- and updates the verdict
columns only: the chunk's embedding, text and keyword index are untouched (the detector does not
call the embedding model; the chunks' vectors are never recomputed).

How it runs (docs/screening.md, "Storage and re-screening"): the Celery task
``pipeline.tasks.rescreen_chunks`` is sent when a worker starts (``worker_ready``) and by
``manage.py kb_rescreen [--tenant SLUG]``, which can also run it in-process (``--here``).
A reviewer's decision stays with the chunk; a chunk that becomes flagged waits for review. The records of
the document's titles and its sections' headings (``kb.models.TITLE_SCREENING``) are made again with them --
a document stored before titles had records shows its titles as held until this fills them (fail closed) -- and
those of its sections' heads (``kb.models.HEAD_SCREENING``: cut from what an agent reads until this writes them).

A document without chunks -- heads alone (a Markdown file of a front matter and a heading whose line holds a link),
headings without text -- has titles and heads all the same: it is found by its own record instead
(:func:`chunkless_stale_documents`: the document's ``TITLE_SCREENING`` record's ``detector``, written with every
screening of the document and marked stale by a policy change, ``kb.services.document_records_stale``) and screened
again as one with chunks is, its chunks none. Before, the job found its work by stale chunks alone: such a document's
heads kept their verdicts of its ingestion for good (one stored before a heading's line was screened, cut for good;
a policy change's text never screened against).
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.db.models.fields.json import KeyTextTransform, KeyTransform

from accounts.tenancy import owner_path, tenant_activate
from kb.models import TITLE_SCREENING, Chunk, ChunkReview, Document, Section
from kb.screening import flagging_titles
from kb.services import CONTENT_TITLE
from kb.titles import (
    document_title_screen,
    source_flagging,
    tags_flagging,
    title_candidates,
    title_decisions,
    titles_unshown,
)
from pipeline.screen import (
    SCREENED_BY,
    SEAMS_KEY,
    ChunkSeams,
    candidates_borne,
    content_titles,
    head_decisions,
    head_records,
    head_records_follow,
    reaching,
    readable_document_texts,
    screen_document,
    screening_fields,
    title_records_follow,
)

logger = logging.getLogger(__name__)

BATCH_DOCUMENTS = 50  # documents per transaction


def stale_tenant_ids() -> list[int]:
    """Tenants holding chunks screened by another detector version, or documents without chunks whose own record
    another one made (:func:`chunkless_stale_documents`; the owner path: every tenant)."""
    with owner_path():
        chunks = set(Chunk.objects.exclude(screening_detector=SCREENED_BY).order_by()
                     .values_list("tenant_id", flat=True).distinct())
        documents = set(chunkless_stale_documents().order_by().values_list("tenant_id", flat=True).distinct())
        return sorted(chunks | documents)


def chunkless_stale_documents(tenant_id: int | None = None) -> QuerySet[Document]:
    """Documents with sections and no chunk (in any index version) whose titles and heads were screened by another
    :data:`~pipeline.screen.SCREENED_BY`: their :data:`~kb.models.TITLE_SCREENING` record's ``detector`` is another
    one, ``""`` (a policy change: ``kb.services.document_records_stale``), or missing (stored before titles had
    records)."""
    detector = KeyTextTransform("detector", KeyTransform(TITLE_SCREENING, "metadata"))
    documents = Document.objects.all() if tenant_id is None else Document.objects.filter(tenant_id=tenant_id)
    return (documents.annotate(screened_by=detector)
            .filter(Q(screened_by__isnull=True) | ~Q(screened_by=SCREENED_BY))
            .filter(Exists(Section.objects.filter(document_id=OuterRef("pk"))))
            .exclude(Exists(Chunk.objects.filter(document_id=OuterRef("pk")))))


def rescreen(*, tenant_ids: list[int] | None = None) -> dict:
    """Re-screen every stale chunk of ``tenant_ids`` (default: every tenant with any), tenant by tenant,
    acting for each (``accounts.tenancy``), and the titles and heads of every stale document without chunks
    (:func:`chunkless_stale_documents`). Returns counts: documents and chunks re-screened, chunks now flagged,
    changed, flagged by a seam between two chunks (``seams_flagged``, ``pipeline.screen.seams_follow``), and heads
    given a record (``heads``; of those, ``heads_flagged``)."""
    totals = {"tenants": 0, "documents": 0, "chunks": 0, "flagged": 0, "changed": 0, "seams_flagged": 0, "heads": 0,
              "heads_flagged": 0}
    for tenant_id in stale_tenant_ids() if tenant_ids is None else tenant_ids:
        tenant_activate(tenant_id)
        stats = _rescreen_tenant(tenant_id)
        totals["tenants"] += 1
        for key, value in stats.items():
            totals[key] += value
    if totals["documents"]:
        logger.info("re-screened %(chunks)d chunks and %(heads)d heads of %(documents)d documents "
                    "(%(changed)d chunks' verdicts changed)", totals)
    return totals


def _rescreen_tenant(tenant_id: int) -> dict:
    stats = {"documents": 0, "chunks": 0, "flagged": 0, "changed": 0, "seams_flagged": 0, "heads": 0,
             "heads_flagged": 0}
    done: set[tuple] = set()  # each (document, version) once per run: a run always ends
    while True:
        groups = [
            group for group in
            Chunk.objects.filter(tenant_id=tenant_id).exclude(screening_detector=SCREENED_BY).order_by()
            .values_list("document_id", "index_version_id").distinct()[: BATCH_DOCUMENTS + len(done)]
            if group not in done
        ][:BATCH_DOCUMENTS]
        if not groups:
            break
        for document_id, version_id in groups:
            done.add((document_id, version_id))
            _rescreen_document(tenant_id, document_id, version_id, stats)
    while True:  # then the documents without chunks, found by their own record, in batches likewise
        documents = [
            document_id for document_id in
            chunkless_stale_documents(tenant_id).order_by("pk").values_list("pk", flat=True)[: BATCH_DOCUMENTS + len(done)]
            if (document_id, None) not in done
        ][:BATCH_DOCUMENTS]
        if not documents:
            return stats
        for document_id in documents:
            done.add((document_id, None))
            _rescreen_document(tenant_id, document_id, None, stats)


def _rescreen_document(tenant_id: int, document_id, version_id, stats: dict) -> None:
    """Screen again the chunks of ``document_id`` in index version ``version_id`` and the document's titles and heads;
    ``version_id`` None: a document without chunks, its titles and heads alone."""
    with transaction.atomic():
        # The document row first, as ingestion and deletion lock it: a replacement cannot swap the
        # chunks under us, and a deleted document has nothing left to screen.
        document = Document.objects.select_for_update().filter(pk=document_id, tenant_id=tenant_id).first()
        if document is None:
            return
        if version_id is None:
            # Under the lock: chunks stored meanwhile came with records of their own (pipeline.store), and a run
            # that screened it meanwhile left it current. Either way, nothing to do here.
            record = (document.metadata or {}).get(TITLE_SCREENING)
            if (Chunk.objects.filter(tenant_id=tenant_id, document_id=document_id).exists()
                    or (isinstance(record, dict) and record.get("detector") == SCREENED_BY)):
                return
            chunks = []
        else:
            chunks = list(
                Chunk.objects.filter(tenant_id=tenant_id, document_id=document_id, index_version_id=version_id)
                .order_by("ordinal")
                .only("id", "section_id", "start", "end", "text", "embed_text", "screening", "screening_flagged",
                      "screening_detector", "review")
            )
            if not chunks:
                return
        sections = list(Section.objects.select_for_update().filter(tenant_id=tenant_id, document_id=document_id)
                        .only("id", "parent_id", "order", "title", "title_candidate", "heading_path", "metadata",
                              "start", "end", "access_level",
                              "access_groups", "kind", "body_spans"))
        chains = {s.id: tuple(s.heading_path or ()) for s in sections}  # the stored paths: readable by all
        texts = readable_document_texts(document.text, sections)  # what each chunk's readers may read
        policies = {s.id: (s.access_level, tuple(s.access_groups or ())) for s in sections}
        # The titles it may be shown under: the stored, the content's, and its sections' title candidates (a member
        # is shown the first they may read, kb.titles.reader_title), each screened on its own.
        candidates = title_candidates(document, sections)
        titles = content_titles(document.title, (document.metadata or {}).get(CONTENT_TITLE, ""),
                                [title for _, title in candidates])
        # The titles' and headings' own records, made again; a reviewer's decision stays with the same title.
        decided = title_decisions([((document.metadata or {}).get(TITLE_SCREENING), None),
                                   *(((s.metadata or {}).get(TITLE_SCREENING), (s.access_level, s.access_groups))
                                     for s in sections)])
        # A source stored before sources were screened has no verdict: screened alone now, as at upload, and kept;
        # a held one flags every chunk (kb.titles.source_flagging), as at ingestion. Its tags too: judged by the tag
        # rule when they have no verdict (stored with screening off, or before the rule), held ones flag every chunk.
        document_title_screen(document)
        # A title and tags from the content flag the chunks whose readers are all shown them (pipeline.screen).
        chunk_policies = [policies.get(c.section_id) for c in chunks]
        root = next((policies[s.id] for s in sections if s.parent_id is None), None)
        root_tags = (tags_flagging(document, [*(document.tags or ()), *document.content_tags])
                     if document.content_tags else None)
        borne = candidates_borne(candidates, chunk_policies, policies)
        if root_tags is not None:
            borne[root_tags[0]] = reaching(chunk_policies, root)
        screened = screen_document(
            [(c.text, c.embed_text, chains.get(c.section_id, ())) for c in chunks], document_text=document.text,
            chunk_documents=[texts.get(c.section_id, "") for c in chunks],
            titles=titles, headings=[s.title for s in sections], source=source_flagging(document, titles),
            tags=tags_flagging(document), unshown=titles_unshown(document, titles, [title for _, title in candidates]), root_tags=root_tags, borne=borne,
            # The seams between consecutive chunks, under their sections' policies as stored (pipeline.screen), and
            # across the chunks that may be held: flagged, or kept out by a reviewer whatever their verdict now.
            seams=ChunkSeams([(c.start, c.end) for c in chunks], [policies.get(c.section_id) for c in chunks],
                             [c.review == ChunkReview.KEPT_OUT for c in chunks]),
        )
        verdicts = screened.chunks
        title_records_follow(document, titles, ((s, s.title) for s in sections), screened.titles, decided=decided)
        # Each section's head screened again on its own (stored before heads were screened: cut until now).
        # A reviewer's decision on a head stays with its text (pipeline.screen.head_records_follow).
        heads, decided_heads = head_records(document.text, sections, texts), head_decisions(sections)
        head_records_follow(((s, heads.get(s.id)) for s in sections), decided_heads)
        stats["heads"] += len(heads)
        stats["heads_flagged"] += sum(1 for record in heads.values() if record["flagged"])
        Document.objects.filter(pk=document.pk).update(metadata=document.metadata)
        Section.objects.bulk_update(sections, ["metadata"], batch_size=500)
        for chunk, verdict in zip(chunks, verdicts, strict=True):
            fields = screening_fields(verdict)
            old = chunk.screening or {}
            if fields["screening_flagged"] != chunk.screening_flagged or list(old.get("reasons", ())) != list(
                fields["screening"]["reasons"]
            ):
                stats["changed"] += 1  # the verdict itself (flagged, reasons), not only its detector
            if chunk.review == ChunkReview.RELEASED and flagging_titles(old) != flagging_titles(verdict):
                # Released under other flagging titles (a heading, the document's title): held again, as
                # ingestion holds a released text under a new planted title (pipeline.store).
                chunk.review = ChunkReview.NONE
            for name, value in fields.items():
                setattr(chunk, name, value)
            stats["flagged"] += int(fields["screening_flagged"])
            stats["seams_flagged"] += int(bool(verdict.get(SEAMS_KEY)))
        Chunk.objects.bulk_update(chunks, ["screening", "screening_flagged", "screening_detector", "review"],
                                  batch_size=500)
        stats["documents"] += 1
        stats["chunks"] += len(chunks)
