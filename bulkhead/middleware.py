"""A database that cannot be reached answers 503, never a 500 with a traceback in the log as if it were a bug.

PostgreSQL refusing a connection (down, restarting, "too many clients already", a role's
connection limit) or losing one mid-request is an outage the client should retry, and it is
the same for every tenant. Views (DRF's included: its exception handler leaves database
errors to Django) raise it as ``django.db.OperationalError`` or ``InterfaceError``; this
middleware answers:

* under ``/api/``: the API's error shape, code ``service_unavailable``, status 503;
* elsewhere (admin, pages): a short plain 503 page;

both with ``Retry-After``. Nothing of the exception is shown; it is logged as a warning.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.signals import request_finished
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.utils.cache import add_never_cache_headers

from accounts.tenancy import owner_path, tenant_context_reset_if_connected, tenant_context_reset_if_set
from kb.errors import database_unavailable_response, error_body

logger = logging.getLogger(__name__)

class DatabaseUnavailableMiddleware:
    """Turns a view's OperationalError/InterfaceError into a 503 (see the module docstring)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if not isinstance(exception, (OperationalError, InterfaceError)):
            return None
        logger.warning("database unavailable for %s %s: %s", request.method, request.path, type(exception).__name__)
        return database_unavailable_response(request)


class TenantContextMiddleware:
    """Each request starts and ends acting for no tenant (``accounts.tenancy``).

    Connections persist between requests (CONN_MAX_AGE) and threads serve one request after
    another, so the tenant a request chose (when it authenticated: ``accounts.services.
    api_token_authenticate``, ``accounts.permissions.SessionMemberAuthentication``,
    ``console.membership.console_member``) is cleared before the next one can see it: on
    ``request_finished`` at the end (which runs even when a view raised, once the answer has been
    sent), and here at the start unless that clear is known to have held on this very connection
    (``accounts.tenancy.tenant_context_reset_if_set``: a round trip saved on every request)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        tenant_context_reset_if_set()
        return self.get_response(request)


ADMIN_PREFIX = "/admin/"


class AdminOwnerPathMiddleware:
    """The Django admin is the installation operator's tool (staff accounts only), which looks
    across tenants: its requests take the owner path (``accounts.tenancy.owner_path``) and so
    see every tenant's rows, as before the wall. Tenants' own people use the console and the API,
    which act for one tenant under the wall; the admin shows policies and text read-only."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if not request.path.startswith(ADMIN_PREFIX):
            return self.get_response(request)
        with owner_path():
            return self.get_response(request)


def _forget_tenant_after_request(**kwargs) -> None:
    tenant_context_reset_if_connected()


request_finished.connect(_forget_tenant_after_request, dispatch_uid="bulkhead.forget_tenant_after_request")


class RequestSizeLimitMiddleware:
    """Refuse a request whose declared body is larger than any upload may be (413), before anything
    reads it. Django bounds form fields (``DATA_UPLOAD_MAX_MEMORY_SIZE``) but not file parts, which
    it spools to disk first; without this a 200 MB post to any form -- even the sign-in page, by
    anyone -- was read whole before a view could refuse it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit = settings.BULKHEAD_MAX_UPLOAD_BYTES + 1024 * 1024  # the largest file plus its form
        if length > limit:
            message = f"the request is {length} bytes; the limit is {limit} bytes"
            if request.path.startswith("/api/"):
                return JsonResponse(error_body("payload_too_large", message, {"limit": limit}), status=413)
            return HttpResponse(f"<!doctype html><title>Too large</title><h1>Too large</h1><p>{message}.</p>",
                                status=413, content_type="text/html; charset=utf-8")
        return self.get_response(request)


class NoStoreMiddleware:
    """Every answer that has not said how it may be cached is not to be kept: ``Cache-Control: no-store`` (with
    ``no-cache, must-revalidate, private``, ``max-age=0`` and ``Expires``: Django's ``add_never_cache_headers``).
    Pages, API answers, MCP results and exports carry what their member may read; without a word on caching a
    browser kept them (back after signing out on a shared machine showed the document page) and a cache on the
    way could (found attacking review 13: no answer said ``Cache-Control``). Static files say their own
    (WhiteNoise's ``public, max-age``), and so does a view that sets it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if not response.has_header("Cache-Control"):
            add_never_cache_headers(response)
        return response
