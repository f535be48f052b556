"""Effective access (admins): a document as one member sees it, and who can read a section.

Both pages read through one selector each (``kb.selectors.document_as_member``,
``kb.selectors.section_readers``), which check the caller is an admin of the tenant and decide
what is shown: a section the member may not read appears as a redacted row with the reasons
(``accounts.policy.denial_reasons``), never with its title or text.
"""

from __future__ import annotations

from django.shortcuts import render

from accounts.models import Role
from accounts.policy import AccessLevel
from accounts.selectors import membership_get_by_id, membership_list
from console.forms import AsMemberForm
from console.membership import found, member_required
from kb.selectors import document_as_member, document_get, group_slugs, section_readers
from kb.services import document_read_record

admin_required = member_required(Role.ADMIN)




def _policy(level: int, group_ids, slugs: dict[int, str]) -> dict:
    return {"level": AccessLevel(level).label, "groups": sorted(slugs.get(g, str(g)) for g in group_ids)}


@admin_required
def document_as_member_view(request, document_id):
    """``?member=<membership id>``: every section of the document as that member sees it."""
    admin = request.member
    document = found(lambda: document_get(member=admin, document_id=document_id))
    members = list(membership_list(tenant=admin.tenant).filter(is_active=True))
    form = AsMemberForm(request.GET or None, members=members)
    view, rows = None, []
    if form.is_bound and form.is_valid():
        member = found(lambda: membership_get_by_id(tenant=admin.tenant, membership_id=form.cleaned_data["member"]))
        view = found(lambda: document_as_member(admin=admin, member=member, document=document))
        document_read_record(member=admin, document=document, via="console", as_member=member)
        slugs = group_slugs(member=admin)
        rows = [{"s": s, "path": " › ".join(s.heading_path), **_policy(s.access_level, s.access_groups, slugs)}
                for s in view.sections]
    context = {"member": admin, "nav": "documents", "document": document, "form": form, "view": view, "rows": rows}
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
