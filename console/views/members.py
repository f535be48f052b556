"""Members, groups and API tokens of the tenant (admins only).

Every page reads through ``accounts.selectors`` and writes through ``accounts.services`` --
the calls the accounts REST API makes, with the same arguments -- so the console and the API
follow one set of rules and refuse the same things (an admin demoting or deactivating
themselves, an unknown group, a member who already is one); a refusal is shown beside the
form that caused it, with the HTTP status the API would answer. A person is added by an invitation
they accept (``accounts.invitations``), never at once: an account may belong to another tenant too.

A new token's key is in the response to the POST that minted it and nowhere else: it is
neither stored in clear nor put in the session, and that response is not cached.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import selectors, services
from accounts.errors import ApplicationError
from accounts.invitations import invitation_create, invitation_listed
from accounts.models import Role
from accounts.policy import LEVEL_NAMES, AccessLevel
from console.forms import (
    GroupCreateForm,
    GroupRenameForm,
    MemberActiveForm,
    MemberChangeForm,
    MemberCreateForm,
    TokenCreateForm,
)
from console.membership import found, member_required
from console.pagination import page_number

admin_required = member_required(Role.ADMIN)
PAGE_SIZE = 50  # members and tokens per page


def _page(request, rows):
    """One page of ``rows``: ``?page=`` of the list's own address, or -- for a form posted from a
    page -- of the address it was posted to (so a refusal shows the page the row was on)."""
    return Paginator(rows, PAGE_SIZE).get_page(request.GET.get("page"))


def _back(route: str, request):
    """The list's page the posted form came from (its ``?page=``), after a change."""
    page = page_number(request.GET.get("page"), default=0)
    return reverse(route) + (f"?page={page}" if page else "")


def _form_errors(form) -> str:
    return " ".join(f"{'' if name == '__all__' else name + ': '}{' '.join(errors)}"
                    for name, errors in form.errors.items())


def _render(request, template: str, context: dict, status: int = 200):
    return render(request, template, {"member": request.member, "nav": "members", **context}, status=status)


# ----------------------------------------------------------------------------- members


def _members_page(request, *, row_errors=None, status: int = 200, invite_form=None, invite_error: str = ""):
    tenant = request.member.tenant
    slugs = [g.slug for g in selectors.group_list(tenant=tenant)]
    page = _page(request, selectors.membership_list(tenant=tenant))
    rows = [
        {"m": m, "clearance": AccessLevel(m.clearance).label, "groups": {g.slug for g in m.groups.all()},
         "error": (row_errors or {}).get(m.pk, ""), "is_me": m.pk == request.member.pk}
        for m in page.object_list
    ]
    return _render(request, "console/members/list.html", {
        "tab": "members", "rows": rows, "page": page, "group_slugs": slugs, "roles": Role.choices, "levels": LEVEL_NAMES,
        "invite_form": invite_form or MemberCreateForm(groups=slugs, prefix="invite"), "invite_error": invite_error,
        "invitations": [{"i": i, "clearance": AccessLevel(i.clearance).label}
                        for i in invitation_listed(tenant=tenant)[:PAGE_SIZE]],
    }, status)


def member_invite(request, *, prefix: str | None):
    """Add a person: an invitation they accept (``POST /api/v1/memberships/``), whatever the address --
    a new one or another tenant's member's account -- so the page answers the same for both and the
    person joins only by their own consent. ``prefix``: the form's (the page's form, or an older
    unprefixed post to the members list)."""
    tenant = request.member.tenant
    form = MemberCreateForm(request.POST, groups=[g.slug for g in selectors.group_list(tenant=tenant)],
                            prefix=prefix)
    if not form.is_valid():
        return _members_page(request, invite_form=form, status=400)
    data = form.cleaned_data
    try:
        invitation = invitation_create(
            tenant=tenant, email=data["email"], role=data["role"], clearance=data["clearance"],
            group_slugs=data["groups"], actor=request.member, request=request,
        )
    except ApplicationError as exc:
        return _members_page(request, invite_form=form, invite_error=exc.message, status=exc.status_code)
    messages.success(request, f"An invitation was sent to {invitation.email}; they join when they accept it.")
    return redirect("console:members")


@admin_required
@require_http_methods(["GET", "POST"])
def member_index(request):
    """The members list; POST invites a person (:func:`member_invite`)."""
    if request.method == "GET":
        return _members_page(request)
    return member_invite(request, prefix=None)


@admin_required
@require_POST
def member_change(request, membership_id: int):
    """One row of the members table: role, clearance and groups (``PATCH /api/v1/memberships/{id}/``)."""
    tenant = request.member.tenant
    membership = found(lambda: selectors.membership_get_by_id(tenant=tenant, membership_id=membership_id))
    form = MemberChangeForm(request.POST, groups=[g.slug for g in selectors.group_list(tenant=tenant)])
    if not form.is_valid():
        return _members_page(request, row_errors={membership.pk: _form_errors(form)}, status=400)
    data = form.cleaned_data
    try:
        services.membership_update(
            membership=membership, acting=request.member, role=data["role"], clearance=data["clearance"],
            group_slugs=data["groups"],
        )
    except ApplicationError as exc:
        return _members_page(request, row_errors={membership.pk: exc.message}, status=exc.status_code)
    messages.success(request, f"{membership.user.email} was changed.")
    return redirect(_back("console:members", request))


@admin_required
@require_http_methods(["GET", "POST"])
def member_active(request, membership_id: int):
    """Deactivate or reactivate a member, after a confirmation page (``PATCH ... {"is_active": ...}``)."""
    tenant = request.member.tenant
    membership = found(lambda: selectors.membership_get_by_id(tenant=tenant, membership_id=membership_id))
    form = MemberActiveForm(request.POST or {"is_active": request.GET.get("is_active", "false")})
    activate = form.cleaned_data["is_active"] if form.is_valid() else False
    context = {"tab": "members", "target": membership, "activate": activate, "error": ""}
    if request.method == "POST" and form.is_valid():
        try:
            services.membership_update(membership=membership, acting=request.member, is_active=activate)
        except ApplicationError as exc:
            return _render(request, "console/members/active_confirm.html", {**context, "error": exc.message},
                           exc.status_code)
        verb = "reactivated" if activate else "deactivated"
        messages.success(request, f"{membership.user.email} was {verb}.")
        return redirect("console:members")
    return _render(request, "console/members/active_confirm.html", context)


# ----------------------------------------------------------------------------- groups


def _groups_page(request, *, create_form=None, create_error: str = "", row_errors=None, status: int = 200):
    groups = [{"g": g, "error": (row_errors or {}).get(g.pk, "")} for g in selectors.group_list(tenant=request.member.tenant)]
    return _render(request, "console/members/groups.html", {
        "tab": "groups", "groups": groups, "form": create_form or GroupCreateForm(), "create_error": create_error,
    }, status)


@admin_required
@require_http_methods(["GET", "POST"])
def group_index(request):
    """The groups list; POST creates a group (``POST /api/v1/groups/``)."""
    if request.method == "GET":
        return _groups_page(request)
    form = GroupCreateForm(request.POST)
    if not form.is_valid():
        return _groups_page(request, create_form=form, status=400)
    try:
        group = services.group_create(tenant=request.member.tenant, actor=request.member, **form.cleaned_data)
    except ApplicationError as exc:
        return _groups_page(request, create_form=form, create_error=exc.message, status=exc.status_code)
    messages.success(request, f"Group {group.slug} was created.")
    return redirect("console:groups")


@admin_required
@require_POST
def group_rename(request, group_id: int):
    """Rename a group; its slug stays (``PATCH /api/v1/groups/{id}/``)."""
    group = found(lambda: selectors.group_get(tenant=request.member.tenant, group_id=group_id))
    form = GroupRenameForm(request.POST)
    if not form.is_valid():
        return _groups_page(request, row_errors={group.pk: _form_errors(form)}, status=400)
    try:
        group = services.group_update(group=group, name=form.cleaned_data["name"], actor=request.member)
    except ApplicationError as exc:
        return _groups_page(request, row_errors={group.pk: exc.message}, status=exc.status_code)
    messages.success(request, f"Group {group.slug} is now called {group.name}.")
    return redirect("console:groups")


# ----------------------------------------------------------------------------- tokens


def _tokens_page(request, *, form=None, created=None, error: str = "", status: int = 200):
    tenant = request.member.tenant
    memberships = list(selectors.membership_list(tenant=tenant))
    page = _page(request, selectors.api_token_list(tenant=tenant))
    return _render(request, "console/members/tokens.html", {
        "tab": "tokens", "tokens": page.object_list, "page": page,
        "form": form or TokenCreateForm(memberships=memberships, initial={"membership": request.member.pk}),
        "created": created, "error": error,
    }, status)


@admin_required
@never_cache
@require_http_methods(["GET", "POST"])
def token_index(request):
    """The tokens list (prefixes, never keys); POST mints one and shows its key this once
    (``POST /api/v1/tokens/``)."""
    if request.method == "GET":
        return _tokens_page(request)
    tenant = request.member.tenant
    form = TokenCreateForm(request.POST, memberships=selectors.membership_list(tenant=tenant))
    if not form.is_valid():
        return _tokens_page(request, form=form, status=400)
    try:
        membership = selectors.membership_get_by_id(tenant=tenant, membership_id=form.cleaned_data["membership"])
        token, key = services.api_token_create(membership=membership, name=form.cleaned_data["name"],
                                              actor=request.member)
    except ApplicationError as exc:
        return _tokens_page(request, form=form, error=exc.message, status=exc.status_code)
    return _tokens_page(request, created={"token": token, "key": key, "email": membership.user.email}, status=201)


@admin_required
@require_http_methods(["GET", "POST"])
def token_revoke(request, token_id: int):
    """Revoke a token, after a confirmation page (``POST /api/v1/tokens/{id}/revoke/``)."""
    token = found(lambda: selectors.api_token_get(tenant=request.member.tenant, token_id=token_id))
    if request.method == "POST":
        try:
            services.api_token_revoke(token=token, actor=request.member)
        except ApplicationError as exc:
            return _render(request, "console/members/token_revoke.html", {"tab": "tokens", "token": token,
                                                                           "error": exc.message}, exc.status_code)
        messages.success(request, f"Token {token.prefix} was revoked; it stops working at once.")
        return redirect("console:tokens")
    return _render(request, "console/members/token_revoke.html", {"tab": "tokens", "token": token, "error": ""})
