"""What a member may write: upload policies, section overrides, document content types.

Editors set permissions up to their own: a level at most their clearance, and only
groups they belong to. Admins may set anything in their tenant. Unknown levels or
groups are refused (400) before anything is stored.

Access *markers inside a document* (Markdown comments, HTML ``data-access``) are
not checked here: finding them means parsing the whole file, which for a large
document takes seconds. The ingestion job checks them instead and fails, naming the
problem and its line, on an unknown level or group or a malformed marker; nothing
of such a document is indexed. A marker above the uploader's own clearance is
allowed: it only narrows who may read a part of a text the uploader already has.
"""

from __future__ import annotations

from collections.abc import Sequence

from accounts.access import AccessLevel
from accounts.errors import PermissionRefused
from accounts.models import Group, Membership, Role
from accounts.services import groups_by_slugs, parse_level
from ingestion.parsers import parser_for
from ingestion.structure import ParseError
from kb.errors import UnsupportedContentType
from kb.models import Document, Section
from kb.services import Upload


def policy_check_assignable(*, member: Membership, access_level: str, groups: Sequence[str]) -> None:
    """Refuse a policy the member may not set: unknown level or group (400); for non-admins,
    a level above their clearance or a group they are not in (403, naming them)."""
    level = parse_level(access_level)
    wanted = groups_by_slugs(tenant=member.tenant, slugs=groups)
    if member.role == Role.ADMIN:
        return
    if level > member.clearance:
        raise PermissionRefused(
            f"access level {level.label!r} is above your clearance ({AccessLevel(member.clearance).label!r})",
            details={"access_level": level.label},
        )
    mine = set(member.groups.values_list("id", flat=True))
    foreign = sorted(g.slug for g in wanted if g.id not in mine)
    if foreign:
        raise PermissionRefused(f"you are not in group{'s' if len(foreign) > 1 else ''} {', '.join(foreign)}",
                                details={"groups": foreign})


def upload_check(*, member: Membership, upload: Upload) -> None:
    """Refuse an upload before anything is stored: a document content type no parser reads (415),
    or a default policy the member may not set (400/403, see :func:`policy_check_assignable`)."""
    from kb.services import _detect_content_type  # the very choice document_create will store

    content_type = _detect_content_type(upload)
    try:
        parser_for(content_type, upload.source or None, upload.content)
    except ParseError:
        raise UnsupportedContentType(
            f"unsupported document content type {content_type!r}", details={"content_type": content_type}
        ) from None
    policy_check_assignable(member=member, access_level=upload.access_level, groups=upload.groups)


def section_access_check(
    *, member: Membership, section: Section, access_level: str | None, groups: Sequence[str] | None, inherit: bool
) -> None:
    """Refuse a section policy change the member may not make: the policy the section ends up
    with (its parent's or the document's when ``inherit``) must be one the member could set."""
    if inherit:
        parent = Section.objects.filter(pk=section.parent_id).first() if section.parent_id else None
        source = parent if parent is not None else Document.objects.get(pk=section.document_id)
        level, group_ids = source.access_level, source.access_groups
    else:
        level = parse_level(access_level).value if access_level is not None else section.access_level
        group_ids = None if groups is not None else section.access_groups
    if groups is None or inherit:
        groups = list(Group.objects.filter(id__in=group_ids).values_list("slug", flat=True))
    policy_check_assignable(member=member, access_level=AccessLevel(level).label, groups=groups)
