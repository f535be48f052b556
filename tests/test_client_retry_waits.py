"""The Python client: an error's ``retry_after`` and the retrievers' retry policy (twenty-fifth fixes session).

* An error's ``retry_after`` read ``Retry-After`` as a number of seconds only: an HTTP date (RFC 9110, 10.2.3),
  which the retries themselves already waited, was None on the ``RateLimited`` raised after them; a negative
  number was a negative wait (``time.sleep`` raises on it), a huge one a wait of centuries. Now both forms are
  read, never below 0 and at most :data:`bulkhead_client.errors.MAX_RETRY_AFTER` (a day).

Every server is a real one on a socket (``tests.test_attack22_client.serving``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from tests.test_attack21e_client import checkout_client
from tests.test_attack22_client import serving
from tests.test_client_deadline_proxies import FakeClock, _both, _Recorded

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
    (_date(timedelta(hours=2)), 7000.0, 7200.0),  # an HTTP date two hours on (read a little later: a bound)
    (_date(-timedelta(hours=2)), 0.0, 0.0),  # a date gone by: at once
    ("-5", 0.0, 0.0),
    ("1e300", 86_400.0, 86_400.0),  # at most a day
    (_date(timedelta(days=3650)), 86_400.0, 86_400.0),
    ("Fri, 31 Dec 9999 23:59:59 GMT", 86_400.0, 86_400.0),
], ids=["seconds", "date", "date-gone-by", "negative", "huge", "date-in-ten-years", "year-9999"])
def test_an_error_s_retry_after_reads_seconds_or_a_date_within_bounds(client, serve, header, low, high):
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
