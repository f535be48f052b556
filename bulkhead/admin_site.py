"""The Django admin's site: the operator's tool, opened only by a session the account's password made.

The admin looks across every tenant (``bulkhead.middleware.AdminOwnerPathMiddleware``). A session made by a
tenant's single sign-on acts for that tenant alone (``accounts.sso.SESSION_TENANT_KEY``), and a tenant's
provider may assert any address, an operator's too: such a session never opens the admin (found attacking
identity: a hostile tenant's provider asserting a staff account's address opened every tenant's members,
groups, tokens and every account in the admin). The operator signs in with their password.
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.apps import AdminConfig


class BulkheadAdminSite(admin.AdminSite):
    def has_permission(self, request) -> bool:
        from accounts.sso import SESSION_TENANT_KEY

        return super().has_permission(request) and request.session.get(SESSION_TENANT_KEY) is None


class BulkheadAdminConfig(AdminConfig):
    default_site = "bulkhead.admin_site.BulkheadAdminSite"
