"""One error family and one DRF exception handler, so every error has the same JSON shape:

``{"error": {"code": "...", "message": "...", "details": {...}}}``
"""

from __future__ import annotations

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from accounts.errors import ApplicationError, Conflict, NotFound, PermissionRefused

__all__ = ["ApplicationError", "Conflict", "NotFound", "PermissionRefused", "error_body", "exception_handler"]


def error_body(code: str, message: str, details: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def _drf_code(exc: exceptions.APIException) -> str:
    codes = exc.get_codes()
    if isinstance(codes, str):
        return codes
    return "invalid"


def exception_handler(exc, context):
    if isinstance(exc, ApplicationError):
        return Response(error_body(exc.code, exc.message, exc.details), status=exc.status_code)
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
