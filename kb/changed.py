"""When a document changed, as each reader may know it: the one rule for every time a member is shown of a
document or filters on (docs/security.md, "Change times").

``Document.updated_at`` moves with every write, one to a section a reader may not read too (its text replaced,
its policy narrowed or widened). Shown to that reader -- the documents list and page of the REST API, MCP's
``list_documents``, the console's document page -- and filtered on by their search (``updated_after`` /
``updated_before``), it told them *when* a part they cannot read changed, and, bisecting the filters, exactly
when (fifteenth session). A reader's time of a document is instead the latest change **of what that reader can
read** -- :func:`updated_at_shown`, the greatest of

* ``Document.shown_changed_at``: the last change of what every reader of the document is shown of it, its
  title, source, tags, content type and default policy (:func:`shown_fields`; :func:`shown_follow` keeps it);
* ``Section.changed_at`` of each section the reader may read: the last change of what the section's readers
  read of it (:func:`section_fields`: its title, kind, own text, own and effective policy, stored heading path,
  hidden-text counts), set by each write that changes one of them and carried over by new content that leaves
  them all as they were (:func:`sections_carry`);
* ``SectionGone.gone_at`` of each policy the reader may read: when content under that policy went away -- a
  section new content no longer has (or has changed), a section whose policy changed off it (:func:`content_gone`).
  Its readers saw it go; no one else did.

Computed in SQL, per document, with the read rule itself (``accounts.access.readable_q``): the documents
selectors annotate it, and search filters on it (:func:`documents_updated`). A member who may read every
section of a document sees the time of the last change of its content, policies or listed fields: the
``updated_at`` of every such write, not that of a write that changed nothing (the same bytes uploaded again, a
re-derivation or an index build storing what was there).

What is not counted, by design (under-counting tells nothing): where a readable section sits (its offsets,
which move with the length of hidden text before it) and the tree a reader sees around it; a screening decision
(a title held or released, as before). A section's own text is the text it owns (:func:`own_texts`), never the
text of a section inside it.
"""

from __future__ import annotations

import hashlib
import uuid
from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime

from django.db.models import Max, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Greatest

from accounts.access import readable_q
from accounts.policy import Reader
from kb.models import Document, Section, SectionGone

__all__ = [
    "documents_updated",
    "content_gone",
    "own_texts",
    "section_fields",
    "sections_carry",
    "shown_fields",
    "shown_follow",
    "updated_at_shown",
]


# ----------------------------------------------------------------------------- reading: in SQL


def _latest(queryset: QuerySet, field: str) -> Subquery:
    return Subquery(queryset.order_by().values("document").annotate(latest=Max(field)).values("latest"))


def updated_at_shown(reader: Reader) -> Greatest:
    """The time ``reader`` is shown of each document (an expression over ``Document`` rows; see the module
    docstring): the greatest of its listed fields' change and the changes of the sections and policies gone that
    the reader may read -- the same read rule search applies. PostgreSQL's GREATEST skips a null (no readable
    section, nothing gone): a document visible by its default policy alone is its listed fields' time."""
    sections = Section.objects.filter(readable_q(reader), document=OuterRef("pk"))
    gone_rows = SectionGone.objects.filter(readable_q(reader), document=OuterRef("pk"))
    return Greatest("shown_changed_at", _latest(sections, "changed_at"), _latest(gone_rows, "gone_at"))


def documents_updated(reader: Reader, *, after: datetime | None = None, before: datetime | None = None
                      ) -> QuerySet[Document]:
    """The ids of the tenant's documents whose time as ``reader`` is shown it (:func:`updated_at_shown`) is at
    or after ``after`` and before ``before`` (each None: unbounded), for a search's ``updated_after`` /
    ``updated_before`` (``kb.retrieval.readable_chunks``: ``document_id IN`` this, in the statement that ranks).

    The same time, read as sets: the greatest of the parts is at or after a time exactly when one of them is
    (:func:`_changed_since`), and before it exactly when none is (the listed fields' part is never null). Computing
    the greatest for every document of the tenant first took about ten times as long (docs/benchmarks.md, "Change
    times")."""
    documents = Document.objects.filter(tenant_id=reader.tenant_id)
    if after is not None:
        documents = documents.filter(_changed_since(reader, after))
    if before is not None:
        documents = documents.exclude(_changed_since(reader, before))
    return documents.values("pk")


def _changed_since(reader: Reader, at: datetime) -> Q:
    """Documents one of whose parts of the time ``reader`` is shown changed at or after ``at``."""
    sections = Section.objects.filter(readable_q(reader), changed_at__gte=at).values("document_id")
    gone_rows = SectionGone.objects.filter(readable_q(reader), gone_at__gte=at).values("document_id")
    return Q(shown_changed_at__gte=at) | Q(pk__in=sections) | Q(pk__in=gone_rows)


# ----------------------------------------------------------------------------- writing: the document's own


def shown_fields(document: Document) -> tuple:
    """What every reader of ``document`` is shown of the document itself (its sections aside)."""
    return (document.title, document.source, document.content_type, tuple(sorted(document.tags or ())),
            int(document.access_level), tuple(sorted(document.access_groups or ())))


def shown_follow(document: Document, before: tuple | None, at: datetime) -> bool:
    """Set ``document.shown_changed_at`` (in memory) to ``at`` when its :func:`shown_fields` differ from
    ``before`` (None: a new document); True when it did."""
    if before is not None and shown_fields(document) == before:
        return False
    document.shown_changed_at = at
    return True


# ----------------------------------------------------------------------------- writing: sections


def clamp(value, length: int) -> int:
    """``value`` as a position in a text of ``length`` characters (0 when it is no number)."""
    try:
        return min(max(int(value), 0), length)
    except (TypeError, ValueError):
        return 0


def clamped_spans(body_spans, length: int) -> list[tuple[int, int]]:
    """A section's stored ``body_spans`` as non-empty ``(start, end)`` pairs inside the text (malformed ones left
    out); ``kb.selectors`` reads them the same way."""
    spans = []
    for span in body_spans or ():
        if isinstance(span, list | tuple) and len(span) == 2:
            start, end = clamp(span[0], length), clamp(span[1], length)
            if start < end:
                spans.append((start, end))
    return spans


def own_texts(rows: Sequence[Section], text: str) -> dict[uuid.UUID, str]:
    """Each section's own text: the characters of ``text`` that belong to it -- the deepest section whose extent
    ``[start, end)`` holds them (ties: the later in document order), as ``kb.selectors.readable_spans`` reads a
    document -- and lie in the body of no other section (a reader of it alone does not read those), joined, with
    its whitespace collapsed. Positions are left out: the text of a section inside it or beside it may grow,
    shrink or go, and this stays; so does a change of whitespace alone (counted as none)."""
    rows = sorted(rows, key=lambda r: r.order)
    depths: dict = {}
    for row in rows:  # document order: parents first
        depths[row.id] = depths.get(row.parent_id, -1) + 1
    length = len(text)
    extents = sorted(((clamp(r.start, length), clamp(r.end, length), r) for r in rows), key=lambda e: e[0])
    bodies = sorted(((start, end, r.id) for r in rows for start, end in clamped_spans(r.body_spans, length)), key=lambda b: b[0])
    cuts = sorted({0, length, *(e[0] for e in extents), *(e[1] for e in extents),
                   *(b[0] for b in bodies), *(b[1] for b in bodies)})
    own: dict = defaultdict(list)
    active: list = []
    in_bodies: list = []
    i = j = 0
    for a, b in zip(cuts, cuts[1:], strict=False):
        while i < len(extents) and extents[i][0] <= a:
            active.append(extents[i])
            i += 1
        while j < len(bodies) and bodies[j][0] <= a:
            in_bodies.append(bodies[j])
            j += 1
        active = [e for e in active if e[1] > a]  # cuts hold every end: these hold all of [a, b)
        in_bodies = [x for x in in_bodies if x[1] > a]
        if not active:
            continue
        owner = max(active, key=lambda e: (depths[e[2].id], e[2].order))[2]
        if all(body[2] == owner.id for body in in_bodies):
            own[owner.id].append(text[a:b])
    # Whitespace collapsed: which section owns the blank lines between two moves with the sections around them.
    return {row.id: " ".join(" ".join(own[row.id]).split()) for row in rows}


def section_fields(row: Section, own_text: str) -> tuple:
    """What the readers of section ``row`` read of it (``own_text``: :func:`own_texts`'): a change of any of
    these is a change they see; nothing else of the document is in it."""
    return (
        row.kind, row.title, int(row.access_level), tuple(sorted(row.access_groups or ())),
        row.own_level, tuple(sorted(row.own_groups)) if row.own_groups is not None else None,
        bool((row.metadata or {}).get("override")), tuple(row.heading_path or ()), row.hidden_chars_removed,
        tuple(row.hidden_text_flags or ()), hashlib.sha256(own_text.encode()).hexdigest(),
    )


def sections_carry(old: Sequence[Section], old_text: str, new: Sequence[Section], new_text: str, *,
                   at: datetime) -> list[Section]:
    """New content's section rows ``new`` (of ``new_text``), in memory, take their ``changed_at``: that of an old
    row (of ``old_text``) whose :func:`section_fields` are the same -- matched by what its readers read, never by
    key or place, so a section added, removed or grown elsewhere moves no other -- else ``at``. Returns the old
    rows no new one matched: content gone (for :func:`content_gone`)."""
    old_own, new_own = own_texts(old, old_text), own_texts(new, new_text)
    pool: dict[tuple, list[Section]] = defaultdict(list)
    for row in sorted(old, key=lambda r: r.order):
        pool[section_fields(row, old_own[row.id])].append(row)
    for row in sorted(new, key=lambda r: r.order):
        same = pool.get(section_fields(row, new_own[row.id]))
        row.changed_at = same.pop(0).changed_at if same else at
    return [row for rows in pool.values() for row in rows]


def content_gone(document: Document, policies: Iterable[tuple[int, Sequence[int]]], *, at: datetime) -> None:
    """Record that content under each of ``policies`` (level, group ids) went away from ``document`` at ``at``
    (one statement; the latest time per policy). Callers hold the document's row lock."""
    unique = {(int(level), tuple(sorted(groups or ()))) for level, groups in policies}
    if unique:
        SectionGone.objects.bulk_create(
            [SectionGone(tenant_id=document.tenant_id, document_id=document.pk, access_level=level,
                         access_groups=list(groups), gone_at=at) for level, groups in sorted(unique)],
            update_conflicts=True, unique_fields=["document", "access_level", "access_groups"],
            update_fields=["gone_at"],
        )
