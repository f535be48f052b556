"""The one error family every service raises for a caller to see.

It lives in ``accounts`` (the lowest layer) so that ``accounts``, ``ingestion`` and
``kb`` can all raise it; ``kb.errors`` turns it into the API's one error shape.
"""

from __future__ import annotations

from rest_framework import status


class ApplicationError(Exception):
    """Base of the errors that services raise for a caller to see."""

    code = "invalid"
    status_code = status.HTTP_400_BAD_REQUEST

    def __init__(self, message: str, *, details: dict | None = None, code: str | None = None):
        super().__init__(message)
        self.message = message
        self.details = details or {}
        if code:
            self.code = code


class NotFound(ApplicationError):
    """Missing *or* forbidden: the two are indistinguishable on purpose."""

    code = "not_found"
    status_code = status.HTTP_404_NOT_FOUND


class PermissionRefused(ApplicationError):
    code = "permission_denied"
    status_code = status.HTTP_403_FORBIDDEN


class Conflict(ApplicationError):
    code = "conflict"
    status_code = status.HTTP_409_CONFLICT
