"""The search playground: the real search, as the member -- or, for admins, as another member."""

from __future__ import annotations

import time

from django.shortcuts import render

from accounts.errors import ApplicationError
from accounts.selectors import membership_get_by_id, membership_list
from console.forms import SearchForm
from console.membership import is_admin, member_required
from kb.index_versions import index_version_list
from kb.search import SearchFilters, search
from kb.selectors import index_version_for_search


def _run(form: SearchForm, member, as_member, version_id):
    """The search as ``as_member``; when that is someone else, bounded by what ``member`` may read
    too: an admin sees through another member's eyes no more than they may read themselves."""
    data = form.cleaned_data
    version = index_version_for_search(member=member, index_version_id=version_id)
    started = time.perf_counter()
    response = search(
        member=as_member, query=data["query"], top_k=data["top_k"], mode=data["mode"], expand=data["expand"],
        expand_level=data["expand_level"], max_contexts=data["max_contexts"],
        context_token_budget=data["context_token_budget"], index_version=version,
        filters=SearchFilters(tags=form.tag_list(), source_prefix=data.get("source_prefix") or ""),
        within=member if as_member.pk != member.pk else None,
        exclude_flagged=bool(data.get("exclude_flagged")), spotlight=bool(data.get("spotlight")),
    )
    return {"response": response, "server_ms": (time.perf_counter() - started) * 1000, "version": version}


# The membership the playground's form was shown for (a hidden field of the form). The form is a GET, so the CSRF
# rotation of a tenant switch (console.membership) does not reach it: a search typed on a page shown for tenant A and
# sent after a switch to B in another tab ran in B, and B's trail kept the words typed for A (found attacking the demo,
# 2026-12-04). Such a search is not run; a link without the field (a bookmark) runs as before.
SHOWN_FOR_FIELD = "shown_for"


@member_required()
def playground(request):
    member = request.member
    admin = is_admin(member)
    # Choices of the form: names only (no groups of each member, no chunk counts of each version).
    members = list(membership_list(tenant=member.tenant).filter(is_active=True).prefetch_related(None)) if admin else []
    versions = list(index_version_list(tenant=member.tenant, reader=None, with_counts=False)) if admin else []
    shown_for = request.GET.get(SHOWN_FOR_FIELD)
    if shown_for is not None and shown_for != str(member.pk):
        form = SearchForm(None, members=members, versions=versions, initial={"query": request.GET.get("query", "")})
        return render(request, "console/search/playground.html", {
            "member": member, "nav": "search", "form": form, "results": [], "admin": admin, "query": "",
            "error": "This search was typed on a page shown for another of your tenants, and was not run here "
                     f"(you switched to {member.tenant.name} since, in another tab): search again to run it here."})
    form = SearchForm(request.GET or None, members=members, versions=versions)
    results, error = [], ""
    if form.is_bound and form.is_valid():
        data = form.cleaned_data
        try:
            as_member = member
            if admin and data.get("as_member"):
                as_member = membership_get_by_id(tenant=member.tenant, membership_id=data["as_member"])
            wanted = [data.get("index_version") if admin else None]
            if admin and data.get("compare_version"):
                wanted.append(data["compare_version"])
            results = [_run(form, member, as_member, v) for v in wanted]
            for result in results:
                result["as_member"] = as_member
        except ApplicationError as exc:
            error = exc.message
    # No answer shows its plan (``response.plan``), to admins neither: it is chosen against every chunk of the
    # index serving the query -- every tenant's, for a tenant without its own (docs/security.md, Decisions: Timing).
    context = {"member": member, "nav": "search", "form": form, "results": results, "error": error, "admin": admin,
               "query": form.cleaned_data.get("query", "") if form.is_bound and form.is_valid() else ""}
    return render(request, "console/search/playground.html", context)
