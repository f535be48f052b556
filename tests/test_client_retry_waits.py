"""The Python client: an error's ``retry_after`` and the retrievers' retry policy (twenty-fifth fixes session).

* An error's ``retry_after`` read ``Retry-After`` as a number of seconds only: an HTTP date (RFC 9110, 10.2.3),
  which the retries themselves already waited, was None on the ``RateLimited`` raised after them; a negative
  number was a negative wait (``time.sleep`` raises on it), a huge one a wait of centuries. Now both forms are
  read, never below 0 and at most :data:`bulkhead_client.errors.MAX_RETRY_AFTER` (a day).
* The LangChain and LlamaIndex retrievers made their clients with the default ``RetryPolicy``: a caller could not
  bound a search's retries or give it a deadline (``total_timeout``). Now both take ``retry`` (a ``RetryPolicy``,
  or None: the default), anything else a ``ValueError`` naming it when the retriever is made.

Every server is a real one on a socket (``tests.test_attack22_client.serving``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tests.test_attack21e_client import SECRET, checkout_client
from tests.test_attack22_client import serving
from tests.test_client_deadline_proxies import SPOTLIT, FakeClock, _both, _Recorded, _searches

THROTTLED = b'{"error": {"code": "throttled", "message": "slow", "details": {}}}'


@pytest.fixture
def client(monkeypatch):
    return checkout_client(monkeypatch)


@pytest.fixture
def serve():
    """``serve(script)``: a real HTTP server on a port of its own answering each request with ``script``."""
    yield from serving(_Recorded)


def _date(delta: timedelta) -> str:
    return format_datetime(datetime.now(UTC) + delta, usegmt=True)


@pytest.mark.parametrize("header, low, high", [
    ("120", 120.0, 120.0),
    (timedelta(hours=2), 7000.0, 7200.0),  # an HTTP date two hours on (read a little later: a bound)
    (-timedelta(hours=2), 0.0, 0.0),  # a date gone by: at once
    ("-5", 0.0, 0.0),
    ("1e300", 86_400.0, 86_400.0),  # at most a day
    (timedelta(days=3650), 86_400.0, 86_400.0),
    ("Fri, 31 Dec 9999 23:59:59 GMT", 86_400.0, 86_400.0),
], ids=["seconds", "date", "date-gone-by", "negative", "huge", "date-in-ten-years", "year-9999"])
def test_an_error_s_retry_after_reads_seconds_or_a_date_within_bounds(client, serve, header, low, high):
    if isinstance(header, timedelta):  # a date from now, made when the test runs (not when it is collected)
        header = _date(header)
    server = serve(lambda h: h.send(429, THROTTLED, {"Retry-After": header}))
    clock = FakeClock()
    for outcome in _both(client, server.url, clock.policy(client, max_retries=0), lambda kb: kb.get_document("d1")):
        assert isinstance(outcome, client.RateLimited), outcome
        assert low <= outcome.retry_after <= high, (header, outcome.retry_after)


@pytest.mark.parametrize("header", ["soon", "nan", "inf", "-inf", "Fri, 32 Foo 2026 25:61:00 GMT", ""])
def test_a_retry_after_that_is_neither_form_is_none(client, serve, header):
    server = serve(lambda h: h.send(429, THROTTLED, {"Retry-After": header}))
    clock = FakeClock()
    for outcome in _both(client, server.url, clock.policy(client, max_retries=0), lambda kb: kb.get_document("d1")):
        assert isinstance(outcome, client.RateLimited) and outcome.retry_after is None, outcome


def _retriever(framework: str, url: str, **options):
    if framework == "langchain":
        from bulkhead_client.langchain import BulkheadRetriever

        return BulkheadRetriever(base_url=url, token=SECRET, **options)
    from bulkhead_client.llama_index import BulkheadRetriever

    return BulkheadRetriever(url, SECRET, **options)


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_a_retriever_searches_under_the_retry_policy_it_is_given(client, serve, framework):
    server = serve(lambda h: h.send(503, b'{"error": {"code": "unavailable", "message": "down", "details": {}}}'))
    clock = FakeClock()
    policy = clock.policy(client, max_retries=2)
    retriever = _retriever(framework, server.url, retry=policy)
    assert retriever.retry is policy
    for search in _searches(retriever):
        with pytest.raises(client.Unavailable):
            search()
    assert clock.waits == [0.5, 1.0] * 2 and len(server.asked) == 6  # the policy's tries, sync and async


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
def test_a_retriever_without_a_retry_policy_has_the_clients_default(client, serve, framework):
    server = serve(lambda h: h.send(200, SPOTLIT.encode()))
    for retriever in (_retriever(framework, server.url), _retriever(framework, server.url, retry=None)):
        for search in _searches(retriever):
            assert search() == []
    assert len(server.asked) == 4 and not any("retry" in asked["json"] for asked in server.asked)


@pytest.mark.parametrize("framework", ["langchain", "llama_index"])
@pytest.mark.parametrize("retry", [3, "3", True, {"max_retries": 1}], ids=["int", "str", "bool", "dict"])
def test_a_retry_that_is_no_retry_policy_is_refused_when_the_retriever_is_made(client, serve, framework, retry):
    server = serve(lambda h: h.send(200, SPOTLIT.encode()))
    with pytest.raises(ValueError, match="retry"):
        _retriever(framework, server.url, retry=retry)
    assert server.asked == []
