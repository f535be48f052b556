"""Sources (admins only): list, add with a preview of what a sync would ingest and under which policy,
sync now with live progress, history and errors (docs/sources.md). The same services and selectors
as ``/api/v1/sources/``; credentials are a write-only field, never rendered back."""

from __future__ import annotations

import yaml
from django import forms
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from accounts.errors import ApplicationError, Conflict, NotFound
from accounts.models import Membership, Role
from accounts.policy import LEVEL_NAMES
from console.membership import member_required
from console.pagination import selector_page
from kb.selectors import document_get_for_change
from kb.titles import shown_title_of
from kb.web_slots import Busy
from sources import selectors, services
from sources.models import Source

admin_required = member_required(Role.ADMIN)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


class SourceForm(forms.Form):
    name = forms.CharField(max_length=200)
    kind = forms.ChoiceField(choices=[(k, k) for k in Source.Kind.values])
    url = forms.CharField(max_length=2000, required=False, help_text="Git: a path, file://, https:// or ssh:// URL, "
                                                                      "or user@host:path; web: the start page or "
                                                                      "sitemap.xml")
    path = forms.CharField(max_length=2000, required=False, help_text="Folder: an absolute path below an allowed root")
    branch = forms.CharField(max_length=200, required=False)
    include = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="One glob a line")
    exclude = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False, help_text="One glob a line")
    access_level = forms.ChoiceField(choices=[(n, n) for n in LEVEL_NAMES], initial="internal")
    groups = forms.CharField(max_length=1000, required=False, help_text="Group slugs, comma-separated")
    access_map = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False,
                                 help_text="YAML: a list of {path, access_level, groups}; the first match wins")
    username = forms.CharField(max_length=500, required=False)
    password = forms.CharField(max_length=4000, required=False, widget=forms.PasswordInput(render_value=False))

    def clean_access_map(self):
        text = self.cleaned_data["access_map"]
        if not text.strip():
            return []
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise forms.ValidationError(f"not YAML{f' (line {mark.line + 1})' if mark else ''}") from None
        if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
            raise forms.ValidationError("a list of {path, access_level, groups}")
        return value

    def fields_for_service(self) -> dict:
        data = self.cleaned_data
        fields = {"kind": data["kind"], "name": data["name"], "url": data["url"], "path": data["path"],
                  "branch": data["branch"], "include": _lines(data["include"]), "exclude": _lines(data["exclude"]),
                  "access_level": data["access_level"],
                  "groups": [g.strip() for g in data["groups"].split(",") if g.strip()],
                  "access_map": data["access_map"]}
        if data["username"] or data["password"]:
            fields["credentials"] = {"username": data["username"], "password": data["password"]}
        return fields


def _render(request, template: str, context: dict, status: int = 200):
    return render(request, template, {"member": request.member, "nav": "sources", **context}, status=status)


def _source(request, source_id: int) -> Source:
    try:
        return selectors.source_get(member=request.member, source_id=source_id)
    except NotFound:
        raise Http404("Not found.") from None


@admin_required
@require_http_methods(["GET", "POST"])
def source_index(request):
    """The tenant's sources; POST previews (``action=preview``) or adds one."""
    form = SourceForm(request.POST or None)
    preview, status = None, 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            fields = form.fields_for_service()
            try:
                if request.POST.get("action") == "preview":
                    unsaved = services.source_unsaved(actor=request.member, tenant=request.member.tenant, **fields)
                    preview, status = selectors.source_preview(member=request.member, source=unsaved), 200
                else:
                    source = services.source_create(actor=request.member, tenant=request.member.tenant, **fields)
                    messages.success(request, f"Source {source.name} was added. Sync it to ingest its documents.")
                    return redirect("console:source", source_id=source.pk)
            except ApplicationError as exc:
                form.add_error(None, exc.message)
                status = exc.status_code
    # A page of the sources, each with its last sync read for the page at once (found attacking cost, twenty-first
    # session, attack21f: every source of the tenant, two queries each, one of them over the tenant's jobs).
    page = Paginator(selectors.source_list(member=request.member), selectors.SOURCES_PAGE).get_page(
        request.GET.get("page"))
    listed = selectors.sources_listed(page.object_list, documents=False)
    rows = [{"source": s, "last": listed.last.get(s.pk)} for s in page.object_list]
    for row in rows:
        row["state"] = listed.states[row["last"].pk] if row["last"] else None
    return _render(request, "console/sources/list.html",
                   {"rows": rows, "page": page, "form": form, "preview": preview}, status)


def _progress_context(source: Source, member: Membership) -> dict:
    sync = selectors.last_sync(source)
    if sync is None:
        return {"source": source, "sync": None}
    state = selectors.sync_state(sync)
    running = state["status"] in ("queued", "running")
    return {"source": source, "sync": sync, "state": state, "running": running,
            "rows": selectors.sync_rows_shown(member=member, sync=sync),  # the errors and skips the admin may see
            "bar_max": max(sync.total, 1), "bar_value": min(sync.done, max(sync.total, 1))}


@admin_required
@require_GET
def source_detail(request, source_id: int):
    source = _source(request, source_id)
    preview, status = None, 200
    if request.GET.get("preview"):
        try:
            preview = selectors.source_preview(member=request.member, source=source)
        except Busy as exc:  # the tenant's previews are all running: said in the preview's place (429)
            preview, status = {"error": exc.message, "items": [], "counts": {}}, exc.status_code
    return _render(request, "console/sources/detail.html", {
        **_progress_context(source, request.member), "access_map": services.access_map_names(source),
        "history": [(s, selectors.sync_state(s)) for s in selectors.sync_list(source=source)[:20]],
        "preview": preview, **_detached_context(request, source),
    }, status)


def _detached_context(request, source: Source) -> dict:
    """The page of the source's detached paths ``?page=`` asks for (``selectors.DETACHED_PAGE`` tombstones, newest
    first; what is no page number is the nearest page, as Django's Paginator reads it, as the review queue's)."""
    detached, page = selector_page(
        request.GET.get("page"), selectors.DETACHED_PAGE,
        lambda offset: selectors.detached_page(member=request.member, source=source, offset=offset))
    return {"detached": detached, "page": page}


@admin_required
@require_GET
def source_progress(request, source_id: int):
    """The fragment the detail page polls while a sync runs."""
    return _render(request, "console/sources/_progress.html",
                   _progress_context(_source(request, source_id), request.member))


@admin_required
@require_POST
def source_sync(request, source_id: int):
    source = _source(request, source_id)
    services.sync_start(actor=request.member, source=source)
    if request.htmx:
        return _render(request, "console/sources/_progress.html", _progress_context(source, request.member))
    return redirect("console:source", source_id=source.pk)


@admin_required
@require_POST
def source_reattach(request, source_id: int, detached_id: int):
    """Re-attach a detached path (the service's: the document taken back, or added anew by the next sync)."""
    source = _source(request, source_id)
    try:
        detached = selectors.detached_get(member=request.member, source=source, detached_id=detached_id)
    except NotFound:
        raise Http404("Not found.") from None
    try:
        document = services.source_path_reattach(actor=request.member, source=source, detached=detached)
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("console:source", source_id=source.pk)
    messages.success(request, f"{detached.path} follows the source again: the next sync " + (
        "brings its document the source's content." if document is not None else "adds it as a new document."))
    return redirect("console:source", source_id=source.pk)


@admin_required
@require_http_methods(["GET", "POST"])
def document_detach(request, document_id):
    """Detach a synced document from its source, after a confirmation page: the API's
    ``POST /api/v1/sources/{id}/documents/{document_id}/detach/`` -- the tenant's admins (others: the console's 403
    page), a document they can see (``kb.selectors.document_get_for_change``; else the same 404 as a missing one, as
    another tenant's), the source the document belongs to; ``sources.services.source_document_detach`` decides the
    rest (409 while a sync of the source is unfinished) and records ``source.detach``. The document stays."""
    member = request.member
    try:
        document = document_get_for_change(member=member, document_id=document_id)
    except NotFound:
        raise Http404("Not found.") from None
    except ApplicationError as exc:  # never for an admin (they may change any document they see); fail closed
        return _render(request, "console/documents/detail_detach.html",
                       {"nav": "documents", "document": None, "error": exc.message}, exc.status_code)
    source = selectors.document_source(member=member, document=document)
    context = {"nav": "documents", "document": document, "source": source, "error": ""}
    try:
        if source is None:
            raise Conflict("this document belongs to no source: there is nothing to detach it from")
        if request.method == "GET":
            return _render(request, "console/documents/detail_detach.html", context)
        title = shown_title_of(document)
        services.source_document_detach(actor=member, source=source, document=document)
    except ApplicationError as exc:
        return _render(request, "console/documents/detail_detach.html", {**context, "error": exc.message},
                       exc.status_code)
    messages.success(request, f"“{title}” was detached from the source {source.name}: it stays as it is, and the "
                              "source's syncs leave its path alone until an admin re-attaches it on the source's page.")
    return redirect("console:document", document_id=document.pk)
