"""Errors: every answer of the API outside 2xx, with its one error shape
(``{"error": {"code", "message", "details"}}``); a redirect, never followed, is one (code ``redirect``). An answer
of another shape (a proxy's HTML page) is its status's error with code ``http_error`` and the status's reason as
message; a code or a message is kept to at most :data:`MAX_CODE` and :data:`MAX_MESSAGE` characters, whoever
wrote it."""

from __future__ import annotations

import math
import time
from email.utils import parsedate_to_datetime
from typing import Any

import httpx

MAX_CODE = 100  # the API's codes are words of a few dozen letters
MAX_MESSAGE = 1000  # the API's messages are a sentence or two; a proxy's page is not passed on whole
MAX_RETRY_AFTER = 86_400.0  # a server's wait, read at most a day (an application that sleeps on it wakes up)


class BulkheadError(Exception):
    """An error answer of the API: ``status`` (HTTP), ``code``, ``message``, ``details``."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any] | None = None,
                 retry_after: float | None = None):
        super().__init__(f"{status} {code}: {message}")
        self.status, self.code, self.message, self.details = status, code, message, details or {}
        self.retry_after = retry_after


class AuthenticationError(BulkheadError):
    """401: no token, a wrong one, a revoked one, or its member is deactivated."""


class PermissionDenied(BulkheadError):
    """403: the token's member may not do this (a role too low)."""


class NotFound(BulkheadError):
    """404: missing, another tenant's, or not readable: the API never says which."""


class ValidationError(BulkheadError):
    """400: the request is invalid; ``details`` names each field."""


class RateLimited(BulkheadError):
    """429 after the retries: ``retry_after`` is the server's wait, in seconds (:func:`retry_after`)."""


class Unavailable(BulkheadError):
    """503 after the retries (the database or a worker is down), or 502 or 504 from a proxy in front of the server
    (its upstream restarting, or not answering in time): ``status`` says which. Tried again only for a request
    that may be sent twice."""


class MalformedAnswer(BulkheadError):
    """An answer the client cannot read as the API's: not JSON (or nested past what a parser reads), or, for the
    retrievers, a search answer of another shape -- a field of the wrong type, a spotlighted block asked for and
    missing. Code ``malformed``; ``status`` is the answer's. Nothing of it is passed on."""

    def __init__(self, status: int, message: str):
        super().__init__(status, "malformed", message)


class AnswerTooLarge(BulkheadError):
    """An answer whose body is longer than the client reads (``max_response_bytes``; by default
    :data:`~bulkhead_client._client.DEFAULT_MAX_RESPONSE_BYTES`, 32 MiB): code ``too_large``, ``details["limit"]``
    the limit in bytes. The client stops reading at the limit (or at once, from a ``Content-Length`` above it):
    a server or a proxy answering without end never fills the application's memory."""

    def __init__(self, status: int, limit: int):
        super().__init__(status, "too_large",
                         f"the answer is longer than the client reads ({limit} bytes, max_response_bytes): "
                         "nothing of it is passed on", {"limit": limit})


class PaginationError(BulkheadError):
    """An ``iter_*`` walk that would not end: code ``too_many_pages`` past ``max_pages`` pages
    (``details["max_pages"]``), ``page_repeated`` when the server answers a page it already gave (it ignores the
    offset: the walk would go round for ever; ``details["offset"]``)."""


def json_of(response: httpx.Response) -> Any:
    """The answer's JSON, or :class:`MalformedAnswer` (never a ``ValueError`` or a ``RecursionError``)."""
    try:
        return response.json()
    except (ValueError, RecursionError):  # a deeply nested body raises RecursionError from the JSON parser
        raise MalformedAnswer(response.status_code, "the answer is not JSON the client can read") from None


_BY_STATUS = {400: ValidationError, 401: AuthenticationError, 403: PermissionDenied, 404: NotFound,
              429: RateLimited, 502: Unavailable, 503: Unavailable, 504: Unavailable}


def error_for(response: httpx.Response) -> BulkheadError:
    try:
        body = json_of(response)
        error = body.get("error") if isinstance(body, dict) else None
    except MalformedAnswer:
        error = None
    if not isinstance(error, dict):
        error = {"code": "http_error", "message": response.reason_phrase or "error", "details": {}}
    if response.is_redirect:  # never followed: the client's base URL is not where the API answers
        where = response.headers.get("Location", "")
        error = {"code": "redirect", "details": {"location": where},
                 "message": f"the server redirects to {where or 'another address'}; the client follows no redirect "
                            "(its token would go with it): give that address as the base URL"}
    cls = _BY_STATUS.get(response.status_code, BulkheadError)
    details = error.get("details")
    return cls(response.status_code, _bounded(error.get("code", ""), MAX_CODE),
               _bounded(error.get("message", ""), MAX_MESSAGE), details if isinstance(details, dict) else {},
               retry_after(response.headers.get("Retry-After")))


def retry_after(header: str | None) -> float | None:
    """A ``Retry-After`` in seconds: a number of seconds or an HTTP date (RFC 9110, 10.2.3), never below 0 (a date
    gone by: at once) and at most :data:`MAX_RETRY_AFTER`; None when it is neither -- ``nan`` or ``inf`` from a
    server is no wait the client reads (the retries' back-off), never a crash or a wait for ever."""
    if not header:
        return None
    try:
        seconds = float(header)
    except ValueError:
        try:
            seconds = parsedate_to_datetime(header).timestamp() - time.time()
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER) if math.isfinite(seconds) else None


def _bounded(value: Any, limit: int) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"
