"""Documents: the list (filters, sorting, pages -- seek pages and a capped count, ``console.pagination``)."""

from __future__ import annotations

from django.shortcuts import render

from console.membership import is_editor, member_required
from console.pagination import CURSOR_PARAMS, seek_page
from kb.models import Document
from kb.selectors import document_list

PAGE_SIZE = 25
COUNT_CAP = 1000  # beyond it the list says "more than 1,000": a full count tests access to every row
# The columns a list may be sorted by (anything else falls back to the newest first); the last term
# of each makes the order total, which seek pages need.
SORTS = {
    "created": ("created_at", "id"), "-created": ("-created_at", "-id"),
    "title": ("title", "id"), "-title": ("-title", "-id"),
    "status": ("status", "-created_at", "-id"), "-status": ("-status", "-created_at", "-id"),
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
    documents = document_list(
        member=member, status=status, tag=params.get("tag", "").strip(), content_type=params.get("type", "").strip()
    )
    # Narrowing the member's own list only: nothing here can widen what document_list admits.
    if source := params.get("source", "").strip():
        documents = documents.filter(source__startswith=source)
    if title := params.get("q", "").strip():
        documents = documents.filter(title__icontains=title)
    sort = params.get("sort", "-created")
    page = seek_page(documents, order=SORTS.get(sort, SORTS["-created"]), params=params, page_size=PAGE_SIZE,
                     count_cap=COUNT_CAP)
    query = params.copy()
    for key in ("page", *CURSOR_PARAMS):
        query.pop(key, None)
    context = {
        "member": member, "nav": "documents", "page": page, "statuses": Document.Status.values,
        "filters": {k: params.get(k, "") for k in ("status", "type", "tag", "source", "q")},
        "sort": sort if sort in SORTS else "-created", "query": query.urlencode(), "can_upload": is_editor(member),
    }
    template = "console/documents/_table.html" if request.htmx else "console/documents/list.html"
    return render(request, template, context)
