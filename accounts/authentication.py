"""``Authorization: Token <key>`` authentication and a per-token throttle for DRF."""

from __future__ import annotations

from rest_framework import authentication, exceptions
from rest_framework.throttling import SimpleRateThrottle

from accounts.services import api_token_authenticate


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
    """Rate limit per API token (or per session user / client address)."""

    scope = "token"

    def get_cache_key(self, request, view):
        token = getattr(request, "auth", None)
        if token is not None and hasattr(token, "pk"):
            ident = f"token-{token.pk}"
        elif request.user is not None and getattr(request.user, "is_authenticated", False):
            ident = f"user-{request.user.pk}"
        else:
            ident = self.get_ident(request)
        return self.cache_format % {"scope": self.scope, "ident": ident}
