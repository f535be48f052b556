"""One document: its metadata, its section tree with access badges, the chunks and the text of a
section, and -- for editors and admins -- a section's policy changed inline, new content, deletion.

Everything is read through ``kb.selectors`` as the signed-in member (``document_get``,
``document_section_tree``, ``section_get``, ``section_chunks``, ``document_readable_text``) and
written through ``kb.services`` with the member as the actor -- the calls the REST API makes,
with the same checks inside. A document or section the member cannot see is the same 404 as
one that does not exist. The text of the document is never rendered whole: only the stretches
of sections the member may read, the rest as a count of characters.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_http_methods, require_POST

from accounts.errors import ApplicationError, NotFound, PermissionRefused
from accounts.models import Role
from accounts.policy import AccessLevel
from console.forms import DocumentReplaceForm, SectionAccessForm
from console.membership import is_admin, is_editor, member_required
from ingestion.parsers import detect_content_type
from kb.models import Document, Section
from kb.selectors import (
    document_check_change,
    document_errors_in_full,
    document_get,
    document_get_for_change,
    document_readable_text,
    document_section_details,
    document_section_tree,
    group_slugs,
    section_chunks,
    section_get,
    section_node,
)
from kb.serializers import error_for
from kb.services import (
    PayloadTooLarge,
    Upload,
    document_delete,
    document_read_record,
    document_replace,
    section_set_access,
)
from kb.titles import shown_source_of, shown_tags_of, shown_title_of, title_flagged_of
from sources.selectors import document_source

editor_required = member_required(Role.EDITOR)


def _found(read):
    """A selector's NotFound as the console's 404 (the same for missing, unreadable, another tenant's)."""
    try:
        return read()
    except NotFound:
        raise Http404("Not found.") from None


_LABELS = {level.value: level.label for level in AccessLevel}


def _label(level: int) -> str:
    return _LABELS[level] if level in _LABELS else AccessLevel(level).label


def _selected(member, document: Document, section_id) -> Section | None:
    """The section chosen by ``?section=``, if the member may read it and it is of this document;
    anything else chooses nothing (silently: no answer tells a hidden section from a missing one)."""
    if not section_id:
        return None
    try:
        section = section_get(member=member, section_id=section_id)
    except NotFound:
        return None
    return section if section.document_id == document.pk else None


def _url_maker(route: str, kwarg: str):
    """``route``'s URL for any id, reversed once: a page of 1,000 sections would otherwise reverse
    thousands of URLs, a measurable part of its time."""
    marker = uuid.UUID(int=0)
    head, tail = reverse(f"console:{route}", kwargs={kwarg: marker}).split(str(marker))
    return lambda value: f"{head}{value}{tail}"


# The section tree is shown a page at a time: a document may hold up to 100,000 sections, and one page of
# them all was tens of megabytes of HTML and seconds of a web thread for any member who may read it
# (found attacking the demo). A page holds TREE_PAGE rows; the page of the chosen (or just changed)
# section is the one shown unless ``?page=N`` asks for another.
TREE_PAGE = 1000


def _tree_page(nodes: list, asked: str | None, focus=None):
    """One page of ``nodes`` (Django's Paginator): ``asked`` (``?page=``; what is not a page number is the
    nearest page, as ``get_page`` reads it), else the page holding the node ``focus``, else the first."""
    if not asked and focus is not None:
        at = next((k for k, node in enumerate(nodes) if node.id == focus), 0)
        asked = str(at // TREE_PAGE + 1)
    return Paginator(nodes, TREE_PAGE).get_page(asked)


def _tree_rows(member, document: Document, slugs: dict[int, str], *, page: str | None = None, focus=None):
    details = document_section_details(member=member, document=document)
    document_url = reverse("console:document", kwargs={"document_id": document.pk})
    readers_url, access_url = _url_maker("section-readers", "section_id"), _url_maker("section-access", "section_id")
    rows = []
    tree_page = _tree_page(document_section_tree(member=member, document=document), page, focus)
    for node in tree_page.object_list:
        detail = details.get(node.id)
        title = detail.title if detail else ""
        sid = str(node.id)
        rows.append({
            "node": node, "id": node.id, "sid": sid, "level": _label(node.access_level),
            "groups": sorted(slugs.get(g, str(g)) for g in node.access_groups),
            "own": bool(detail and detail.own_policy), "override": bool(detail and detail.override), "title": title,
            # The readable titles above it (the path ends with its own title when it has one).
            "above": " › ".join(node.heading_path[:-1] if title else node.heading_path),
            "span": f"{node.start}–{node.end}", "href": f"{document_url}?section={sid}",
            "readers_href": readers_url(sid), "access_href": access_url(sid),
        })
    return rows, tree_page


def _access_form(section_id, level: str, groups: list[str], slugs: dict[int, str], bound=None) -> SectionAccessForm:
    choices = sorted(slugs.values())
    if bound is not None:
        return SectionAccessForm(bound, groups=choices, prefix=f"s-{section_id}")
    return SectionAccessForm(groups=choices, prefix=f"s-{section_id}", initial={"access_level": level, "groups": groups})


def _tree_context(member, document: Document, *, changed=None, error: str = "", bound=None,
                  selected: Section | None = None, page: str | None = None) -> dict:
    """The section tree, one page of it (``TREE_PAGE``); ``changed`` is the section just changed (its
    outcome shown in its row).

    A row's access form is not rendered with the tree (1,000 forms were most of a long document's
    page): "Change access" fetches it (``section_access``, GET). Only a row whose change was just
    refused comes with its form, filled in as it was sent, beside the reason."""
    slugs = group_slugs(member=member)
    focus = changed if changed is not None else (selected.pk if selected is not None else None)
    rows, tree_page = _tree_rows(member, document, slugs, page=page, focus=focus)
    editor = is_editor(member)
    for row in rows:
        mine = changed is not None and row["id"] == changed
        row["changed"], row["error"] = mine and not error, error if mine else ""
        row["selected"] = selected is not None and row["id"] == selected.pk
        if editor and mine and error:
            row["form"] = _access_form(row["id"], row["level"], row["groups"], slugs, bound)
    return {
        "document": document, "rows": rows, "can_edit": editor, "admin": is_admin(member),
        "changed_gone": changed is not None and not error and all(r["id"] != changed for r in rows),
        "page": tree_page,
    }


def _panel_context(member, document: Document, selected: Section | None, tree: dict | None = None) -> dict:
    """The section panel; ``tree`` (the page's ``_tree_context``) already holds the chosen section's node."""
    chunks = list(section_chunks(member=member, section=selected)) if selected is not None else []
    node = None
    if selected is not None:
        # The chosen section is one the member may read (``_selected``): its node in the tree is the
        # one section_node would build again from all the document's sections.
        node = next((row["node"] for row in (tree or {}).get("rows", ()) if row["id"] == selected.pk), None)
        node = node or section_node(member=member, section=selected)
    overridden = selected is not None and selected.own_level is not None and bool((selected.metadata or {}).get("override"))
    return {
        "document": document, "selected": selected, "selected_kind": node.kind if node else "",
        "selected_override": overridden, "selected_level": _label(selected.access_level) if selected is not None else "",
        "selected_above": " › ".join(node.heading_path[:-1] if selected.title else node.heading_path) if node else "",
        "chunks": chunks, "text": document_readable_text(member=member, document=document, section=selected),
    }


def _document_context(member, document: Document) -> dict:
    full = document.pk in document_errors_in_full(member=member, documents=[document])
    slugs = group_slugs(member=member)
    change_refusal = ""
    if is_editor(member):
        try:
            document_check_change(member=member, document=document)
        except PermissionRefused as exc:
            change_refusal = exc.message
    from kb.screening import document_screening_summary

    return {
        "member": member, "nav": "documents", "document": document, "error": error_for(document, full, numbers=True, error=document.error_shown),
        "document_title": shown_title_of(document), "document_title_flagged": title_flagged_of(document),
        "document_source": shown_source_of(document),
        "document_tags": shown_tags_of(document),
        "screening": document_screening_summary(member=member, document_id=document.pk),
        "default_level": _label(document.access_level),
        "default_groups": sorted(slugs.get(g, str(g)) for g in document.access_groups),
        "can_change": is_editor(member) and not change_refusal, "change_refusal": change_refusal,
        "admin": is_admin(member), "max_upload": settings.BULKHEAD_MAX_UPLOAD_BYTES,
        # The source that owns it, for an admin ("Detach from its source…"; sources are the admins').
        "document_source_row": document_source(member=member, document=document) if is_admin(member) else None,
    }


def _page(request, document: Document, *, selected=None, replace_form=None, replace_error: str = "",
          status: int = 200):
    member = request.member
    tree = _tree_context(member, document, selected=selected, page=request.GET.get("page"))
    context = {
        **_document_context(member, document), **tree, **_panel_context(member, document, selected, tree),
        "replace_form": replace_form or DocumentReplaceForm(), "replace_error": replace_error,
    }
    return render(request, "console/documents/detail.html", context, status=status)


@member_required()
def document_detail(request, document_id):
    """The document page; ``?section=<id>`` chooses a section (its chunks, its text in context).
    An htmx request for the section panel gets that panel only."""
    member = request.member
    document = _found(lambda: document_get(member=member, document_id=document_id))
    selected = _selected(member, document, request.GET.get("section"))
    document_read_record(member=member, document=document, via="console",
                         section_id=selected.pk if selected is not None else None)
    if request.htmx and request.htmx.target == "section-panel":
        return render(request, "console/documents/_section_panel.html", _panel_context(member, document, selected))
    return _page(request, document, selected=selected)


def _access_page(request, document: Document, section: Section, slugs: dict[int, str], *, form=None,
                 error: str = "", status: int = 200):
    """A section's access form: for htmx the form alone (the document page puts it in the section's
    row), else a page of its own -- the path without JavaScript, and the page a refused plain POST
    answers with, the form filled in as sent beside the reason."""
    level, groups = _label(section.access_level), sorted(slugs.get(g, str(g)) for g in section.access_groups)
    context = {
        "member": request.member, "nav": "documents", "document": document, "section": section, "level": level,
        "groups": groups, "form": form or _access_form(section.pk, level, groups, slugs), "error": error,
        "inline": bool(request.htmx),
    }
    template = "console/documents/_access_form.html" if request.htmx else "console/documents/section_access.html"
    return render(request, template, context, status=status)


@editor_required
@require_http_methods(["GET", "POST"])
def section_access(request, section_id):
    """One section's access: GET shows its form (fetched by "Change access" on the document page);
    POST changes it (``PATCH /api/v1/sections/{id}/``): ``section_set_access`` with the member as
    the actor decides. htmx gets the section tree back, the outcome in the row."""
    member = request.member
    section = _found(lambda: section_get(member=member, section_id=section_id))
    document = _found(lambda: document_get(member=member, document_id=section.document_id))
    slugs = group_slugs(member=member)
    if request.method == "GET":
        return _access_page(request, document, section, slugs)
    form = _access_form(section.pk, "", [], slugs, request.POST)
    error, status = "", 200
    if not form.is_valid():
        error, status = " ".join(" ".join(errors) for errors in form.errors.values()), 400
    else:
        try:
            section_set_access(section=section, actor=member, **form.change())
        except ApplicationError as exc:
            error, status = exc.message, exc.status_code
    if request.htmx:  # htmx swaps only 2xx answers: a refusal is shown in the fragment it gets back
        context = _tree_context(member, document, changed=section.pk, error=error, bound=request.POST)
        return render(request, "console/documents/_section_tree.html", {"member": member, **context})
    if error:
        return _access_page(request, document, section, slugs, form=form, error=error, status=status)
    messages.success(request, "The section's access was changed.")
    return redirect("console:document", document_id=document.pk)


def _job_url(job, document: Document) -> str:
    try:
        return reverse("console:job", kwargs={"job_id": job.pk})
    except NoReverseMatch:
        return reverse("console:document", kwargs={"document_id": document.pk})


@editor_required
@require_POST
def document_replace_view(request, document_id):
    """New content for the document (``PUT /api/v1/documents/{id}/``): ``document_replace`` checks
    that the member may change it; the title, tags and default policy stay as they are."""
    member = request.member
    document = _found(lambda: document_get(member=member, document_id=document_id))
    form = DocumentReplaceForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, document, replace_form=form, status=400)
    file = form.cleaned_data["file"]
    limit = settings.BULKHEAD_MAX_UPLOAD_BYTES
    try:
        if file.size > limit:
            raise PayloadTooLarge(f"the file is {file.size} bytes; the limit is {limit} bytes")
        content = file.read()
        slugs = group_slugs(member=member)
        upload = Upload(
            content=content, title=form.cleaned_data["title"] or document.title,
            content_type=detect_content_type(file.name, content) or "", source=document.source or file.name,
            tags=None, access_level=_label(document.access_level),  # its tags stay, with their verdict
            groups=tuple(slugs[g] for g in document.access_groups if g in slugs),
        )
        shown = shown_title_of(document)  # as the member is shown it (document_get's reader view)
        document, job = document_replace(document=document, created_by=member, upload=upload)
    except ApplicationError as exc:
        return _page(request, document, replace_form=form, replace_error=exc.message, status=exc.status_code)
    messages.success(request, f"New content for “{shown}” is being ingested.")
    return redirect(_job_url(job, document))


@editor_required
@require_http_methods(["GET", "POST"])
def document_delete_view(request, document_id):
    """Delete the document after a confirmation page (``DELETE /api/v1/documents/{id}/``: an editor
    or admin who may change it, ``kb.selectors.document_get_for_change``)."""
    member = request.member
    document = _found(lambda: document_get(member=member, document_id=document_id))
    context = {"member": member, "nav": "documents", "document": document, "error": ""}
    try:
        document = _found(lambda: document_get_for_change(member=member, document_id=document.pk))
    except PermissionRefused as exc:
        return render(request, "console/documents/detail_delete.html", {**context, "error": exc.message},
                      status=exc.status_code)
    if request.method == "POST":
        title = shown_title_of(document)
        try:
            document_delete(document=document, actor=member)
        except ApplicationError as exc:  # a source's document (kb.services.SourceOwned): its sync deletes it
            return render(request, "console/documents/detail_delete.html", {**context, "error": exc.message},
                          status=exc.status_code)
        messages.success(request, f"“{title}” was deleted, with its sections and chunks.")
        return redirect("console:documents")
    return render(request, "console/documents/detail_delete.html", context)
