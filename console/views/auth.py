"""Sign-in, sign-out, choosing a tenant, changing one's own password (from a password sign-in only).

Failed sign-ins are counted by django-axes (per e-mail and client address); past the
limit the sign-in page answers 429 with the time to wait, whatever the password.
"""

from __future__ import annotations

import logging

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import logout, update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm, PasswordChangeForm
from django.contrib.auth.views import LoginView, LogoutView
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from accounts.invitations import TokensOfferedChanged, password_change_save, password_tokens_count
from accounts.ratelimit import RateLimited, rate_hit
from accounts.services import sign_in_record
from accounts.sso import SESSION_TENANT_KEY as SSO_TENANT_KEY
from console.forms import RevokeTokensChoice
from console.membership import SESSION_KEY, active_memberships, console_member, tenant_enter

logger = logging.getLogger(__name__)


class SignInForm(AuthenticationForm):
    username = forms.EmailField(label="E-mail", widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}))

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": "That e-mail and password do not match an active account.",
    }

    def clean_username(self):
        return self.cleaned_data["username"].strip().lower()


class SignInView(LoginView):
    template_name = "console/sign_in.html"
    form_class = SignInForm
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        from django.utils.text import slugify

        from accounts.sso import sso_offered

        organisation = slugify(self.request.GET.get("organisation", ""))[:63]
        return {**super().get_context_data(**kwargs), "sso_offered": sso_offered(), "sso_organisation": organisation}

    def form_valid(self, form):
        response = super().form_valid(form)
        _forgive_failures(self.request, form.get_user())
        self.request.session.pop(SESSION_KEY, None)  # choose again (or be given the only one)
        self.request.session.pop(SSO_TENANT_KEY, None)  # the password vouches for every tenant of the account
        sign_in_record(email=form.get_user().email, succeeded=True, address=_address(self.request))
        return response

    def form_invalid(self, form):
        sign_in_record(email=self.request.POST.get("username", ""), succeeded=False, address=_address(self.request))
        return super().form_invalid(form)


def _address(request) -> str:
    return request.META.get("REMOTE_ADDR", "")[:64]


def _forgive_failures(request, user) -> None:
    """The right password from this address: forget this (e-mail, address) pair's failed sign-ins. Here, not
    at every ``login()`` (``AXES_RESET_ON_SUCCESS`` is off): a single sign-on proves nothing about the
    password, and a hostile tenant's provider may assert any address (found attacking identity)."""
    from axes.handlers.proxy import AxesProxyHandler

    AxesProxyHandler.update_request(request)
    AxesProxyHandler.reset_attempts(ip_address=request.axes_ip_address, username=user.get_username())


class SignOutView(LogoutView):
    http_method_names = ["post", "options"]


def locked_out(request, credentials=None, *args, **kwargs):
    """django-axes: too many failed sign-ins from this address for this e-mail."""
    sign_in_record(email=request.POST.get("username", ""), succeeded=False, address=_address(request),
                   reason="locked_out")
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60) if settings.AXES_COOLOFF_TIME else None
    wait = f"{minutes} minutes" if minutes else "a while"
    form = SignInForm(request)
    return render(
        request,
        "console/sign_in.html",
        {"form": form, "locked_out": f"Too many failed sign-ins. Try again in {wait}."},
        status=429,
    )


@login_required
@require_http_methods(["GET", "POST"])
def tenant_switch(request):
    memberships = list(active_memberships(request.user, request))
    if request.method == "POST":
        chosen = next((m for m in memberships if str(m.pk) == request.POST.get("membership")), None)
        if chosen is None:
            messages.error(request, "Choose one of your tenants.")
        else:
            tenant_enter(request, chosen)
            return redirect("console:dashboard")
    current = console_member(request)
    return render(request, "console/tenant_switch.html", {"memberships": memberships, "member": current})


class ChangeForm(RevokeTokensChoice, PasswordChangeForm):
    """Django's change form, and -- when the person has API tokens in the tenants the password opens -- "Also revoke
    my N API tokens", as the reset link's form offers (``console.forms.RevokeTokensChoice``: the number offered,
    checked again at the post). Left unchecked at first: a change is most often a routine one, and the person's
    scripts would stop; a reset is the recovery of a lost password, checked there."""

    revoke_by_default = False
    revoke_help = ("Check it if someone else may have used your account or learnt your password. Scripts and apps "
                   "using them stop working; an admin mints new ones. Your other signed-in sessions end either way.")


@login_required
@require_http_methods(["GET", "POST"])
def password_change(request):
    if request.session.get(SSO_TENANT_KEY) is not None:
        # A single sign-on session was vouched for by one tenant's provider, for that tenant alone; the password
        # opens every tenant of the account. Such a session may neither try the password nor change it, so it is
        # refused before any check or count: a hostile tenant's provider signs its admin in as another tenant's
        # member, and the count alone still let that session guess the member's password here and change it.
        return render(request, "console/password_change_sso.html", {"member": console_member(request)}, status=403)
    form = ChangeForm(request.user, request.POST or None, tokens=password_tokens_count(request.user))
    if request.method == "POST":
        # The current password is checked here without django-axes: count the tries per account, or the page
        # answers every guess (found attacking identity: a hostile tenant's provider signs its admin in as
        # another tenant's member -- into that tenant alone -- and this page then tested that member's
        # password, which opens all their tenants, without limit).
        try:
            rate_hit(scope="password-change", ident=request.user.email, limit=settings.AXES_FAILURE_LIMIT,
                     window_seconds=int(settings.AXES_COOLOFF_TIME.total_seconds()))
        except RateLimited as exc:
            return render(request, "console/password_change.html",
                          {"form": form, "member": console_member(request), "error": exc.message}, status=429)
    if request.method == "POST" and form.is_valid():
        user = form.save(commit=False)  # the new password hashed into the session's user; nothing written
        revoke = bool(form.cleaned_data.get("revoke_tokens"))
        try:
            saved = password_change_save(user=user, password_hash=user.password, tokens_offered=form.tokens,
                                         revoke_tokens=revoke)
        except TokensOfferedChanged:
            # Changed since the form counted them (after its own check): counted again, offered again, nothing written.
            user.refresh_from_db(fields=["password"])  # the session's user keeps the password it has
            form = ChangeForm(request.user, request.POST, tokens=password_tokens_count(request.user))
            if form.is_valid():  # the same number after all (one minted, one revoked): offered again all the same
                form.add_error(None, form.offer_again())
            return render(request, "console/password_change.html", {"form": form, "member": console_member(request)})
        if not saved:
            # Deactivated since the request began: Django's form saved the whole user as read, active again.
            logout(request)
            return redirect("console:sign-in")
        update_session_auth_hash(request, user)  # stay signed in here; other sessions end
        messages.success(request, "Your password was changed." + (" Your API tokens were revoked." if revoke else ""))
        return redirect("console:dashboard")
    return render(request, "console/password_change.html", {"form": form, "member": console_member(request)})


CSRF_FAILURE_PAGE = (
    "<!doctype html><title>This page has expired</title><h1>This page has expired</h1>"
    "<p>It was shown before you signed in or out, or switched to another tenant (in this tab or another one), "
    "so nothing was done. Reload the page and try again.</p><p><a href=\"/\">Go to the console</a></p>"
)


def csrf_failure(request, reason: str = ""):
    """``CSRF_FAILURE_VIEW``: a form or htmx request whose CSRF token is not this session's -- most often a page
    shown for another tenant before a switch (``console.membership.tenant_enter`` rotates the token), or before a
    sign-in -- is refused with one plain 403 that says so and what to do; Django's reason stays in the log."""
    from django.http import HttpResponseForbidden

    logger.info("CSRF refused %s %s: %s", request.method, request.path, reason)
    return HttpResponseForbidden(CSRF_FAILURE_PAGE, content_type="text/html; charset=utf-8")
