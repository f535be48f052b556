"""Screening on the Django side: the tenant's mode, what search may return, the review queue.

The verdicts themselves are made by the pure detector (``ingestion.screening``) at ingestion
(``pipeline.services``) and re-made by the re-screen job (``pipeline.rescreen``); they are stored
on each chunk (``Chunk.screening``, ``screening_flagged``, ``screening_detector``) and never
computed per query. This module reads and acts on them (docs/screening.md, "Quarantine and review"):

* :func:`screening_mode` (``kb.titles``') / :func:`screening_settings_update`: the tenant's ``off | flag |
  quarantine`` (admins; audited as ``screening.settings``);
* :func:`returnable_q`: the SQL condition search adds to the access rule (``kb.retrieval.readable_chunks``),
  so a held chunk is never a candidate; the same condition, negated, finds the spans that expansion
  cuts out of contexts (:class:`Screened`, which ``kb.search`` loads for the hits' documents and whose
  ``holes`` ``kb.expansion`` cuts out);
* the review queue: :func:`review_page` (a page of it and its count, in a bounded number of statements),
  :func:`review_item_get` (a reviewer sees only flagged chunks they may read; anything else is the same 404 as a
  nonexistent id), :func:`review_decide` (release,
  keep out, delete the document; audited as ``review.decision`` with the reviewer);
* :func:`document_screening_summary`: "held for review" and why, counted over what the member may read.

Titles and headings have verdicts of their own, and one rule shows them (``kb.titles``, below this module so
that selectors and expansion use it too): a decision on a chunk they flag is one on them (:func:`review_decide`),
and the line of a held heading is cut out with the held chunks (:func:`held_spans`). A section's head that is no
heading line (a front matter, a definition's decorators and signature: in no chunk) has a verdict of its own too
(``Section.metadata["head_screening"]``), and is cut with them unless known clean (:func:`held_heads`); a flagged one
is a review item too (:func:`review_page`, :func:`head_review_item_get`, :func:`head_review_decide`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Exists,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    Min,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import JSONArray, Least, Substr

from accounts.access import readable_q
from accounts.errors import ApplicationError, NotFound, PermissionRefused
from accounts.models import Membership, Role
from accounts.policy import Reader, can_read, policy_implies
from accounts.selectors import reader_for
from audit.models import Action
from audit.services import audit_record
from kb.expansion import Piece, cut_pieces, merge_spans
from kb.models import (
    DEFAULT_SCREENING_MODE,
    HEAD_SCREENING,
    TITLE_SCREENING,
    Chunk,
    ChunkReview,
    Document,
    ScreeningMode,
    ScreeningSettings,
    Section,
)
from kb.search_types import SearchContext, SearchFilters
from kb.selectors import NOT_FOUND_MESSAGE, active_index_version_id, parse_uuid
from kb.services import CONTENT_TITLE
from kb.titles import (  # TITLES_KEY, flagging_titles: with the titles' records, below kb.services
    TITLES_KEY,
    _entries,
    _entry,
    flagging_titles,
    reader_annotations,
    reader_tags,
    screening_mode,
    source_flagging,
    tags_flagging,
    title_candidates,
    title_flagged,
    title_held,
    titles_digest,
    titles_unshown,
)

MODES = tuple(ScreeningMode.values)
DECISIONS = ("release", "keep_out", "delete_document")
REVIEW_STATES = ("pending", "decided", "all")
REVIEW_PAGE = 50  # a page of the review queue: as the API's other lists (accounts.apis.StrictLimitOffsetPagination)
REVIEW_PAGE_MAX = 500


# ----------------------------------------------------------------------------- the tenant's mode


def may_review(member: Membership) -> bool:
    """Reviewers are the tenant's admins (docs/security.md, "Planted instructions": not editors --
    an editor is the ordinary author of a planted instruction and would release their own)."""
    return member.is_active and member.role == Role.ADMIN


@transaction.atomic
def screening_settings_update(*, actor: Membership, mode: str) -> str:
    """Set the acting admin's tenant's mode; recorded with before and after when it changes."""
    if actor.role != Role.ADMIN:
        raise PermissionRefused("Only the tenant's admins may change its screening mode.")
    if mode not in MODES:
        raise ApplicationError(f"screening must be one of {', '.join(MODES)}; got {mode!r}", code="invalid_screening")
    current = ScreeningSettings.objects.select_for_update().filter(tenant_id=actor.tenant_id).first()
    before = current.mode if current else DEFAULT_SCREENING_MODE
    if current is None:
        current = ScreeningSettings(tenant_id=actor.tenant_id)
    current.mode = mode
    current.save()
    if before != mode:
        audit_record(action=Action.SCREENING_SETTINGS, actor=actor, tenant_id=actor.tenant_id, target_type="tenant",
                     target_id=actor.tenant_id, details={"before": {"screening": before}, "after": {"screening": mode}})
    return mode


# ----------------------------------------------------------------------------- what search may return


def returnable_q(mode: str, *, exclude_flagged: bool = False) -> Q:
    """Chunks search may return under ``mode``: never one a reviewer kept out; in quarantine mode
    no flagged chunk unless released; with ``exclude_flagged`` no flagged chunk at all. An unknown
    mode is treated as quarantine (fail closed)."""
    q = ~Q(review=ChunkReview.KEPT_OUT)
    if mode not in (ScreeningMode.OFF, ScreeningMode.FLAG):
        q &= Q(screening_flagged=False) | Q(review=ChunkReview.RELEASED)
    if exclude_flagged:
        q &= Q(screening_flagged=False)
    return q


def shown_screening(mode: str, screening: dict, review: str = "") -> dict | None:
    """A chunk's verdict as search shows it: None in ``off`` mode (flags are not shown)."""
    if mode == ScreeningMode.OFF:
        return None
    return {**_verdict(screening), "review": review or ""}


def held_spans(*, tenant_id: int, document_id: uuid.UUID) -> list[tuple[int, int]]:
    """The spans (document offsets, merged) of a document's chunks in the active index version that
    search may not return under the tenant's mode: held for review, kept out; the lines of its held
    headings (:func:`held_heading_spans`); the heads of its sections that are not known clean (:func:`held_heads`,
    judged against the document's text read here, before its sections: a caller checks afterwards that the sections
    are still the rows its own read saw -- ``kb.selectors.document_sections_unchanged`` -- so the text is theirs too.
    A copy of the text the caller loaded earlier was not: found attacking time, twenty-first session, MCP's
    ``read_section`` judged a replacement's heads against the old text, and a planted link title in a heading line
    past its end was served whole); and the text of its sections without chunks (:func:`unscreened_spans`).

    For text read outside search -- MCP's ``read_section`` and document resource, which an agent reads
    as search's contexts -- so a held chunk's text is cut out there too, not only from contexts. Like
    :class:`Screened`'s holes, not limited to what any reader may read (fail closed)."""
    version_id = active_index_version_id(tenant_id=tenant_id)  # the one resolver every read uses
    if version_id is None:
        return []
    mode = screening_mode(tenant_id=tenant_id)
    text = Document.objects.filter(pk=document_id, tenant_id=tenant_id).values_list("text", flat=True).first() or ""
    # The held chunks and the sections without chunks in one statement (:func:`held_chunks_and_unscreened`).
    rows, unscreened = held_chunks_and_unscreened(tenant_id=tenant_id, version_id=version_id,
                                                  document_ids={document_id}, chunks=~returnable_q(mode))
    # A held heading's line too: it lies outside its chunks (and a heading with no text below is in none).
    sections = list(Section.objects.filter(tenant_id=tenant_id, document_id=document_id).values(
        "id", "parent_id", "start", "end", "title", "body_spans", "kind",
        title_screening=F(f"metadata__{TITLE_SCREENING}"), head_screening=F(f"metadata__{HEAD_SCREENING}")))
    headings = held_heading_spans(sections, mode)
    return merge_spans([*((row["start"], row["end"]) for row in rows), *headings, *held_heads(sections, mode, text),
                        *unscreened.get(document_id, ())])


UNSCREENED_TO_END = 2**62  # an offset past any document's end: a span to it cuts the rest of the text


def held_chunks_and_unscreened(*, tenant_id: int, version_id: uuid.UUID, document_ids: Iterable, chunks: Q,
                               fields: Mapping | None = None) -> tuple[list[dict], dict[uuid.UUID, list]]:
    """The chunks of ``document_ids`` in ``version_id`` that match ``chunks`` (as dicts of ``document_id``, ``start``,
    ``end`` and ``fields``: names to expressions over the chunk), and :func:`unscreened_spans` -- in **one
    statement**, so one snapshot. Read in two, a policy change that deletes a section's chunks, or the rebuild
    that stores them again, committing between the reads made the section neither held nor unscreened, and a
    planted instruction held for review came back whole (found attacking the review queue's jobs, 2026-12-03:
    search read the held chunks first and lost to the rebuild, MCP read the unscreened sections first and
    lost to the policy change)."""
    from django.contrib.postgres.expressions import ArraySubquery
    from django.db.models.functions import JSONObject

    in_version = Chunk.objects.filter(tenant_id=tenant_id, section_id=OuterRef("pk"), index_version_id=version_id)
    held = in_version.filter(chunks).order_by().values(
        row=JSONObject(start=F("start"), end=F("end"), **(fields or {})))
    rows, spans = [], {}
    for document_id, body_spans, screened, matched in (
        Section.objects.filter(tenant_id=tenant_id, document_id__in=list(document_ids))
        .annotate(screened=Exists(in_version), held=ArraySubquery(held))
        .values_list("document_id", "body_spans", "screened", "held")
    ):
        rows.extend({**row, "document_id": document_id} for row in matched or ())
        if not screened and body_spans:
            spans.setdefault(document_id, []).extend(
                (int(span[0]), int(span[1])) for span in body_spans if isinstance(span, list | tuple) and len(span) == 2)
    # From the first such text to the document's end: the chunks on either side of it were screened with it between
    # them, and the seams the walks screened stop at a chunk that may not be held (``pipeline.screen.SeamWalks``) --
    # cut alone, its neighbours reached a model joined by a blank line across a seam nobody screened (found checking
    # the rebuild, seventeenth session). Holding a neighbour would join the next ones the same way; so nothing after
    # the gap is read with what lies before it until the rebuild has screened the whole document again (fail closed).
    spans = {document_id: [(min(start for start, _ in found), UNSCREENED_TO_END)]
             for document_id, found in spans.items() if found}
    return rows, spans


def unscreened_spans(*, tenant_id: int, version_id: uuid.UUID, document_ids: Iterable) -> dict[uuid.UUID, list]:
    """The body spans, by document, of the sections of ``document_ids`` that have no chunk in ``version_id``:
    text no verdict covers, held as a held chunk is (fail closed). Every section with text has chunks once
    ingested; a policy change that alters a section's heading path deletes them and a job rebuilds them
    (``kb.services.apply_policies``) -- until it ends, or for good when it fails, the text had no verdict and
    a planted instruction held for review came back whole in a sibling's parent context and MCP's
    ``read_section`` (found attacking the demo). Read with the held chunks, in their statement
    (:func:`held_chunks_and_unscreened`), wherever both are cut. One span a document, from the first such text to the
    document's end (:data:`UNSCREENED_TO_END`): the chunks on either side were never screened joined."""
    return held_chunks_and_unscreened(tenant_id=tenant_id, version_id=version_id, document_ids=document_ids,
                                      chunks=Q(pk__in=[]))[1]


def held_heading_spans(rows: Iterable[Mapping], mode: str) -> list[tuple[int, int]]:
    """The heading lines of held headings (section rows: id, parent_id, start, end, title, body_spans and the
    record as ``title_screening``), from a section's start to its first text or subsection: in the document's
    text, outside every chunk, so cut out with the held chunks wherever an agent reads that text."""
    rows = list(rows)
    return merge_spans(head for row, head in zip(rows, section_heads(rows), strict=True)
                       if head[1] > head[0] and title_held(row["title"], row["title_screening"], mode))


# The kind of section whose head is its heading line, and nothing else (``ingestion.parsers.section_tree``'s
# headings: Markdown, HTML, reStructuredText, PDF outlines, DOCX): the title is screened on its own, and its line cut
# when held (:func:`held_heading_spans`).
HEADING_KIND = "heading"


def held_heads(rows: Iterable[Mapping], mode: str, text: str) -> list[tuple[int, int]]:
    """The heads (:func:`section_heads`) of sections that are no heading line -- a document root's (a Markdown front
    matter, a caption file's header line), a code definition's (its decorators and signature), a transcript turn's, a
    region's marker line -- that an agent may not read under ``mode`` (:func:`head_held`; rows as for
    :func:`held_heading_spans`, with ``kind`` and the :data:`~kb.models.HEAD_SCREENING` record as ``head_screening``).
    A head is in no chunk, so in no search context and in no chunk's verdict: found attacking the demo (fourteenth
    session), "Ignore all previous instructions and ..." in a front matter's ``description:`` or a decorator's comment
    reached an agent whole through MCP's ``read_section`` and document resource, in quarantine mode. Each head is
    screened on its own at ingestion and by the re-screen job (``pipeline.screen.head_records``); cut wherever an
    agent reads the text, as held text is, unless known clean. A heading's line is such a head when it holds words
    its title does not (:func:`head_screened`)."""
    rows = list(rows)
    return merge_spans(head for row, head in zip(rows, section_heads(rows), strict=True)
                       if head[1] > head[0] and head_screened(text, row.get("kind"), row.get("title"), head)
                       and head_held(row, head, mode))


_WORDS = re.compile(r"\w+")


def head_screened(text: str, kind: str | None, title: str | None, head: tuple[int, int]) -> bool:
    """Whether a section's ``head`` (its span in the document's ``text``) has a verdict of its own: it is no heading
    line (:data:`HEADING_KIND`), or a heading line that holds a word its ``title`` does not (case aside) -- a
    Markdown link's target or title, an image's title, which the title drops. Found attacking the demo (fourteenth
    session): "Ignore all previous instructions ..." as a heading link's title, the title itself clean, reached an
    agent whole through MCP in quarantine mode. A heading line of its title's words alone is judged by the title's
    verdict (:func:`held_heading_spans`)."""
    if kind != HEADING_KIND:
        return True
    words = set(_WORDS.findall(text[head[0]:head[1]].casefold()))
    return not words <= set(_WORDS.findall((title or "").casefold()))


def head_held(row: Mapping, head: tuple[int, int], mode: str) -> bool:
    """Whether a section's ``head`` (its span now) is held under ``mode``, as a chunk with the same verdict would be
    (:func:`returnable_q`): flagged in quarantine mode (or an unknown one: fail closed); in every mode, without a
    readable record for that very span (stored before heads were screened, until the re-screen job writes it, or
    made for another extent: fail closed). A flagged head is in the review queue of those who may read its section
    (:func:`review_queue`, :func:`head_review_decide`): one a reviewer released is read in every mode, one kept out is
    cut in every mode, as a chunk with that review (:func:`_held`)."""
    record = row.get("head_screening")
    if not isinstance(record, dict) or record.get("span") != [head[0], head[1]]:
        return True
    flagged = record.get("flagged")
    if flagged is False:
        return False
    if flagged is not True:
        return True
    return _held(mode, _head_review(record))


def _head_review(record: Mapping) -> str:
    """A flagged head's review as its record holds it (``pipeline.screen.head_records_follow``): ``""`` unless a
    known one."""
    review = record.get("review") if isinstance(record, Mapping) else None
    return str(review) if review in (ChunkReview.RELEASED, ChunkReview.KEPT_OUT) else ChunkReview.NONE


def section_heads(rows: Iterable[Mapping]) -> list[tuple[int, int]]:
    """Each section's head: from its start to its first text or subsection (its end when it has neither) -- rows
    with ``id``, ``parent_id``, ``start``, ``end`` and ``body_spans`` (every section of the document), or
    ``Section`` rows."""
    rows = [row if isinstance(row, Mapping) else {"id": row.id, "parent_id": row.parent_id, "start": row.start,
                                                  "end": row.end, "body_spans": row.body_spans} for row in rows]
    firsts: dict = {}
    for row in rows:
        starts = [int(span[0]) for span in row["body_spans"] or () if isinstance(span, list | tuple) and span]
        firsts[row["id"]] = min([row["end"], *starts])
    for row in rows:
        if row["parent_id"] in firsts:
            firsts[row["parent_id"]] = min(firsts[row["parent_id"]], row["start"])
    return [(row["start"], firsts[row["id"]]) for row in rows]


def _verdict(screening: dict) -> dict:
    screening = screening or {}
    return {
        "flagged": bool(screening.get("flagged", False)),
        "score": float(screening.get("score", 0.0)),
        "reasons": list(screening.get("reasons", ())),
        "detector": str(screening.get("detector", "")),
        "spans": [list(span) for span in screening.get("spans", ())],
    }


# ----------------------------------------------------------------------------- screening in search results


@dataclass
class Screened:
    """The chunks of the searched documents that screening concerns: those that may not be returned
    (their spans are cut out of every hit text and context, so expansion cannot bring their text
    back) and the flagged ones that may, as the reader may read them (reported on the contexts)."""

    held: dict[uuid.UUID, list[tuple[int, int]]] = field(default_factory=dict)
    shown: dict[uuid.UUID, list[tuple[uuid.UUID, int, int, dict, str]]] = field(default_factory=dict)
    mode: str = ScreeningMode.QUARANTINE

    @classmethod
    def load(cls, reader: Reader, version_id: uuid.UUID, document_ids: set, filters: SearchFilters) -> Screened:
        out = cls(mode=filters.screening_mode)
        if not document_ids:
            return out
        ok = ExpressionWrapper(
            returnable_q(filters.screening_mode, exclude_flagged=filters.exclude_flagged), output_field=BooleanField()
        )
        readable = ExpressionWrapper(readable_q(reader), output_field=BooleanField())
        # With the text of a section without chunks in this version (rebuilt after a policy change): never
        # screened -- in the same statement (:func:`held_chunks_and_unscreened`).
        rows, unscreened = held_chunks_and_unscreened(
            tenant_id=reader.tenant_id, version_id=version_id, document_ids=document_ids,
            chunks=Q(screening_flagged=True) | Q(review=ChunkReview.KEPT_OUT),
            fields={"id": F("id"), "screening": F("screening"), "review": F("review"), "ok": ok, "may_read": readable})
        for row in sorted(rows, key=lambda row: (str(row["document_id"]), row["start"], row["id"])):
            document_id, start, end = row["document_id"], row["start"], row["end"]
            if not row["ok"]:  # held whether or not this reader may read it: fail closed
                out.held.setdefault(document_id, []).append((start, end))
            elif row["may_read"]:
                out.shown.setdefault(document_id, []).append(
                    (uuid.UUID(row["id"]), start, end, row["screening"], row["review"]))
        for document_id, spans in unscreened.items():
            out.held.setdefault(document_id, []).extend(spans)
        out.held = {doc: merge_spans(spans) for doc, spans in out.held.items()}
        return out

    def holes(self, document_id: uuid.UUID) -> list[tuple[int, int]]:
        return self.held.get(document_id, [])

    def cut_text(self, document_id: uuid.UUID, start: int, text: str) -> str:
        """A hit's text without the parts that lie in a held chunk (chunks can overlap)."""
        holes = self.holes(document_id)
        if not holes:
            return text
        kept = [p.text for p in cut_pieces([Piece(None, start, start + len(text), text=text)], holes)]
        return "\n\n".join(t.strip() for t in kept if t.strip())

    def context_flags(self, context: SearchContext) -> dict:
        """The flagged chunks returned inside ``context`` (spans overlapping its spans), with their verdicts."""
        chunks = []
        for chunk_id, start, end, screening, review in self.shown.get(context.document_id, ()):
            if any(start < e and s < end for s, e in context.spans):
                verdict = shown_screening(self.mode, screening, review) or {}
                # The verdict's spans are offsets into the chunk's text: as document offsets here.
                verdict["spans"] = [[start + a, start + b] for a, b in verdict.get("spans", ())]
                chunks.append({"chunk_id": chunk_id, **verdict})
        # And the joins of the context screened when read (``kb.joins``) that flagged and are served joined (flag mode).
        reasons = sorted({*(r for c in chunks for r in c["reasons"]), *context.join_reasons})
        return {"flagged": bool(chunks) or bool(context.join_reasons), "reasons": reasons, "chunks": chunks}


# ----------------------------------------------------------------------------- the review queue


@dataclass(frozen=True)
class ReviewItem:
    """One flagged chunk -- or a section's flagged head (``kind`` ``head``: in no chunk, ``chunk_id`` None; its
    ``text`` is the head's) -- as its reviewer sees it (they may read its section)."""

    chunk_id: uuid.UUID | None
    document_id: uuid.UUID
    document_title: str
    document_source: str  # as stored, as the title: a held source flags the chunk too (pipeline.screen)
    document_tags: list[str]  # as stored, as the title: held tags flag every chunk too (kb.titles.tags_flagging)
    section_id: uuid.UUID
    heading_path: list[str]
    text: str
    screening: dict
    review: str
    held: bool  # kept out of search now (quarantine mode and not released, or kept out)
    kind: str = "chunk"  # or "head": a section's head (:func:`held_heads`), decided by :func:`head_review_decide`


def _reviewer_check(member: Membership) -> None:
    if not may_review(member):
        raise PermissionRefused("Only the tenant's admins review flagged chunks.")


def _flagged(reader: Reader) -> QuerySet[Chunk]:
    """Flagged chunks of the tenant's active index version in sections the reader may read.

    The read rule is in the statement (``readable_q``): a chunk the reviewer may not read is never
    loaded, so it is neither shown nor counted."""
    version_id = active_index_version_id(tenant_id=reader.tenant_id)  # the one resolver every read uses
    if version_id is None:
        return Chunk.objects.none()
    return Chunk.objects.filter(
        readable_q(reader), tenant_id=reader.tenant_id, index_version_id=version_id, screening_flagged=True
    )


def _items(member: Membership, chunks: QuerySet[Chunk] | list[tuple]) -> list[ReviewItem]:
    """Review items of flagged chunks, or of rows already read as (chunk id, document id, section id, text,
    verdict, review[, kind]) (:func:`_head_rows`)."""
    from kb.expansion import SectionForest

    reader = reader_for(member)
    mode = screening_mode(tenant_id=member.tenant_id)
    rows = chunks if isinstance(chunks, list) else list(
        chunks.values_list("id", "document_id", "section_id", "text", "screening", "review"))
    # Titles as stored: a reviewer sees what they release (of sections they may read, the forest's rule).
    forest = SectionForest.around(reader, {row[2] for row in rows}, bodies=False, mode=None)
    stored = {d.pk: (d.source, reader_tags(d)) for d in  # the tags as the reviewer is shown them (kb.titles)
              Document.objects.filter(pk__in={row[1] for row in rows}).annotate(**reader_annotations(reader))
              .only("pk", "source", "tags", "content_tags")}
    items = []
    for chunk_id, document_id, section_id, text, screening, review, *kind in rows:
        held = _held(mode, review)
        items.append(ReviewItem(
            chunk_id=chunk_id, document_id=document_id, document_title=forest.document_titles.get(document_id, ""),
            document_source=stored.get(document_id, ("", []))[0] if document_id in forest.document_titles else "",
            document_tags=list(stored.get(document_id, ("", []))[1] or []) if document_id in forest.document_titles
            else [],
            section_id=section_id, heading_path=forest.heading_path(section_id) if section_id in forest.nodes else [],
            text=text, screening={**_verdict(screening), "review": review or ""}, review=review or "", held=held,
            kind=kind[0] if kind else "chunk",
        ))
    return items


@dataclass(frozen=True)
class ReviewPage:
    """A page of the review queue (:func:`review_page`) and how many items the whole queue holds in its state: of
    what the reviewer may read, nothing more."""

    items: list[ReviewItem]
    count: int
    offset: int
    limit: int


def review_page(*, member: Membership, state: str = "pending", offset: int = 0,
                limit: int = REVIEW_PAGE) -> ReviewPage:
    """A page of the review queue: the flagged chunks the reviewer may read, in document order, then the flagged
    heads of sections they may read (:func:`held_heads`: in no chunk; ``kind`` ``head``), in document order --
    ``pending`` (no decision yet), ``decided`` or ``all`` -- items ``offset`` to ``offset + limit`` of it (``limit``
    1 to :data:`REVIEW_PAGE_MAX`), with the queue's count.

    Bounded, whatever the queue holds: the chunks and the heads are each counted in one statement and a page of each
    read in one more (a head's text with it, :func:`_flagged_head_sections`), and the rest of the statements are
    the page's (found reviewing the queue, fifteenth session: every flagged head of the tenant was read on each
    request, its text with a statement of its own, and no head past the first page could be reached).

    Fail closed (docs/security.md): nothing is said about flagged chunks or heads the reviewer may not read --
    no item, no count: the read rule is in every statement."""
    _reviewer_check(member)
    if state not in REVIEW_STATES:
        raise ApplicationError("state must be pending, decided or all", code="invalid_state")
    reader = reader_for(member)
    limit, offset = max(1, min(limit, REVIEW_PAGE_MAX)), max(0, offset)
    chunks, heads = _flagged(reader), _flagged_head_sections(reader)
    if state == "pending":
        chunks, heads = chunks.filter(review=ChunkReview.NONE), heads.filter(head_review=ChunkReview.NONE)
    elif state == "decided":
        chunks, heads = chunks.exclude(review=ChunkReview.NONE), heads.exclude(head_review=ChunkReview.NONE)
    chunk_count, head_count = chunks.count(), heads.count()
    rows: list[tuple] = []
    if offset < chunk_count:
        rows = list(chunks.order_by("document_id", "ordinal", "pk")[offset:offset + limit].values_list(
            "id", "document_id", "section_id", "text", "screening", "review"))
    skipped = max(0, offset - chunk_count)  # the heads before this page
    if len(rows) < limit and skipped < head_count:
        rows += _head_rows(heads, offset=skipped, limit=limit - len(rows))
    return ReviewPage(items=_items(member, rows), count=chunk_count + head_count, offset=offset, limit=limit)


def review_queue(*, member: Membership, state: str = "pending", limit: int = REVIEW_PAGE) -> list[ReviewItem]:
    """The first page of the review queue (:func:`review_page`): its items."""
    return review_page(member=member, state=state, limit=limit).items


def review_item_get(*, member: Membership, chunk_id) -> ReviewItem:
    """One flagged chunk the reviewer may read; anything else (not flagged, unreadable, another
    tenant's, nonexistent, malformed) is the same NotFound."""
    _reviewer_check(member)
    pk = parse_uuid(chunk_id)
    items = _items(member, _flagged(reader_for(member)).filter(pk=pk)) if pk else []
    if not items:
        raise NotFound(NOT_FOUND_MESSAGE)
    return items[0]


@transaction.atomic
def review_decide(*, member: Membership, chunk_id, decision: str) -> ReviewItem | None:
    """Record a reviewer's decision on a flagged chunk they may read (audited with the reviewer).

    ``release`` and ``keep_out`` apply to every chunk of the document with the same text (every index
    version; a re-ingestion of the same text keeps the decision, ``pipeline.store.store_plan``) -- a release
    only to those the reviewer may read, a keep-out to all;
    ``delete_document`` deletes the chunk's document (``kb.services.document_delete``) and returns None."""
    from kb.services import document_delete

    if decision not in DECISIONS:
        raise ApplicationError(f"decision must be one of {', '.join(DECISIONS)}; got {decision!r}",
                               code="invalid_decision")
    item = review_item_get(member=member, chunk_id=chunk_id)
    # The chunk and its document read again, locked: a replacement or a deletion committed since the item was read
    # leaves nothing to decide on -- the same NotFound as a made-up id (it was a DoesNotExist, a 500: found attacking
    # time, twenty-first session, attack21b's left-alone).
    chunk = Chunk.objects.select_related("document").filter(pk=item.chunk_id).first()
    if chunk is None:
        raise NotFound(NOT_FOUND_MESSAGE)
    details = {"decision": decision, "before": {"review": item.review}, "detector": item.screening["detector"]}
    if decision == "delete_document":
        document = Document.objects.filter(pk=chunk.document_id).first()
        if document is None:
            raise NotFound(NOT_FOUND_MESSAGE)
        audit_record(action=Action.REVIEW_DECISION, actor=member, tenant_id=member.tenant_id, target_type="chunk",
                     target_id=chunk.pk, document_ids=[chunk.document_id], details=details)
        document_delete(document=document, actor=member)
        return None
    after = ChunkReview.RELEASED if decision == "release" else ChunkReview.KEPT_OUT
    # The document row first, as ingestion, the re-screen job and deletion lock it (its titles' record changes).
    document = Document.objects.select_for_update().filter(pk=chunk.document_id).first()
    if document is None or not Chunk.objects.filter(pk=chunk.pk).exists():
        raise NotFound(NOT_FOUND_MESSAGE)
    titles_decided = _titles_decide(member, document, chunk, after)
    same = Chunk.objects.filter(
        tenant_id=member.tenant_id, document_id=chunk.document_id, content_hash=chunk.content_hash,
        screening_flagged=True,
    )
    # The same text flagged by the same titles (a heading, the document's title: pipeline.screen) only.
    titles = flagging_titles(chunk.screening)
    same = (same.filter(**{f"screening__{TITLES_KEY}": titles}) if titles
            else same.exclude(screening__has_key=TITLES_KEY))
    if after == ChunkReview.RELEASED:
        # A release only of what the reviewer may read (found attacking the queue, 2026-12-03: the same text in a
        # restricted section -- two sections of one heading path -- was released by an internal reviewer, who
        # could neither see nor review it). A keep-out only hides more: it follows the text everywhere.
        same = same.filter(readable_q(reader_for(member)))
    same.update(review=after)
    audit_record(action=Action.REVIEW_DECISION, actor=member, tenant_id=member.tenant_id, target_type="chunk",
                 target_id=chunk.pk, document_ids=[chunk.document_id],
                 details={**details, "after": {"review": str(after)}, "titles_decided": titles_decided})
    return review_item_get(member=member, chunk_id=chunk.pk)


def head_review_item_get(*, member: Membership, section_id) -> ReviewItem:
    """A section's flagged head (:func:`held_heads`) as the reviewer sees it, when they may read the section; anything
    else (a clean head, none, a record for another extent, unreadable, another tenant's, nonexistent, malformed) is
    the same NotFound as a made-up id."""
    _reviewer_check(member)
    pk = parse_uuid(section_id)
    items = _items(member, _head_rows(_flagged_head_sections(reader_for(member), section_id=pk))) if pk else []
    if not items:
        raise NotFound(NOT_FOUND_MESSAGE)
    return items[0]


@transaction.atomic
def head_review_decide(*, member: Membership, section_id, decision: str) -> ReviewItem | None:
    """Record a reviewer's decision on a section's flagged head they may read, as :func:`review_decide` on a chunk
    (audited as ``review.decision`` with the reviewer, ``target_type`` ``section``, no text): ``release`` (read by
    agents in every mode), ``keep_out`` (cut in every mode), ``delete_document``. Kept in the head's record
    (:data:`~kb.models.HEAD_SCREENING` ``review``), which the re-screen job and a re-ingestion make again keeping it
    for the same head text only (``pipeline.screen.head_records_follow``: a head whose text changed waits for a new
    decision); a release stays only while every reader of the section may read it as it was
    (``kb.services._title_releases_follow``)."""
    from kb.services import document_delete

    if decision not in DECISIONS:
        raise ApplicationError(f"decision must be one of {', '.join(DECISIONS)}; got {decision!r}",
                               code="invalid_decision")
    item = head_review_item_get(member=member, section_id=section_id)
    # The document row first, as ingestion, the re-screen job and deletion lock it; then the section's; then the
    # item read again under the locks (its record as decided is the one stored).
    document = Document.objects.select_for_update().filter(pk=item.document_id).first()
    Section.objects.select_for_update().filter(pk=item.section_id).first()
    item = head_review_item_get(member=member, section_id=item.section_id)
    details = {"decision": decision, "before": {"review": item.review}, "detector": item.screening["detector"],
               "kind": "head"}
    if decision == "delete_document":
        audit_record(action=Action.REVIEW_DECISION, actor=member, tenant_id=member.tenant_id, target_type="section",
                     target_id=item.section_id, document_ids=[item.document_id], details=details)
        document_delete(document=document, actor=member)
        return None
    after = ChunkReview.RELEASED if decision == "release" else ChunkReview.KEPT_OUT
    section = Section.objects.get(pk=item.section_id)
    record = section.metadata[HEAD_SCREENING]
    Section.objects.filter(pk=section.pk).update(
        metadata={**section.metadata, HEAD_SCREENING: {**record, "review": str(after)}})
    audit_record(action=Action.REVIEW_DECISION, actor=member, tenant_id=member.tenant_id, target_type="section",
                 target_id=section.pk, document_ids=[item.document_id], details={**details, "after": {"review": str(after)}})
    return head_review_item_get(member=member, section_id=section.pk)


def _titles_decide(member: Membership, document: Document, chunk: Chunk, review: str) -> dict:
    """A decision on a chunk that titles flag (:data:`TITLES_KEY`) is one on those titles too, as far as the
    reviewer saw them beside it: the document's title, source and tags, and the headings above the chunk that they
    may read. Only when those are exactly the titles that flag it (the same digest) -- else none changes (fail
    closed). Returns what it decided, for the audit event (no text): ``{"document_title": bool, "source": bool,
    "tags": bool, "headings": n}``."""
    none = {"document_title": False, "source": False, "tags": False, "headings": 0}
    digest = flagging_titles(chunk.screening)
    if not digest:
        return none
    sections = {s.pk: s for s in Section.objects.select_for_update().filter(document_id=document.pk)
                .only("id", "parent_id", "order", "title", "title_candidate", "metadata", "access_level",
                      "access_groups")}
    chain, node, seen = [], sections.get(chunk.section_id), set()
    while node is not None and node.pk not in seen:
        seen.add(node.pk)
        chain.append(node)
        node = sections.get(node.parent_id)
    record = (document.metadata or {}).get(TITLE_SCREENING)
    flagged = lambda title, record: title_flagged(title, record, ScreeningMode.FLAG)  # noqa: E731 -- in its record
    candidates = title_candidates(document, sections.values())  # each shown to some readers of its section
    content = (document.metadata or {}).get(CONTENT_TITLE) or ""
    found = [title for _, title in candidates]
    content = content[:500] if content[:500] in found else content  # as screening names it (pipeline.screen)
    named = tuple(dict.fromkeys((document.title, content, *found)))
    # A title from the content flags the chunks every reader of which may read the section bearing it, the content's
    # tags those every reader of which may read the root (pipeline.screen): as screening decided, so here.
    policy = (chunk.access_level, tuple(chunk.access_groups or ()))
    bearers: dict[str, list] = {}
    for section_id, title in candidates:
        bearers.setdefault(title, []).append(sections.get(section_id))
    root = next((s for s in sections.values() if s.parent_id is None), None)

    def reaches(section) -> bool:
        return section is not None and policy_implies(*policy, section.access_level, section.access_groups or ())

    unshown = titles_unshown(document, named, list(bearers))
    titles = [t for t in named if flagged(t, record) and t not in unshown
              and (t not in bearers or t == document.title or any(reaches(b) for b in bearers[t]))]
    # A held source flags every chunk as a title does (pipeline.screen), under the text its verdict is kept under.
    source = [name for name, _ in filter(None, [source_flagging(document, named)])]
    # Held tags likewise (kb.titles.tags_flagging), under the name their verdict is kept under.
    tags = [name for name, _ in filter(None, [tags_flagging(document)])]
    if document.content_tags and reaches(root):
        tags += [name for name, _ in filter(None, [tags_flagging(document, [*document.tags, *document.content_tags])])]
    headings = [s for s in chain if flagged(s.title, (s.metadata or {}).get(TITLE_SCREENING))]
    if titles_digest(sorted({*titles, *source, *tags, *(s.title for s in headings)})) != digest:
        return none
    reader = reader_for(member)

    def decided(title: str, record: dict) -> dict:
        entry = {**_entry(title, record), "review": str(review)}
        return {**record, "titles": {**_entries(record), titles_digest([title]): entry}}

    def seen(title: str) -> bool:  # a candidate the reviewer may read the section of
        return any(b is not None and can_read(reader, level=b.access_level, group_ids=b.access_groups)
                   for b in bearers.get(title, ()))

    seen_content = any(seen(t) for t in titles if t != document.title)
    for name in [t for t in titles if t == document.title or seen(t)] + source + tags:
        record = decided(name, record)
    if record is not (document.metadata or {}).get(TITLE_SCREENING):
        document.metadata = {**document.metadata, TITLE_SCREENING: record}
        Document.objects.filter(pk=document.pk).update(metadata=document.metadata)
    readable = [s for s in headings if can_read(reader, level=s.access_level, group_ids=s.access_groups)]
    for section in readable:
        section.metadata = {**section.metadata, TITLE_SCREENING: decided(section.title, section.metadata[TITLE_SCREENING])}
    Section.objects.bulk_update(readable, ["metadata"])
    return {"document_title": document.title in titles or seen_content, "source": bool(source),
            "tags": bool(tags),
            "headings": len(readable)}


# ----------------------------------------------------------------------------- a document's state


@dataclass(frozen=True)
class ScreeningSummary:
    """Flagged chunks (and section heads) of a document in sections the member may read (the active version)."""

    flagged: int
    held: int  # kept out of search now
    reasons: list[str]

    def as_dict(self) -> dict:
        return {"flagged": self.flagged, "held": self.held, "reasons": self.reasons}


def section_screening_summaries(*, member: Membership, document_id: uuid.UUID) -> dict[uuid.UUID, ScreeningSummary]:
    """Per readable section of a document: its flagged chunks and head, held ones, reasons (only sections with any)."""
    mode = screening_mode(tenant_id=member.tenant_id)
    by_section: dict[uuid.UUID, list] = {}
    for section_id, screening, review in (
        _flagged(reader_for(member)).filter(document_id=document_id).values_list("section_id", "screening", "review")
    ):
        by_section.setdefault(section_id, []).append((screening, review))
    for section_id, record in _flagged_heads(reader_for(member), document_id):
        by_section.setdefault(section_id, []).append((record, _head_review(record)))
    return {section_id: _summary(mode, rows) for section_id, rows in by_section.items()}


def _flagged_heads(reader: Reader, document_id: uuid.UUID) -> list[tuple[uuid.UUID, dict]]:
    """The flagged heads (:func:`held_heads`: records for the span each has now) of a document's sections the reader
    may read, as (section id, verdict): counted in the screening summaries as a flagged chunk is -- held or not as
    the mode and their review hold them -- for those who may read them, and for nobody else (the read rule is in the
    statement)."""
    return list(_flagged_head_sections(reader, document_id=document_id).order_by("start", "end", "pk")
                .values_list("pk", "head_screening"))


class _FirstBodyStart(Func):
    """The least start of a section's ``body_spans`` (``[[start, end], ...]``) as :func:`section_heads` reads them:
    the first element of each non-empty list in the list (a number; ``int``'s truncation); NULL when there is none."""

    template = ("(SELECT min(trunc(first::numeric))::integer FROM jsonb_path_query(%(expressions)s, "
                "'strict $[*] ? (@.type() == \"array\" && @.size() > 0)[0] ? (@.type() == \"number\")', '{}', true) "
                "AS first)")
    output_field = IntegerField()


def _flagged_head_sections(reader: Reader, *, document_id: uuid.UUID | None = None,
                           section_id: uuid.UUID | None = None) -> QuerySet[Section]:
    """The tenant's sections (of one document, or one section) whose head is flagged now, that the reader may read:
    a record flagged for the span the head has now -- :func:`section_heads`' rule, from the section's start to its
    first text or subsection, worked out in the statement (``head_end``) -- with ``head_screening`` (the record) and
    ``head_review`` (:func:`_head_review`). The read rule is in the statement (``readable_q``): a head the reader may
    not read is never read, so neither shown nor counted. A query, so that it is counted and paged in SQL (the
    partial index ``section_flagged_head_idx`` finds the flagged ones)."""
    record = KeyTransform(HEAD_SCREENING, "metadata")
    # By the parent's id alone (its index): a subsection is of its parent's document, so of its tenant.
    first_subsection = (Section.objects.filter(parent_id=OuterRef("pk")).order_by().values("parent_id")
                        .annotate(first=Min("start")).values("first"))
    sections = Section.objects.filter(readable_q(reader), tenant_id=reader.tenant_id,
                                      **{f"metadata__{HEAD_SCREENING}__flagged": True})
    if document_id is not None:
        sections = sections.filter(document_id=document_id)
    if section_id is not None:
        sections = sections.filter(pk=section_id)
    return sections.annotate(
        head_end=Least(F("end"), Subquery(first_subsection), _FirstBodyStart("body_spans"),
                       output_field=IntegerField()),
        head_span=JSONArray(F("start"), F("head_end")),
        head_screening=record,
        head_review=Case(When(**{f"metadata__{HEAD_SCREENING}__review__in": [ChunkReview.RELEASED, ChunkReview.KEPT_OUT]},
                              then=KeyTextTransform("review", record)), default=Value(ChunkReview.NONE),
                         output_field=CharField()),
    ).filter(head_end__gt=F("start"), **{f"metadata__{HEAD_SCREENING}__span": F("head_span")})


def _head_rows(heads: QuerySet[Section], *, offset: int = 0, limit: int | None = None) -> list[tuple]:
    """Heads of :func:`_flagged_head_sections` as review rows (:func:`_items`): (None, document id, section id, the
    head's text, verdict, review, ``"head"``), in document order, ``limit`` of them from ``offset`` -- in one
    statement, the heads' texts with them (never the documents' whole texts)."""
    text = Document.objects.filter(pk=OuterRef("document_id")).values(
        head=Substr("text", OuterRef("start") + 1, OuterRef("head_end") - OuterRef("start")))
    rows = heads.annotate(head_text=Subquery(text)).order_by("document_id", "start", "end", "pk").values_list(
        "pk", "document_id", "head_text", "head_screening", "head_review")
    rows = rows[offset:offset + limit] if limit is not None else rows[offset:]
    return [(None, document_id, pk, head or "", record, review, "head") for pk, document_id, head, record, review in rows]


def _held(mode: str, review: str) -> bool:
    return review == ChunkReview.KEPT_OUT or (mode == ScreeningMode.QUARANTINE and review != ChunkReview.RELEASED)


def _summary(mode: str, rows: list) -> ScreeningSummary:
    return ScreeningSummary(
        flagged=len(rows), held=sum(1 for _, review in rows if _held(mode, review)),
        reasons=sorted({reason for screening, _ in rows for reason in (screening or {}).get("reasons", ())}),
    )


def document_screening_summary(*, member: Membership, document_id: uuid.UUID) -> ScreeningSummary:
    """Why a document is (partly) held for review, as the member may know it: counts and reasons of
    flagged chunks and flagged section heads (:func:`_flagged_heads`) in sections they may read, nothing of the
    others."""
    mode = screening_mode(tenant_id=member.tenant_id)
    reader = reader_for(member)
    rows = list(_flagged(reader).filter(document_id=document_id).values_list("screening", "review"))
    rows += [(record, _head_review(record)) for _, record in _flagged_heads(reader, document_id)]
    return _summary(mode, rows)

