"""The Python client: a proxy's 502 and 504, and the retrievers' limits (twenty-fourth client session).

* A 502 or a 504 -- nginx in front of a restarting gunicorn -- was no retry and a bare ``BulkheadError``: now they
  are tried again as a 503 is, where the request may be sent twice (never an upload, a creation or a PATCH), and
  raised as ``Unavailable``; the proxy's HTML page is not passed on, and no error's code or message is longer than
  the client keeps (``MAX_CODE``, ``MAX_MESSAGE``), whoever wrote it.
* The retrievers passed any ``top_k`` and budget to the server (a 400 at the first query; ``True`` as 1, ``"5"``
  as 5 in the LangChain one): now each is a whole number within the search API's bounds when the retriever is
  made, and again before each search.

Every server is a real one on a socket; the clock is a fake one that the policy's ``sleep`` moves on: no test
waits.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable

import pytest

from tests.test_attack21e_client import SECRET, checkout_client
from tests.test_attack22_client import SENT_AGAIN, SENT_ONCE, _Scripted

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
    from http.server import ThreadingHTTPServer

    servers = []

    def start(script):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorded)
        server.script, server.asked = script, []
        server.url = f"http://127.0.0.1:{server.server_port}"
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


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
        return client.RetryPolicy(sleep=self.sleep, **bounds)


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
