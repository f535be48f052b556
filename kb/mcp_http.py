"""``/mcp``: the MCP server (``kb.mcp_server``) over Streamable HTTP, inside the web server.

A DRF view, so that a call to ``/mcp`` passes the walls every API call passes, in the same code:
``Authorization: Bearer <API token>`` (:class:`BearerTokenAuthentication`, the API's token check:
revoked, expired or deactivated is refused on the very next request; none or a wrong one is a 401
with ``WWW-Authenticate: Bearer``), which also sets the tenant wall for the request's database
connection (``accounts.tenancy``); the API's per-token throttle (429 with ``Retry-After``); members
of any role.

Then the SDK's own transport answers the request. The SDK is an ASGI application and gunicorn runs
WSGI threads, so this view bridges one request: the SDK's ``StreamableHTTPSessionManager``, stateless
(each POST stands alone: any web process and thread may take the next one) with JSON answers (no
stream held open), runs in a short-lived event loop (``asgiref.sync.async_to_sync``) while this
thread waits and serves the tool calls the loop hands back (``kb.mcp_server._call``): every
database query of a call runs on this request's connection, under its tenant, and ends with it.
The body is read whole first, and refused past :data:`MAX_BODY_BYTES` unread.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from django.http import HttpResponse
from rest_framework.views import APIView

from accounts.apis import RequestTooLarge
from accounts.authentication import TokenAuthentication
from accounts.permissions import IsMember

logger = logging.getLogger(__name__)

MAX_BODY_BYTES = 1024 * 1024  # an MCP request is a small JSON-RPC message
MAX_SECONDS = 120  # the longest one MCP request may hold a web thread


class BearerTokenAuthentication(TokenAuthentication):
    """The API's token check, as ``Authorization: Bearer <key>`` (what MCP clients send)."""

    keyword = "Bearer"


async def _serve(scope: dict, body: bytes) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    # The SDK is imported on the first call, not with the URLs: it takes a second or two to import,
    # which every process that loads the URLs (each test process, each management command) would pay.
    import anyio
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings

    from kb.mcp_server import SERVER

    sent = anyio.Event()
    delivered = False

    async def receive() -> dict:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await sent.wait()  # the client is "connected" until the answer is out
        return {"type": "http.disconnect"}

    status, headers, chunks = 500, [], []

    async def send(message: dict) -> None:
        nonlocal status, headers
        if message["type"] == "http.response.start":
            status, headers = message["status"], list(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                sent.set()

    # Host is checked by Django (ALLOWED_HOSTS) before this view runs, and a browser cannot send the
    # bearer token cross-origin without a preflight this server does not answer: the SDK's own
    # DNS-rebinding check would only repeat ALLOWED_HOSTS.
    security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    manager = StreamableHTTPSessionManager(app=SERVER._lowlevel_server, json_response=True, stateless=True,
                                           security_settings=security, max_request_body_size=MAX_BODY_BYTES)
    with anyio.move_on_after(MAX_SECONDS) as scope_limit:
        async with manager.run():
            await manager.handle_request(scope, receive, send)
    if scope_limit.cancelled_caught:  # never expected with JSON answers; a bound on a web thread all the same
        logger.warning("an MCP request ran past %s s and was cut off", MAX_SECONDS)
        return 503, [(b"retry-after", b"5")], b""
    return status, headers, b"".join(chunks)


def _scope(request) -> dict:
    meta = request.META
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
        "scheme": request.scheme, "path": request.path, "raw_path": request.path.encode(), "root_path": "",
        "query_string": meta.get("QUERY_STRING", "").encode("latin-1"),
        "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in request.headers.items()],
        "client": (meta.get("REMOTE_ADDR", ""), 0), "server": (request.get_host(), 0),
    }


class McpApi(APIView):
    """``/mcp``: POST a JSON-RPC message, get its answer. No GET (a server-to-client event stream would
    hold a web thread for as long as the client keeps it open; the transport lets a server answer 405)
    and no DELETE (there is no session to end): both 405, from DRF, after authentication."""

    authentication_classes = [BearerTokenAuthentication]
    permission_classes = [IsMember]
    parser_classes: list = []  # the SDK reads the body
    schema = None  # not part of the REST API's OpenAPI document

    def initial(self, request, *args, **kwargs):
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > MAX_BODY_BYTES:
            raise RequestTooLarge(f"the request body is {length} bytes; the limit is {MAX_BODY_BYTES} bytes",
                                  details={"limit": MAX_BODY_BYTES})
        super().initial(request, *args, **kwargs)

    def _answer(self, request):
        from kb.mcp_server import Caller, caller_reset, caller_set

        member = request.auth.membership
        body = request._request.body
        token = caller_set(Caller(lambda: member, request.build_absolute_uri("/")))
        try:
            status, headers, content = async_to_sync(_serve)(_scope(request._request), body)
        finally:
            caller_reset(token)
        response = HttpResponse(content, status=status)
        for name, value in headers:
            key = name.decode("latin-1")
            if key.lower() not in ("content-length", "date", "server"):
                response[key] = value.decode("latin-1")
        return response

    def post(self, request):
        return self._answer(request)

# The SDK logs a line at INFO for each stateless request's start and end: noise at one per call.
for _name in ("mcp.server.streamable_http_manager", "mcp.server.streamable_http"):
    logging.getLogger(_name).setLevel(logging.WARNING)
