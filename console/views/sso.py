"""Single sign-on in the console: the sign-in box, the round trip to the tenant's OpenID provider, and
the admins' settings page (with "test the connection"). The protocol and the rule are ``accounts.sso``."""

from __future__ import annotations

import json
import logging

from django import forms
from django.contrib import messages
from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from accounts.errors import ApplicationError
from accounts.models import Role, SsoConfig, Tenant
from accounts.policy import LEVEL_NAMES
from accounts.sso import (
    SESSION_TENANT_KEY,
    oidc_check_metadata,
    oidc_client,
    oidc_test_connection,
    sso_config_for,
    sso_config_save,
    sso_sign_in,
)
from accounts.tenancy import tenant_activate
from console.membership import member_required, tenant_enter
from sources.addresses import check_url_host
from sources.entries import ListingError

logger = logging.getLogger(__name__)
MODEL_BACKEND = "django.contrib.auth.backends.ModelBackend"
NOT_OFFERED = "Single sign-on is not set up for that organisation."


def _address(request) -> str:
    return request.META.get("REMOTE_ADDR", "")[:64]


def _callback_url(request, slug: str) -> str:
    from django.conf import settings

    path = reverse("console:sso-callback", kwargs={"slug": slug})
    return settings.BULKHEAD_PUBLIC_URL + path if settings.BULKHEAD_PUBLIC_URL else request.build_absolute_uri(path)


def provider_url_check(url: str) -> str | None:
    """A URL of a tenant's identity provider the server is to fetch: its host's every address public
    (as a source's), unless ``BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES``; else :class:`ApplicationError`.
    Returns the address checked, the one the request then connects to (``accounts.sso`` pins it), or
    None when any address is allowed (nothing to check, nor to resolve here: the request connects by name)."""
    from django.conf import settings

    if not url.startswith(("https://", "http://")):
        raise ApplicationError("the identity provider's URLs are http(s) URLs")
    if settings.BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES:
        return None
    try:
        return check_url_host(url, allow_private=False)
    except ListingError as exc:
        raise ApplicationError(f"the identity provider's address: {exc}") from None


def _refused(request, message: str, status: int = 403):
    return render(request, "console/sso/refused.html", {"message": message}, status=status)


def _config(slug: str) -> SsoConfig | None:
    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        return None
    tenant_activate(tenant.pk)
    return sso_config_for(tenant)


@never_cache
@require_GET
def sso_choose(request):
    """The sign-in page's box: back to the sign-in page with a link to the organisation's provider (the
    Content-Security-Policy lets a form lead nowhere but here; a link may lead to the provider)."""
    from urllib.parse import urlencode

    slug = request.GET.get("organisation", "").strip().lower()
    if not slug or len(slug) > 63:
        return redirect("console:sign-in")
    return redirect(reverse("console:sign-in") + "?" + urlencode({"organisation": slug}))


def _origin(url: str) -> str:
    """The origin (scheme://host[:port]) of ``url``, as a Content-Security-Policy source."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rsplit('@', 1)[-1]}"


@never_cache
@require_http_methods(["GET", "POST"])
def sso_start(request, slug: str):
    """The start of a sign-in with the organisation's provider: a GET shows a page whose button (a POST,
    CSRF-protected) starts it, so no other site can sign a visitor into a tenant of its choosing (login
    CSRF, found attacking identity: a GET redirected to the provider at once, and a provider that knew
    the attacker signed the visitor into the attacker's tenant). The POST answers 303 to the provider;
    the page's Content-Security-Policy lets its form lead there (``form-action``: this server and the
    provider's authorization endpoint alone), since a browser checks a form's redirects against it."""
    config = _config(slug)
    if config is None:
        return _refused(request, NOT_OFFERED, 404)
    try:
        client = oidc_client(config, provider_url_check)
        metadata = oidc_check_metadata(client, config, provider_url_check)
        if request.method == "POST":
            response = client.authorize_redirect(request, _callback_url(request, slug))
            response.status_code = 303  # the POST's answer: GET the provider's authorization endpoint
            return response
    except Exception as exc:  # noqa: BLE001 -- the provider unreachable or misconfigured: say so, log it
        logger.warning("single sign-on of %s could not start: %s", slug, exc)
        return _refused(request, "Your organisation's identity provider could not be reached. Try again later.", 502)
    response = render(request, "console/sso/start.html", {"slug": slug})
    # What django-csp's csp_update decorator sets, here per response: the provider is the tenant's.
    response._csp_update = {"form-action": [_origin(str(metadata["authorization_endpoint"]))]}
    return response


@never_cache
@require_GET
def sso_callback(request, slug: str):
    from authlib.common.errors import AuthlibBaseError
    from joserfc.errors import JoseError
    from requests import RequestException

    config = _config(slug)
    if config is None:
        return _refused(request, NOT_OFFERED, 404)
    issuer = request.GET.get("iss")
    if issuer is not None and issuer.rstrip("/") != config.issuer:  # RFC 9207: another provider's answer
        return _refused(request, "The answer came from another identity provider than this organisation's.")
    try:
        client = oidc_client(config, provider_url_check)
        oidc_check_metadata(client, config, provider_url_check)  # the endpoints fetched next, checked first
        token = client.authorize_access_token(
            request, claims_options={"iss": {"essential": True, "values": [config.issuer]}})
        claims = token.get("userinfo")
        if not claims or not token.get("id_token"):
            raise ApplicationError("the provider sent no ID token")
        membership = sso_sign_in(config=config, claims=dict(claims), address=_address(request))
    except ApplicationError as exc:
        return _refused(request, f"Single sign-on refused: {exc.message}")
    except RequestException as exc:
        logger.warning("single sign-on of %s: the provider could not be reached: %s", slug, type(exc).__name__)
        return _refused(request, "Your organisation's identity provider could not be reached. Try again later.", 502)
    except (AuthlibBaseError, JoseError, ValueError) as exc:
        logger.info("single sign-on of %s refused: %s", slug, type(exc).__name__)
        return _refused(request, f"Single sign-on refused: the provider's answer did not check out "
                                 f"({type(exc).__name__}). Start again.")
    login(request, membership.user, backend=MODEL_BACKEND)
    request.session[SESSION_TENANT_KEY] = membership.tenant_id
    tenant_enter(request, membership)
    return redirect("console:dashboard")


# ----------------------------------------------------------------------------- settings (admins)


def _lines(value: str) -> list[str]:
    return [item.strip() for item in value.replace(",", "\n").splitlines() if item.strip()]


class SsoConfigForm(forms.Form):
    enabled = forms.BooleanField(required=False, label="Offer single sign-on")
    issuer = forms.URLField(max_length=500, assume_scheme="https", help_text="the provider's issuer; discovery is read from "
                                                      "{issuer}/.well-known/openid-configuration")
    client_id = forms.CharField(max_length=255)
    client_secret = forms.CharField(max_length=500, required=False, widget=forms.PasswordInput(render_value=False),
                                    help_text="leave empty to keep the stored one")
    admit_domains = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                    help_text="e-mail domains admitted, one a line")
    admit_claim = forms.CharField(max_length=100, required=False, help_text="or a claim that admits people…")
    admit_values = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}),
                                   help_text="…when it holds one of these values, one a line")
    groups_claim = forms.CharField(max_length=100, required=False, initial="groups")
    group_map = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), initial="{}",
                                help_text='JSON: provider group → group slug(s), e.g. {"SecOps": "security-team"}')
    clearance_claim = forms.CharField(max_length=100, required=False)
    clearance_map = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}), initial="{}",
                                    help_text=f'JSON: claim value or provider group → level ({", ".join(LEVEL_NAMES)}); '
                                              "no match: public")

    def clean_issuer(self):
        issuer = self.cleaned_data["issuer"]
        try:
            provider_url_check(issuer)
        except ApplicationError as exc:
            raise forms.ValidationError(exc.message) from None
        return issuer

    def clean_group_map(self):
        return self._json("group_map")

    def clean_clearance_map(self):
        return self._json("clearance_map")

    def _json(self, name):
        try:
            value = json.loads(self.cleaned_data.get(name) or "{}")
        except ValueError as exc:
            raise forms.ValidationError(f"not JSON: {exc}") from None
        if not isinstance(value, dict):
            raise forms.ValidationError("a JSON object")
        return value


def _initial(config: SsoConfig | None) -> dict:
    if config is None:
        return {}
    return {"enabled": config.enabled, "issuer": config.issuer, "client_id": config.client_id,
            "admit_domains": "\n".join(config.admit_domains), "admit_claim": config.admit_claim,
            "admit_values": "\n".join(config.admit_values), "groups_claim": config.groups_claim,
            "group_map": json.dumps(config.group_map, indent=1), "clearance_claim": config.clearance_claim,
            "clearance_map": json.dumps(config.clearance_map, indent=1)}


@member_required(Role.ADMIN)
@never_cache
@require_http_methods(["GET", "POST"])
def sso_settings(request):
    tenant = request.member.tenant
    config = SsoConfig.objects.filter(tenant=tenant).first()
    form = SsoConfigForm(request.POST or None, initial=_initial(config))
    context = {"member": request.member, "nav": "members", "tab": "sso", "config": config, "error": "",
               "callback": _callback_url(request, tenant.slug), "test": None}
    status = 200
    if request.method == "POST" and request.POST.get("action") == "test":
        if config is None:
            context["error"] = "Save the settings first."
            status = 400
        else:
            try:
                context["test"] = {"ok": True, **oidc_test_connection(config, provider_url_check)}
            except Exception as exc:  # noqa: BLE001 -- shown to the admin: it is their provider
                context["test"] = {"ok": False, "error": str(exc)[:300] or type(exc).__name__}
        form = SsoConfigForm(initial=_initial(config))
    elif request.method == "POST":
        if form.is_valid():
            data = form.cleaned_data
            try:
                sso_config_save(tenant=tenant, actor=request.member, enabled=data["enabled"], issuer=data["issuer"],
                                client_id=data["client_id"], client_secret=data["client_secret"],
                                admit_domains=_lines(data["admit_domains"]), admit_claim=data["admit_claim"],
                                admit_values=_lines(data["admit_values"]), groups_claim=data["groups_claim"],
                                group_map=data["group_map"], clearance_claim=data["clearance_claim"],
                                clearance_map=data["clearance_map"])
            except ApplicationError as exc:
                context["error"] = exc.message
                status = exc.status_code
            else:
                messages.success(request, "Single sign-on settings saved.")
                return redirect("console:sso-settings")
        else:
            status = 400
    return render(request, "console/sso/settings.html", {**context, "form": form}, status=status)
