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

from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse

from kb.errors import error_body

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
MESSAGE = "The database is unavailable; try again shortly."
PAGE = (
    "<!doctype html><html><head><title>Service unavailable</title></head>"
    f"<body><h1>Service unavailable</h1><p>{MESSAGE}</p></body></html>"
)


def database_unavailable_response(request) -> HttpResponse:
    if request.path.startswith("/api/"):
        response = JsonResponse(error_body("service_unavailable", MESSAGE), status=503)
    else:
        response = HttpResponse(PAGE, status=503, content_type="text/html; charset=utf-8")
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


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
