"""Documents: the list (filters, sorting, pages -- seek pages and a capped count, ``console.pagination``)."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from accounts.errors import ApplicationError, NotFound
from accounts.models import Role
from accounts.policy import LEVEL_NAMES, AccessLevel
from console.membership import is_editor, member_required
from console.pagination import CURSOR_PARAMS, seek_page
from kb.models import Document
from kb.selectors import document_get_for_change, document_list, group_slugs
from kb.services import document_delete, document_set_access
from kb.titles import screening_mode, shown_source_of, shown_tags_of, shown_title_of, title_flagged_of

# The Type filter: the formats Bulkhead reads, each with the content types it is stored under.
TYPES = {
    "markdown": ("Markdown", ("text/markdown", "text/x-markdown", "text/md", "text/x-md", "text/x-gfm", "text/gfm",
                              "application/markdown", "application/x-markdown")),
    "html": ("HTML web page", ("text/html", "application/xhtml+xml")),
    "text": ("Plain text", ("text/plain", "text/x-rst")),
    "pdf": ("PDF", ("application/pdf",)),
    "docx": ("Word (.docx)", ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",)),
    "csv": ("Spreadsheet (CSV/TSV)", ("text/csv", "application/csv", "text/comma-separated-values",
                                     "text/tab-separated-values")),
    "code": ("Code (Python)", ("text/x-python", "text/x-script.python", "application/x-python")),
    "transcript": ("Transcript (VTT, SRT)", ("text/vtt", "application/x-subrip", "text/srt", "text/x-srt",
                                            "text/x-transcript")),
    "email": ("E-mail", ("message/rfc822", "application/mbox")),
}
TYPE_NAMES = {content_type: label for label, types in TYPES.values() for content_type in types}
MAX_BULK = 100

PAGE_SIZE = 25
COUNT_CAP = 1000  # beyond it the list says "more than 1,000": a full count tests access to every row
# The columns a list may be sorted by (anything else falls back to the newest first); the last term
# of each makes the order total, which seek pages need.
SORTS = {
    "created": ("created_at", "id"), "-created": ("-created_at", "-id"),
    "title": ("title_shown", "id"), "-title": ("-title_shown", "-id"),  # as shown: a held one as its placeholder
    "status": ("status_shown", "-created_at", "-id"), "-status": ("-status_shown", "-created_at", "-id"),
    "size": ("size_bytes", "id"), "-size": ("-size_bytes", "-id"),
}


@member_required()
def document_index(request):
    member = request.member
    # NULs are dropped: no stored text holds one, and PostgreSQL refuses them in a query with an error.
    params = request.GET.copy()
    for key in params:
        params.setlist(key, [value.replace("\x00", "") for value in params.getlist(key)])
    status = params.get("status", "") if params.get("status", "") in Document.Status.values else ""
    documents = document_list(member=member, status=status, tag=params.get("tag", "").strip(), levels=True)
    kind = params.get("type", "").strip()
    if kind in TYPES:
        documents = documents.filter(content_type__in=TYPES[kind][1])
    elif kind:  # a content type typed into an old link: exactly it
        documents = documents.filter(content_type=kind)
    # Narrowing the member's own list only: nothing here can widen what document_list admits. Titles and
    # sources are matched and sorted as shown (document_list's title_shown, source_shown: a held one as its
    # placeholder, never its stored words; the next page's cursor carries the shown title too).
    if source := params.get("source", "").strip():
        documents = documents.filter(source_shown__startswith=source)
    if title := params.get("q", "").strip():
        documents = documents.filter(title_shown__icontains=title)
    sort = params.get("sort", "-created")
    page = seek_page(documents, order=SORTS.get(sort, SORTS["-created"]), params=params, page_size=PAGE_SIZE,
                     count_cap=COUNT_CAP)
    mode = screening_mode(tenant_id=member.tenant_id)
    for d in page.object_list:
        d.shown_title, d.title_flagged = shown_title_of(d, mode), title_flagged_of(d, mode)  # held: a placeholder
        d.shown_source = shown_source_of(d, mode)  # an untitled file's name is its title: held with it
        d.shown_tags = shown_tags_of(d, mode)  # held tags: one placeholder
        d.type_name = TYPE_NAMES.get(d.content_type, d.content_type)
        d.level_label = _level(d.strictest_level if d.strictest_level is not None else d.access_level)
        d.level_mixed = d.loosest_level is not None and d.loosest_level != d.strictest_level
    query = params.copy()
    for key in ("page", *CURSOR_PARAMS):
        query.pop(key, None)
    context = {
        "member": member, "nav": "documents", "page": page, "statuses": Document.Status.values,
        "types": [(key, label) for key, (label, _) in TYPES.items()], "levels": LEVEL_NAMES,
        "filters": {k: params.get(k, "") for k in ("status", "type", "tag", "source", "q")},
        "sort": sort if sort in SORTS else "-created", "query": query.urlencode(), "can_upload": is_editor(member),
    }
    template = "console/documents/_table.html" if request.htmx else "console/documents/list.html"
    return render(request, template, context)


def _level(value: int) -> str:
    return AccessLevel(value).label


@member_required(Role.EDITOR)
@require_POST
def document_bulk(request):
    """Delete several documents, or set their default policy, through the services the document page
    uses (``document_delete``, ``document_set_access``: each checks the member may change that
    document, and each records its audit event). First a confirmation listing the documents; the
    confirmed POST acts. A document the member may not change is refused alone, with its reason."""
    member = request.member
    action = request.POST.get("action", "")
    level = request.POST.get("access_level", "")
    ids = request.POST.getlist("documents")[:MAX_BULK]
    if action not in ("delete", "policy") or not ids or (action == "policy" and level not in LEVEL_NAMES):
        messages.error(request, "Choose at least one document, and an action (and, to change the policy, a level).")
        return redirect("console:documents")
    chosen, refused = [], []
    for document_id in ids:
        try:
            chosen.append(document_get_for_change(member=member, document_id=document_id))
        except NotFound:
            continue  # not one the member can see: nothing to say about it
        except ApplicationError as exc:
            refused.append(exc.message)
    if request.POST.get("confirm") != "yes":
        return render(request, "console/documents/bulk_confirm.html", {
            "member": member, "nav": "documents", "documents": chosen, "refused": refused, "action": action,
            "level": level})
    done = 0
    slugs = group_slugs(member=member)
    for document in chosen:
        try:
            if action == "delete":
                document_delete(document=document, actor=member)
            else:
                document_set_access(actor=member, document=document, access_level=level,
                                    groups=[slugs[g] for g in document.access_groups if g in slugs])
            done += 1
        except ApplicationError as exc:
            refused.append(f"{shown_title_of(document)}: {exc.message}")
    verb = "deleted" if action == "delete" else f"set to {level} by default"
    messages.success(request, f"{done} document{'s' if done != 1 else ''} {verb}.")
    for reason in refused:
        messages.error(request, reason)
    return redirect("console:documents")
