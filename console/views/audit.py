"""The audit trail (admins only): the tenant's records as sentences, filtered; their export; and
the tenant's audit settings (retention, query hashing: ``audit_settings``).

Reads through ``audit.selectors.audit_list`` -- the API's selector, of the admin's own tenant
only -- and exports with ``audit.exports``, the bytes ``GET /api/v1/audit/export/`` gives.
A document's page links here as "who retrieved this" (``?document=<id>&action=search``).

Each record is said in a sentence (``audit.sentences``) that names documents and sections by title
only where the viewing admin may read them (``kb.selectors.audit_titles``; otherwise "a section you
cannot read"), and the title filter searches only the titles they may read
(``kb.selectors.document_ids_titled``), so it cannot tell a hidden title either. The record itself
stays under "Technical details".
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from accounts.models import Role
from accounts.selectors import membership_list
from audit.exports import FORMATS, export_lines, shown_details, shown_id
from audit.models import Action
from audit.selectors import audit_list
from audit.sentences import (
    ACTION_LABELS,
    HIDDEN_DOCUMENT,
    HIDDEN_SECTION,
    MEMBER,
    PLAIN,
    TITLE,
    Name,
    Names,
    referenced_ids,
)
from audit.sentences import render as sentence_of
from audit.services import audit_settings_get, audit_settings_update
from console.forms import AuditFilterForm, AuditSettingsForm
from console.membership import member_required
from kb.index_versions import index_version_list
from kb.selectors import audit_titles, document_ids_titled
from kb.serializers import section_citation_url
from sources.selectors import source_list

PAGE_SIZE = 50


VERSION_ACTIONS = {Action.INDEX_VERSION_ACTIVATE, Action.INDEX_VERSION_EVALUATE}
SOURCE_ACTIONS = {Action.SOURCE_CREATE, Action.SOURCE_UPDATE, Action.SOURCE_DELETE, Action.SOURCE_SYNC,
                  Action.SOURCE_DETACH, Action.SOURCE_REATTACH}


def _names(member, events: list, members, also_document=None) -> Names:
    """What ``events`` name, as ``member`` may see it: titles they may read, neutral phrases otherwise."""
    document_ids, section_ids = referenced_ids(events)
    if also_document is not None:
        document_ids.add(str(also_document))
    titles = audit_titles(member=member, document_ids=document_ids, section_ids=section_ids)
    documents = {
        pk: HIDDEN_DOCUMENT if title is None else Name(
            title or "an untitled document", TITLE if title else PLAIN,
            url=reverse("console:document", kwargs={"document_id": pk}))
        for pk, title in titles.documents.items()
    }
    sections = {
        pk: HIDDEN_SECTION if title is None else Name(
            title or "an untitled section", TITLE if title else PLAIN, url=section_citation_url(document_id, pk))
        for pk, (document_id, title) in titles.sections.items()
    }
    actions = {e.action for e in events}
    versions = {
        str(v.pk): Name(v.short_id, PLAIN, url=reverse("console:index-version", kwargs={"ref": v.short_id}))
        for v in index_version_list(tenant=member.tenant, reader=None, with_counts=False)
    } if actions & VERSION_ACTIONS else {}
    sources = {
        str(s.pk): Name(s.name, TITLE, url=reverse("console:source", kwargs={"source_id": s.pk}))
        for s in source_list(member=member)
    } if actions & SOURCE_ACTIONS else {}
    return Names(documents=documents, sections=sections, versions=versions, sources=sources,
                 members={m.pk: Name(m.user.email, MEMBER) for m in members})


@member_required(Role.ADMIN)
@require_GET
def audit_index(request):
    """``?member=&action=&title=&document=&since=&until=`` filter; ``&export=csv|jsonl`` downloads them all."""
    member = request.member
    params = request.GET
    members = list(membership_list(tenant=member.tenant))
    form = AuditFilterForm(params or None, members=members,
                           actions=[(a, ACTION_LABELS.get(a, a)) for a in Action.values])
    arguments = form.selector_arguments()
    if form.title_text():
        arguments["any_document"] = document_ids_titled(member=member, text=form.title_text())
    events = audit_list(tenant_id=member.tenant_id, **arguments)
    if form.is_bound and not form.is_valid():
        events = events.none()  # a filter that cannot be read filters everything out, with its error shown
    export = params.get("export", "")
    if export in FORMATS:
        response = StreamingHttpResponse(export_lines(events, export), content_type=FORMATS[export])
        response["Content-Disposition"] = f'attachment; filename="audit-{member.tenant.slug}.{export}"'
        return response
    page = Paginator(events, PAGE_SIZE).get_page(params.get("page"))
    records = list(page.object_list)
    document_filter = arguments.get("document_id")
    names = _names(member, records, members, also_document=document_filter)
    for event in records:
        event.shown_details = shown_details(event)  # the record's details as the API and the export show them
        # Its id as the API and the exports give it: the row's own is the sequence every tenant's records advance
        # (found reviewing the 2026-12-04 fix: the page's rows were still named by it).
        event.shown_id = shown_id(event)
    rows = [(event, sentence_of(event, names)) for event in records]
    query = params.copy()
    query.pop("page", None)
    query.pop("export", None)
    without_document = params.copy()
    for name in ("page", "export", "document"):
        without_document.pop(name, None)
    context = {"member": member, "nav": "audit", "form": form, "page": page, "rows": rows,
               "query": query.urlencode(), "errors": form.errors if form.is_bound else {},
               "document_filter": names.document(document_filter) if document_filter else None,
               "without_document": without_document.urlencode()}
    return render(request, "console/audit/list.html", context)


@member_required(Role.ADMIN)
@require_http_methods(["GET", "POST"])
def audit_settings(request):
    """The tenant's retention and query hashing; POST changes them (``audit_settings_update``, which
    records the change with its before and after)."""
    member = request.member
    current = audit_settings_get(tenant_id=member.tenant_id)
    if request.method == "POST":
        form = AuditSettingsForm(request.POST)
        if form.is_valid():
            audit_settings_update(actor=member, **form.cleaned_data)
            messages.success(request, "Audit settings saved.")
            return redirect("console:audit-settings")
        status = 400
    else:
        form = AuditSettingsForm(initial={"retention_days": current.retention_days, "hash_queries": current.hash_queries})
        status = 200
    return render(request, "console/audit/settings.html",
                  {"member": member, "nav": "audit", "form": form, "current": current}, status=status)
