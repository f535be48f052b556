"""One error family and one DRF exception handler, so every error has the same JSON shape:

``{"error": {"code": "...", "message": "...", "details": {...}}}``
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from accounts.errors import ApplicationError, Conflict, NotFound, PermissionRefused

__all__ = [
    "ApplicationError",
    "Conflict",
    "NotFound",
    "PermissionRefused",
    "UnsupportedContentType",
    "error_body",
    "exception_handler",
]


class UnsupportedContentType(ApplicationError):
    """A document content type no parser reads (the request's own Content-Type is DRF's 415)."""

    code = "unsupported_media_type"
    status_code = 415


def error_body(code: str, message: str, details: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def _drf_code(exc: exceptions.APIException) -> str:
    codes = exc.get_codes()
    if isinstance(codes, str):
        return codes
    return "invalid"


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        response = Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
        if getattr(exc, "retry_after", None):  # kb.web_slots.Busy: a tenant's costly requests, all slots taken
            response["Retry-After"] = str(exc.retry_after)
        return response
    if isinstance(exc, RequestDataTooBig):  # Django's own body limit (DATA_UPLOAD_MAX_MEMORY_SIZE)
        return Response(error_body("payload_too_large", "The request body is too large."), status=413)
    if isinstance(exc, Http404):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    response = drf_exception_handler(exc, context)
    if response is None:
        return None  # unexpected: a 500, logged by Django, with no detail shown to the caller
    if isinstance(exc, exceptions.ValidationError):
        details = exc.detail if isinstance(exc.detail, dict) else {"non_field_errors": exc.detail}
        response.data = error_body("invalid", "The request is invalid.", details)
    else:
        detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
        response.data = error_body(_drf_code(exc), str(detail))
    return response


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


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def not_found_view(request, exception=None):
    """Django's 404 (an unknown URL): the API's error shape under ``/api/``, the normal page elsewhere."""
    if _is_api(request):
        return JsonResponse(error_body("not_found", "Not found."), status=404)
    return defaults.page_not_found(request, exception)


def server_error_view(request):
    """Django's 500: the API's error shape under ``/api/`` (no detail shown), the normal page elsewhere.

    A database that went away while a middleware used it (a session save, say) is a 503, as in views.
    """
    import sys

    from django.db import InterfaceError, OperationalError

    if isinstance(sys.exc_info()[1], OperationalError | InterfaceError):
        return database_unavailable_response(request)
    if _is_api(request):
        return JsonResponse(error_body("server_error", "Internal server error."), status=500)
    return defaults.server_error(request)
