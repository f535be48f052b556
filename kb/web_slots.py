"""At most a few of one tenant's costly requests in the web server at once (upload previews, evaluations).

Each such request is bounded on its own (``BULKHEAD_PREVIEW_SECONDS``, ``BULKHEAD_EVALUATION_SECONDS``),
but a client sending several at once would hold that many web threads -- 8 of them (2 gunicorn
workers x 4 threads) are every tenant's console and API (found by the third attack on the demo:
"a handful of such POSTs would take every web thread"). So a tenant holds at most
``BULKHEAD_PREVIEWS_PER_TENANT`` (2) previews and ``BULKHEAD_EVALUATIONS_PER_TENANT`` (1) evaluation at
once, across every web process; one more answers 429 ``busy`` with ``Retry-After``.

The slots are a semaphore in the cache's Redis: a sorted set per tenant and kind whose members expire
on their own (a web process killed while it holds one frees it after ``seconds``). When Redis cannot
be reached the request goes ahead uncounted (logged), as the API throttle does: its own time budget
still holds.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from accounts.errors import ApplicationError

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5


class Busy(ApplicationError):
    """This tenant already has as many of these requests running as it may."""

    code = "busy"
    status_code = 429
    retry_after = RETRY_AFTER_SECONDS


_CLIENT = None
_CLIENT_URL = ""
_CLIENT_LOCK = threading.Lock()


def _client():
    global _CLIENT, _CLIENT_URL
    import redis
    from django.conf import settings

    url = settings.CACHES["default"]["LOCATION"]
    with _CLIENT_LOCK:
        if _CLIENT is None or _CLIENT_URL != url:
            _CLIENT = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)
            _CLIENT_URL = url
        return _CLIENT


@contextmanager
def tenant_slot(kind: str, tenant_id: int, *, limit: int, seconds: float, what: str) -> Iterator[None]:
    """Hold one of ``limit`` slots of ``kind`` for ``tenant_id`` inside the block, or raise :class:`Busy`
    (``what`` names the request in its message). A slot lives at most ``seconds``."""
    from redis.exceptions import RedisError

    key = f"bulkhead:slots:{kind}:{int(tenant_id)}"
    token = uuid.uuid4().hex
    now = time.time()
    try:
        client = _client()
        with client.pipeline() as pipe:  # MULTI/EXEC: the count includes this slot
            pipe.zremrangebyscore(key, "-inf", now)
            pipe.zadd(key, {token: now + seconds})
            pipe.zcard(key)
            pipe.expire(key, int(seconds) + 60)
            _, _, taken, _ = pipe.execute()
    except RedisError as exc:
        logger.warning("%s slots unavailable (%s): running it uncounted", kind, type(exc).__name__)
        yield
        return
    if taken > limit:
        _release(client, key, token)
        raise Busy(f"{limit} {what}{'s' if limit != 1 else ''} of this tenant {'are' if limit != 1 else 'is'} "
                   f"running already; try again in a few seconds", details={"limit": limit})
    try:
        yield
    finally:
        _release(client, key, token)


def _release(client, key: str, token: str) -> None:
    from redis.exceptions import RedisError

    try:
        client.zrem(key, token)
    except RedisError:  # it expires by itself
        pass
