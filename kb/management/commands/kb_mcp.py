"""The MCP server over stdio, for a local agent: ``BULKHEAD_TOKEN=<API token> manage.py kb_mcp``.

The token is the API's (``manage.py kb_user create`` or ``POST /api/v1/tokens/``); the server acts as
its membership. It is checked at start (a wrong one exits with an error before any message) and again
on every call, with the API's per-token throttle: a revoked token or a deactivated member is refused
on the next call. Citations link to the console at ``BULKHEAD_URL`` (default: this server's
``http://BULKHEAD_HOST:BULKHEAD_PORT``). stdout carries the protocol alone; logs go to stderr.
"""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from accounts.authentication import TokenRateThrottle
from accounts.models import Membership
from accounts.services import api_token_authenticate


class _Throttle(TokenRateThrottle):
    def wait_message(self) -> str:
        wait = self.wait()
        return f"throttled: too many calls with this token; try again in {int(wait or 1)} s"


def token_member(key: str) -> Membership:
    """The token's membership, checked now (as the API checks each request), and its call counted.

    First of every call, on the calls' thread: its database connection is checked as a web request's is at its
    start (``close_old_connections``: closed when broken or past ``CONN_MAX_AGE``, and the next query checks it).
    That thread lives as long as the server and no request starts or ends on it, so without this a connection
    PostgreSQL dropped (a restart, an idle timeout, ``pg_terminate_backend``) failed every later call."""
    from django.db import close_old_connections
    from mcp.server.mcpserver.exceptions import ToolError

    close_old_connections()
    token = api_token_authenticate(key)
    if token is None:
        raise ToolError("not authenticated: the token is invalid or revoked, or its member is deactivated")
    throttle = _Throttle()
    request = SimpleNamespace(auth=token, user=None, META={})
    if not throttle.allow_request(request, None):
        raise ToolError(throttle.wait_message())
    return token.membership


class Command(BaseCommand):
    help = "Serve the MCP server over stdio as the member whose API token is in BULKHEAD_TOKEN."

    def handle(self, *args, **options):
        key = os.environ.get("BULKHEAD_TOKEN", "").strip()
        if not key:
            raise CommandError("set BULKHEAD_TOKEN to an API token (manage.py kb_user create, or POST /api/v1/tokens/)")
        if api_token_authenticate(key) is None:
            raise CommandError("BULKHEAD_TOKEN is not a valid API token (wrong, revoked, or its member is deactivated)")
        from django.db import connection

        from kb.mcp_server import SERVER, Caller, caller_set

        connection.close()  # the calls run on a thread of their own, with a connection of their own
        host = settings.BULKHEAD_HOST
        base = os.environ.get("BULKHEAD_URL") or (f"http://[{host}]:{settings.BULKHEAD_PORT}" if ":" in host
                                                  else f"http://{host}:{settings.BULKHEAD_PORT}")
        caller_set(Caller(lambda: token_member(key), base))
        sys.stdout.flush()
        SERVER.run("stdio")
