"""Who is calling, as which membership, and with which role -- for the REST API.

Every API request acts as exactly one :class:`~accounts.models.Membership`:

- ``Authorization: Token <key>``: the token's membership (``request.auth`` is the
  :class:`~accounts.models.ApiToken`).
- A logged-in session (the web interface): the user's only active membership, or,
  when the user belongs to several tenants, the one named by the
  ``X-Bulkhead-Tenant: <tenant slug>`` header (``request.auth`` is a
  :class:`SessionMember`).

Either way ``request.auth.membership`` is the acting membership.
"""

from __future__ import annotations

from dataclasses import dataclass

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions, status

from accounts.models import ROLE_RANK, Membership, Role
from accounts.sso import SESSION_TENANT_KEY as SSO_TENANT_KEY
from accounts.tenancy import acting_user_activate, tenant_activate

TENANT_HEADER = "X-Bulkhead-Tenant"


@dataclass(frozen=True)
class SessionMember:
    """``request.auth`` of a session request. Has no ``pk``: the throttle counts per user."""

    membership: Membership


class TenantRequired(exceptions.APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = "tenant_required"
    default_detail = f"You belong to several tenants; name one with the {TENANT_HEADER} header."


class SessionMemberAuthentication(authentication.SessionAuthentication):
    """Session authentication (with DRF's CSRF check) that also picks the acting membership."""

    def authenticate(self, request):
        result = super().authenticate(request)
        if result is None:
            return None
        user, _ = result
        acting_user_activate(user.pk)  # the user's own memberships, in every tenant, are visible
        memberships = Membership.objects.select_related("tenant", "user").filter(user=user, is_active=True)
        scope = request._request.session.get(SSO_TENANT_KEY)  # a single sign-on session: that tenant alone
        if scope is not None:
            memberships = memberships.filter(tenant_id=scope)
        else:  # a password session: the tenants the person agreed to (accounts.models.Membership.consented)
            memberships = memberships.filter(consented=True)
        slug = request.headers.get(TENANT_HEADER, "").strip()
        if slug:
            membership = memberships.filter(tenant__slug=slug).first()
            if membership is None:
                raise exceptions.AuthenticationFailed(f"You are not an active member of tenant {slug!r}.")
            tenant_activate(membership.tenant_id)
            return user, SessionMember(membership)
        found = list(memberships[:2])
        if not found:
            raise exceptions.AuthenticationFailed("You are not an active member of any tenant.")
        if len(found) > 1:
            raise TenantRequired()
        tenant_activate(found[0].tenant_id)
        return user, SessionMember(found[0])


def request_member(request) -> Membership:
    """The membership a request acts as (set by either authentication class)."""
    return request.auth.membership


class _HasRole(permissions.BasePermission):
    role: Role = Role.VIEWER
    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        membership = getattr(getattr(request, "auth", None), "membership", None)
        if membership is None:
            return False  # anonymous: DRF answers 401 (TokenAuthentication gives the WWW-Authenticate header)
        return ROLE_RANK[Role(membership.role)] >= ROLE_RANK[self.role]


class IsMember(_HasRole):
    role = Role.VIEWER


class IsEditor(_HasRole):
    role = Role.EDITOR
    message = "Only editors and admins may do this."


class IsAdmin(_HasRole):
    role = Role.ADMIN
    message = "Only admins may do this."


# ----------------------------------------------------------------------------- OpenAPI


class TokenAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.TokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Token <key>` -- a key from `POST /api/v1/tokens/` or `manage.py kb_user create`.",
        }


class SessionMemberAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.permissions.SessionMemberAuthentication"
    name = "sessionAuth"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "cookie",
            "name": "sessionid",
            "description": f"The web interface's session; with several tenants add the {TENANT_HEADER} header.",
        }
