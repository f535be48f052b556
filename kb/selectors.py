"""Reads of documents, sections, jobs and index versions -- always as one member, through the access rule.

Visibility rules (the API documents them; tests pin them):

- A **document** is visible to a member who may read at least one of its sections.
  A document with no sections yet (its first ingestion is pending, running or
  failed) is visible to those who may read its default policy.
- A **section** is visible when the member may read it. In a section tree, a
  ``parent_id`` that would point at an unreadable section points at the nearest
  readable ancestor instead (or null), ``level`` is the depth in that readable
  tree, and ``heading_path`` holds only titles of readable ancestors-or-self.
- A **job** is visible to its creator (not the re-derivation job a policy change started:
  :func:`_started_by_a_policy_change`), to the tenant's admins, and to members who
  can see its document and read everything it held from the job's creation on (a job of a
  document they read part of dated a change to the rest: ``document_whole``). Its numbers
  (progress ``done``/``total``: its document's size in chunks; numbers in its error) are shown
  only to those who can see its document or uploaded the bytes it parses -- its progress only
  once the document holds sections, and to a member who is not an admin only of a document they
  read whole (``progress_shown``, ``error_numbers_shown``, :func:`jobs_shown`).
- Anything else -- another tenant's, unreadable, nonexistent, or a malformed id -- is
  :class:`~accounts.errors.NotFound`, with the same message.
"""

from __future__ import annotations

import bisect
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from asgiref.local import Local
from django.core.signals import request_finished, request_started
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    ExpressionWrapper,
    F,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce

from accounts.access import readable_q
from accounts.errors import Conflict, NotFound, PermissionRefused
from accounts.models import Group, Membership, Role
from accounts.policy import (
    AccessLevel,
    PathNode,
    Reader,
    bounded_reader,
    can_read,
    denial_reasons,
    heading_path,
    readable_heading_path,
)
from accounts.selectors import reader_for
from ingestion.chunking.config import ChunkingConfig
from kb.changed import clamp, clamped_spans, updated_at_shown
from kb.expansion import merge_spans
from kb.models import (
    CONTENT_BY,
    ID_NAMESPACE,
    TITLE_SCREENING,
    Chunk,
    Document,
    IndexVersion,
    IngestionJob,
    Section,
    SectionGone,
)
from kb.statuses import with_status_shown
from kb.titles import (
    TAGS_HELD,
    TITLE_HELD,
    reader_annotations,
    reader_view,
    screening_mode,
    shown_source_sql,
    shown_tags_sql,
    shown_title,
    shown_title_of,
    shown_title_sql,
    title_flagged,
)

NOT_FOUND_MESSAGE = "Not found."


def _not_found() -> NotFound:
    return NotFound(NOT_FOUND_MESSAGE)


def parse_uuid(value) -> uuid.UUID | None:
    """A path id as a UUID, or None when it is not one (which then reads as "not found")."""
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


def group_slugs(*, member: Membership) -> dict[int, str]:
    """Group id -> slug for the member's tenant (to show policies by name)."""
    return dict(Group.objects.filter(tenant_id=member.tenant_id).values_list("id", "slug"))


def index_version_id(tenant_id: int, config_hash: str) -> uuid.UUID:
    """A version's id derives from its tenant and configuration."""
    return uuid.uuid5(ID_NAMESPACE, f"index-version:{tenant_id}:{config_hash}")


def default_index_version(*, tenant_id: int) -> IndexVersion:
    """The version the first ingestion creates and activates, unsaved (for reads before it exists)."""
    config = ChunkingConfig()
    return IndexVersion(
        id=index_version_id(tenant_id, config.config_hash()), tenant_id=tenant_id, config=config.as_dict(),
        config_hash=config.config_hash(), name="default", is_active=True, status=IndexVersion.Status.READY,
    )


# The active version of each tenant, resolved once per request (None outside a request: every call
# reads). A request sees one version throughout -- its document list, counts and search agree -- and
# an activation later in the same request is seen at once (index_version_activate forgets it).
_request_versions = Local()


def _versions_remember(**kwargs) -> None:
    _request_versions.memo = {}


def _versions_forget(**kwargs) -> None:
    _request_versions.memo = None


request_started.connect(_versions_remember, dispatch_uid="kb.selectors.versions_remember")
request_finished.connect(_versions_forget, dispatch_uid="kb.selectors.versions_forget")


def active_index_version_forget(*, tenant_id: int) -> None:
    """Drop the request's resolved version of ``tenant_id`` (a version was activated or created)."""
    memo = getattr(_request_versions, "memo", None)
    if memo is not None:
        memo.pop(tenant_id, None)


def active_index_version(*, tenant_id: int) -> IndexVersion | None:
    """The tenant's active index version, if any (reads only; creates nothing): the one resolver of
    "the active version" for every read -- search, the document list and page, counts, the preview,
    the dashboard. Resolved once per request."""
    memo = getattr(_request_versions, "memo", None)
    if memo is not None and tenant_id in memo:
        return memo[tenant_id]
    version = IndexVersion.objects.filter(tenant_id=tenant_id, is_active=True).first()
    if memo is not None and version is not None:  # "none" is not remembered: cheap, rare, and never stale
        memo[tenant_id] = version
    return version


def active_index_version_id(*, tenant_id: int) -> uuid.UUID | None:
    """:func:`active_index_version`'s id."""
    version = active_index_version(tenant_id=tenant_id)
    return version.pk if version is not None else None


def index_version_for_reading(*, tenant_id: int) -> IndexVersion:
    """The version reads use: the active one, else the unsaved default (a tenant that has ingested
    nothing yet: it finds nothing, and is the version the first ingestion creates)."""
    return active_index_version(tenant_id=tenant_id) or default_index_version(tenant_id=tenant_id)


# ----------------------------------------------------------------------------- documents


def document_visible_q(reader: Reader) -> Q:
    """The documents ``reader`` may know of (title included): those with a section the reader may
    read, and a document without sections when its own policy admits the reader. The one rule for
    every list, count and name of documents shown to a member."""
    readable_section = Section.objects.filter(readable_q(reader), document=OuterRef("pk"))
    any_section = Section.objects.filter(document=OuterRef("pk"))
    # Document has the same tenant/access_level/access_groups columns: its default policy.
    return Q(Exists(readable_section)) | (~Q(Exists(any_section)) & readable_q(reader))


def _count(queryset: QuerySet) -> Coalesce:
    counted = queryset.order_by().values("document").annotate(n=Count("pk")).values("n")
    return Coalesce(Subquery(counted, output_field=IntegerField()), Value(0))


def _documents(reader: Reader) -> QuerySet[Document]:
    version_id = active_index_version_id(tenant_id=reader.tenant_id)
    sections = Section.objects.filter(readable_q(reader), document=OuterRef("pk"))
    chunks = Chunk.objects.filter(readable_q(reader), document=OuterRef("pk"), index_version_id=version_id)
    return (
        Document.objects.filter(tenant_id=reader.tenant_id)
        .filter(document_visible_q(reader))
        .defer("raw", "text")
        .annotate(sections_count=_count(sections), chunks_count=_count(chunks),
                  updated_at_shown=updated_at_shown(reader),
                  **reader_annotations(reader))  # its title and tags as this reader is shown them (kb.titles)
    )


def _with_status(documents: QuerySet[Document], member: Membership, reader: Reader) -> QuerySet[Document]:
    """``documents`` with their status and error as ``member`` may know them (``kb.statuses.with_status_shown``):
    the columns for an admin, who sees every job -- their visible jobs' query is built only for whom it decides
    (building it was a tenth of the console's document page, eighteenth session)."""
    if member.role == Role.ADMIN:
        return with_status_shown(documents, every_job_shown=True)
    return with_status_shown(documents, jobs_shown(member=member, reader=reader))


def document_list(
    *, member: Membership, status: str = "", tag: str = "", content_type: str = "", source: str = "",
    levels: bool = False,
) -> QuerySet[Document]:
    """Documents the member can see (see the module docstring), newest first, with readable counts.

    ``updated_at_shown``: the document's time as the member may know it, the latest change of what they can read
    (``kb.changed``; never ``updated_at``, which moves with sections hidden from them). ``title_shown`` and
    ``source_shown``: the title and source as shown (a held one: the placeholder), for filters and sorts. ``sections_count`` and ``chunks_count`` count only what the member may read; chunks
    only of the tenant's active index version. With ``levels``, ``strictest_level`` and
    ``loosest_level``: the highest and lowest level among the sections the member may read (None
    without any) -- never a level of a section hidden from them.
    """
    reader = reader_for(member)
    documents = _with_status(_documents(reader), member, reader)
    if levels:
        readable = Section.objects.filter(readable_q(reader), document=OuterRef("pk")).order_by()
        documents = documents.annotate(
            strictest_level=Subquery(readable.order_by("-access_level").values("access_level")[:1]),
            loosest_level=Subquery(readable.order_by("access_level").values("access_level")[:1]),
        )
    if status:  # as shown (kb.statuses): a re-derivation's outcome only to whoever may see its job
        documents = documents.filter(status_shown=status)
    if content_type:
        documents = documents.filter(content_type=content_type)
    # The title and source as shown (``title_shown``, ``source_shown``): what a filter or a sort of them uses, so a
    # held one matches and sorts as its placeholder, never by its stored words (kb.titles.shown_title_sql).
    mode = screening_mode(tenant_id=member.tenant_id)
    if tag:  # the tags as shown to the member (a held list: its placeholder; the content's only to a reader of the
        # root); the stored columns too unless the placeholder is asked for: their indexes narrow the rows first
        stored = Q() if tag == TAGS_HELD else Q(tags__contains=[tag]) | Q(content_tags__contains=[tag])
        documents = documents.alias(tags_shown=shown_tags_sql(mode, reader=reader)).filter(
            stored, tags_shown__contains=[tag])
    documents = documents.annotate(title_shown=shown_title_sql(mode, reader=reader),
                                   source_shown=shown_source_sql(mode))
    if source:  # the stored column too, unless the placeholder is asked for: its index narrows the rows first
        documents = documents.filter(source_shown=source, **({} if source == TITLE_HELD else {"source": source}))
    return documents.order_by("-created_at", "-id")


def document_with_bytes(*, member: Membership, sha256: str) -> Document | None:
    """The newest document whose stored bytes are these (by their SHA-256), ingested (ready), and whose every
    section the member may read, else None. Any other is never named, and a copy of it is simply a new document:
    naming one the member can see but not read whole confirmed a guess of its hidden sections, byte for byte
    (found attacking the upload page). Before its ingestion ends (queued, failed, new bytes replacing the old) a
    document's sections are not those of these bytes, whose inline policies are not read yet: never named."""
    reader = reader_for(member)
    unreadable = Section.objects.filter(document=OuterRef("pk")).exclude(readable_q(reader))
    return (
        Document.objects.filter(tenant_id=member.tenant_id, sha256=sha256, status=Document.Status.READY)
        .filter(document_visible_q(reader)).filter(~Exists(unreadable))
        .defer("raw", "text").order_by("-created_at", "-id").first()
    )


def document_get(*, member: Membership, document_id) -> Document:
    """One document the member can see, with readable counts and its time as the member may know it
    (``updated_at_shown``, as :func:`document_list`); otherwise NotFound."""
    pk = parse_uuid(document_id)
    reader = reader_for(member)
    document = _with_status(_documents(reader), member, reader).filter(pk=pk).first() if pk else None
    if document is None:
        raise _not_found()
    return document


def document_get_for_change(*, member: Membership, document_id) -> Document:
    """A document the member may replace or delete.

    NotFound when the member cannot see it at all. An editor may change only a
    document whose every section they may read (otherwise :class:`PermissionRefused`,
    since they can see the document exists); admins may change any document they can see.
    """
    document = document_get(member=member, document_id=document_id)
    document_check_change(member=member, document=document)
    return document


def document_check_change(*, member: Membership, document: Document) -> None:
    """The check of :func:`document_get_for_change` for a document already read with
    :func:`document_get`: :class:`PermissionRefused` unless the member may change it."""
    if member.role != Role.ADMIN:
        reader = reader_for(member)
        if Section.objects.filter(document=document).exclude(readable_q(reader)).exists():
            raise PermissionRefused("You may not change a document with sections you cannot read.")


# ----------------------------------------------------------------------------- sections


@dataclass(frozen=True)
class SectionNode:
    """A section as one member sees it (see the module docstring)."""

    id: uuid.UUID
    document_id: uuid.UUID
    parent_id: uuid.UUID | None
    heading_path: list[str]
    level: int
    kind: str
    access_level: int
    access_groups: list[int]
    start: int
    end: int
    # Text of the section a reader does not see, cut out at ingestion (characters), and the flags of
    # text kept although unseen: a tree holds only sections its member may read, so only they see these.
    hidden_chars_removed: int = 0
    hidden_text_flags: tuple[str, ...] = ()
    # A title of the heading path was flagged by screening (flag mode; a held one reads as its placeholder).
    heading_path_flagged: bool = False


_TREE_FIELDS = (
    "id", "document_id", "parent_id", "title", "kind", "start", "end", "access_level", "access_groups", "order",
    "hidden_chars_removed", "hidden_text_flags",
)


def _tree(reader: Reader, rows: list[dict], also: Iterable[uuid.UUID] = ()) -> list[SectionNode]:
    """Readable nodes of one document's sections (rows in document order); ``also`` counts as readable."""
    forced = set(also)
    by_id = {row["id"]: row for row in rows}
    path_nodes = {
        row["id"]: PathNode(row["id"], row["parent_id"], row["title"], row["access_level"], tuple(row["access_groups"]))
        for row in rows
    }
    readable = {
        row["id"] for row in rows
        if row["id"] in forced or can_read(reader, level=row["access_level"], group_ids=row["access_groups"])
    }
    nodes = []
    for row in rows:
        if row["id"] not in readable:
            continue
        chain = []  # readable ancestors, nearest first
        parent = by_id.get(row["parent_id"])
        while parent is not None:
            if parent["id"] in readable:
                chain.append(parent)
            parent = by_id.get(parent["parent_id"])
        # readable_heading_path's rule, with the readable set computed once above (it holds ``forced``).
        titles = list(heading_path(path_nodes, row["id"], shown=lambda node: node.key in readable))
        nodes.append(
            SectionNode(
                id=row["id"], document_id=row["document_id"], parent_id=chain[0]["id"] if chain else None,
                heading_path=titles, level=len(chain), kind=row["kind"], access_level=row["access_level"],
                access_groups=sorted(row["access_groups"]), start=row["start"], end=row["end"],
                hidden_chars_removed=row["hidden_chars_removed"], hidden_text_flags=tuple(row["hidden_text_flags"]),
                heading_path_flagged=any(r["title_flagged"] for r in (row, *chain)),
            )
        )
    return nodes


def _rows(document_id: uuid.UUID, tenant_id: int) -> list[dict]:
    return _titles_shown(
        Section.objects.filter(document_id=document_id, tenant_id=tenant_id).order_by("order"), _TREE_FIELDS,
        tenant_id,
    )


def _titles_shown(sections: QuerySet[Section], fields: Iterable[str], tenant_id: int) -> list[dict]:
    """``sections`` as rows of ``fields``, each ``title`` as shown under the tenant's screening mode
    (``kb.titles.shown_title``: a held heading is its placeholder, in every path built from the rows),
    with ``title_flagged`` (``kb.titles.title_flagged``)."""
    rows = list(sections.values(*fields, title_record=F(f"metadata__{TITLE_SCREENING}")))
    mode = screening_mode(tenant_id=tenant_id) if rows else ""
    for row in rows:
        record = row.pop("title_record")
        row["title_flagged"] = title_flagged(row["title"], record, mode)
        row["title"] = shown_title(row["title"], record, mode)
    return rows


def document_section_tree(*, member: Membership, document: Document) -> list[SectionNode]:
    """The sections of ``document`` the member may read, in document order, as a readable tree."""
    return _tree(reader_for(member), _rows(document.pk, member.tenant_id))


def section_get(*, member: Membership, section_id) -> Section:
    """One section the member may read; otherwise NotFound."""
    pk = parse_uuid(section_id)
    section = (
        Section.objects.filter(readable_q(reader_for(member))).filter(pk=pk).select_related("document").first()
        if pk
        else None
    )
    if section is None:
        raise _not_found()
    return section


def section_node(*, member: Membership, section: Section) -> SectionNode:
    """``section`` as the member sees it in its tree -- shown even if a change just made it unreadable
    to them (an admin may set a policy above their own clearance; they saw the section a moment ago)."""
    rows = _rows(section.document_id, member.tenant_id)
    node = next((n for n in _tree(reader_for(member), rows, also=[section.pk]) if n.id == section.pk), None)
    if node is None:  # the content was replaced (or the document deleted) since the section was read
        raise _not_found()
    return node


# ----------------------------------------------------------------------------- jobs


def jobs_shown(*, member: Membership, reader: Reader | None = None) -> QuerySet[IngestionJob]:
    """The jobs ``member`` may see, each annotated, in the same query, with

    * ``document_visible``: the member can see the job's document (:func:`document_visible_q`);
    * ``document_whole``: the member may read everything the job's document held from the job's creation on
      (:func:`_held_nothing_above`): no section of it is above them now, and no content under a policy above them
      went away at or after the job's creation. So the job changed nothing they cannot read, and its times date
      nothing they are not shown the time of (``kb.changed``);
    * ``progress_shown``: the member may see the job's progress (``done``/``total`` counts all of its
      document's chunks: the document's size): a job without a document (a batch, an index build: it
      counts documents, as the build's answers do), a document the member can see that holds sections, or
      bytes the member uploaded themselves (``content_by``). An admin sees every job of the tenant, but not
      the size of a document they can see no part of; a member who is not an admin, only that of a document
      they read whole (``document_whole``: the re-derivation job their own policy change started counts the
      sections above them too). Not while the document is not ``ready`` with its
      sections (found reviewing the 2026-12-04 fix): a new document is then visible by its upload default
      alone, and new bytes replacing a document by the old content's sections, while the running job's total
      is the size of bytes whose markers may put every section above the member. A member who may read every
      section a document could hold (:func:`reads_every_section`) sees every job's progress;
    * ``error_numbers_shown``: the member may see the numbers of the job's error (a line, a count), as the
      document's own error shows them: the same, but for a visible document with or without sections.

    Admins: every job of the tenant (its times date acts the audit trail dates for every admin: each upload,
    replacement and policy change, naming what they cannot read neutrally). Others: the jobs they created
    (an upload's progress is its uploader's to follow), but for the re-derivation job a policy change started
    (:func:`_started_by_a_policy_change`: its existence tells of sections above them), and, of the other jobs of documents they can see, those
    of a document they read whole from the job's creation on (``document_whole``), and only once finished while
    the document is being ingested anew (its new sections unknown yet); a member who may read every section
    any document could hold (:func:`reads_every_section`), every job of a document they can see. A job of a
    document a member reads only part of -- a replacement of a section above them, the re-derivation a policy
    change above them starts -- dated that change (written down as left open with the fifteenth session's change
    times, closed in the sixteenth: docs/security.md, "Job times").

    ``reader``: ``member``'s (``accounts.selectors.reader_for``) when the caller has read it already.
    """
    reader = reader or reader_for(member)
    visible_document = Document.objects.filter(pk=OuterRef("document_id")).filter(document_visible_q(reader))
    # Whoever may read every section a document could hold (``reads_every_section``) may know any bytes' size.
    everything = Q(pk__isnull=False) if reads_every_section(member, reader=reader) else Q(pk__in=[])
    admin = Q(pk__isnull=False) if member.role == Role.ADMIN else Q(pk__in=[])
    jobs = IngestionJob.objects.filter(tenant_id=member.tenant_id).annotate(
        document_visible=Exists(visible_document),
        document_whole=_held_nothing_above(reader),
        # Its document holds the sections of its current bytes: ready (not new, nor new bytes being ingested or failed).
        document_stored=Exists(Section.objects.filter(document_id=OuterRef("document_id"),
                                                      document__status=Document.Status.READY)),
    ).annotate(
        progress_shown=ExpressionWrapper(
            Q(document_id__isnull=True) | _uploaded_by(member) | everything
            | (Q(document_visible=True) & Q(document_stored=True) & (admin | Q(document_whole=True))),
            output_field=BooleanField(),
        ),
        error_numbers_shown=ExpressionWrapper(
            Q(document_id__isnull=True) | Q(document_visible=True) | _uploaded_by(member),
            output_field=BooleanField(),
        ),
    )
    if member.role != Role.ADMIN:
        settled = Q(status__in=(IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED)) | Q(document_stored=True)
        jobs = jobs.filter(
            (Q(created_by_id=member.user_id) & ~_started_by_a_policy_change())
            | (Q(document_visible=True) & (everything | (Q(document_whole=True) & settled)))
        )
    return jobs


def _started_by_a_policy_change() -> Q:
    """Jobs a policy change started (``kb.services._rederive_chunks``: their cause, ``policy_change``; a retry of one
    is a ``retry``): their creator did not ask for them, and whether there is one at all says whether the change
    renamed a section -- a section under the changed one whose readers are not all readers of it now, one above
    the member too. Such a job is not its creator's by creation: it is shown to them as to anyone else (a member
    who reads its document whole), so no member learns the policies of sections above them by changing one they
    may read and watching for a job (found reviewing the job times, sixteenth session). A retry of one is its
    retrier's (they asked for it, of a job they saw)."""
    return Q(cause=IngestionJob.Cause.POLICY_CHANGE)


def _held_nothing_above(reader: Reader) -> ExpressionWrapper:
    """Whether a job's document (an expression over ``IngestionJob`` rows) held nothing ``reader`` may not read
    from the job's creation on: no section of it is above them now, and no content under a policy above them
    went away at or after ``created_at`` (``SectionGone``: one row per policy, its latest time -- content above
    them the document held at any time since either is still there or went at or after it). True for a job
    without a document. Jobs from before ``SectionGone`` (``kb`` migration 0011) are judged by what it holds:
    every reader of their document was shown them until then."""
    above = Section.objects.filter(document_id=OuterRef("document_id")).exclude(readable_q(reader))
    gone_above = SectionGone.objects.filter(document_id=OuterRef("document_id"),
                                            gone_at__gte=OuterRef("created_at")).exclude(readable_q(reader))
    return ExpressionWrapper(~Exists(above) & ~Exists(gone_above), output_field=BooleanField())


def _uploaded_by(member: Membership) -> Q:
    """Jobs whose bytes ``member`` uploaded (``content_by``; never a job uploaded by no one)."""
    if member.user_id is None:
        return Q(pk__in=[])
    return Q(**{f"stats__{CONTENT_BY}": member.user_id})


def job_get(*, member: Membership, job_id) -> IngestionJob:
    """A job of the member's tenant that they created, or that any admin asks for, or whose
    document the member can see (annotated as :func:`jobs_shown` annotates, its document and creator read in the
    same statement); otherwise NotFound."""
    pk = parse_uuid(job_id)
    job = jobs_shown(member=member).select_related("document", "created_by").filter(pk=pk).first() if pk else None
    if job is None:
        raise _not_found()
    return job


# ----------------------------------------------------------------------------- index versions


def index_version_missing_documents(*, version: IndexVersion) -> QuerySet[Document]:
    """Documents that some version has chunks of but ``version`` has not: what activation would lose.

    Every ready document with any text has chunks; a document whose new content awaits
    ingestion still has its old chunks, and counts too (it stays searchable until then).
    """
    return Document.objects.filter(tenant_id=version.tenant_id).filter(
        Exists(Chunk.objects.filter(document=OuterRef("pk"))),
        ~Exists(Chunk.objects.filter(document=OuterRef("pk"), index_version=version)),
    )



def index_version_for_search(*, member: Membership, index_version_id) -> IndexVersion | None:
    """The index version a search asks for: None (the active one) unless given; only admins may
    choose one (others get :class:`PermissionRefused`); one of another tenant is NotFound."""
    if index_version_id is None:
        return None
    if member.role != Role.ADMIN:
        raise PermissionRefused("Only admins may search a chosen index version.")
    version = IndexVersion.objects.filter(tenant_id=member.tenant_id, pk=index_version_id).first()
    if version is None:
        raise _not_found()
    return version


# ----------------------------------------------------------------------------- one document, in detail


def reads_every_section(member: Membership, *, reader: Reader | None = None) -> bool:
    """Whether ``member`` may read every section any document of the tenant could hold: the top clearance
    and every group of the tenant (a document's markers only narrow its policy, so no line of it is above
    that). An error quotes a line of a document that failed, before its sections existed: only such a
    member can be sure to be allowed to read whichever line it quotes. ``reader``: ``member``'s, when read already."""
    if member.clearance != max(AccessLevel):
        return False
    groups = (reader or reader_for(member)).group_ids
    return set(Group.objects.filter(tenant_id=member.tenant_id).values_list("id", flat=True)) <= groups


def error_in_full(*, member: Membership, job: IngestionJob) -> bool:
    """Whether ``member`` may read ``job``'s error in full (``kb.serializers.error_for``): the person who
    uploaded the bytes the job parsed -- the error may quote any of them -- or an admin who may read every
    section a document could hold (:func:`reads_every_section`; an admin is not above the access rule: an
    error quoting a restricted line reached an internal admin, found attacking the product). Not whoever
    merely started the job (a retry, a re-derivation after a policy change): they see the error without
    document text. A job without a document (a batch): its creator."""
    if member.role == Role.ADMIN and reads_every_section(member):
        return True
    if job.document_id is None:
        return job.created_by_id is not None and job.created_by_id == member.user_id
    return job.stats.get(CONTENT_BY) is not None and job.stats.get(CONTENT_BY) == member.user_id


def document_errors_in_full(*, member: Membership, documents: Iterable[Document]) -> set[uuid.UUID]:
    """The ``documents`` whose ingestion error this member may read in full: an admin who may read every
    section a document could hold, every one; anyone else those whose current bytes they uploaded (see
    :func:`error_in_full`)."""
    failed = [d for d in documents if d.error]
    if failed and member.role == Role.ADMIN and reads_every_section(member):
        return {d.pk for d in failed}
    return {d.pk for d in failed if d.metadata.get(CONTENT_BY) is not None and d.metadata.get(CONTENT_BY) == member.user_id}


@dataclass(frozen=True)
class SectionDetail:
    """What a tree node leaves out about a section its reader may read."""

    title: str  # its own ("" for an untitled region or the document's root)
    own_policy: bool  # a marker or an override of its own, rather than inheriting
    override: bool = False  # set through the console or the API: it wins over the file's marker on every re-ingest


def document_section_details(*, member: Membership, document: Document) -> dict[uuid.UUID, SectionDetail]:
    """For each section of ``document`` the member may read: its own title and whether its policy is its own."""
    rows = _titles_shown(Section.objects.filter(readable_q(reader_for(member)), document_id=document.pk),
                         ("id", "title", "own_level", "metadata__override"), member.tenant_id)
    return {r["id"]: SectionDetail(title=r["title"], own_policy=r["own_level"] is not None,
                                   override=r["own_level"] is not None and bool(r["metadata__override"])) for r in rows}


def section_chunks(*, member: Membership, section: Section) -> QuerySet[Chunk]:
    """The chunks of ``section`` in the tenant's active index version that the member may read, by
    ordinal. Each chunk carries its own copy of the policy, and the read rule runs on it."""
    version_id = active_index_version_id(tenant_id=member.tenant_id)
    return (
        Chunk.objects.filter(readable_q(reader_for(member)), section_id=section.pk, index_version_id=version_id)
        .only("id", "section_id", "ordinal", "start", "end", "embed_text", "token_count", "access_level",
              "access_groups", "screening", "screening_flagged", "review")
        .order_by("ordinal")
    )


_SPAN_FIELDS = ("id", "parent_id", "order", "title", "kind", "start", "end", "body_spans", "access_level",
                "access_groups", "version")

# A row's version as PostgreSQL keeps it: the transaction that wrote it (``xmin``), new at every write of the row --
# an update, or a delete and an insert under the same id.
_SECTION_VERSION = RawSQL('"kb_section"."xmin"::text', ())


def _span_rows(document_id: uuid.UUID, tenant_id: int) -> list[dict]:
    return _titles_shown(
        Section.objects.filter(document_id=document_id, tenant_id=tenant_id).annotate(version=_SECTION_VERSION)
        .order_by("order"), _SPAN_FIELDS, tenant_id,
    )


# A replacement commits new text and new sections together. Reads of a document's text and its sections' offsets
# are two statements: a replacement committed between them would let one content's offsets cut the other's text
# (found attacking the demo: an internal reader was served restricted text). So the text is read only together
# with the proof, in its own statement, that the document's sections are still the very rows just read -- each id
# at the same row version; else both are read again. The ids alone are no proof (found attacking time, twenty-first
# session): they are keyed by the bytes and the section's place, so the same bytes read another way (as Markdown
# instead of plain text, an HTML comment left out of the text) are new text and offsets under the same ids.
READ_ATTEMPTS = 5

_TEXT_OF_SECTIONS = (
    "SELECT CASE WHEN same THEN d.text END, same FROM kb_document d, LATERAL (SELECT ARRAY("
    "SELECT s.id::text || ':' || s.xmin::text FROM kb_section s WHERE s.document_id = d.id ORDER BY 1) = ARRAY("
    "SELECT unnest(%s::text[]) ORDER BY 1) AS same) check_ WHERE d.id = %s AND d.tenant_id = %s"
)


class DocumentChanged(Conflict):
    code = "document_changed"


def document_sections_unchanged(*, document_id: uuid.UUID, tenant_id: int,
                                sections: Iterable[tuple[uuid.UUID, str]]) -> bool:
    """Whether the document's sections are exactly ``sections`` now -- (id, row version) pairs, as
    :class:`ReadableText` holds them: its content was not replaced, nor a section written, since they were read. A
    read that adds a statement of its own after :func:`document_text_and_span_rows` (MCP's held spans) checks with
    this that it read the same content."""
    return _text_of_sections(document_id, tenant_id, list(sections), with_text=False)[1]


def _text_of_sections(document_id, tenant_id: int, sections: list[tuple[uuid.UUID, str]], *,
                      with_text: bool = True) -> tuple[str | None, bool]:
    sql = _TEXT_OF_SECTIONS if with_text else _TEXT_OF_SECTIONS.replace("CASE WHEN same THEN d.text END", "NULL")
    with connection.cursor() as cursor:
        cursor.execute(sql, [[f"{sid}:{version}" for sid, version in sections], document_id, tenant_id])
        found = cursor.fetchone()
    if found is None:  # the document is gone: no text, and no section is still its own
        return None, not sections
    return found[0], bool(found[1])


def document_text_and_span_rows(*, document_id: uuid.UUID, tenant_id: int) -> tuple[str, list[dict]]:
    """A document's text and its sections' rows (``_span_rows``) as one content: the text is read in a
    statement that checks the sections are still those read (see ``READ_ATTEMPTS``). A document deleted
    meanwhile is no text and no rows; one replaced on every attempt is :class:`DocumentChanged` (409)."""
    for _ in range(READ_ATTEMPTS):
        rows = _span_rows(document_id, tenant_id)
        text, same = _text_of_sections(document_id, tenant_id, [(row["id"], row["version"]) for row in rows])
        if same:
            return (text, rows) if text is not None else ("", [])
    raise DocumentChanged("the document changed while it was read; read it again")


def _depths(rows: list[dict]) -> dict[uuid.UUID, int]:
    depths: dict[uuid.UUID, int] = {}
    for row in rows:  # document order: parents first
        depths[row["id"]] = depths.get(row["parent_id"], -1) + 1
    return depths


def _body_spans(row: dict, length: int) -> list[tuple[int, int]]:
    return clamped_spans(row["body_spans"], length)


def _without(spans: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` minus ``holes`` (both merged and sorted)."""
    out, i = [], 0
    for start, end in spans:
        while i < len(holes) and holes[i][1] <= start:
            i += 1
        j, cursor = i, start
        while j < len(holes) and holes[j][0] < end:
            if holes[j][0] > cursor:
                out.append((cursor, holes[j][0]))
            cursor = max(cursor, holes[j][1])
            j += 1
        if cursor < end:
            out.append((cursor, end))
    return out


def readable_spans(reader: Reader, rows: list[dict], length: int) -> list[tuple[int, int]]:
    """The stretches of a document's text (``length`` characters) that ``reader`` may read, merged.

    Every character belongs to the deepest section whose extent ``[start, end)`` holds it (a heading
    line and the lines between subsections belong to their section; a region's text to the region,
    not to the heading above it); it is readable when that section is. Two more rules fail closed:
    a character in no section is not readable, and neither is one inside the body of any section the
    reader may not read (whatever the extents say)."""
    depths = _depths(rows)
    bounds = [(clamp(r["start"], length), clamp(r["end"], length), r) for r in rows]
    cuts = sorted({0, length, *(b[0] for b in bounds), *(b[1] for b in bounds)})
    by_start = sorted(bounds, key=lambda b: b[0])
    active: list[tuple[int, int, dict]] = []
    owned, i = [], 0
    for a, b in zip(cuts, cuts[1:], strict=False):
        while i < len(by_start) and by_start[i][0] <= a:
            active.append(by_start[i])
            i += 1
        active = [x for x in active if x[1] > a]  # cuts hold every end: these hold all of [a, b)
        if active:
            owner = max(active, key=lambda x: (depths[x[2]["id"]], x[2]["order"]))[2]
            if can_read(reader, level=owner["access_level"], group_ids=owner["access_groups"]):
                owned.append((a, b))
    unreadable_bodies = merge_spans(
        span for r in rows if not can_read(reader, level=r["access_level"], group_ids=r["access_groups"])
        for span in _body_spans(r, length)
    )
    return _without(merge_spans(owned), unreadable_bodies)


@dataclass(frozen=True)
class TextPiece:
    """A stretch of the document text: its characters when ``readable``, else only its length."""

    start: int
    end: int
    text: str
    readable: bool
    selected: bool  # inside the chosen section's extent

    @property
    def length(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class ReadableText:
    """The document text as one member may see it, around a chosen section or from the top."""

    pieces: list[TextPiece]
    hidden_before: int  # characters before the shown window (readable or not)
    hidden_after: int
    length: int  # the whole text's
    readable_length: int  # how many of its characters the member may read
    # The document's sections it was read with, each (id, row version) (document_sections_unchanged).
    sections: tuple[tuple[uuid.UUID, str], ...] = ()
    # The body spans of the sections the member may read, with each section's policy: (start, end, access level,
    # group ids), in document order -- where the joins an agent reads lie (``kb.joins``, ``kb.mcp_server._shown``).
    bodies: tuple[tuple[int, int, int, tuple[int, ...]], ...] = ()


TEXT_CONTEXT_CHARS = 600
TEXT_LIMIT_CHARS = 60_000


def document_readable_text(
    *, member: Membership, document: Document, section: Section | None = None,
    context_chars: int = TEXT_CONTEXT_CHARS, limit_chars: int = TEXT_LIMIT_CHARS,
) -> ReadableText:
    """``document.text`` as the member may see it: only characters of sections they may read (see
    :func:`readable_spans`); every other stretch is a piece with its length and no text.

    With ``section`` (one the member may read, of this document), the window is its extent with
    ``context_chars`` around it, and pieces inside the extent are ``selected``; without, the text
    from the top. At most ``limit_chars`` are shown either way; the rest is counted.
    """
    text, rows = document_text_and_span_rows(document_id=document.pk, tenant_id=member.tenant_id)
    length = len(text)
    reader = reader_for(member)
    spans = readable_spans(reader, rows, length)
    chosen = None
    if section is not None:
        row = next((r for r in rows if r["id"] == section.pk), None)
        if row is not None and can_read(reader, level=row["access_level"], group_ids=row["access_groups"]):
            chosen = (clamp(row["start"], length), clamp(row["end"], length))
    low, high = (max(0, chosen[0] - context_chars), min(length, chosen[1] + context_chars)) if chosen else (0, length)
    high = min(high, low + limit_chars)
    cuts = {low, high}
    if chosen:
        cuts.update(c for c in chosen if low < c < high)
    for start, end in spans:
        cuts.update(c for c in (start, end) if low < c < high)
    ordered = sorted(cuts)
    starts = [start for start, _ in spans]
    pieces: list[TextPiece] = []
    for a, b in zip(ordered, ordered[1:], strict=False):
        at = bisect.bisect_right(starts, a) - 1  # the last readable span starting at or before a
        readable = at >= 0 and b <= spans[at][1]
        selected = bool(chosen) and chosen[0] <= a and b <= chosen[1]
        last = pieces[-1] if pieces else None
        if last is not None and last.readable == readable and last.selected == selected:
            pieces[-1] = TextPiece(last.start, b, last.text + (text[a:b] if readable else ""), readable, selected)
        else:
            pieces.append(TextPiece(a, b, text[a:b] if readable else "", readable, selected))
    bodies = sorted((start, end, row["access_level"], tuple(sorted(row["access_groups"] or ())))
                    for row in rows if can_read(reader, level=row["access_level"], group_ids=row["access_groups"])
                    for start, end in _body_spans(row, length) if end > start)
    return ReadableText(pieces=pieces, hidden_before=low, hidden_after=length - high, length=length,
                        readable_length=sum(e - s for s, e in spans),
                        sections=tuple((row["id"], row["version"]) for row in rows),
                        bodies=tuple(bodies))


# ----------------------------------------------------------------------------- effective access (admins)


@dataclass(frozen=True)
class MemberSummary:
    """A member as the effective-access pages show them."""

    id: int
    email: str
    role: str
    clearance: str
    groups: list[str]  # slugs
    is_active: bool


@dataclass(frozen=True)
class SectionAsMember:
    """One section of a document as a member sees it, for an admin.

    ``heading_path`` holds the titles above the section that both the member and the admin may
    read; ``title`` and ``excerpt`` are the section's own title and text when both may read it,
    else empty -- so a section the member may not read carries neither. ``withheld``: the member
    reads the section but the admin does not, so its title and text are not shown to the admin
    either (admins are not above the read rule).
    """

    id: uuid.UUID
    order: int
    depth: int  # in the whole tree (0 = the root)
    kind: str
    access_level: int
    access_groups: list[int]
    readable: bool
    withheld: bool
    heading_path: list[str]
    title: str
    excerpt: str
    reasons: list[str]  # why the member may not read it (empty when they may)
    chunks: int  # in the active index version
    chunks_readable: int  # of them, those the member may read


@dataclass(frozen=True)
class DocumentAsMember:
    member: MemberSummary
    document_visible: bool  # whether the document is in the member's own list at all
    sections: list[SectionAsMember]  # those of the page asked for (all of them, unpaged), in document order
    chunks: int
    chunks_readable: int
    sections_total: int  # of the whole document
    sections_readable: int  # of the whole document, those the member may read


EXCERPT_CHARS = 240


def _admin_check(admin: Membership, what: str) -> None:
    if admin.role != Role.ADMIN:
        raise PermissionRefused(f"Only admins may see {what}.")


def _summary(membership: Membership, slugs: dict[int, str]) -> MemberSummary:
    return MemberSummary(
        id=membership.pk, email=membership.user.email, role=membership.role,
        clearance=AccessLevel(membership.clearance).label,
        groups=sorted(slugs.get(g, str(g)) for g in membership.groups.values_list("id", flat=True)),
        is_active=membership.is_active,
    )


def _chunk_counts(document_id: uuid.UUID, tenant_id: int, reader: Reader) -> tuple[dict, dict]:
    version_id = active_index_version_id(tenant_id=tenant_id)
    chunks = Chunk.objects.filter(document_id=document_id, tenant_id=tenant_id, index_version_id=version_id)

    def by_section(queryset: QuerySet[Chunk]) -> dict[uuid.UUID, int]:
        counted = queryset.order_by().values("section_id").annotate(n=Count("pk"))
        return dict(counted.values_list("section_id", "n"))

    return by_section(chunks), by_section(chunks.filter(readable_q(reader)))


def _excerpt(text: str, row: dict) -> str:
    parts, size = [], 0
    for start, end in _body_spans(row, len(text)):
        part = " ".join(text[start:end].split())
        if part:
            parts.append(part)
            size += len(part)
        if size >= EXCERPT_CHARS:
            break
    excerpt = " … ".join(parts)
    return excerpt if len(excerpt) <= EXCERPT_CHARS else excerpt[: EXCERPT_CHARS - 1].rstrip() + "…"


def document_as_member(*, admin: Membership, member: Membership, document: Document, offset: int = 0,
                       limit: int | None = None) -> DocumentAsMember:
    """Every section of ``document``, in order, as ``member`` sees it -- for ``admin``; or, with ``limit``, the
    ``limit`` sections from ``offset`` on (their paths, excerpts and reasons made for those alone; the counts are
    the whole document's).

    ``admin`` must be an admin (else :class:`PermissionRefused`) who can see the document; the
    document and ``member`` must be of the admin's tenant (else NotFound). A section the member
    may read carries its heading path and an excerpt of its text; one they may not read carries
    neither its title nor any text, only its place, its policy and the reasons
    (:func:`accounts.policy.denial_reasons`). Titles and text are also limited to what the admin
    may read (see :class:`SectionAsMember`).
    """
    _admin_check(admin, "a document as another member sees it")
    if member.tenant_id != admin.tenant_id or document.tenant_id != admin.tenant_id:
        raise _not_found()
    admin_reader, reader = reader_for(admin), reader_for(member)
    if not Document.objects.filter(pk=document.pk, tenant_id=admin.tenant_id).filter(document_visible_q(admin_reader)).exists():
        raise _not_found()
    slugs = group_slugs(member=admin)
    text, rows = document_text_and_span_rows(document_id=document.pk, tenant_id=admin.tenant_id)
    depths = _depths(rows)
    nodes = {
        r["id"]: PathNode(r["id"], r["parent_id"], r["title"], r["access_level"], tuple(r["access_groups"]))
        for r in rows
    }

    # What the admin is shown: the member's view bounded by the admin's (the rule search-as uses too).
    seen = bounded_reader(reader, admin_reader)

    def shown_to_admin(node: PathNode) -> bool:
        return can_read(seen, level=node.level, group_ids=node.group_ids)

    totals, readable_counts = _chunk_counts(document.pk, admin.tenant_id, reader)
    sections = []
    shown_rows = rows[offset: offset + limit] if limit is not None else rows[offset:]
    for row in shown_rows:
        level, groups = row["access_level"], row["access_groups"]
        readable = can_read(reader, level=level, group_ids=groups)
        shown = can_read(seen, level=level, group_ids=groups)
        withheld = readable and not shown
        path = heading_path(nodes, row["parent_id"], shown=shown_to_admin)  # nodes.get(None): a root's is empty
        sections.append(SectionAsMember(
            id=row["id"], order=row["order"], depth=depths[row["id"]], kind=row["kind"], access_level=level,
            access_groups=sorted(groups), readable=readable, withheld=withheld, heading_path=list(path),
            title=row["title"] if shown else "", excerpt=_excerpt(text, row) if shown else "",
            reasons=denial_reasons(reader, level=level, group_ids=groups, group_names=slugs),
            chunks=totals.get(row["id"], 0), chunks_readable=readable_counts.get(row["id"], 0),
        ))
    visible = Document.objects.filter(pk=document.pk).filter(document_visible_q(reader)).exists()
    return DocumentAsMember(
        member=_summary(member, slugs), document_visible=visible, sections=sections,
        chunks=sum(totals.values()), chunks_readable=sum(readable_counts.values()), sections_total=len(rows),
        sections_readable=sum(1 for r in rows if can_read(reader, level=r["access_level"], group_ids=r["access_groups"])),
    )


@dataclass(frozen=True)
class MemberAccess:
    member: MemberSummary
    reasons: list[str]  # empty: the member may read the section


@dataclass(frozen=True)
class GroupAccess:
    slug: str
    name: str
    members: int  # active members of the group
    readers: int  # of them, those with clearance enough


@dataclass(frozen=True)
class SectionReaders:
    """Who may read one section, for an admin. ``heading_path`` holds the titles the admin may read."""

    section_id: uuid.UUID
    document_id: uuid.UUID
    document_title: str
    heading_path: list[str]
    kind: str
    access_level: int
    access_groups: list[int]
    group_names: dict[int, str]
    readers: list[MemberAccess]
    others: list[MemberAccess]
    groups: list[GroupAccess]  # empty when the section names no group: clearance alone decides
    inactive: int  # inactive members, who read nothing and are not listed


def section_readers(*, admin: Membership, section_id) -> SectionReaders:
    """The active members of the tenant who may read a section, those who may not and why, and the
    groups whose members (with clearance enough) may read it.

    ``admin`` must be an admin (else :class:`PermissionRefused`) who can see the section's document;
    a section of another tenant, of a document the admin cannot see, or none at all is NotFound.
    The section's title is shown only as the admin may read it; no text is shown.
    """
    _admin_check(admin, "who can read a section")
    pk = parse_uuid(section_id)
    sections = Section.objects.filter(tenant_id=admin.tenant_id).select_related("document")
    section = sections.filter(pk=pk).first() if pk else None
    admin_reader = reader_for(admin)
    if section is None or not Document.objects.filter(pk=section.document_id).filter(document_visible_q(admin_reader)).exists():
        raise _not_found()
    rows = _rows(section.document_id, admin.tenant_id)
    nodes = {
        r["id"]: PathNode(r["id"], r["parent_id"], r["title"], r["access_level"], tuple(r["access_groups"]))
        for r in rows
    }
    slugs = group_slugs(member=admin)
    level, groups = section.access_level, list(section.access_groups)
    readers, others, inactive = [], [], 0
    memberships = (
        Membership.objects.filter(tenant_id=admin.tenant_id).select_related("user").prefetch_related("groups")
        .order_by("user__email", "id")
    )
    group_members: dict[int, list[bool]] = {g: [] for g in groups}  # per group: whether each member reads it
    for membership in memberships:
        if not membership.is_active or not membership.user.is_active:
            inactive += 1
            continue
        ids = frozenset(g.pk for g in membership.groups.all())
        reader = Reader(tenant_id=membership.tenant_id, clearance=membership.clearance, group_ids=ids)
        summary = MemberSummary(
            id=membership.pk, email=membership.user.email, role=membership.role,
            clearance=AccessLevel(membership.clearance).label, groups=sorted(slugs.get(g, str(g)) for g in ids),
            is_active=True,
        )
        reasons = denial_reasons(reader, level=level, group_ids=groups, group_names=slugs)
        (others if reasons else readers).append(MemberAccess(summary, reasons))
        for g in ids & set(groups):
            group_members[g].append(not reasons)
    names = dict(Group.objects.filter(tenant_id=admin.tenant_id, id__in=groups).values_list("id", "name"))
    group_rows = sorted(
        (GroupAccess(slug=slugs.get(g, str(g)), name=names.get(g, ""), members=len(reads), readers=sum(reads))
         for g, reads in group_members.items()),
        key=lambda g: g.slug,
    )
    reader_view([section.document], admin_reader)  # the document's title as the admin is shown it
    return SectionReaders(
        section_id=section.pk, document_id=section.document_id, document_title=shown_title_of(section.document),
        heading_path=list(readable_heading_path(admin_reader, nodes, section.pk)), kind=section.kind,
        access_level=level, access_groups=sorted(groups), group_names=slugs, readers=readers, others=others,
        groups=group_rows, inactive=inactive,
    )


# ----------------------------------------------------------------------------- the audit trail's names


@dataclass(frozen=True)
class AuditTitles:
    """What the documents and sections a page of audit records names are called, for one member.

    Every id that still exists in the member's tenant has an entry: its title where the member may
    read it (a document by :func:`document_visible_q`, the rule of every list and name of documents;
    a section by the read rule), else None. An id without an entry does not exist (deleted, or
    another tenant's, which reads the same)."""

    documents: dict[str, str | None]
    sections: dict[str, tuple[str, str | None]]  # section id -> (its document's id, its title or None)


def audit_titles(*, member: Membership, document_ids: Iterable[object], section_ids: Iterable[object]
                 ) -> AuditTitles:
    """The titles an audit page may show ``member`` (see :class:`AuditTitles`): three small queries."""
    reader = reader_for(member)
    documents = {pk for pk in map(parse_uuid, document_ids) if pk}
    sections = {pk for pk in map(parse_uuid, section_ids) if pk}
    in_tenant = Document.objects.filter(tenant_id=member.tenant_id, pk__in=documents)
    visible = {d.pk: shown_title_of(d) for d in in_tenant.filter(document_visible_q(reader))
               .annotate(**reader_annotations(reader))  # the title as the member is shown it
               .only("pk", "tenant_id", "title", "content_title", "title_section", "metadata")}
    doc_titles: dict[str, str | None] = {str(pk): visible.get(pk) for pk in in_tenant.values_list("pk", flat=True)}
    rows = Section.objects.filter(tenant_id=member.tenant_id, pk__in=sections)
    readable = set(rows.filter(readable_q(reader)).values_list("pk", flat=True))
    section_titles = {str(r["pk"]): (str(r["document_id"]), r["title"] if r["pk"] in readable else None)
                      for r in _titles_shown(rows, ("pk", "document_id", "title"), member.tenant_id)}
    return AuditTitles(documents=doc_titles, sections=section_titles)


def document_ids_titled(*, member: Membership, text: str) -> list[uuid.UUID]:
    """The documents ``member`` may see whose title holds ``text`` (any case): the audit page's title
    filter. Only titles the member may read are searched, so the filter never tells a hidden title; and
    only as shown, so it never tells a held one's words (``kb.titles.shown_title_sql``)."""
    text = (text or "").strip()
    if not text:
        return []
    mode, reader = screening_mode(tenant_id=member.tenant_id), reader_for(member)
    return list(
        Document.objects.filter(tenant_id=member.tenant_id).alias(title_shown=shown_title_sql(mode, reader=reader))
        .filter(title_shown__icontains=text)
        .filter(document_visible_q(reader)).order_by("-created_at", "-id").values_list("pk", flat=True)
    )
