"""Writes for documents, sections and index versions.

Every service takes the tenant (or an actor inside it) explicitly. Ingestion work is
enqueued with ``transaction.on_commit``, never inside an open transaction.

A service that sets a policy (an upload's default, a section override, a document's
default) takes the acting member -- ``created_by`` for uploads, ``actor`` otherwise -- with no
default, and checks inside (``kb.permissions``): what the member may see, their role, and
that they may set the policy. ``None`` there is a deliberate internal caller with no member
(the command line, the pipeline, benchmarks, tests' setup): it is checked for nothing but a
well-formed policy.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from accounts.errors import ApplicationError
from accounts.models import Group, Membership, Tenant, User
from accounts.policy import AccessLevel, AccessNode, DocumentAccess, Policy, document_access, policy_implies
from accounts.selectors import reader_for
from accounts.services import parse_level, policy_from_names
from audit.models import Action
from audit.services import audit_record, audit_record_read
from ingestion.structure import ParseError
from kb import permissions, selectors
from kb.changed import content_gone, shown_fields, shown_follow
from kb.errors import UnsupportedContentType
from kb.jobs import enqueue_after_commit, job_create, rescreen_after_commit
from kb.models import (
    CONTENT_BY,
    DECISIONS_KEPT,
    HEAD_SCREENING,
    TITLE_SCREENING,
    Chunk,
    ChunkReview,
    Document,
    IngestionJob,
    Section,
)
from kb.titles import (
    UNTITLED,
    document_tags_screen,
    document_title_screen,
    flagging_titles,
    reader_title,
    reader_view,
    releases_undone,
    tag_refused,
    tags_give_way,
)

# Namespace for deterministic ids (index versions, sections, chunks).


# Document.metadata keys of a document a source owns (the sources app): only that source's sync
# replaces or deletes it; a member's replacement or deletion is refused until an admin detaches it.
SOURCE_ID, SOURCE_PATH = "source_id", "source_path"


class SourceOwned(ApplicationError):
    code = "source_owned"
    status_code = 409


def _refuse_source_owned(document: Document, member: Membership | None) -> None:
    if member is not None and (document.metadata or {}).get(SOURCE_ID) is not None:
        raise SourceOwned("this document belongs to a source and changes with its sync; an admin may detach it first")


class PayloadTooLarge(ApplicationError):
    code = "payload_too_large"
    status_code = 413


# ----------------------------------------------------------------------------- documents


@dataclass(frozen=True)
class Upload:
    """One file to ingest."""

    content: bytes
    title: str
    content_type: str = ""
    source: str = ""
    # None on a replace: the document keeps its tags, with their verdict -- not judged again as typed by the uploader
    # (a held list is refused as typed: it stays held, for a reviewer); on a new document, none.
    tags: Sequence[str] | None = ()
    access_level: str = "internal"
    groups: Sequence[str] = ()


def upload_size_check(content: bytes) -> None:
    """An upload over ``BULKHEAD_MAX_UPLOAD_BYTES`` is :class:`PayloadTooLarge` (413)."""
    limit = settings.BULKHEAD_MAX_UPLOAD_BYTES
    if len(content) > limit:
        raise PayloadTooLarge(f"document is {len(content)} bytes; the limit is {limit} bytes")


def upload_declared_type(upload: Upload) -> str:
    """The upload's content type as declared (unless a generic binary type), else sniffed: what the registry is asked
    which parser reads the bytes (``kb.permissions.content_type_check``)."""
    from ingestion.parsers import detect_content_type

    declared = (upload.content_type or "").split(";", 1)[0].strip().lower()
    if declared and declared not in {"application/octet-stream", "binary/octet-stream"}:
        return declared
    return detect_content_type(upload.source or upload.title, upload.content) or "application/octet-stream"


def upload_content_type(upload: Upload) -> str:
    """The content type a document stores: the registered type the bytes are read by
    (``ingestion.parsers.content_type_read`` of :func:`upload_declared_type`), never the declared string -- a
    document's type is listed to every reader and their agents, unscreened, and the registry read an unknown ``text/``
    flavour as plain text and an unknown type by the file name, so any 100 characters (a planted instruction,
    invisible characters) were stored and listed as sent (found attacking the metadata, attack21c; a website's
    ``Content-Type`` header too). None reads it: :class:`UnsupportedContentType` (fail closed; an upload was refused
    before by :func:`upload_check`, a source's item by its content check)."""
    from ingestion.parsers import content_type_read

    try:
        return content_type_read(upload_declared_type(upload), upload.source or None, upload.content)
    except ParseError:
        raise UnsupportedContentType("unsupported document content type: no parser reads it") from None


def _acting(member: Membership | None) -> Membership | None:
    """``member``, once it is known to be a Membership or None (a User here would skip no check, but
    fail obscurely)."""
    if member is not None and not isinstance(member, Membership):
        raise TypeError(f"the acting member is a Membership (or None for an internal caller), not {member!r}")
    return member


def _user(member: Membership | None) -> User | None:
    """The user an acting member's writes are recorded under (None for an internal caller)."""
    return member.user if _acting(member) is not None else None


def _policy_view(level: int | None, group_ids) -> dict | None:
    """A policy as the audit trail records it: the level's name and the groups' slugs (None: inheriting)."""
    if level is None:
        return None
    slugs = sorted(Group.objects.filter(id__in=list(group_ids or ())).values_list("slug", flat=True))
    return {"level": AccessLevel(level).label, "groups": slugs}


def _document_view(document: Document) -> dict:
    """A document as the audit trail records it. Not its title or hash: a tenant's admins read the
    trail, and an admin may be below a document's level (its title is then not theirs to read). Nor its
    size (since 2026-12-04): that is the size of a document the admin may see no part of, and moved with
    its restricted text (``audit.exports.shown_details`` leaves it out of records kept before)."""
    return {"content_type": document.content_type,
            "policy": _policy_view(document.access_level, document.access_groups)}


def upload_check(*, member: Membership, tenant: Tenant, upload: Upload, document: Document | None) -> None:
    """What the API refuses before anything is stored: another tenant's or a viewer's write; a
    document the member may not change (see ``kb.selectors.document_get_for_change``); a content
    type no parser reads (415); a default policy the member may not set (400/403); a tag that reads as an
    instruction to a model (400: :func:`tags_check`)."""
    permissions.writer_check(member=member, tenant_id=tenant.pk)
    if document is not None:
        selectors.document_get_for_change(member=member, document_id=document.pk)
    permissions.content_type_check(content_type=upload_declared_type(upload), source=upload.source,
                                   content=upload.content)
    policy = policy_from_names(tenant=tenant, access_level=upload.access_level, groups=upload.groups)
    permissions.policy_check_assignable(member=member, policy=policy)
    tags_check(tenant=tenant, tags=upload.tags or ())
    typed_text_check(upload=upload)


def typed_text_check(*, upload: Upload) -> None:
    """A typed title, a source (a file name, a path) or a tag holding a control character (but a tab or a line break)
    or a character a reader does not see (``ingestion.parsers.visible_text.invisible_ranges``: tag characters,
    zero-width ones, a reordering bidi override) is refused (400, ``details.field``, naming its place and the
    character, never its words). Each is listed to every reader's agent -- a person sees nothing where a model reads
    tag characters' sentence -- and the parsers clean a content's own title of both, never these (found attacking the
    metadata, attack21c; a terminal's ``ESC[1m`` glued to a planted instruction's first word also broke the
    screening's words, and the title passed as clean in quarantine mode)."""
    import unicodedata

    from ingestion.parsers.visible_text import unseen_character

    typed = [("title", "title", upload.title), ("source", "source", upload.source),
             *(("tags", f"tags[{i}]", tag) for i, tag in enumerate(upload.tags or ()))]
    for field, place, text in typed:
        found = unseen_character(text or "")
        if found is not None:
            raise ApplicationError(
                f"{place} holds U+{ord(found):04X} ({unicodedata.name(found, 'a control character')}), which a reader "
                "does not see as text and a model reads: remove it", details={"field": field})


def tags_check(*, tenant: Tenant, tags: Sequence[str]) -> None:
    """A tag that reads as an instruction to a model is refused (400, ``details.field`` ``tags``), never stored: it
    would be listed to every reader's agent (:func:`kb.titles.tag_refused`). The message names its place alone."""
    refused = tag_refused(tenant_id=tenant.pk, tags=tags)
    if refused is not None:
        place = f"tags[{refused}] reads" if refused < len(tags) else "the tags, read together, read"
        raise ApplicationError(
            f"{place} as an instruction to a model (screening flagged it); a tag is a short label, listed to every "
            "reader of the document and their agents: name it otherwise", details={"field": "tags"})


def _document_write(
    *, tenant: Tenant, created_by: Membership | None, upload: Upload, document: Document | None
) -> Document:
    """Create ``document`` (None) or give it new content; the text and chunks follow at ingestion."""
    user = _user(created_by)
    if created_by is not None:
        upload_check(member=created_by, tenant=tenant, upload=upload, document=document)
    else:
        tags_check(tenant=tenant, tags=upload.tags or ())
    upload_size_check(upload.content)
    policy = policy_from_names(tenant=tenant, access_level=upload.access_level, groups=upload.groups)
    before = _document_view(document) if document is not None else None
    shown_before = shown_fields(document) if document is not None else None
    if document is None:
        document = Document(tenant=tenant, created_by=user, source=upload.source[:1000])
    elif upload.source:
        document.source = upload.source[:1000]
    title = upload.title[:500]
    if title and CONTENT_TITLE in (document.metadata or {}) \
            and content_title_sent(document, title, _title_shown(document, created_by)):
        title = ""  # new content sent with the title the content gave (the console's default): still the content's
    if title and title != UNTITLED:  # the uploader's own: no policy touches it
        document.title, document.content_title, document.title_section = title, "", None
        document.metadata = {**_without(document.metadata, CONTENT_TITLE), TITLE_GIVEN: True}
    elif title or not document.title:  # none named: ingestion takes the content's (document_title_follow)
        document.title, document.content_title, document.title_section = UNTITLED, "", None
        document.metadata = {**_without(document.metadata, TITLE_GIVEN), CONTENT_TITLE: ""}
    # else new content with no title: the document stays titled as it was (the content's follows the new content)
    document.content_type = upload_content_type(upload)
    document.raw = upload.content
    document.sha256 = hashlib.sha256(upload.content).hexdigest()
    document.size_bytes = len(upload.content)
    if upload.tags is not None:  # None: a replace keeps the document's tags, and their verdict
        document.tags, document.content_tags = sorted({t.strip() for t in upload.tags if t.strip()}), []
        # The uploader's own (shown wherever the document is); the content's join them at ingestion (document_tags_follow).
        document.metadata = {**_without(document.metadata, CONTENT_TAGS), TAGS_TYPED: list(document.tags)}
    document.access_level, document.access_groups = int(policy.rank), list(policy.groups)
    document.status, document.error = Document.Status.PENDING, ""
    # Who uploaded these bytes: an ingestion error may quote any of them, so only they (and admins)
    # read it in full -- not whoever later retries or re-derives the document (kb.selectors.error_in_full).
    document.metadata = {**document.metadata, CONTENT_BY: user.pk if user is not None else None}
    document_title_screen(document)  # a typed title is listed from now on: screened now, again at ingestion
    document.save()
    # What every reader is shown of the document itself, changed now (kb.changed); the bytes, the sections they
    # hold, are counted when ingestion stores them, section by section.
    if shown_follow(document, shown_before, document.updated_at):
        Document.objects.filter(pk=document.pk).update(shown_changed_at=document.shown_changed_at)
    audit_record(
        action=Action.DOCUMENT_CREATE if before is None else Action.DOCUMENT_REPLACE, actor=created_by,
        tenant_id=tenant.pk, target_type="document", target_id=document.pk, document_ids=[document.pk],
        details={"after": _document_view(document), **({"before": before} if before is not None else {})},
    )
    return document


def content_title_sent(document: Document, title: str, shown: str) -> bool:
    """Whether ``title``, sent with new content for ``document`` by a member shown it titled ``shown``, means "the
    title the content gives" (the console's replace form sends the present title back): the document's stored title
    or ``shown`` -- never a content title the member is not shown (found attacking the replace, eighteenth session:
    compared with the stored content title, the first H1 whoever may read it, an internal admin's replace with a typed
    guess of a restricted H1 kept the document titled by its content exactly when the guess was right; and re-sending
    the title they are shown, their first readable H1, pinned it for every reader exactly when a hidden H1 came
    first). Only a document whose title follows its content (``CONTENT_TITLE``) keeps it."""
    return bool(title) and CONTENT_TITLE in (document.metadata or {}) and title in (document.title, shown)


def _title_shown(document: Document, member: Membership | None) -> str:
    """The content title ``member`` is shown of ``document`` (``kb.titles.reader_title``: the first title candidate of
    a section they may read, else its stored title); to an internal caller (None), who reads every title, the stored
    content title."""
    if member is None:
        return document.content_title
    reader_view([document], reader_for(member))
    return reader_title(document)


def _without(metadata: dict, key: str) -> dict:
    return {k: v for k, v in (metadata or {}).items() if k != key}


# ----------------------------------------------------------------------------- a title from the content

# Document.metadata keys: the title the content gives (its first H1, a front-matter title) when the upload
# named none -- the document's title then follows it under the policies (document_title_follow) -- and
# that the uploader typed the title (a policy never touches that one). Neither: a document stored before.
CONTENT_TITLE = "content_title"
TITLE_GIVEN = "title_given"
# And its tags: those the uploader typed (always listed) and the content's own (a front matter's ``tags:``, listed
# only while every reader of the document may read its root: document_tags_follow). Neither: a document stored before.
TAGS_TYPED = "tags_typed"
CONTENT_TAGS = "content_tags"


def document_access_of(sections: Sequence[Section], document: Document) -> DocumentAccess:
    """The access view of ``document`` (:func:`accounts.policy.document_access`) from its section rows
    (their own policies: markers and overrides; keyed by row id) and its default policy.

    The one derivation for every place that gives a document's sections their effective policies,
    heading paths, context lines and title: ingestion and index builds (``pipeline.plan.plan_content``),
    the upload preview (the same plan), and re-derivation after a policy change (:func:`apply_policies`).
    Always from the rows' titles as stored (cut to 1,000 characters), never a longer parsed heading: ingestion
    once derived its paths from the parsed titles and a re-derivation from the rows', so every policy change
    "renamed" the sections under a longer heading, moving their change times (``kb.changed``) for readers who
    saw nothing change, and rebuilt their chunks, which renamed them back (sixteenth session).
    """
    return document_access(
        (AccessNode(s.id, s.parent_id, s.title, _own_policy(s))
         for s in sorted(sections, key=lambda s: s.order)),  # parents come first in document order
        Policy(document.access_level, document.access_groups),
    )


def document_title_follow(
    document: Document, sections: Sequence[Section], *, content_title: str | None = None, title_key: str | None = None,
    candidates: Sequence[tuple[str, str]] | None = None,
) -> bool:
    """Record on ``document`` (in memory) the title its content gives and the section bearing it; True when its title
    or its record changed. Run where new content is stored (``pipeline.store``; the screening step and the upload
    preview on a copy): ``content_title`` is what the content gives, ``title_key`` the key of the section bearing it
    (``ingestion.structure.ParsedDocument.title_key``: the first H1's own section, or the root for a front matter's).

    The title is each reader's (``kb.titles.reader_title``): ``document.content_title`` to a member who may read the
    section ``document.title_section``, else ``document.title`` -- which is "untitled" for a title from the content, so
    a surface that forgets the reader shows that. No policy change touches any of it (the reader's policies decide at
    each read). A parser that names no bearer: the first section titled so (the title's first 500 characters), else the
    root -- never any other section with the same text. A title the uploader typed is the document's, for every
    reader; a document stored before titles were marked keeps its title unless it is a heading's, then the content's.

    Each section's ``title_candidate`` (in memory) is the title it bears ("" none): a member is shown the first, in
    document order, of a section they may read (``kb.titles.reader_title``) -- ``candidates`` (the parser's
    ``ParsedDocument.title_candidates``: a front matter's title on the root, each H1 on its own section) when the first
    of them is the bearer found here, else the bearer alone. ``content_title`` and ``title_section`` are the first.
    """
    metadata = document.metadata or {}
    before = (document.title, document.content_title, document.title_section, metadata.get(CONTENT_TITLE),
              tuple(getattr(s, "title_candidate", "") for s in sections))
    for section in sections:
        section.title_candidate = ""
    if metadata.get(TITLE_GIVEN):
        document.content_title, document.title_section = "", None
        return before[1:3] != ("", None) or any(before[4])
    if CONTENT_TITLE in metadata or document.title in ("", UNTITLED):
        candidate = metadata.get(CONTENT_TITLE, "") if content_title is None else content_title
    elif document.title == content_title or any(s.title[:500] == document.title for s in sections):
        candidate = document.title
    else:
        return any(before[4])
    ordered = sorted(sections, key=lambda s: s.order)
    bearer = None
    if candidate:
        bearer = next((s for s in ordered if title_key is not None and s.key == title_key), None)
        if bearer is None:
            bearer = next((s for s in ordered if s.title[:500] == candidate[:500]), None)
        if bearer is None:
            bearer = next((s for s in ordered if s.parent_id is None), None)
    document.title = UNTITLED
    document.content_title = candidate[:500] if bearer is not None else ""
    document.title_section = bearer.id if bearer is not None else None
    document.metadata = {**metadata, CONTENT_TITLE: candidate}
    if bearer is not None:
        by_key = {s.key: s for s in ordered}
        listed = [(by_key[key], str(title)[:500]) for key, title in candidates or () if key in by_key and str(title).strip()]
        listed.sort(key=lambda found: found[0].order)
        if not listed or listed[0][0] is not bearer or listed[0][1] != document.content_title:
            listed = [(bearer, document.content_title)]  # the bearer alone (a parser that lists none, a stored title)
        for section, title in listed:
            if not section.title_candidate:  # a section bears one title: its first
                section.title_candidate = title
    return before != (document.title, document.content_title, document.title_section, candidate,
                      tuple(s.title_candidate for s in sections))


def document_tags_listed(
    document: Document, *, content_tags: Sequence[str] | None = None,
) -> tuple[list[str], list[str], dict]:
    """The tags ``document`` lists to every reader (those the uploader typed), those it lists to a member who may
    read its root besides (the content's own: ``content_tags``, a front matter's ``tags:`` given when new content is
    stored; else those recorded), and its metadata recording them (``kb.titles.reader_tags``).

    Found attacking the demo (fourteenth session): a front matter's ``tags:`` joined the document's tags, which
    every reader of any section is shown (the documents API, MCP's ``list_documents``, the console) and may filter
    by -- so a confidential front matter's tags reached internal readers of a section an editor widened through the
    API, while the front matter's text itself (in the root's span) was redacted for them. Then (sixteenth session)
    they were listed only while every reader of any section might read the root: one answer for every reader, which
    told a reader of the policies of sections hidden from them; now each reader's. A document stored before the split
    (no ``TAGS_TYPED``) is fail closed: its whole list counts as the content's until new content is stored, which
    tells its own tags from the rest (those the uploader typed, as far as can be known)."""
    metadata = document.metadata or {}
    typed = metadata.get(TAGS_TYPED)
    if typed is None:  # stored before the split: a list of unknown origin (kept under CONTENT_TAGS)
        unknown = metadata.get(CONTENT_TAGS, list(document.tags or ()))
        if content_tags is None:
            typed, content = [], unknown
        else:
            typed, content = [t for t in unknown if t not in set(map(str, content_tags))], content_tags
    else:
        content = metadata.get(CONTENT_TAGS, []) if content_tags is None else content_tags
    content = sorted({str(t) for t in content})
    typed = sorted(set(map(str, typed)))
    if TAGS_TYPED not in metadata and content_tags is None:
        return typed, content, {**metadata, CONTENT_TAGS: content}
    return typed, content, {**metadata, TAGS_TYPED: typed, CONTENT_TAGS: content}


def document_tags_give_way(document: Document, content_tags: Sequence[str], *, reuse: bool = False) -> None:
    """Drop ``document``'s typed tags (in memory) when new content gives ``content_tags`` (a front matter's) and the
    document's listed tags are held (``kb.titles.tags_give_way``): the front matter's replace them, the held ones are
    never listed again (found in the fourteenth session: read together with held tags, a clean front matter was
    refused and the document could not be given new content). Stored content (``reuse``: a re-derivation, a build)
    keeps what it was stored with. Run before :func:`document_tags_follow` by the store step, and on a copy by the
    screening step, so that both list the same tags."""
    if content_tags and not reuse and tags_give_way(document):
        document.metadata = {**(document.metadata or {}), TAGS_TYPED: []}


def document_tags_follow(document: Document, *, content_tags: Sequence[str] | None = None) -> bool:
    """Give ``document`` (in memory) the tags :func:`document_tags_listed` says -- ``tags`` for every reader,
    ``content_tags`` for readers of its root -- and the verdicts of both lists as they are shown
    (``kb.titles.document_tags_screen``: the typed ones, and the typed and the content's read together); True when its
    tags or metadata changed. Run where new content is stored (``pipeline.store``)."""
    tags, content, metadata = document_tags_listed(document, content_tags=content_tags)
    before = (list(document.tags or ()), list(document.content_tags or ()), document.metadata or {})
    document.tags, document.content_tags, document.metadata = tags, content, metadata
    document_tags_screen(document)
    if content:
        document_tags_screen(document, [*tags, *content])
    return before != (tags, content, metadata)


def document_read_record(
    *, member: Membership, document: Document, via: str, section_id: uuid.UUID | None = None,
    as_member: Membership | None = None,
) -> None:
    """Record that ``member`` read ``document``'s content (``via``: "api" or "console"; a chosen
    section; an admin's view as another member). Best effort: a read never fails on the audit
    (``audit.services.audit_record_read``). Callers have read the document through a selector."""
    details: dict = {"via": via}
    if section_id is not None:
        details["section"] = str(section_id)
    if as_member is not None:
        details["as_member"] = as_member.pk
    audit_record_read(action=Action.DOCUMENT_READ, actor=member, target_type="document", target_id=document.pk,
                      document_ids=[document.pk], details=details)


@transaction.atomic
def document_create(
    *, tenant: Tenant, created_by: Membership | None, upload: Upload
) -> tuple[Document, IngestionJob]:
    """Store the raw bytes, create an ingestion job, and enqueue it after commit.

    ``created_by`` is the member uploading: checked here (see the module docstring) and recorded
    as the creator of the document and its job; None for an internal caller.
    """
    document = _document_write(tenant=tenant, created_by=created_by, upload=upload, document=None)
    job = job_create(tenant=tenant, document=document, created_by=_user(created_by), cause=IngestionJob.Cause.UPLOAD)
    enqueue_after_commit([job.id])
    return document, job


@transaction.atomic
def document_replace(
    *, document: Document, created_by: Membership | None, upload: Upload
) -> tuple[Document, IngestionJob]:
    """New content for an existing document: a new ingestion; old chunks serve until it commits.

    ``created_by`` as for :func:`document_create`; a member must also be allowed to change the
    document (``kb.selectors.document_get_for_change``).
    """
    document = Document.objects.select_for_update().get(pk=document.pk)
    _refuse_source_owned(document, created_by)
    document = _document_write(tenant=document.tenant, created_by=created_by, upload=upload, document=document)
    job = job_create(tenant=document.tenant, document=document, created_by=_user(created_by),
                     cause=IngestionJob.Cause.UPLOAD)
    enqueue_after_commit([job.id])
    return document, job


@transaction.atomic
def document_store_for_source(
    *, tenant: Tenant, upload: Upload, document: Document | None, metadata: dict, job_stats: dict
) -> tuple[Document, IngestionJob]:
    """A source's sync creates or replaces one of its documents (an internal caller: the source's
    admin was checked when the source was set up). ``metadata`` is merged into the document's
    (:data:`SOURCE_ID`, :data:`SOURCE_PATH`); the job is not sent: the sync sends its jobs on the
    bulk lane (``kb.jobs.enqueue_after_commit(..., lane=BULK)``)."""
    if document is not None:
        document = Document.objects.select_for_update().get(pk=document.pk)
    document = _document_write(tenant=tenant, created_by=None, upload=upload, document=document)
    document.metadata = {**document.metadata, **metadata}
    document.save(update_fields=["metadata"])
    job = job_create(tenant=tenant, document=document, created_by=None, cause=IngestionJob.Cause.SOURCE_SYNC,
                     stats=job_stats)
    return document, job


@transaction.atomic
def document_delete(*, document: Document, actor: Membership | None = None) -> None:
    """Delete a document; its sections and chunks go in the same transaction.

    The document row is locked first, as policy changes and the pipeline's store step lock it
    before its sections: taking the sections first deadlocked against them (docs/reliability.md).
    ``actor``: the member deleting it, for the audit trail (None: an internal caller); callers
    check the member may (``kb.selectors.document_get_for_change``)."""
    locked = Document.objects.select_for_update().filter(pk=document.pk).first()
    if locked is None:
        return  # deleted meanwhile
    _refuse_source_owned(locked, actor)
    audit_record(action=Action.DOCUMENT_DELETE, actor=_acting(actor), tenant_id=locked.tenant_id,
                 target_type="document", target_id=locked.pk, document_ids=[locked.pk],
                 details={"before": _document_view(locked)})
    Chunk.objects.filter(document=document).delete()
    Section.objects.filter(document=document).delete()
    document.delete()


@transaction.atomic
def batch_create(
    *, tenant: Tenant, created_by: Membership | None, uploads: Sequence[Upload], replace_by_source: bool = True
) -> IngestionJob:
    """One batch job over many documents (the bulk CLI). A document with the same source is replaced.

    ``created_by`` as for :func:`document_create`, for every upload."""
    user = _user(created_by)
    batch = job_create(
        tenant=tenant, document=None, created_by=user, cause=IngestionJob.Cause.UPLOAD, kind=IngestionJob.Kind.BATCH,
        total=len(uploads),
    )
    children: list[uuid.UUID] = []
    for upload in uploads:
        existing = None
        if replace_by_source and upload.source:
            existing = Document.objects.select_for_update().filter(tenant=tenant, source=upload.source).first()
        document = _document_write(tenant=tenant, created_by=created_by, upload=upload, document=existing)
        children.append(job_create(tenant=tenant, document=document, created_by=user, cause=IngestionJob.Cause.UPLOAD,
                                   batch=batch).id)
    if not uploads:
        batch.status, batch.stage, batch.finished_at = IngestionJob.Status.SUCCEEDED, "done", timezone.now()
        batch.save(update_fields=["status", "stage", "finished_at"])
    enqueue_after_commit(children)
    return batch


# ----------------------------------------------------------------------------- permissions


def _own_policy(section: Section) -> Policy | None:
    return Policy(section.own_level, section.own_groups or ()) if section.own_level is not None else None


def recompute_policies(
    sections: list[Section], document: Document, *, access: DocumentAccess | None = None
) -> list[Section]:
    """Effective policy of every section (own policy, else the parent's, else the document default:
    the access view's, ``access`` or :func:`document_access_of`), set on the rows in memory; returns
    those changed."""
    access = access or document_access_of(sections, document)
    changed = []
    for section in sorted(sections, key=lambda s: s.order):
        policy = access.effective[section.id]
        if (policy.rank, list(policy.groups)) != (section.access_level, sorted(section.access_groups)):
            section.access_level, section.access_groups = int(policy.rank), list(policy.groups)
            changed.append(section)
    return changed


def apply_policies(
    document: Document, *, actor: Membership | None = None, at: datetime | None = None
) -> list[Section]:
    """Re-derive effective policies from the stored ones; chunks follow in this transaction.

    Chunks carry their section's policy for the SQL filter, and their embedded text (and so their
    keyword vector and embedding) carries the heading path that every reader of the section may
    read. When a change alters that path, the section's chunks are deleted here -- hidden from
    search at once, in every index version -- and rebuilt by an ingestion job after commit
    (created by ``actor``'s user: the member whose change this follows; None for the pipeline).
    Nothing is checked here: the policies were checked when they were set.

    Change times (``kb.changed``), at ``at`` (default: now): a section whose effective policy or heading path
    changes is changed; content under a policy it leaves is gone for that policy's readers.
    """
    at = at or timezone.now()
    sections = list(Section.objects.select_for_update().filter(document=document).order_by("order"))
    access = document_access_of(sections, document)
    before = {s.id: (s.access_level, list(s.access_groups)) for s in sections}
    moved = recompute_policies(sections, document, access=access)
    if moved:
        for section in moved:
            section.changed_at = at
        Section.objects.bulk_update(moved, ["access_level", "access_groups", "changed_at"])
        content_gone(document, (before[s.id] for s in moved), at=at)  # its readers so far saw it change or go
        _title_releases_follow(moved, before)
        for section in moved:
            _releases_follow(section)
            Chunk.objects.filter(section=section).update(
                access_level=section.access_level, access_groups=section.access_groups
            )
        # A chunk's verdict is made over the document's text as its readers may read it
        # (``pipeline.screen.readable_document_texts``), and its score is shown to them: with other readers,
        # every chunk of the document is screened again (marked stale, ``pipeline.rescreen``; no re-embedding).
        Chunk.objects.filter(document=document).update(screening_detector="")
        # Its heads' too (``pipeline.screen.head_records``: screened against the same text) and its titles' records:
        # the document's own record is marked stale as well, so the job screens again a document without chunks.
        document_records_stale(document)
        Document.objects.filter(pk=document.pk).update(metadata=document.metadata)
        rescreen_after_commit(document.tenant_id)
    paths = access.heading_paths
    renamed = [s for s in sections if tuple(s.heading_path) != paths[s.id]]
    if renamed:
        for section in renamed:
            section.heading_path, section.changed_at = list(paths[section.id]), at
        Section.objects.bulk_update(renamed, ["heading_path", "changed_at"])
        _rederive_chunks(document, [s.id for s in renamed], actor=_user(actor))
    # A title and tags from the content follow no policy change: each reader's are decided when they read
    # (kb.titles.reader_title, reader_tags), by the policies of the section bearing them.
    return sections


def document_records_stale(document: Document) -> None:
    """Mark ``document``'s (in memory) own screening stale: the ``detector`` of its :data:`~kb.models.TITLE_SCREENING`
    record, which says what screened its titles, its sections' headings and heads. The re-screen job
    (``pipeline.rescreen``) screens again every document without chunks whose record another ``SCREENED_BY`` made (a
    document with chunks is found by theirs, marked with it). The verdicts stay what they are until it has: a held
    title or head stays held. The caller saves the row, which it holds locked."""
    record = (document.metadata or {}).get(TITLE_SCREENING)
    if isinstance(record, dict):  # none: stale already
        document.metadata = {**document.metadata, TITLE_SCREENING: {**record, "detector": ""}}


def _releases_follow(section: Section) -> None:
    """Before ``section``'s chunks take its new policy in place: a release stays only on a chunk whose new policy
    every reader of it so far may read (so may its reviewer); any other is held again, for whoever may read it now.

    As ``pipeline.store.carried_review`` carries a release to a rebuilt chunk (found attacking the review queue,
    2026-12-03: a section narrowed above its reviewer's access, its heading path unchanged, kept its chunks and so
    their release -- a planted instruction an internal admin released was returned to restricted readers). A
    keep-out only hides more: it stays. Run before ``_rederive_chunks`` too, whose kept decisions carry the
    chunks' policy."""
    released = Chunk.objects.filter(section=section, screening_flagged=True, review=ChunkReview.RELEASED)
    level, groups = section.access_level, section.access_groups
    undone = [pk for pk, decided_level, decided_groups in released.values_list("pk", "access_level", "access_groups")
              if not policy_implies(decided_level, decided_groups, level, groups)]
    if undone:
        Chunk.objects.filter(pk__in=undone).update(review=ChunkReview.NONE)


def _title_releases_follow(sections: list[Section], before: dict) -> None:
    """As :func:`_releases_follow`, for the headings of ``sections`` (their new policies set; ``before``: each one's
    policy so far, by id): a heading's release (its :data:`~kb.models.TITLE_SCREENING` record, which holds no
    policy) stays only where every reader of it so far may read its new policy -- a heading is shown only to
    the readers of its section (``accounts.policy.visible_heading_paths``); any other is held again, for whoever
    may read it now, in the change's transaction. A keep-out stays. The rebuild path's rows are the same: this
    runs for every changed section (found reviewing edb4869: a heading released by an internal admin stayed
    released, and shown to restricted readers, once its section was narrowed in place). A released head
    (:data:`~kb.models.HEAD_SCREENING`) likewise."""
    undone = []
    for section in sections:
        level, groups = before[section.id]
        if policy_implies(level, groups, section.access_level, section.access_groups):
            continue
        record = releases_undone((section.metadata or {}).get(TITLE_SCREENING))
        if record is not None:
            section.metadata = {**section.metadata, TITLE_SCREENING: record}
        # Its head's release likewise (``kb.screening.head_review_decide``): a head is read by its section's readers.
        head = (section.metadata or {}).get(HEAD_SCREENING)
        if isinstance(head, dict) and head.get("review") == ChunkReview.RELEASED:
            section.metadata = {**section.metadata, HEAD_SCREENING: {**head, "review": ""}}
        if record is not None or section.metadata.get(HEAD_SCREENING) is not head:
            undone.append(section)
    if undone:
        Section.objects.bulk_update(undone, ["metadata"])


def text_digest(text: str) -> str:
    """A chunk's text as :data:`~kb.models.DECISIONS_KEPT` names it (its embedded text, and so its
    ``content_hash``, changes with the heading path a policy change rebuilds it for)."""
    return hashlib.sha256(text.encode()).hexdigest()


def decision_kept(entry: Sequence) -> tuple:
    """A :data:`~kb.models.DECISIONS_KEPT` entry as a tuple: (text digest, flagging titles' digest, review, level,
    group ids) -- or the first three alone, as entries were written before they carried the chunk's policy."""
    if len(entry) == 5 and isinstance(entry[4], list | tuple):
        return (*entry[:4], tuple(sorted(entry[4])))
    return tuple(entry[:3])


def _rederive_chunks(document: Document, section_ids: list[uuid.UUID], *, actor: User | None) -> None:
    """Hide the chunks of ``section_ids`` now and rebuild them (new prefix, keyword vector and
    embedding) with one job per index version that had chunks of the document."""
    stale = Chunk.objects.filter(document=document, section_id__in=section_ids)
    versions = set(Chunk.objects.filter(document=document).values_list("index_version_id", flat=True).distinct())
    # The reviewers' decisions on them go to the rebuilt chunks of the same text (pipeline.store), not with them;
    # each with the chunk's policy (a release follows the text only where its reviewer could read, pipeline.store).
    kept = {decision_kept(entry) for entry in document.metadata.get(DECISIONS_KEPT, ()) if isinstance(entry, list)}
    kept |= {(text_digest(text), flagging_titles(verdict), review, level, tuple(sorted(groups)))
             for text, verdict, review, level, groups in stale.filter(screening_flagged=True)
             .exclude(review=ChunkReview.NONE).values_list("text", "screening", "review", "access_level", "access_groups")}
    stale.delete()
    # The stored chunks no longer match the bytes' fingerprint: the job must not skip as unchanged.
    document.metadata = {**document.metadata, "ingested": "",
                         DECISIONS_KEPT: [[*entry[:4], list(entry[4])] if len(entry) == 5 else list(entry)
                                          for entry in sorted(kept, key=repr)]}
    Document.objects.filter(pk=document.pk).update(metadata=document.metadata)
    active = selectors.active_index_version(tenant_id=document.tenant_id)
    rederive = {"rederive": True}  # rebuilds stored sections under their stored policies
    change = IngestionJob.Cause.POLICY_CHANGE  # not its creator's to follow (kb.selectors.jobs_shown)
    jobs = [job_create(tenant=document.tenant, document=document, created_by=actor, cause=change, stats=rederive)]
    for version_id in sorted(versions, key=str):
        if active is None or version_id != active.pk:
            jobs.append(job_create(tenant=document.tenant, document=document, created_by=actor, cause=change,
                                   index_version_id=version_id, stats=rederive))
    enqueue_after_commit([job.id for job in jobs])


@transaction.atomic
def section_set_access(
    *, actor: Membership | None, section: Section, access_level: str | None, groups: Sequence[str] | None,
    inherit: bool = False,
) -> Section:
    """Override a section's own policy (or return it to inheriting); chunks follow, no re-embedding.

    ``access_level`` / ``groups`` left None keep the section's present level / groups. A member
    ``actor`` must be an editor or admin who may read the section (else 404), and must be allowed
    to set the policy the section ends up with -- its parent's or the document's when it returns
    to inheriting (see ``kb.permissions``). ``actor=None``: an internal caller, unchecked.
    """
    _acting(actor)
    document = Document.objects.select_for_update().get(pk=section.document_id)
    if actor is not None:
        permissions.writer_check(member=actor, tenant_id=document.tenant_id)
        selectors.section_get(member=actor, section_id=section.pk)
    sections = list(Section.objects.select_for_update().filter(document=document).order_by("order"))
    section = next(s for s in sections if s.pk == section.pk)
    before = {"own": _policy_view(section.own_level, section.own_groups),
              "effective": _policy_view(section.access_level, section.access_groups)}
    own_before = (section.own_level, section.own_groups, bool(section.metadata.get("override")))
    if inherit:
        section.own_level, section.own_groups = None, None
    else:
        level = parse_level(access_level) if access_level is not None else AccessLevel(section.access_level)
        group_ids = (
            policy_from_names(tenant=document.tenant, access_level=level.label, groups=groups).groups
            if groups is not None else section.access_groups
        )
        own = Policy(level, group_ids)
        section.own_level, section.own_groups = int(own.rank), list(own.groups)
    if actor is not None:
        recompute_policies(sections, document)  # the policy the section ends up with, in memory
        permissions.policy_check_assignable(
            member=actor, policy=Policy(section.access_level, section.access_groups)
        )
    section.metadata = {**section.metadata, "override": not inherit}
    now = timezone.now()
    # Its own policy is shown to its readers (kb.changed): a change of it alone is theirs to see, and theirs only.
    if (section.own_level, section.own_groups, not inherit) != own_before:
        section.changed_at = now
    section.save(update_fields=["own_level", "own_groups", "metadata", "changed_at"])
    apply_policies(document, actor=actor, at=now)
    Document.objects.filter(pk=document.pk).update(updated_at=now)
    section = Section.objects.get(pk=section.pk)
    audit_record(
        action=Action.SECTION_ACCESS, actor=actor, tenant_id=document.tenant_id, target_type="section",
        target_id=section.pk, document_ids=[document.pk],
        details={"before": before, "after": {"own": _policy_view(section.own_level, section.own_groups),
                                             "effective": _policy_view(section.access_level, section.access_groups)}},
    )
    return section


@transaction.atomic
def document_set_access(
    *, actor: Membership | None, document: Document, access_level: str, groups: Sequence[str]
) -> Document:
    """Change a document's default policy; inheriting sections and their chunks follow, no re-embedding.

    A member ``actor`` must be an editor or admin allowed to change the document
    (``kb.selectors.document_get_for_change``) and to set the policy (see ``kb.permissions``).
    ``actor=None``: an internal caller, unchecked.
    """
    _acting(actor)
    document = Document.objects.select_for_update().get(pk=document.pk)
    if actor is not None:
        permissions.writer_check(member=actor, tenant_id=document.tenant_id)
        selectors.document_get_for_change(member=actor, document_id=document.pk)
    policy = policy_from_names(tenant=document.tenant, access_level=access_level, groups=groups)
    if actor is not None:
        permissions.policy_check_assignable(member=actor, policy=policy)
    before = _policy_view(document.access_level, document.access_groups)
    shown_before = shown_fields(document)
    document.access_level, document.access_groups = int(policy.rank), list(policy.groups)
    document.save(update_fields=["access_level", "access_groups", "updated_at"])
    # The default policy is shown to every reader of the document (kb.changed): a change of it is theirs to see.
    if shown_follow(document, shown_before, document.updated_at):
        Document.objects.filter(pk=document.pk).update(shown_changed_at=document.shown_changed_at)
    apply_policies(document, actor=actor, at=document.updated_at)
    audit_record(action=Action.DOCUMENT_ACCESS, actor=actor, tenant_id=document.tenant_id, target_type="document",
                 target_id=document.pk, document_ids=[document.pk],
                 details={"before": before, "after": _policy_view(document.access_level, document.access_groups)})
    return document


__all__ = [
    "PayloadTooLarge",
    "Upload",
    "batch_create",
    "document_create",
    "document_delete",
    "document_read_record",
    "document_replace",
    "apply_policies",
    "document_access_of",
    "document_title_follow",
    "decision_kept",
    "document_set_access",
    "job_retry",
    "section_set_access",
    "upload_check",
    "upload_content_type",
    "upload_declared_type",
    "typed_text_check",
    "upload_size_check",
]


# ----------------------------------------------------------------------------- retrying a job


class JobNotRetryable(ApplicationError):
    code = "job_not_retryable"
    status_code = 409


def _job_retry_check(*, job: IngestionJob, actor: Membership, lock: bool) -> tuple[IngestionJob, Document]:
    """The job as ``actor`` may see it and its document, or the refusal (see :func:`job_retry`)."""
    if _acting(actor) is None:
        raise TypeError("a retry is a member's: pass the acting Membership")
    permissions.writer_check(member=actor, tenant_id=job.tenant_id)
    job = selectors.job_get(member=actor, job_id=job.pk)
    if job.kind != IngestionJob.Kind.DOCUMENT or job.document_id is None:
        raise JobNotRetryable("only a document's job can be retried, not a batch or an index build")
    if job.batch_id and job.batch.kind == IngestionJob.Kind.REINDEX:
        raise JobNotRetryable("this job is part of an index build: build the index version again instead")
    if job.status != IngestionJob.Status.FAILED:
        raise JobNotRetryable(f"only a failed job can be retried; this one is {job.status}")
    if lock:  # as every write to the document locks it: two retries at once make one job
        Document.objects.select_for_update().filter(pk=job.document_id).first()
    document = selectors.document_get_for_change(member=actor, document_id=job.document_id)
    others = IngestionJob.objects.filter(document=document).exclude(pk=job.pk)
    if others.filter(status__in=(IngestionJob.Status.QUEUED, IngestionJob.Status.RUNNING)).exists():
        raise JobNotRetryable("a job of this document is queued or running; wait for it to finish")
    if others.filter(index_version_id=job.index_version_id, created_at__gt=job.created_at).exists():
        raise JobNotRetryable("this document has a newer job; retry that one if it failed")
    return job, document


@transaction.atomic
def job_retry(*, job: IngestionJob, actor: Membership) -> IngestionJob:
    """Run a failed document job again: a new job for the same document (and index version), sent
    after commit. The document is read from its stored bytes again, so a retry helps once what failed
    it is fixed outside the file (a missing group created, a worker that ran out of memory).

    Only a failed ``document`` job, not one of an index build (rebuild the version instead), whose
    document still exists and has no newer or unfinished job. ``actor`` must see the job (else 404,
    ``kb.selectors.job_get``) and be an editor allowed to change its document
    (``kb.selectors.document_get_for_change``) or an admin; refusals are :class:`JobNotRetryable` (409).
    """
    job, document = _job_retry_check(job=job, actor=actor, lock=True)
    stats = {"retry_of": str(job.pk), **({"rederive": True} if job.stats.get("rederive") else {})}
    retry = job_create(tenant=document.tenant, document=document, created_by=_user(actor), cause=IngestionJob.Cause.RETRY,
                       index_version_id=job.index_version_id, stats=stats)
    if job.index_version_id is None:  # the document's own ingestion (another version's build leaves it alone)
        Document.objects.filter(pk=document.pk).update(status=Document.Status.PENDING, error="")
    enqueue_after_commit([retry.id])
    return retry


def job_retry_allowed(*, job: IngestionJob, actor: Membership) -> bool:
    """Whether :func:`job_retry` would run ``job`` again for ``actor`` now (to offer the action; reads only)."""
    try:
        _job_retry_check(job=job, actor=actor, lock=False)
    except ApplicationError:
        return False
    return True
