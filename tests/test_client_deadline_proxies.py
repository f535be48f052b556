"""The Python client: a deadline for a whole call, a proxy's 502 and 504, and the retrievers' limits
(twenty-fourth client session).

* ``timeout`` bounds each connect, read and write; a call tried again (a 429 with ``Retry-After``, a 503, a lost
  connection) could take ``max_retries`` x (timeout + wait) in all. ``RetryPolicy(total_timeout=...)`` now bounds
  a call: no wait is waited that would reach the deadline (a ``Retry-After`` beyond it is the server's error at
  once), and each try's timeouts are cut to what is left of it.
* A 502 or a 504 -- nginx in front of a restarting gunicorn -- was no retry and a bare ``BulkheadError``: now they
  are tried again as a 503 is, where the request may be sent twice (never an upload, a creation or a PATCH), and
  raised as ``Unavailable``; the proxy's HTML page is not passed on, and no error's code or message is longer than
  the client keeps (``MAX_CODE``, ``MAX_MESSAGE``), whoever wrote it.
* The retrievers passed any ``top_k`` and budget to the server (a 400 at the first query; ``True`` as 1, ``"5"``
  as 5 in the LangChain one): now each is a whole number within the search API's bounds when the retriever is
  made, and again before each search.

Every server is a real one on a socket, but for the per-try timeouts (httpx's ``MockTransport``, which sees the
timeouts each request carries); the clock is a fake one that the policy's ``sleep`` moves on: no test waits.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest

from tests.test_attack21e_client import SECRET, checkout_client
from tests.test_attack22_client import SENT_AGAIN, SENT_ONCE, _Scripted, serving

PROXY_PAGE = (b"<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
              b"</center>\r\n<hr><center>nginx/1.24.0</center>\r\n</body>\r\n</html>\r\n" + b"<!-- pad -->\r\n" * 40)
SPOTLIT = json.dumps({"results": [], "contexts": [], "spotlight": {"boundary": "ab12", "system_prompt": "data"}})


class _Recorded(_Scripted):
    """:class:`_Scripted`, keeping each request's JSON body in what it records."""

    def _answer(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.asked.append({"method": self.command, "path": self.path,
                                  "json": json.loads(body) if body.startswith(b"{") else None})
        try:
            self.server.script(self)
        except (BrokenPipeError, ConnectionResetError):
            pass

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer  # noqa: N815 -- the standard library's names


@pytest.fixture
def client(monkeypatch):
    return checkout_client(monkeypatch)


@pytest.fixture
def serve():
    """``serve(script)``: a real HTTP server on a port of its own answering each request with ``script``."""
    yield from serving(_Recorded)


class FakeClock:
    """A clock that only ``sleep`` (and a script standing for a slow try) moves on; ``waits`` what was slept."""

    def __init__(self):
        self.now, self.waits = 5000.0, []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds

    def policy(self, client, **bounds):
        return client.RetryPolicy(sleep=self.sleep, clock=self.time, **bounds)


def _both(client, url: str, policy, call: Callable, **options):
    """``call(kb)`` with the sync and the async client: what each raised (or answered)."""
    outcomes = []
    try:
        with client.Client(url, SECRET, retry=policy, **options) as kb:
            outcomes.append(call(kb))
    except Exception as error:  # noqa: BLE001 -- compared by the test
        outcomes.append(error)

    async def the_async_client():
        async with client.AsyncClient(url, SECRET, retry=policy, **options) as kb:
            return await call(kb)

    try:
        outcomes.append(asyncio.run(the_async_client()))
    except Exception as error:  # noqa: BLE001
        outcomes.append(error)
    return outcomes


# ----------------------------------------------------------------------------- (a) a deadline for a whole call


def test_no_wait_is_waited_that_would_reach_the_deadline(client, serve):
    """Retry-After 10, a deadline of 25 s: tries at 0, 10 and 20 s, then the third wait would end at 30 -- the
    503 is raised at once, never slept on (five retries without the deadline)."""
    server = serve(lambda h: h.send(503, b'{"error": {"code": "unavailable", "message": "down", "details": {}}}',
                                    {"Retry-After": "10"}))
    clock = FakeClock()
    policy = clock.policy(client, max_retries=5, total_timeout=25)
    for outcome in _both(client, server.url, policy, lambda kb: kb.get_document("d1")):
        assert isinstance(outcome, client.Unavailable) and outcome.code == "unavailable"
    assert clock.waits == [10.0, 10.0] * 2 and len(server.asked) == 6


@pytest.mark.parametrize("name", ["search", "upload_document"])
def test_a_retry_after_beyond_the_deadline_is_the_servers_error_at_once(client, serve, name):
    server = serve(lambda h: h.send(429, b'{"error": {"code": "throttled", "message": "slow", "details": {}}}',
                                    {"Retry-After": "100"}))
    clock = FakeClock()
    policy = clock.policy(client, max_wait=120, total_timeout=60)
    for outcome in _both(client, server.url, policy, {**SENT_ONCE, **SENT_AGAIN}[name]):
        assert isinstance(outcome, client.RateLimited) and outcome.retry_after == 100.0
        assert outcome.code == "throttled"
    assert clock.waits == [] and len(server.asked) == 2  # one try each, no sleep


def test_a_lost_connection_is_not_tried_again_past_the_deadline(client, serve):
    def hang_up(handler):
        handler.close_connection = True

    server = serve(hang_up)
    clock = FakeClock()
    policy = clock.policy(client, backoff=4, total_timeout=10)  # waits 4, then 8: 4 + 8 reaches 10
    for outcome in _both(client, server.url, policy, SENT_AGAIN["search"]):
        assert isinstance(outcome, httpx.TransportError)
    assert clock.waits == [4.0, 4.0] and len(server.asked) == 4


def test_the_time_a_try_takes_counts_against_the_deadline(client, serve):
    clock = FakeClock()

    def slow_then_unavailable(handler):
        clock.now += 25  # the try took 25 s
        handler.send(503, b"{}", {"Retry-After": "1"})

    server = serve(slow_then_unavailable)
    policy = clock.policy(client, max_retries=5, total_timeout=30)
    for outcome in _both(client, server.url, policy, SENT_AGAIN["get_document"]):
        assert isinstance(outcome, client.Unavailable)
    assert clock.waits == [1.0, 1.0] and len(server.asked) == 4  # at 25 s a wait of 1; at 51 s none


def test_each_try_s_timeouts_are_cut_to_what_is_left_of_the_deadline(client):
    clock, seen = FakeClock(), []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        clock.now += 15
        if len(seen) % 2:
            return httpx.Response(503, headers={"Retry-After": "1"}, stream=httpx.ByteStream(b"{}"))
        return httpx.Response(200, stream=httpx.ByteStream(b'{"id": "d1"}'))

    transport = httpx.MockTransport(handler)
    policy = clock.policy(client, total_timeout=20)
    outcomes = _both(client, "http://127.0.0.1:9", policy, SENT_AGAIN["get_document"], transport=transport,
                     timeout=60)
    assert outcomes == [{"id": "d1"}] * 2
    first = {"connect": 20.0, "read": 20.0, "write": 20.0, "pool": 20.0}
    then = {"connect": 4.0, "read": 4.0, "write": 4.0, "pool": 4.0}  # 20 - 15 (the try) - 1 (the wait)
    assert seen == [first, then, first, then]

    seen.clear()
    assert _both(client, "http://127.0.0.1:9", clock.policy(client), SENT_AGAIN["get_document"],
                 transport=transport, timeout=60) == [{"id": "d1"}] * 2
    assert seen[0] == {"connect": 60.0, "read": 60.0, "write": 60.0, "pool": 60.0}  # no deadline: the client's


@pytest.mark.parametrize("total", [0, -1, float("nan"), float("inf"), True, "30"])
def test_a_deadline_without_bounds_is_refused(client, total):
    with pytest.raises(ValueError, match="total_timeout"):
        client.RetryPolicy(total_timeout=total)


# ----------------------------------------------------------------------------- (b) a proxy's 502 and 504


@pytest.mark.parametrize("name", [*SENT_ONCE, *SENT_AGAIN])
@pytest.mark.parametrize("status", [502, 504])
def test_a_proxy_s_502_or_504_is_tried_again_only_where_it_may_be_sent_twice(client, serve, status, name):
    server = serve(lambda h: h.send(status, PROXY_PAGE, {"Content-Type": "text/html"}))
    clock = FakeClock()
    for outcome in _both(client, server.url, clock.policy(client), {**SENT_ONCE, **SENT_AGAIN}[name]):
        assert isinstance(outcome, client.Unavailable) and outcome.status == status
        assert outcome.code == "http_error" and outcome.message in ("Bad Gateway", "Gateway Timeout")
        assert "<" not in str(outcome) and outcome.details == {}
    assert len(server.asked) == (2 if name in SENT_ONCE else 8), server.asked


def test_a_restart_behind_the_proxy_is_waited_out(client, serve):
    def restarting(handler):
        statuses = (502, 504, 200, 502, 504, 200)
        status = statuses[len(handler.server.asked) - 1]
        handler.send(status, SPOTLIT.encode() if status == 200 else PROXY_PAGE)

    server = serve(restarting)
    clock = FakeClock()
    outcomes = _both(client, server.url, clock.policy(client), lambda kb: kb.search("x", top_k=3))
    assert [o["contexts"] for o in outcomes] == [[], []]
    assert clock.waits == [0.5, 1.0] * 2  # the back-off: a proxy gives no Retry-After


def test_an_error_s_code_and_message_are_bounded_whoever_wrote_them(client, serve):
    huge = {"error": {"code": "c" * 100_000, "message": "<html>" + "m" * 1_000_000, "details": "<html>"}}

    def answer(handler):
        if handler.path.endswith("/reason/"):
            handler.send_response(502, "<html>" + "r" * 2000)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
        else:
            handler.send(502, json.dumps(huge).encode())

    server = serve(answer)
    clock = FakeClock()
    policy = clock.policy(client, max_retries=0)
    for outcome in _both(client, server.url, policy, lambda kb: kb.get_document("d1")):
        assert isinstance(outcome, client.Unavailable)
        assert len(outcome.code) == 100 and len(outcome.message) == 1000 and outcome.message.endswith("…")
        assert outcome.details == {}
    for outcome in _both(client, server.url, policy, lambda kb: kb.get_document("reason")):
        assert isinstance(outcome, client.Unavailable) and outcome.message == "Bad Gateway"  # the status's, not its


# ----------------------------------------------------------------------------- (c) the retrievers' limits


def _retrievers():
    from bulkhead_client.langchain import BulkheadRetriever as LangChainRetriever
    from bulkhead_client.llama_index import BulkheadRetriever as LlamaIndexRetriever

    def langchain(url, top_k=5, options=None):
        return LangChainRetriever(base_url=url, token=SECRET, top_k=top_k, search_options=options or {})

    def llama_index(url, top_k=5, options=None):
        return LlamaIndexRetriever(url, SECRET, top_k=top_k, **(options or {}))

    return {"langchain": langchain, "llama_index": llama_index}


def _searches(retriever) -> list[Callable]:
    if hasattr(retriever, "invoke"):
        return [lambda: retriever.invoke("x"), lambda: asyncio.run(retriever.ainvoke("x"))]
    return [lambda: retriever.retrieve("x"), lambda: asyncio.run(retriever.aretrieve("x"))]


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
@pytest.mark.parametrize("top_k, options", [
    (0, {}), (-1, {}), (101, {}), (True, {}), (2.5, {}), ("5", {}), (None, {}),
    (5, {"budget": 0}), (5, {"budget": 100_001}), (5, {"context_token_budget": True}), (5, {"budget": "2000"}),
    (5, {"context_token_budget": None}), (5, {"max_contexts": 101}), (5, {"max_contexts": 0}),
    (5, {"budget": 10, "context_token_budget": 10}),
])
def test_a_retriever_refuses_a_limit_outside_the_apis_bounds_when_made(client, serve, framework, top_k, options):
    server = serve(lambda h: h.send(200, SPOTLIT.encode()))
    with pytest.raises(ValueError, match="top_k|budget|max_contexts"):
        _retrievers()[framework](server.url, top_k, options)
    assert server.asked == []


def test_the_langchain_retriever_s_top_k_is_its_own_not_a_search_option(client):
    """``search_options={"top_k": 3}`` crashed each search with a TypeError (top_k given twice)."""
    with pytest.raises(ValueError, match="top_k is the retriever's own argument"):
        _retrievers()["langchain"]("http://127.0.0.1:9", 5, {"top_k": 3})


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
@pytest.mark.parametrize("change", [
    lambda r: setattr(r, "top_k", 0),
    lambda r: setattr(r, "top_k", 1000),
    lambda r: r.search_options.update(budget=10**6),
], ids=["top_k-0", "top_k-1000", "budget-1e6"])
def test_a_retriever_changed_after_it_was_made_is_checked_before_each_search(client, serve, framework, change):
    server = serve(lambda h: h.send(200, SPOTLIT.encode()))
    retriever = _retrievers()[framework](server.url)
    change(retriever)
    for search in _searches(retriever):
        with pytest.raises(ValueError, match="top_k|budget"):
            search()
    assert server.asked == []


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_a_retriever_s_limits_at_the_bounds_are_sent_as_given(client, serve, framework):
    server = serve(lambda h: h.send(200, SPOTLIT.encode()))
    for top_k, options in ((1, {"budget": 1, "max_contexts": 1}), (100, {"budget": 100_000, "max_contexts": 100}),
                           (7, {"context_token_budget": 300})):
        server.asked.clear()
        for search in _searches(_retrievers()[framework](server.url, top_k, options)):
            assert search() == []
        sent = [a["json"] for a in server.asked]
        budget = options.get("budget", options.get("context_token_budget"))
        assert [(s["top_k"], s["context_token_budget"]) for s in sent] == [(top_k, budget)] * 2


def test_the_retrievers_bounds_are_the_search_apis(client):
    from bulkhead_client import _retrieval

    from kb.serializers import SearchInputSerializer

    fields = SearchInputSerializer().fields
    for name, (low, high) in _retrieval.LIMITS.items():
        field = fields["context_token_budget" if name == "budget" else name]
        assert (field.min_value, field.max_value) == (low, high), name
