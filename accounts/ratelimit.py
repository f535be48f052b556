"""Fixed-window counters in the cache (Redis), for the public pages that send e-mail.

Unlike the API's throttle, these fail closed: while the counts cannot be kept, the request is
refused (``RateLimited``), because what they guard (mail to a person's inbox) has no other brake.
"""

from __future__ import annotations

import hashlib
import logging
import time

from django.core.cache import cache

from accounts.errors import ApplicationError

logger = logging.getLogger(__name__)


class RateLimited(ApplicationError):
    status_code = 429
    default_code = "rate_limited"


def rate_hit(*, scope: str, ident: str, limit: int, window_seconds: int) -> None:
    """Count one hit of ``ident`` in ``scope``; raise ``RateLimited`` past ``limit`` in the current
    window (the hit that goes past is counted too). ``ident`` is hashed: no address is kept in clear."""
    window = int(time.time()) // window_seconds
    digest = hashlib.sha256(ident.encode()).hexdigest()[:32]
    key = f"rate:{scope}:{window}:{digest}"
    try:
        cache.add(key, 0, timeout=window_seconds + 60)
        count = cache.incr(key)
    except Exception as exc:  # noqa: BLE001 -- Redis down or refusing: closed
        logger.warning("rate counts unavailable (%s); %s refused", type(exc).__name__, scope)
        raise RateLimited("Too many requests; try again later.") from None
    if count > limit:
        raise RateLimited("Too many requests; try again later.")
