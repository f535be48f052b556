"""Reads of documents, sections, jobs and index versions -- always as one member, through the access rule.

Visibility rules (the API documents them; tests pin them):

- A **document** is visible to a member who may read at least one of its sections.
  A document with no sections yet (its first ingestion is pending, running or
  failed) is visible to those who may read its default policy.
- A **section** is visible when the member may read it. In a section tree, a
  ``parent_id`` that would point at an unreadable section points at the nearest
  readable ancestor instead (or null), ``level`` is the depth in that readable
  tree, and ``heading_path`` holds only titles of readable ancestors-or-self.
- A **job** is visible to its creator, to the tenant's admins, and to members who
  can see its document.
- Anything else -- another tenant's, unreadable, nonexistent, or a malformed id -- is
  :class:`~accounts.errors.NotFound`, with the same message.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from accounts.access import Reader, can_read, readable_q
from accounts.errors import NotFound, PermissionRefused
from accounts.models import Group, Membership, Role
from accounts.selectors import reader_for
from kb.models import Chunk, Document, IndexVersion, IngestionJob, Section

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


def active_index_version_id(*, tenant_id: int) -> uuid.UUID | None:
    """The tenant's active index version, if any (reads only; creates nothing)."""
    return IndexVersion.objects.filter(tenant_id=tenant_id, is_active=True).values_list("id", flat=True).first()


# ----------------------------------------------------------------------------- documents


def _visible_q(reader: Reader) -> Q:
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
        .filter(_visible_q(reader))
        .defer("raw", "text")
        .annotate(sections_count=_count(sections), chunks_count=_count(chunks))
    )


def document_list(
    *, member: Membership, status: str = "", tag: str = "", content_type: str = "", source: str = ""
) -> QuerySet[Document]:
    """Documents the member can see (see the module docstring), newest first, with readable counts.

    ``sections_count`` and ``chunks_count`` count only what the member may read; chunks
    only of the tenant's active index version.
    """
    documents = _documents(reader_for(member))
    if status:
        documents = documents.filter(status=status)
    if tag:
        documents = documents.filter(tags__contains=[tag])
    if content_type:
        documents = documents.filter(content_type=content_type)
    if source:
        documents = documents.filter(source=source)
    return documents.order_by("-created_at", "-id")


def document_get(*, member: Membership, document_id) -> Document:
    """One document the member can see, with readable counts; otherwise NotFound."""
    pk = parse_uuid(document_id)
    document = _documents(reader_for(member)).filter(pk=pk).first() if pk else None
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
    if member.role != Role.ADMIN:
        reader = reader_for(member)
        if Section.objects.filter(document=document).exclude(readable_q(reader)).exists():
            raise PermissionRefused("You may not change a document with sections you cannot read.")
    return document


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


_TREE_FIELDS = (
    "id", "document_id", "parent_id", "title", "kind", "start", "end", "access_level", "access_groups", "order",
)


def _tree(reader: Reader, rows: list[dict], also: Iterable[uuid.UUID] = ()) -> list[SectionNode]:
    """Readable nodes of one document's sections (rows in document order); ``also`` counts as readable."""
    forced = set(also)
    by_id = {row["id"]: row for row in rows}
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
        titles = [a["title"] for a in reversed(chain) if a["title"]] + ([row["title"]] if row["title"] else [])
        nodes.append(
            SectionNode(
                id=row["id"], document_id=row["document_id"], parent_id=chain[0]["id"] if chain else None,
                heading_path=titles, level=len(chain), kind=row["kind"], access_level=row["access_level"],
                access_groups=sorted(row["access_groups"]), start=row["start"], end=row["end"],
            )
        )
    return nodes


def _rows(document_id: uuid.UUID, tenant_id: int) -> list[dict]:
    return list(
        Section.objects.filter(document_id=document_id, tenant_id=tenant_id).order_by("order").values(*_TREE_FIELDS)
    )


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
    return next(n for n in _tree(reader_for(member), rows, also=[section.pk]) if n.id == section.pk)


# ----------------------------------------------------------------------------- jobs


def job_get(*, member: Membership, job_id) -> IngestionJob:
    """A job of the member's tenant that they created, or that any admin asks for, or whose
    document the member can see; otherwise NotFound."""
    pk = parse_uuid(job_id)
    job = IngestionJob.objects.filter(tenant_id=member.tenant_id, pk=pk).first() if pk else None
    if job is None:
        raise _not_found()
    if member.role == Role.ADMIN or (job.created_by_id is not None and job.created_by_id == member.user_id):
        return job
    if job.document_id is not None:
        reader = reader_for(member)
        if Document.objects.filter(tenant_id=member.tenant_id, pk=job.document_id).filter(_visible_q(reader)).exists():
            return job
    raise _not_found()


# ----------------------------------------------------------------------------- index versions


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
