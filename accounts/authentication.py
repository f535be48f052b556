"""``Authorization: Token <key>`` authentication and a per-token throttle for DRF."""

from __future__ import annotations

import logging

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from rest_framework import authentication, exceptions
from rest_framework.throttling import SimpleRateThrottle

from accounts.services import api_token_authenticate

logger = logging.getLogger(__name__)


class TokenAuthentication(authentication.BaseAuthentication):
    keyword = "Token"

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header; use 'Token <key>'.")
        try:
            key = header[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Invalid token.") from None
        token = api_token_authenticate(key)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return token.membership.user, token

    def authenticate_header(self, request):
        return self.keyword


class TokenRateThrottle(SimpleRateThrottle):
    """Rate limit per API token (or per session user / client address).

    The counts live in the cache (Redis). While it cannot be reached the request is let through,
    uncounted, with a warning: the counts are all Redis holds for the API, and refusing every
    request of every tenant over them would turn a Redis restart into an outage (it answered 500
    before; docs/reliability.md)."""

    scope = "token"

    def allow_request(self, request, view) -> bool:
        try:
            return super().allow_request(request, view)
        except (RedisConnectionError, RedisTimeoutError) as exc:
            logger.warning("throttle counts unavailable (%s); request let through uncounted", type(exc).__name__)
            return True

    def get_cache_key(self, request, view):
        token = getattr(request, "auth", None)
        if token is not None and hasattr(token, "pk"):
            ident = f"token-{token.pk}"
        elif request.user is not None and getattr(request.user, "is_authenticated", False):
            ident = f"user-{request.user.pk}"
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
