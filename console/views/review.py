"""The review queue (admins): flagged chunks (and sections' flagged heads) the reviewer may read, the triggering parts highlighted,
and the decisions -- release, keep out, delete the document -- through ``kb.screening.review_decide``,
which audits each one with the reviewer. The tenant's screening mode is set here too
(``kb.screening.screening_settings_update``, audited).

Nothing is said about flagged chunks in sections the reviewer may not read: no item, no count
(docs/security.md, "Planted instructions"); a chunk id they may not review is the same 404 as a
made-up one.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from accounts.errors import ApplicationError, NotFound
from accounts.models import Role
from console.membership import member_required
from console.pagination import selector_page
from kb import screening

STATES = ("pending", "decided", "all")
MODE_LABELS = {
    "off": "Off: flagged chunks are returned, without their flags",
    "flag": "Flag: flagged chunks are returned with their flags",
    "quarantine": "Quarantine: flagged chunks are held out of search and contexts until released",
}


def highlighted(text: str, spans) -> list[tuple[str, bool]]:
    """``text`` as (part, triggering?) pairs from ``spans`` (character offsets, merged and clamped): the
    template escapes each part and marks the triggering ones, so no part of the text is ever markup."""
    cuts = sorted((max(0, min(int(s), len(text))), max(0, min(int(e), len(text)))) for s, e in spans or ())
    merged: list[list[int]] = []
    for start, end in cuts:
        if start >= end:
            continue
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    parts, position = [], 0
    for start, end in merged:
        if start > position:
            parts.append((text[position:start], False))
        parts.append((text[start:end], True))
        position = end
    if position < len(text):
        parts.append((text[position:], False))
    return parts


@member_required(Role.ADMIN)
@require_GET
def review_index(request):
    """The queue a page at a time (``?page=``, ``kb.screening.REVIEW_PAGE`` items; what is no page number is the
    nearest page, as Django's Paginator reads it), with the count of what the reviewer may review in this state."""
    member = request.member
    state = request.GET.get("state", "pending")
    if state not in STATES:
        state = "pending"
    queue, page = selector_page(request.GET.get("page"), screening.REVIEW_PAGE,
                                lambda offset: screening.review_page(member=member, state=state, offset=offset))
    rows = [{"item": item, "parts": highlighted(item.text, item.screening["spans"])} for item in queue.items]
    context = {
        "member": member, "nav": "review", "rows": rows, "state": state, "states": STATES,
        "mode": screening.screening_mode(tenant_id=member.tenant_id), "modes": MODE_LABELS,
        "page": page, "count": queue.count, "query": urlencode({"state": state}),
    }
    return render(request, "console/review/list.html", context)


DONE = {"release": "Released", "keep_out": "Kept out", "delete_document": "Document deleted"}


def _decided(request, decide) -> HttpResponse:
    """Run ``decide(decision)`` (a chunk's or a head's review decision) for the POSTed decision; back to the queue
    with what was done, or the service's message; 404 for an item the member may not decide."""
    decision = request.POST.get("decision", "")
    try:
        decide(decision)
    except NotFound:
        raise Http404("No such item.") from None
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("console:review")
    messages.success(request, f"{DONE[decision]}.")
    return redirect("console:review")


@member_required(Role.ADMIN)
@require_POST
def review_decide_view(request, chunk_id):
    return _decided(request, lambda decision: screening.review_decide(
        member=request.member, chunk_id=chunk_id, decision=decision))


@member_required(Role.ADMIN)
@require_POST
def review_head_decide_view(request, section_id):
    """A decision on a section's flagged head (``kb.screening.head_review_decide``), as on a chunk."""
    return _decided(request, lambda decision: screening.head_review_decide(
        member=request.member, section_id=section_id, decision=decision))


@member_required(Role.ADMIN)
@require_POST
def review_settings(request):
    try:
        mode = screening.screening_settings_update(actor=request.member, mode=request.POST.get("screening", ""))
    except ApplicationError as exc:
        messages.error(request, exc.message)
        return redirect("console:review")
    messages.success(request, f"Screening mode: {mode}.")
    return redirect("console:review")
