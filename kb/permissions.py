"""What a member may write: which policies they may set, and which uploads the API takes.

The services that write a policy (``kb.services``: uploads, section overrides, document
defaults) run these checks themselves with the acting member, so a view cannot forget them.

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

from accounts.errors import NotFound, PermissionRefused
from accounts.models import ROLE_RANK, Group, Membership, Role
from accounts.policy import AccessLevel, Policy, assignable_levels
from ingestion.parsers import parser_for, unsupported_advice
from ingestion.structure import ParseError
from kb.errors import UnsupportedContentType


def writer_check(*, member: Membership, tenant_id: int) -> None:
    """Refuse a write by a member of another tenant (404, as if the object did not exist) or
    by a viewer (403, the API's own words for its editors-only views)."""
    if member.tenant_id != tenant_id:
        raise NotFound("Not found.")
    if ROLE_RANK[Role(member.role)] < ROLE_RANK[Role.EDITOR]:
        raise PermissionRefused("Only editors and admins may do this.")


def policy_check_assignable(*, member: Membership, policy: Policy) -> None:
    """Refuse a policy (level, group ids) a non-admin member may not set: a level above their
    clearance or a group they are not in (403, naming them). Names were resolved (and unknown
    ones refused, 400) by ``accounts.services.policy_from_names``."""
    if member.role == Role.ADMIN:
        return
    level = policy.rank
    if level not in assignable_levels(member.clearance):
        raise PermissionRefused(
            f"access level {level.label!r} is above your clearance ({AccessLevel(member.clearance).label!r})",
            details={"access_level": level.label},
        )
    mine = set(member.groups.values_list("id", flat=True))
    others = [g for g in policy.groups if g not in mine]
    foreign = sorted(Group.objects.filter(tenant_id=member.tenant_id, id__in=others).values_list("slug", flat=True))
    if foreign:
        raise PermissionRefused(f"you are not in group{'s' if len(foreign) > 1 else ''} {', '.join(foreign)}",
                                details={"groups": foreign})


def content_type_check(*, content_type: str, source: str, content: bytes) -> None:
    """Refuse an upload no parser reads (415) before anything is stored."""
    try:
        parser_for(content_type, source or None, content)
    except ParseError:
        advice = unsupported_advice(source or None, content)
        if advice is not None:
            what, todo = advice
            raise UnsupportedContentType(f"this file is {what}, which Bulkhead does not read: {todo}",
                                         details={"content_type": content_type}) from None
        raise UnsupportedContentType(
            f"unsupported document content type {content_type!r}: Bulkhead reads Markdown, HTML, PDF, DOCX, CSV, "
            "plain text, code, transcripts and e-mail", details={"content_type": content_type}
        ) from None
