"""The tenant's identity settings (admins): SCIM tokens for provisioning, and single sign-on.

A new SCIM token's key is in the response to the POST that minted it and nowhere else (as an API
token's: never stored in clear, not in the session, the response not cached).
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import scim
from accounts.models import Role
from console.membership import member_required

admin_required = member_required(Role.ADMIN)


class ScimTokenForm(forms.Form):
    name = forms.CharField(max_length=100, required=False, help_text="what the token is for, e.g. the identity provider")


def _render(request, template: str, context: dict, status: int = 200):
    return render(request, template, {"member": request.member, "nav": "members", **context}, status=status)


@admin_required
@never_cache
@require_http_methods(["GET", "POST"])
def scim_tokens(request):
    """The tenant's SCIM tokens; POST mints one and shows its key this once."""
    tenant = request.member.tenant
    form = ScimTokenForm(request.POST or None)
    created = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            token, key = scim.scim_token_create(tenant=tenant, name=form.cleaned_data["name"], actor=request.member)
            created = {"token": token, "key": key}
            form = ScimTokenForm()
            status = 201
        else:
            status = 400
    base = request.build_absolute_uri("/scim/v2/")
    return _render(request, "console/identity/scim.html", {
        "tab": "scim", "tokens": scim.scim_token_list(tenant=tenant)[:100], "form": form, "created": created,
        "base": base,
    }, status)


@admin_required
@require_POST
def scim_token_revoke(request, token_id: int):
    token = scim.scim_token_revoke(tenant=request.member.tenant, token_id=token_id, actor=request.member)
    if token is None:
        raise Http404("Not found.")
    messages.success(request, f"SCIM token {token.prefix} was revoked; it stops working at once.")
    return redirect("console:scim-tokens")
