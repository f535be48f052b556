"""Effective access (admins): a document as one member sees it, and who can read a section.

Both pages read through one selector each (``kb.selectors.document_as_member``,
``kb.selectors.section_readers``), which check the caller is an admin of the tenant and decide
what is shown: a section the member may not read appears as a redacted row with the reasons
(``accounts.policy.denial_reasons``), never with its title or text.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.shortcuts import render

from accounts.models import Role
from accounts.policy import AccessLevel
from accounts.selectors import membership_get_by_id, membership_list
from console.forms import AsMemberForm
from console.membership import found, member_required
from console.pagination import selector_page
from kb.selectors import DocumentAsMember, document_as_member, document_get, group_slugs, section_readers
from kb.services import document_read_record

admin_required = member_required(Role.ADMIN)




AS_MEMBER_PAGE = 1000  # sections a page, as the document page's tree (``document_page.TREE_PAGE``)


@dataclass(frozen=True)
class _Cut:
    """A page of a document as a member sees it, as ``selector_page`` takes it."""

    view: DocumentAsMember

    @property
    def count(self) -> int:
        return self.view.sections_total


def _policy(level: int, group_ids, slugs: dict[int, str]) -> dict:
    return {"level": AccessLevel(level).label, "groups": sorted(slugs.get(g, str(g)) for g in group_ids)}


@admin_required
def document_as_member_view(request, document_id):
    """``?member=<membership id>``: every section of the document as that member sees it."""
    admin = request.member
    document = found(lambda: document_get(member=admin, document_id=document_id))
    members = list(membership_list(tenant=admin.tenant).filter(is_active=True))
    form = AsMemberForm(request.GET or None, members=members)
    view, rows, page, query = None, [], None, ""
    if form.is_bound and form.is_valid():
        member = found(lambda: membership_get_by_id(tenant=admin.tenant, membership_id=form.cleaned_data["member"]))
        # A page of the sections (``AS_MEMBER_PAGE``), each made and shown: unpaged, a document of up to 100,000
        # sections was every one of them in one page (found attacking cost, twenty-first session, attack21f).
        view, page = selector_page(request.GET.get("page"), AS_MEMBER_PAGE, lambda offset: _Cut(found(
            lambda: document_as_member(admin=admin, member=member, document=document, offset=offset,
                                       limit=AS_MEMBER_PAGE))))
        view = view.view
        query = urlencode({"member": member.pk})
        document_read_record(member=admin, document=document, via="console", as_member=member)
        slugs = group_slugs(member=admin)
        rows = [{"s": s, "path": " › ".join(s.heading_path), **_policy(s.access_level, s.access_groups, slugs)}
                for s in view.sections]
    context = {"member": admin, "nav": "documents", "document": document, "form": form, "view": view, "rows": rows,
               "page": page, "query": query}
    return render(request, "console/access/as_member.html", context)


@admin_required
def section_readers_view(request, section_id):
    """The members who can read a section, the groups that open it, and who cannot and why."""
    admin = request.member
    readers = found(lambda: section_readers(admin=admin, section_id=section_id))
    context = {
        "member": admin, "nav": "documents", "r": readers, "path": " › ".join(readers.heading_path),
        **_policy(readers.access_level, readers.access_groups, readers.group_names),
    }
    return render(request, "console/access/readers.html", context)
