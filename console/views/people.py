"""Invitations (admins invite; the invited accept) and password reset, in the console.

The services are ``accounts.invitations``; these views only shape the pages. A link's key
never stays in the address bar: the page it opens keeps it in the session and redirects,
so it cannot leak through a Referer or the browser's history (Django's reset view does the same).
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.forms import SetPasswordForm
from django.contrib.auth.views import INTERNAL_RESET_SESSION_TOKEN, PasswordResetCompleteView, PasswordResetConfirmView
from django.http import HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse_lazy
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from accounts import invitations
from accounts.errors import ApplicationError, NotFound
from accounts.models import Role
from accounts.sso import SESSION_TENANT_KEY as SSO_TENANT_KEY
from console.forms import RevokeTokensChoice
from console.membership import found, member_required, tenant_enter
from console.views.members import member_invite

INVITATION_SESSION_KEY = "console_invitation_key"
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _address(request) -> str:
    return request.META.get("REMOTE_ADDR", "")[:64]


# ----------------------------------------------------------------------------- admins: invite, revoke


@member_required(Role.ADMIN)
@require_POST
def invitation_create_view(request):
    """Invite an address (the members page's "Invite" form): ``console.views.members.member_invite``."""
    return member_invite(request, prefix="invite")


@member_required(Role.ADMIN)
@require_POST
def invitation_revoke_view(request, invitation_id: int):
    """Revoke a pending invitation; one of another tenant, or no longer pending, is the same 404."""
    invitation = found(lambda: invitations.invitation_revoke(
        tenant=request.member.tenant, invitation_id=invitation_id, actor=request.member))
    messages.success(request, f"The invitation of {invitation.email} was revoked; its link no longer works.")
    return redirect("console:members")


# ----------------------------------------------------------------------------- the invited person


class AcceptForm(forms.Form):
    password = forms.CharField(widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}), strip=False)
    password2 = forms.CharField(label="Password again", required=False, strip=False,
                                widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}))

    def __init__(self, *args, existing: bool, **kwargs):
        super().__init__(*args, **kwargs)
        self.existing = existing
        if existing:
            del self.fields["password2"]
            self.fields["password"].label = "Your current password"
            self.fields["password"].widget.attrs["autocomplete"] = "current-password"

    def clean(self):
        data = super().clean()
        if not self.existing and data.get("password") != data.get("password2"):
            raise forms.ValidationError("The two passwords differ.")
        return data


@never_cache
def invitation_link(request, key: str):
    """The e-mailed link: keep the key in the session, out of the address bar (an unknown, used,
    revoked or expired one: the same 404 page)."""
    try:
        invitations.invitation_open(key)
    except NotFound as exc:
        return render(request, "console/people/invitation.html", {"invalid": exc.message}, status=404)
    request.session[INVITATION_SESSION_KEY] = key
    return redirect("console:invitation-accept")


@never_cache
@require_http_methods(["GET", "POST"])
def invitation_accept_view(request):
    key = request.session.get(INVITATION_SESSION_KEY, "")
    try:
        opened = invitations.invitation_open(key)
    except NotFound as exc:
        return render(request, "console/people/invitation.html", {"invalid": exc.message}, status=404)
    form = AcceptForm(request.POST or None, existing=opened.needs_current_password)
    error = ""
    if request.method == "POST" and form.is_valid():
        try:
            membership = invitations.invitation_accept(key=key, password=form.cleaned_data["password"],
                                                       address=_address(request))
        except ApplicationError as exc:
            error = exc.message
            status = exc.status_code
        else:
            request.session.pop(INVITATION_SESSION_KEY, None)
            login(request, membership.user, backend=MODEL_BACKEND)
            request.session.pop(SSO_TENANT_KEY, None)  # a password session: every tenant of the account
            tenant_enter(request, membership)
            messages.success(request, f"Welcome to {membership.tenant.name or membership.tenant.slug}.")
            return redirect("console:dashboard")
    else:
        status = 400 if request.method == "POST" else 200
    return render(request, "console/people/invitation.html", {
        "form": form, "opened": opened, "error": error,
        "role": Role(opened.invitation.role).label,
    }, status=status)


# ----------------------------------------------------------------------------- forgot password


class ForgotForm(forms.Form):
    email = forms.EmailField(label="E-mail", max_length=254,
                             widget=forms.EmailInput(attrs={"autofocus": True, "autocomplete": "email"}))


@never_cache
@require_http_methods(["GET", "POST"])
def password_forgot(request):
    form = ForgotForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            invitations.password_reset_request(email=form.cleaned_data["email"], address=_address(request),
                                               request=request)
        except ApplicationError as exc:  # rate limited, whatever the address
            return render(request, "console/people/forgot.html", {"form": form, "error": exc.message},
                          status=exc.status_code)
        return render(request, "console/people/forgot.html", {"sent": True})
    return render(request, "console/people/forgot.html", {"form": form},
                  status=400 if request.method == "POST" else 200)


class ResetForm(RevokeTokensChoice, SetPasswordForm):
    """Django's new-password form, and -- when the person has API tokens in the tenants the password opens --
    "Also revoke my N API tokens", checked by default: a reset is often the recovery of an account someone else
    has used, and the tokens would outlive the password (``console.forms.RevokeTokensChoice``: the number offered,
    checked again at the post)."""


class PasswordResetConfirm(PasswordResetConfirmView):
    """Django's view (token check, the token moved out of the address, the validators); an invalid
    or used link answers 404."""

    template_name = "console/people/reset_confirm.html"
    success_url = reverse_lazy("console:password-reset-complete")
    form_class = ResetForm

    def get_form_kwargs(self):
        # Django builds the form for a link that is not valid too (and shows none): no user, nothing counted.
        tokens = invitations.password_tokens_count(self.user) if self.validlink else 0
        return {**super().get_form_kwargs(), "tokens": tokens}

    def get_user(self, uidb64):
        """The link's user while they may still be mailed one -- active, with an active membership
        (:func:`accounts.invitations.password_reset_request`'s rule); else no one, so the link is not valid
        (found attacking identity: a link mailed before a deactivation still set the password)."""
        user = super().get_user(uidb64)
        if user is None or not user.is_active or not invitations.active_memberships_of(user):
            return None
        return user

    def render_to_response(self, context, **kwargs):
        if not context.get("validlink"):
            kwargs["status"] = 404
        return super().render_to_response(context, **kwargs)

    def form_valid(self, form):
        """Django's, but the password alone is written, and only while the account is still let in and the link
        still good for it (:func:`accounts.invitations.password_reset_save`, after the hash): a deactivation or a
        password change since :meth:`get_user` makes the link not valid (found attacking identity: the password was set, and the whole user as read
        before saved -- a deactivated user was active again)."""
        form.save(commit=False)  # hashes the new password into form.user; nothing written
        token = self.request.session.get(INTERNAL_RESET_SESSION_TOKEN)  # checked again on the locked row
        revoke = bool(form.cleaned_data.get("revoke_tokens"))
        try:
            saved = invitations.password_reset_save(user=form.user, password_hash=form.user.password,
                                                    token=token or "", tokens_offered=form.tokens, revoke_tokens=revoke)
        except invitations.TokensOfferedChanged:
            # Changed since the form counted them: counted again, and offered again (nothing was written).
            form = self.get_form()
            if form.is_valid():  # the same number after all (one minted, one revoked): offered again all the same
                form.add_error(None, form.offer_again())
            return self.form_invalid(form)
        self.request.session.pop(INTERNAL_RESET_SESSION_TOKEN, None)
        if not saved:
            self.validlink = False
            return self.render_to_response(self.get_context_data())
        invitations.password_reset_record(user=form.user, address=_address(self.request))
        if revoke:
            messages.success(self.request, "Your API tokens were revoked.")
        return HttpResponseRedirect(self.get_success_url())


def password_reset_link(request, link: str):
    """The e-mailed reset link, ``<uidb64>.<token>`` in one path segment, handed to Django's view
    (which replaces the token by ``set-password`` in the address: the same split still holds)."""
    uidb64, _, token = link.partition(".")
    return PasswordResetConfirm.as_view()(request, uidb64=uidb64, token=token)


class PasswordResetComplete(PasswordResetCompleteView):
    template_name = "console/people/reset_complete.html"
