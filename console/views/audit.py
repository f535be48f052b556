"""The audit trail (admins only): the tenant's records in a filterable table, their export, and
the tenant's audit settings (retention, query hashing: ``audit_settings``).

Reads through ``audit.selectors.audit_list`` -- the API's selector, of the admin's own tenant
only -- and exports with ``audit.exports``, the bytes ``GET /api/v1/audit/export/`` gives.
A document's page links here as "who retrieved this" (``?document=<id>&action=search``).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from accounts.models import Role
from accounts.selectors import membership_list
from audit.exports import FORMATS, export_lines
from audit.models import Action
from audit.selectors import audit_list
from audit.services import audit_settings_get, audit_settings_update
from console.forms import AuditFilterForm, AuditSettingsForm
from console.membership import member_required

PAGE_SIZE = 50


@member_required(Role.ADMIN)
@require_GET
def audit_index(request):
    """``?member=&action=&document=&since=&until=`` filter; ``&export=csv|jsonl`` downloads them all."""
    member = request.member
    params = request.GET
    form = AuditFilterForm(params or None, members=membership_list(tenant=member.tenant), actions=Action.values)
    events = audit_list(tenant_id=member.tenant_id, **form.selector_arguments())
    if form.is_bound and not form.is_valid():
        events = events.none()  # a filter that cannot be read filters everything out, with its error shown
    export = params.get("export", "")
    if export in FORMATS:
        response = StreamingHttpResponse(export_lines(events, export), content_type=FORMATS[export])
        response["Content-Disposition"] = f'attachment; filename="audit-{member.tenant.slug}.{export}"'
        return response
    page = Paginator(events, PAGE_SIZE).get_page(params.get("page"))
    query = params.copy()
    query.pop("page", None)
    query.pop("export", None)
    context = {"member": member, "nav": "audit", "form": form, "page": page, "query": query.urlencode(),
               "errors": form.errors if form.is_bound else {}}
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
