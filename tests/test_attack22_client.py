"""The Python client against a misbehaving or hostile server, or a proxy on the way (twenty-second session).

* An answer's body was read whole into memory, however long: a server or a proxy answering without end (or a
  ``Content-Length`` of gigabytes, or a compressed body that decompresses into gigabytes) filled the
  application's memory. Now the body is read as a stream, at most ``max_response_bytes`` (32 MiB by default) of it
  (``AnswerTooLarge``, naming the limit), and asked for uncompressed.
* A 503 was tried again whatever the request: an upload, an invitation, a group, an index version or a PATCH
  answered 503 after the server (or the service behind a proxy) had done it was sent again, up to four times.
  Now a 503 and a lost connection are tried again only for an idempotent method or an operation the API
  documents as safe to repeat; a 429, the server's refusal before any work, for any. ``Retry-After`` as an HTTP
  date was read as no wait at all (the back-off).
* An ``iter_*`` walk ended only when the server said so: a server ignoring the offset, or cycling through pages,
  with a ``next`` on each, was walked for ever. Now no page may repeat one before, and a walk reads at most
  ``max_pages`` pages (``PaginationError``); a page not of the API's shape is ``MalformedAnswer`` (a string
  ``results`` was walked letter by letter).
* Checked, nothing to fix (tests kept): the walk pages by offset and never follows ``next``, so a ``next`` naming
  another host gets nothing from it; a redirect to another origin is not followed (the other server asked nothing).

Every server here is a real one on a socket; the client is this checkout's copy (``client`` fixture).
"""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.test_attack21e_client import SECRET, checkout_client

MIB = 1024 * 1024


class _Scripted(BaseHTTPRequestHandler):
    """Hands every request to its server's ``script(handler)``; records what reached it."""

    def _answer(self):
        self.server.asked.append({"method": self.command, "path": self.path,
                                  "authorization": self.headers.get("Authorization"),
                                  "accept_encoding": self.headers.get("Accept-Encoding")})
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            self.server.script(self)
        except (BrokenPipeError, ConnectionResetError):  # the client hung up: what it would not read
            pass
        finally:
            self.server.finished.set()

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815 -- the standard library's names

    def send(self, status: int, body: bytes = b"", headers: dict | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", "Content-Length": str(len(body)),
                            **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def client(monkeypatch):
    return checkout_client(monkeypatch)


def serving(handler, **fresh):
    """A ``serve`` fixture's body: ``start(script)`` runs a real HTTP server on a port of its own whose ``handler``
    answers each request with ``script`` (``server.asked`` for what it was asked; each of ``fresh`` a factory of
    one more attribute per server); every server started is shut down after the test."""
    servers = []

    def start(script):
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.script, server.asked = script, []
        for name, make in fresh.items():
            setattr(server, name, make())
        server.url = f"http://127.0.0.1:{server.server_port}"
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def serve():
    """``serve(script)``: a real HTTP server on a port of its own answering each request with ``script``."""
    yield from serving(_Scripted, finished=threading.Event, sent=int)


def _flood(total: int, *, status: int = 200, declared: int | None = None):
    """A script that sends ``total`` bytes of a JSON string (with a ``Content-Length`` of ``declared``, or
    none: the body ends with the connection), counting in ``server.sent`` what the socket took."""

    def script(handler):
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        if declared is not None:
            handler.send_header("Content-Length", str(declared))
        handler.end_headers()
        handler.wfile.write(b'{"pad": "')
        chunk, handler.server.sent = b"a" * MIB, 0
        while handler.server.sent < total:
            handler.wfile.write(chunk)
            handler.server.sent += len(chunk)

    return script


# ----------------------------------------------------------------------------- (a) an answer without end


@pytest.mark.parametrize("status, declared", [(200, None), (200, 1 << 40), (400, None), (503, None)],
                         ids=["200-until-closed", "200-content-length-1TiB", "400-until-closed", "503-until-closed"])
def test_an_answer_longer_than_the_limit_is_refused_naming_it_and_read_no_further(client, serve, status, declared):
    flood = serve(_flood(64 * MIB, status=status, declared=declared))
    retry = client.RetryPolicy(sleep=lambda seconds: None)  # a 503's retries: each answer closed unread
    with client.Client(flood.url, SECRET, max_response_bytes=64 * 1024, retry=retry) as kb, \
            pytest.raises(client.AnswerTooLarge) as raised:
        kb.documents_page()
    assert raised.value.code == "too_large" and raised.value.status == status
    assert raised.value.details == {"limit": 65536} and "65536 bytes" in raised.value.message
    assert flood.finished.wait(60)
    assert flood.sent < 32 * MIB, flood.sent  # the client hung up: the server could not send the rest

    async def the_async_client():
        async with client.AsyncClient(flood.url, SECRET, max_response_bytes=64 * 1024, retry=retry) as kb:
            await kb.search("x")

    flood.finished.clear()
    with pytest.raises(client.AnswerTooLarge):
        asyncio.run(the_async_client())
    assert flood.finished.wait(60)
    assert flood.sent < 32 * MIB, flood.sent


def test_the_default_limit_is_32_mib_and_the_retrievers_keep_it(client, serve):
    from bulkhead_client.langchain import BulkheadRetriever as LangChainRetriever
    from bulkhead_client.llama_index import BulkheadRetriever as LlamaIndexRetriever

    flood = serve(_flood(48 * MIB))
    with pytest.raises(client.AnswerTooLarge) as raised:
        LangChainRetriever(base_url=flood.url, token=SECRET).invoke("x")
    assert raised.value.details == {"limit": 32 * MIB}
    with pytest.raises(client.AnswerTooLarge):
        asyncio.run(LlamaIndexRetriever(flood.url, SECRET).aretrieve("x"))
    assert all(a["accept_encoding"] == "identity" for a in flood.asked)


def test_an_answer_of_the_limit_exactly_is_read(client, serve):
    empty = len(json.dumps({"count": 0, "next": None, "results": [], "pad": ""}))
    body = json.dumps({"count": 0, "next": None, "results": [], "pad": "a" * (4096 - empty)}).encode()
    assert len(body) == 4096
    server = serve(lambda h: h.send(200, body))
    with client.Client(server.url, SECRET, max_response_bytes=4096) as kb:
        assert kb.documents_page()["pad"] == "a" * (4096 - empty)
    with client.Client(server.url, SECRET, max_response_bytes=4095) as kb, pytest.raises(client.AnswerTooLarge):
        kb.documents_page()


def test_a_compressed_answer_is_never_decompressed(client, serve):
    """Forty MiB of JSON in a gzip body of some 40 KiB: decompressed by the HTTP library, it was read whole into
    memory whatever the limit. The client asks for no compression; a 2xx compressed anyway is unreadable."""
    bomb = gzip.compress(json.dumps({"count": 0, "next": None, "results": [], "pad": "a" * 40 * MIB}).encode())
    server = serve(lambda h: h.send(200, bomb, {"Content-Encoding": "gzip"}))
    with client.Client(server.url, SECRET) as kb, pytest.raises(client.MalformedAnswer) as raised:
        kb.documents_page()
    assert "compressed" in raised.value.message
    assert server.asked[0]["accept_encoding"] == "identity"
    error = gzip.compress(b'{"error": {"code": "invalid", "message": "bad", "details": {}}}')
    server.script = lambda h: h.send(400, error, {"Content-Encoding": "gzip"})
    with client.Client(server.url, SECRET) as kb, pytest.raises(client.ValidationError) as refused:
        kb.documents_page()
    assert refused.value.code == "http_error"  # its body unread, the status's error all the same


# ----------------------------------------------------------------------------- (b) what is sent again


def _unavailable(handler):
    handler.send(503, b'{"error": {"code": "service_unavailable", "message": "down", "details": {}}}',
                 {"Retry-After": "1"})


SENT_ONCE = {  # not idempotent: a 503 may come after the work was done
    "upload_document": lambda kb: kb.upload_document(b"# Notes\n", title="n.md"),
    "upload_text": lambda kb: kb.upload_document("# Notes\n", title="n.md"),
    "create_member": lambda kb: kb.create_member("a@example.org"),
    "update_member": lambda kb: kb.update_member(3, role="editor"),
    "create_group": lambda kb: kb.create_group("ops"),
    "rename_group": lambda kb: kb.rename_group(3, "Ops"),
    "create_token": lambda kb: kb.create_token(name="ci"),
    "set_section_access": lambda kb: kb.set_section_access("s1", access_level="restricted"),
    "create_index_version": lambda kb: kb.create_index_version(name="v2"),
    "build_index_version": lambda kb: kb.build_index_version("v2"),
    "activate_index_version": lambda kb: kb.activate_index_version("v2"),
    "update_audit_settings": lambda kb: kb.update_audit_settings(retention_days=30),
}
SENT_AGAIN = {  # idempotent methods, and the POSTs the API documents as safe to repeat
    "get_document": lambda kb: kb.get_document("d1"),
    "replace_document": lambda kb: kb.replace_document("d1", "# Notes\n"),
    "delete_document": lambda kb: kb.delete_document("d1"),
    "search": lambda kb: kb.search("x"),
    "preview_document": lambda kb: kb.preview_document("# Notes\n"),
    "revoke_token": lambda kb: kb.revoke_token(7),
}


@pytest.mark.parametrize("name", [*SENT_ONCE, *SENT_AGAIN])
def test_a_503_is_tried_again_only_for_a_request_that_may_be_sent_twice(client, serve, name):
    server = serve(_unavailable)
    call = {**SENT_ONCE, **SENT_AGAIN}[name]
    waits: list[float] = []
    with client.Client(server.url, SECRET, retry=client.RetryPolicy(sleep=waits.append)) as kb, \
            pytest.raises(client.Unavailable):
        call(kb)
    expected = 1 if name in SENT_ONCE else 4
    assert len(server.asked) == expected and len(waits) == expected - 1, server.asked

    async def the_async_client():
        async with client.AsyncClient(server.url, SECRET, retry=client.RetryPolicy(sleep=waits.append)) as kb:
            await call(kb)

    server.asked.clear()
    with pytest.raises(client.Unavailable):
        asyncio.run(the_async_client())
    assert len(server.asked) == expected


def test_a_lost_connection_is_tried_again_only_for_a_request_that_may_be_sent_twice(client, serve):
    def hang_up(handler):
        handler.close_connection = True
        handler.wfile.write(b"")  # nothing: the connection closes without an answer

    server = serve(hang_up)
    with client.Client(server.url, SECRET, retry=client.RetryPolicy(sleep=lambda s: None)) as kb:
        for call, expected in ((SENT_ONCE["upload_document"], 1), (SENT_ONCE["create_group"], 1),
                               (SENT_AGAIN["search"], 4), (SENT_AGAIN["get_document"], 4)):
            server.asked.clear()
            with pytest.raises(httpx.TransportError):  # the HTTP library's error, as before
                call(kb)
            assert len(server.asked) == expected


def test_a_429_is_tried_again_for_any_request_the_server_refused_before_any_work(client, serve):
    def throttled(handler):
        if len(handler.server.asked) < 3:
            handler.send(429, b'{"error": {"code": "throttled", "message": "slow", "details": {}}}',
                         {"Retry-After": "2"})
        else:
            handler.send(202, b'{"id": "d1", "job": {"id": "j1"}}')

    server = serve(throttled)
    waits: list[float] = []
    with client.Client(server.url, SECRET, retry=client.RetryPolicy(sleep=waits.append)) as kb:
        assert kb.upload_document(b"# Notes\n", title="n.md")["id"] == "d1"
    assert len(server.asked) == 3 and waits == [2.0, 2.0]


@pytest.mark.parametrize("header, wait", [
    ("100000", 30.0),  # capped at max_wait
    (format_datetime(datetime.now(UTC) + timedelta(hours=2), usegmt=True), 30.0),  # an HTTP date: capped
    (format_datetime(datetime.now(UTC) - timedelta(hours=2), usegmt=True), 0.0),  # a date gone by: at once
    ("-5", 0.0),
])
def test_retry_after_in_seconds_or_as_a_date_is_waited_up_to_the_cap(client, serve, header, wait):
    server = serve(lambda h: h.send(503, b"{}", {"Retry-After": header}))
    waits: list[float] = []
    with client.Client(server.url, SECRET, retry=client.RetryPolicy(max_retries=2, sleep=waits.append)) as kb, \
            pytest.raises(client.Unavailable):
        kb.get_document("d1")
    assert waits == [wait, wait] and len(server.asked) == 3


@pytest.mark.parametrize("policy", [{"max_retries": -1}, {"max_retries": 2.5}, {"max_retries": True},
                                    {"backoff": float("nan")}, {"max_wait": float("inf")}, {"max_wait": -1}])
def test_a_retry_policy_without_bounds_is_refused(client, policy):
    with pytest.raises(ValueError):
        client.RetryPolicy(**policy)


# ----------------------------------------------------------------------------- (c) walks that would not end


def _pages(answer):
    """A script answering ``/api/v1/documents/`` with ``answer(offset, limit)`` as JSON."""

    def script(handler):
        query = parse_qs(urlsplit(handler.path).query)
        offset, limit = int(query.get("offset", ["0"])[0]), int(query.get("limit", ["50"])[0])
        handler.send(200, json.dumps(answer(offset, limit)).encode())

    return script


def _page(offset, limit, *, next_link="http://127.0.0.1/api/v1/documents/?offset=x", count=10**9):
    return {"count": count, "next": next_link, "previous": None,
            "results": [{"id": f"d{i}"} for i in range(offset, offset + limit)]}


@pytest.mark.parametrize("answer", [
    lambda offset, limit: _page(0, limit),  # the offset ignored: the first page for ever
    lambda offset, limit: _page((offset // limit) % 2 * limit, limit),  # two pages in turn
    lambda offset, limit: _page(offset % 30, limit),  # round after three pages
], ids=["same-page", "two-pages-in-turn", "three-page-cycle"])
def test_a_walk_never_reads_a_page_twice(client, serve, answer):
    server = serve(_pages(answer))
    with client.Client(server.url, SECRET) as kb:
        walked = []
        with pytest.raises(client.PaginationError) as raised:
            for document in kb.iter_documents(page_size=10):
                walked.append(document["id"])
    assert raised.value.code == "page_repeated" and raised.value.details["offset"] == len(walked)
    assert len(walked) == len(set(walked))  # nothing given twice
    assert len(server.asked) <= 4

    async def the_async_walk():
        async with client.AsyncClient(server.url, SECRET) as kb:
            return [d["id"] async for d in kb.iter_documents(page_size=10)]

    with pytest.raises(client.PaginationError):
        asyncio.run(the_async_walk())


def test_a_walk_reads_at_most_max_pages(client, serve):
    # a new page at every offset, with a next one up to page 50 (a walk without the bound ends there, unbounded)
    server = serve(_pages(lambda offset, limit: _page(offset, limit, next_link=None if offset >= 49 * limit else "x")))
    with client.Client(server.url, SECRET, max_pages=7) as kb:
        walked = []
        with pytest.raises(client.PaginationError) as raised:
            for member in kb.iter_members(page_size=3):
                walked.append(member["id"])
    assert raised.value.code == "too_many_pages" and raised.value.details == {"max_pages": 7}
    assert len(server.asked) == 7 and walked == [f"d{i}" for i in range(21)]

    async def the_async_walk():
        async with client.AsyncClient(server.url, SECRET, max_pages=2) as kb:
            return [d async for d in kb.iter_audit(page_size=5)]

    with pytest.raises(client.PaginationError):
        asyncio.run(the_async_walk())
    assert client.Client(server.url, SECRET).max_pages == 10_000
    for wrong in (0, -1, 2.5, True):
        with pytest.raises(ValueError):
            client.Client(server.url, SECRET, max_pages=wrong)
        with pytest.raises(ValueError):
            client.Client(server.url, SECRET, max_response_bytes=wrong)


def test_a_next_link_to_another_host_gets_nothing_and_the_walk_goes_by_offset(client, serve):
    """Kept: the walk never follows ``next`` -- whatever host, scheme or port it names, the token stays."""
    elsewhere = serve(lambda h: h.send(200, b'{"count": 0, "next": null, "results": []}'))
    for link in (f"{elsewhere.url}/api/v1/documents/?limit=10&offset=10", "https://kb.example/api/v1/documents/",
                 f"http://localhost:{elsewhere.server_port}/api/v1/documents/?offset=10"):
        server = serve(_pages(lambda offset, limit, link=link: _page(
            offset, min(limit, 25 - offset), next_link=link if offset + limit < 25 else None, count=25)))
        with client.Client(server.url, SECRET) as kb:
            assert [d["id"] for d in kb.iter_documents(page_size=10)] == [f"d{i}" for i in range(25)]
        assert [urlsplit(a["path"]).query for a in server.asked] == [
            "limit=10&offset=0", "limit=10&offset=10", "limit=10&offset=20"]
    assert elsewhere.asked == []


@pytest.mark.parametrize("page", [
    {"count": 1, "next": None, "results": "abc"}, {"count": 1, "next": 7, "results": []}, ["d1"],
    {"count": 1, "next": None}, {"count": 1, "next": None, "results": {"id": "d1"}},
], ids=json.dumps)
def test_a_page_not_of_the_apis_shape_is_malformed(client, serve, page):
    server = serve(lambda h: h.send(200, json.dumps(page).encode()))
    with client.Client(server.url, SECRET) as kb, pytest.raises(client.MalformedAnswer) as raised:
        list(kb.iter_groups())
    assert "offset 0" in raised.value.message


@pytest.mark.parametrize("job", [["queued"], {"stage": "parse"}, {"status": 3}, None])
def test_a_job_not_of_the_apis_shape_is_malformed_while_waited_for(client, serve, job):
    server = serve(lambda h: h.send(200, json.dumps(job).encode()))
    with client.Client(server.url, SECRET) as kb, pytest.raises(client.MalformedAnswer):
        kb.wait_for_job("j1", timeout=0, poll=0)


# ----------------------------------------------------------------------------- a redirect to another origin


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_origin_is_never_followed(client, serve, status):
    """Kept: the client follows no redirect, so another host, port or scheme asks nothing and sees no token."""
    elsewhere = serve(lambda h: h.send(200, b'{"contexts": [], "results": []}'))
    for target in (elsewhere.url, f"http://localhost:{elsewhere.server_port}"):
        moved = serve(lambda h, target=target: h.send(status, b"", {"Location": f"{target}{h.path}"}))
        with client.Client(moved.url, SECRET) as kb:
            for call in (SENT_AGAIN["get_document"], SENT_AGAIN["search"], SENT_ONCE["upload_document"]):
                with pytest.raises(client.BulkheadError) as raised:
                    call(kb)
                assert raised.value.code == "redirect" and raised.value.details["location"].startswith(target)
        assert len(moved.asked) == 3 and all(a["authorization"] == f"Token {SECRET}" for a in moved.asked)
    assert elsewhere.asked == []
