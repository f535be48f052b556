"""The REST API's client: one method per operation, sync (:class:`Client`) and async (:class:`AsyncClient`).

Both share :class:`_Operations`: each method describes its request and hands it to ``_send``, which
the sync client runs at once and the async client returns as a coroutine. Retries (:func:`_retry_wait`): a 429
is tried again after the server's ``Retry-After`` (or a growing back-off when it gives none), up to
``max_retries`` times -- the server refuses it before any work; a 502, 503 or 504 (the server, or a proxy in front
of it) or a lost connection is tried again the same way only for a request that may be sent twice: an idempotent
method (RFC 9110: GET, HEAD, PUT, DELETE, OPTIONS) or an operation the API documents as safe to repeat
(``_Request.repeatable``) -- never an upload, a creation or a PATCH. With ``RetryPolicy.total_timeout`` a call has
a deadline (:class:`_Deadline`): no try is started after a wait that would reach it, and each try's connect, read
and write timeouts are cut to what is left of it. Every other answer outside 2xx raises :class:`BulkheadError` (or
a subclass) carrying the API's one error shape: ``code``, ``message``, ``details`` and the HTTP ``status``; a
redirect is never followed (the token would go with it) and raises too (code ``redirect``). An answer's body is
read as a stream and at most ``max_response_bytes`` of it (:class:`AnswerTooLarge`); an ``iter_*`` walk reads at
most ``max_pages`` pages and never the same page twice (:class:`PaginationError`).
"""

from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import json
import math
import re
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from bulkhead_client.errors import (
    AnswerTooLarge,
    BulkheadError,
    MalformedAnswer,
    PaginationError,
    error_for,
    json_of,
    retry_after,
)
from bulkhead_client.types import Document, Job, Page, SearchResponse

DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # an answer's body, read at most (the largest is an audit export)
DEFAULT_MAX_PAGES = 10_000  # pages of one iter_* walk (a million items at page_size=100)
IDEMPOTENT = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"}  # RFC 9110, 9.2.2
# Answers that may come after the work was done (the database lost mid-request; a proxy -- nginx in front of
# gunicorn -- whose upstream restarted, 502, or did not answer in time, 504): tried again only where resendable.
UNAVAILABLE = {502, 503, 504}
FINISHED = ("succeeded", "failed")


@dataclass
class _Request:
    method: str
    path: str
    params: dict | None = None
    json: Any = None
    files: dict | None = None
    data: dict | None = None
    raw: bool = False  # return the body's bytes, not its JSON
    # A POST the API documents as safe to send twice (a search or a preview stores nothing; revoking a token again
    # changes nothing): tried again after a 502, 503, 504 or a lost connection as an idempotent method is.
    repeatable: bool = False

    @property
    def resendable(self) -> bool:
        return self.method in IDEMPOTENT or self.repeatable


@dataclass
class RetryPolicy:
    """How many times a request is tried again (a 429; a 502, 503, 504 or a lost connection where it may be sent
    twice: :func:`_retry_wait`), and the longest wait between tries (a ``Retry-After`` above it is waited for
    ``max_wait`` seconds). Each bound finite and not negative, else :class:`ValueError`.

    ``total_timeout`` (seconds, or None: no deadline) bounds one call, its tries and waits together, from the
    moment it starts (an ``iter_*`` walk: each page): a wait that would reach the deadline is not waited -- the
    call raises at once what the last try answered (a ``Retry-After`` beyond the deadline is the server's error at
    once, never a sleep) -- and each try's connect, read and write timeouts are cut to what is left. ``clock``
    (``time.monotonic`` when None) and ``sleep`` are for tests and benchmarks: a fake clock that ``sleep``
    advances counts the waits and never waits."""

    max_retries: int = 3
    backoff: float = 0.5
    max_wait: float = 30.0
    sleep: Callable[[float], Any] | None = field(default=None, repr=False)  # tests and benchmarks count the waits
    total_timeout: float | None = None
    clock: Callable[[], float] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ValueError("max_retries must be a whole number, 0 or more")
        for name in ("backoff", "max_wait"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise ValueError(f"{name} must be a finite number of seconds, 0 or more")
        total = self.total_timeout
        if total is not None and (isinstance(total, bool) or not isinstance(total, int | float)
                                  or not 0 < total < math.inf):
            raise ValueError("total_timeout must be a finite number of seconds above 0, or None")

    def wait_for(self, attempt: int, response: httpx.Response | None) -> float:
        seconds = retry_after(response.headers.get("Retry-After")) if response is not None else None
        if seconds is not None:
            return min(seconds, self.max_wait)
        return min(self.backoff * 2**attempt, self.max_wait)


class _Deadline:
    """One call's deadline (``RetryPolicy.total_timeout``; none when it is None), on the policy's clock."""

    def __init__(self, retry: RetryPolicy):
        self.clock = retry.clock or time.monotonic
        self.end = None if retry.total_timeout is None else self.clock() + retry.total_timeout

    def allows(self, wait: float) -> bool:
        """Whether a try may start after waiting ``wait`` seconds: before the deadline, with time left for it."""
        return self.end is None or self.clock() + wait < self.end

    def timeout(self, client: httpx.Timeout) -> Any:  # an httpx.Timeout, or httpx.USE_CLIENT_DEFAULT
        """The next try's timeouts: the client's, each cut to what is left of the deadline (a hundredth of a second
        at least: a try is only started with time left, and a sleep may overrun it a little)."""
        if self.end is None:
            return httpx.USE_CLIENT_DEFAULT
        left = max(self.end - self.clock(), 0.01)
        return httpx.Timeout(connect=_cut(client.connect, left), read=_cut(client.read, left),
                             write=_cut(client.write, left), pool=_cut(client.pool, left))


def _cut(seconds: float | None, left: float) -> float:
    return left if seconds is None else min(seconds, left)


def _retry_wait(retry: RetryPolicy, request: _Request, response: httpx.Response | None, attempt: int,
                deadline: _Deadline) -> float | None:
    """How long to wait before sending ``request`` again after ``response`` (None: the connection was lost); None:
    not again. A 429 is the server's refusal before any work (the per-token throttle and the busy slots answer
    before a view runs), so it is tried again whatever the method; a 502, 503 or 504 may come after the work was
    done (a database lost mid-request, a proxy whose upstream restarted or timed out), and so may a lost
    connection, so only a request that may be sent twice is. Never a wait that would reach the deadline: the
    call ends at once with what this try answered."""
    if attempt >= retry.max_retries:
        return None
    if response is None or response.status_code in UNAVAILABLE:
        if not request.resendable:
            return None
    elif response.status_code != 429:
        return None
    wait = retry.wait_for(attempt, response)
    return wait if deadline.allows(wait) else None


def _segment(value: str | int) -> str:
    """``value`` (an id) as one path segment: percent-encoded whole (``/``, ``?``, ``#``, ``%`` and every other
    character outside the unreserved ones), so that an id an application got from elsewhere can never name
    another path, add a query or cut the path short. ``""``, ``.`` and ``..`` are no segment (they would
    name the collection, or its parent), and no id holds a ``/``: the server decodes ``%2F`` before it routes,
    so ``ID/sections`` would still reach another endpoint: :class:`ValueError`, before any request."""
    text = str(value)
    if text in ("", ".", "..") or "/" in text:
        raise ValueError(f"{text!r} is not an id")
    return quote(text, safe="")


def _clean(values: Mapping[str, Any]) -> dict:
    return {key: value for key, value in values.items() if value is not None}


def _upload(content, *, title, content_type, source, tags, access_level, groups) -> dict:
    """The JSON body of an upload (text) or the multipart parts (bytes or a path)."""
    fields = _clean({"title": title, "content_type": content_type, "source": source, "tags": tags,
                     "access_level": access_level, "groups": groups})
    if isinstance(content, str) and not isinstance(content, Path):
        return {"json": {"content": content, **fields}}
    if isinstance(content, Path):
        name, body = content.name, content.read_bytes()
    else:
        name, body = (title or "upload"), bytes(content)
    data = {key: value for key, value in fields.items() if key not in ("tags", "groups")}
    for key in ("tags", "groups"):
        if key in fields:
            data[key] = list(fields[key])
    return {"files": {"file": (name, body)}, "data": data}


class _Operations:
    """Every operation of ``/api/v1/``. ``_send`` returns the result (sync) or a coroutine of it (async)."""

    def _send(self, request: _Request):  # pragma: no cover -- defined by each client
        raise NotImplementedError

    # -- search
    def search(self, query: str, *, mode: str | None = None, top_k: int | None = None, expand: str | None = None,
               expand_level: str | None = None, neighbors: int | None = None, max_contexts: int | None = None,
               budget: int | None = None, filters: Mapping[str, Any] | None = None,
               index_version: str | None = None, budget_fill: bool | None = None, **options: Any) -> SearchResponse:
        """Search what the token's member may read. ``budget``: the contexts' token budget. ``budget_fill``: when
        the top ``top_k`` hits' contexts leave part of the budget unused, the next ``top_k`` hits add their own
        chunk's text as further contexts while each fits (never over the budget; only with ``expand`` other than
        ``"none"``); None (the default): not sent, the server's default. ``options``: any other field of the
        search request, passed as is (a newer server's, say ``spotlight``)."""
        body = _clean({"query": query, "mode": mode, "top_k": top_k, "expand": expand, "expand_level": expand_level,
                       "neighbors": neighbors, "max_contexts": max_contexts, "context_token_budget": budget,
                       "filters": dict(filters) if filters is not None else None, "index_version": index_version,
                       "budget_fill": budget_fill})
        return self._send(_Request("POST", "/api/v1/search/", json={**body, **options}, repeatable=True))

    # -- documents
    def documents_page(self, *, limit: int = 50, offset: int = 0, status: str | None = None, tag: str | None = None,
                       content_type: str | None = None, source: str | None = None) -> Page[Document]:
        params = _clean({"limit": limit, "offset": offset, "status": status, "tag": tag,
                         "content_type": content_type, "source": source})
        return self._send(_Request("GET", "/api/v1/documents/", params=params))

    def get_document(self, document_id: str) -> Document:
        return self._send(_Request("GET", f"/api/v1/documents/{_segment(document_id)}/"))

    def upload_document(self, content: str | bytes | Path, *, title: str | None = None,
                        content_type: str | None = None, source: str | None = None, tags: list[str] | None = None,
                        access_level: str | None = None, groups: list[str] | None = None) -> dict:
        """Upload text (``str``), bytes or a file (``Path``); ingestion runs in the background: the answer
        holds the document and its ``job`` (:meth:`wait_for_job`)."""
        parts = _upload(content, title=title, content_type=content_type, source=source, tags=tags,
                        access_level=access_level, groups=groups)
        return self._send(_Request("POST", "/api/v1/documents/", **parts))

    def preview_document(self, content: str | bytes | Path, *, title: str | None = None,
                         content_type: str | None = None, access_level: str | None = None,
                         groups: list[str] | None = None) -> dict:
        """What ingestion would make of an upload (sections, policies, chunk counts); stores nothing."""
        parts = _upload(content, title=title or "preview", content_type=content_type, source=None, tags=None,
                        access_level=access_level, groups=groups)
        return self._send(_Request("POST", "/api/v1/documents/preview/", **parts, repeatable=True))

    def replace_document(self, document_id: str, content: str | bytes | Path, *, title: str | None = None,
                         content_type: str | None = None, source: str | None = None,
                         tags: list[str] | None = None, access_level: str | None = None,
                         groups: list[str] | None = None) -> dict:
        parts = _upload(content, title=title, content_type=content_type, source=source, tags=tags,
                        access_level=access_level, groups=groups)
        return self._send(_Request("PUT", f"/api/v1/documents/{_segment(document_id)}/", **parts))

    def delete_document(self, document_id: str) -> None:
        return self._send(_Request("DELETE", f"/api/v1/documents/{_segment(document_id)}/"))

    def document_sections(self, document_id: str, *, offset: int | None = None, limit: int | None = None) -> list[dict]:
        """The section tree you may read, in document order: whole, or past 10,000 sections (the server then
        refuses the whole tree: ``ValidationError`` code ``too_many_sections``) a page of ``limit`` from ``offset``."""
        params = _clean({"offset": offset, "limit": limit})
        return self._send(_Request("GET", f"/api/v1/documents/{_segment(document_id)}/sections/", params=params or None))

    def set_section_access(self, section_id: str, *, access_level: str | None = None,
                           groups: list[str] | None = None, inherit: bool | None = None) -> dict:
        """Change a section's policy (editors, admins): a level, groups, or ``inherit=True``."""
        body = _clean({"access_level": access_level, "groups": groups, "inherit": inherit})
        return self._send(_Request("PATCH", f"/api/v1/sections/{_segment(section_id)}/", json=body))

    def document_as_member(self, document_id: str, membership_id: int, *, offset: int | None = None,
                           limit: int | None = None) -> dict:
        """What a member sees of a document (admins): every section, or past 10,000 sections (the server then refuses
        the whole: ``ValidationError`` code ``too_many_sections``) a page of ``limit`` from ``offset``."""
        params = _clean({"offset": offset, "limit": limit})
        return self._send(_Request("GET", f"/api/v1/documents/{_segment(document_id)}/as/{_segment(membership_id)}/",
                                   params=params or None))

    def section_readers(self, section_id: str) -> dict:
        return self._send(_Request("GET", f"/api/v1/sections/{_segment(section_id)}/readers/"))

    # -- jobs
    def get_job(self, job_id: str) -> Job:
        return self._send(_Request("GET", f"/api/v1/jobs/{_segment(job_id)}/"))

    # -- members, groups, tokens (admins)
    def members_page(self, *, limit: int = 50, offset: int = 0) -> Page[dict]:
        return self._send(_Request("GET", "/api/v1/memberships/", params={"limit": limit, "offset": offset}))

    def create_member(self, email: str, *, role: str | None = None, clearance: str | None = None,
                      groups: list[str] | None = None) -> dict:
        """Invite ``email``: the answer is the invitation (``status`` ``invited``); the person joins when they
        accept the e-mailed link, never at once."""
        body = _clean({"email": email, "role": role, "clearance": clearance, "groups": groups})
        return self._send(_Request("POST", "/api/v1/memberships/", json=body))

    def update_member(self, membership_id: int, *, role: str | None = None, clearance: str | None = None,
                      groups: list[str] | None = None, is_active: bool | None = None) -> dict:
        body = _clean({"role": role, "clearance": clearance, "groups": groups, "is_active": is_active})
        return self._send(_Request("PATCH", f"/api/v1/memberships/{_segment(membership_id)}/", json=body))

    def groups_page(self, *, limit: int = 50, offset: int = 0) -> Page[dict]:
        return self._send(_Request("GET", "/api/v1/groups/", params={"limit": limit, "offset": offset}))

    def create_group(self, slug: str, *, name: str | None = None) -> dict:
        return self._send(_Request("POST", "/api/v1/groups/", json=_clean({"slug": slug, "name": name})))

    def rename_group(self, group_id: int, name: str) -> dict:
        return self._send(_Request("PATCH", f"/api/v1/groups/{_segment(group_id)}/", json={"name": name}))

    def tokens_page(self, *, limit: int = 50, offset: int = 0) -> Page[dict]:
        return self._send(_Request("GET", "/api/v1/tokens/", params={"limit": limit, "offset": offset}))

    def create_token(self, *, membership_id: int | None = None, name: str | None = None) -> dict:
        """A new token; its ``key`` is shown this once."""
        body = _clean({"membership_id": membership_id, "name": name})
        return self._send(_Request("POST", "/api/v1/tokens/", json=body))

    def revoke_token(self, token_id: int) -> dict:
        return self._send(_Request("POST", f"/api/v1/tokens/{_segment(token_id)}/revoke/", repeatable=True))

    # -- index versions (admins)
    def index_versions_page(self, *, limit: int = 50, offset: int = 0) -> Page[dict]:
        return self._send(_Request("GET", "/api/v1/index-versions/", params={"limit": limit, "offset": offset}))

    def create_index_version(self, *, config: Mapping[str, Any] | None = None, name: str | None = None) -> dict:
        body = _clean({"config": dict(config) if config is not None else None, "name": name})
        return self._send(_Request("POST", "/api/v1/index-versions/", json=body))

    def build_index_version(self, version_id: str) -> dict:
        return self._send(_Request("POST", f"/api/v1/index-versions/{_segment(version_id)}/build/"))

    def activate_index_version(self, version_id: str, *, force: bool = False) -> dict:
        return self._send(_Request("POST", f"/api/v1/index-versions/{_segment(version_id)}/activate/", json={"force": force}))

    # -- audit (admins)
    def audit_page(self, *, limit: int = 50, offset: int = 0, member: int | None = None, action: str | None = None,
                   document: str | None = None, since: str | None = None, until: str | None = None) -> Page[dict]:
        params = _clean({"limit": limit, "offset": offset, "member": member, "action": action,
                         "document": document, "since": since, "until": until})
        return self._send(_Request("GET", "/api/v1/audit/", params=params))

    def audit_export(self, *, format: str = "jsonl", **filters: Any) -> bytes:
        """The records as a file: ``format`` "csv" or "jsonl" (the API's ``file`` parameter)."""
        return self._send(_Request("GET", "/api/v1/audit/export/", params=_clean({"file": format, **filters}),
                                   raw=True))

    def audit_settings(self) -> dict:
        return self._send(_Request("GET", "/api/v1/audit/settings/"))

    def update_audit_settings(self, *, retention_days: int | None = None, hash_queries: bool | None = None) -> dict:
        body = _clean({"retention_days": retention_days, "hash_queries": hash_queries})
        return self._send(_Request("PATCH", "/api/v1/audit/settings/", json=body))


# RFC 9110's token68, what an Authorization credential may be (a Bulkhead key is ``bkh_`` and URL-safe base64).
TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}


def _headers(token: str) -> dict:
    """The headers of every request. A token that is no token68 -- a line break read with it from a file, a
    space, a character outside ASCII -- is refused here, naming no part of it: sent, the HTTP library refused it
    with an error (and a debug log line) quoting the whole header, token included."""
    if not isinstance(token, str) or not TOKEN68.fullmatch(token):
        raise ValueError("the token is not one: a Bulkhead token is letters, digits, '-' and '_' only "
                         "(no space or line break around it)")
    # identity: the body is read as it comes, at most max_response_bytes of it -- never a compressed answer that
    # a few kilobytes of which decompress into gigabytes
    return {"Authorization": f"Token {token}", "Accept": "application/json", "Accept-Encoding": "identity",
            "User-Agent": "bulkhead-client/0.1"}


def _base_url(base_url: str, allow_http: bool) -> str:
    """``base_url`` checked before the token goes anywhere: ``https://``, or ``http://`` to this machine (a
    loopback address or ``localhost``) -- plain HTTP to another host sends the token in clear, so it takes
    ``allow_http=True``; never a user or password in it (httpx would send them as Basic credentials instead
    of the token, and every citation URL would carry them). The error names no part of the URL."""
    url = httpx.URL(base_url)
    if url.userinfo:
        raise ValueError("the base URL holds a user or password: give the server's address alone")
    if url.scheme == "https" or (url.scheme == "http" and (allow_http or _loopback(url.host))):
        if url.host:
            return base_url.rstrip("/")
    raise ValueError("the base URL must be https:// (or http:// to this machine, or with allow_http=True: "
                     "the token would travel in clear)")


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host.lower().rstrip(".") in LOOPBACK_NAMES


def _positive(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number, 1 or more")
    return value


def _arguments(request: _Request) -> dict:
    return {"method": request.method, "url": request.path, "params": request.params, "json": request.json,
            "files": request.files, "data": request.data}


def _coded(response: httpx.Response) -> bool:
    return response.headers.get("Content-Encoding", "identity").strip().lower() not in ("", "identity")


def _too_long(response: httpx.Response, limit: int) -> bool:
    """Whether the answer says, before its body, that it is longer than ``limit``."""
    declared = response.headers.get("Content-Length", "").strip()
    return declared.isdigit() and int(declared) > limit


def _whole(response: httpx.Response, body: bytes) -> httpx.Response:
    """The streamed ``response`` with its body read. A body in a content coding (the client asks for none) is not
    decoded: for a 2xx it is :class:`MalformedAnswer`, for another status the status's error without a body."""
    if _coded(response):
        if 200 <= response.status_code < 300:
            raise MalformedAnswer(response.status_code, "the answer is compressed, and the client asked for it "
                                                        "as it is (Accept-Encoding: identity)")
        body = b""
    headers = [(k, v) for k, v in response.headers.multi_items()
               if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
    return httpx.Response(response.status_code, headers=headers, content=body, request=response.request)


def _read(response: httpx.Response, limit: int) -> httpx.Response:
    """The answer's body, read chunk by chunk and at most ``limit`` bytes of it: :class:`AnswerTooLarge` past it
    (at once from a ``Content-Length`` above it), the connection closed without reading the rest."""
    if _too_long(response, limit):
        raise AnswerTooLarge(response.status_code, limit)
    chunks, size = [], 0
    for chunk in response.iter_raw():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise AnswerTooLarge(response.status_code, limit)
    return _whole(response, b"".join(chunks))


async def _aread(response: httpx.Response, limit: int) -> httpx.Response:
    """:func:`_read`, for the async client."""
    if _too_long(response, limit):
        raise AnswerTooLarge(response.status_code, limit)
    chunks, size = [], 0
    async for chunk in response.aiter_raw():
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise AnswerTooLarge(response.status_code, limit)
    return _whole(response, b"".join(chunks))


class _Walk:
    """The bounds of one ``iter_*`` walk: each page is the API's (``results`` a list, ``next`` a string or null),
    at most ``max_pages`` of them, and none the same as one before (a server that ignores the offset would be
    walked for ever). The walk asks by ``offset`` and never follows the answer's ``next`` link (whatever host it
    names, nothing is sent there): only whether it is null."""

    def __init__(self, max_pages: int):
        self.max_pages, self.pages, self.offset, self.seen = max_pages, 0, 0, set()

    def results(self, page: Any) -> list:
        if not (isinstance(page, dict) and isinstance(page.get("results"), list)
                and (page.get("next") is None or isinstance(page["next"], str))):
            raise MalformedAnswer(200, f"the page at offset {self.offset} is not a page of the API's "
                                       "(results a list, next a link or null)")
        results = page["results"]
        if results:
            digest = hashlib.sha256(json.dumps(results, sort_keys=True, default=str).encode()).digest()
            if digest in self.seen:
                raise PaginationError(200, "page_repeated",
                                      f"the page at offset {self.offset} is one the server gave before: it does not "
                                      "page by offset, and the walk would not end", {"offset": self.offset})
            self.seen.add(digest)
        self.pages += 1
        return results

    def more(self, page: dict, results: list) -> bool:
        """Whether to ask for the next page (``offset`` moved past ``results``); :class:`PaginationError` past
        ``max_pages``."""
        if not page["next"] or not results:
            return False
        if self.pages >= self.max_pages:
            raise PaginationError(200, "too_many_pages",
                                  f"the walk has read {self.max_pages} pages (max_pages) and the server says "
                                  "there are more: page with the *_page methods, or raise max_pages",
                                  {"max_pages": self.max_pages})
        self.offset += len(results)
        return True


def _job(job: Any) -> Job:
    """A job as :meth:`wait_for_job` reads it: an object with a ``status`` string, else :class:`MalformedAnswer`."""
    if not (isinstance(job, dict) and isinstance(job.get("status"), str)):
        raise MalformedAnswer(200, "the job is not one of the API's (an object with a status)")
    return job


def _result(request: _Request, response: httpx.Response):
    if not 200 <= response.status_code < 300:
        # A redirect is not followed (the token would go with it) and is no success either: a 3xx taken for one had
        # a deletion, a revocation or a narrowing answer None as when done, behind a proxy sending http on to https.
        raise error_for(response)
    if request.raw:
        return response.content
    if response.status_code == 204 or not response.content:
        return None
    return json_of(response)


class Client(_Operations):
    """The sync client. ``Client(base_url, token)``; use it as a context manager, or ``close()`` it.

    The ``*_page`` methods answer one page (``count``, ``next``, ``results``); the ``iter_*`` methods
    walk every page."""

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 retry: RetryPolicy | None = None, transport: httpx.BaseTransport | None = None,
                 allow_http: bool = False, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 max_pages: int = DEFAULT_MAX_PAGES):
        self.retry = retry or RetryPolicy()
        self.max_response_bytes = _positive("max_response_bytes", max_response_bytes)
        self.max_pages = _positive("max_pages", max_pages)
        self._http = httpx.Client(base_url=_base_url(base_url, allow_http), headers=_headers(token), timeout=timeout,
                                  transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, request: _Request):
        attempt, deadline = 0, _Deadline(self.retry)
        while True:
            try:
                with self._http.stream(**_arguments(request),
                                       timeout=deadline.timeout(self._http.timeout)) as response:
                    wait = _retry_wait(self.retry, request, response, attempt, deadline)
                    if wait is None:
                        return _result(request, _read(response, self.max_response_bytes))
            except httpx.TransportError:
                wait = _retry_wait(self.retry, request, None, attempt, deadline)
                if wait is None:
                    raise
            (self.retry.sleep or time.sleep)(wait)  # the answer closed, unread
            attempt += 1

    def _pages(self, fetch: Callable[..., Page], page_size: int, **filters) -> Iterator[dict]:
        walk = _Walk(self.max_pages)
        while True:
            page = fetch(limit=page_size, offset=walk.offset, **filters)
            results = walk.results(page)
            yield from results
            if not walk.more(page, results):
                return

    def iter_documents(self, *, page_size: int = 100, **filters) -> Iterator[Document]:
        return self._pages(self.documents_page, page_size, **filters)

    def iter_members(self, *, page_size: int = 100) -> Iterator[dict]:
        return self._pages(self.members_page, page_size)

    def iter_groups(self, *, page_size: int = 100) -> Iterator[dict]:
        return self._pages(self.groups_page, page_size)

    def iter_tokens(self, *, page_size: int = 100) -> Iterator[dict]:
        return self._pages(self.tokens_page, page_size)

    def iter_audit(self, *, page_size: int = 100, **filters) -> Iterator[dict]:
        return self._pages(self.audit_page, page_size, **filters)

    def wait_for_job(self, job_id: str, *, timeout: float = 600, poll: float = 0.5,
                     on_progress: Callable[[Job], Any] | None = None) -> Job:
        """Poll a job until it succeeds or fails (``on_progress`` sees each state); TimeoutError past ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            job = _job(self.get_job(job_id))
            if on_progress is not None:
                on_progress(job)
            if job["status"] in FINISHED:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job['status']} after {timeout} s")
            time.sleep(poll)


class AsyncClient(_Operations):
    """The async client: the same methods as :class:`Client`, each awaited; ``async with`` it."""

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 retry: RetryPolicy | None = None, transport: httpx.AsyncBaseTransport | None = None,
                 allow_http: bool = False, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 max_pages: int = DEFAULT_MAX_PAGES):
        self.retry = retry or RetryPolicy()
        self.max_response_bytes = _positive("max_response_bytes", max_response_bytes)
        self.max_pages = _positive("max_pages", max_pages)
        self._http = httpx.AsyncClient(base_url=_base_url(base_url, allow_http), headers=_headers(token),
                                       timeout=timeout, transport=transport)

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _pause(self, seconds: float) -> None:
        if self.retry.sleep is not None:
            self.retry.sleep(seconds)
        else:
            await asyncio.sleep(seconds)

    async def _send(self, request: _Request):
        attempt, deadline = 0, _Deadline(self.retry)
        while True:
            try:
                async with self._http.stream(**_arguments(request),
                                             timeout=deadline.timeout(self._http.timeout)) as response:
                    wait = _retry_wait(self.retry, request, response, attempt, deadline)
                    if wait is None:
                        return _result(request, await _aread(response, self.max_response_bytes))
            except httpx.TransportError:
                wait = _retry_wait(self.retry, request, None, attempt, deadline)
                if wait is None:
                    raise
            await self._pause(wait)  # the answer closed, unread
            attempt += 1

    async def _pages(self, fetch, page_size: int, **filters) -> AsyncIterator[dict]:
        walk = _Walk(self.max_pages)
        while True:
            page = await fetch(limit=page_size, offset=walk.offset, **filters)
            results = walk.results(page)
            for item in results:
                yield item
            if not walk.more(page, results):
                return

    def iter_documents(self, *, page_size: int = 100, **filters) -> AsyncIterator[Document]:
        return self._pages(self.documents_page, page_size, **filters)

    def iter_members(self, *, page_size: int = 100) -> AsyncIterator[dict]:
        return self._pages(self.members_page, page_size)

    def iter_groups(self, *, page_size: int = 100) -> AsyncIterator[dict]:
        return self._pages(self.groups_page, page_size)

    def iter_tokens(self, *, page_size: int = 100) -> AsyncIterator[dict]:
        return self._pages(self.tokens_page, page_size)

    def iter_audit(self, *, page_size: int = 100, **filters) -> AsyncIterator[dict]:
        return self._pages(self.audit_page, page_size, **filters)

    async def wait_for_job(self, job_id: str, *, timeout: float = 600, poll: float = 0.5,
                           on_progress: Callable[[Job], Any] | None = None) -> Job:
        deadline = time.monotonic() + timeout
        while True:
            job = _job(await self.get_job(job_id))
            if on_progress is not None:
                on_progress(job)
            if job["status"] in FINISHED:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job_id} still {job['status']} after {timeout} s")
            await asyncio.sleep(poll)


__all__ = ["AsyncClient", "BulkheadError", "Client", "RetryPolicy"]
