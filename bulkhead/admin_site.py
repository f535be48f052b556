"""The Django admin's site: the operator's tool, opened only by a session the account's password made.

The admin looks across every tenant (``bulkhead.middleware.AdminOwnerPathMiddleware``). A session made by a
tenant's single sign-on acts for that tenant alone (``accounts.sso.SESSION_TENANT_KEY``), and a tenant's
provider may assert any address, an operator's too: such a session never opens the admin (found attacking
identity: a hostile tenant's provider asserting a staff account's address opened every tenant's members,
groups, tokens and every account in the admin). The operator signs in with their password.
"""

from __future__ import annotations

from functools import wraps

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig


class BulkheadAdminSite(admin.AdminSite):
    def has_permission(self, request) -> bool:
        from accounts.sso import SESSION_TENANT_KEY

        return super().has_permission(request) and request.session.get(SESSION_TENANT_KEY) is None

    def admin_view(self, view, cacheable=False):
        """Every admin page (each model's pages and actions too: ``ModelAdmin.get_urls`` wraps them here) runs with
        the signed-in operator as the actor of the records it makes without a membership
        (``audit.services.audit_operator``): a deactivation, a token revoked, a membership deleted -- each tenant's
        trail names the operator's account, not "Bulkhead itself"."""
        from audit.services import audit_operator

        inner = super().admin_view(view, cacheable)

        @wraps(inner)
        def as_operator(request, *args, **kwargs):
            user = request.user if request.user.is_authenticated else None
            with audit_operator(user):
                return inner(request, *args, **kwargs)

        return as_operator


class BulkheadAdminConfig(AdminConfig):
    default_site = "bulkhead.admin_site.BulkheadAdminSite"
