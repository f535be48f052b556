"""Attacking single sign-on as a tenant's admin: the provider's address is one the server fetches."""

from __future__ import annotations

import http.server
import re
import threading

import pytest
from django.test import Client

from accounts.models import SsoConfig
from accounts.services import membership_create, tenant_create
from tests.api_helpers import console_client
from tests.network_helpers import INTERNAL, PUBLIC, json_server, loopback_is_the_internet, rebinding_name

pytestmark = pytest.mark.django_db
SECRET = "internal-only-7f3a"  # what a service inside the network answers


@pytest.fixture
def internal_service():
    """A service on the server's own network (loopback here), answering JSON to anyone who asks."""
    hits: list[str] = []
    server = json_server("127.0.0.1", 0, {"issuer": SECRET, "note": SECRET}, hits, record=lambda path, _host: path)
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


def test_a_tenants_provider_address_cannot_reach_the_servers_network(internal_service, settings):
    """Found attacking SSO: the issuer an admin types is fetched by the server -- by the settings page's
    "test the connection" (which showed the answer: the internal service's JSON came back in the error,
    and its kind of failure told open ports from closed ones) and by every anonymous ``/sso/<tenant>/``.
    The sources' rule holds for it now: every address of the provider's host (and of its discovery
    document's endpoints) must be public unless the operator allows private ones
    (``BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES``); refused before any request."""
    settings.BULKHEAD_SOURCE_ALLOW_PRIVATE_ADDRESSES = False
    settings.BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES = False
    url, hits = internal_service
    tenant = tenant_create(slug="ssrf", name="SSRF")
    admin = membership_create(tenant=tenant, email="admin@ssrf.example", role="admin", clearance="restricted")
    console = console_client(admin)
    form = {"enabled": "on", "issuer": url, "client_id": "c", "admit_domains": "ssrf.example",
            "groups_claim": "groups", "group_map": "{}", "clearance_map": "{}"}
    saved = console.post("/settings/sso/", form)
    assert saved.status_code == 400 and b"not public" in saved.content, saved.status_code
    assert not SsoConfig.objects.filter(tenant=tenant).exists()
    # Saved before this rule (or the host's addresses changed since): nothing is fetched either.
    SsoConfig.objects.create(tenant=tenant, issuer=url, client_id="c", enabled=True, admit_domains=["ssrf.example"])
    tested = console.post("/settings/sso/", {"action": "test"})
    assert SECRET.encode() not in tested.content and b"not public" in tested.content
    started = Client().get("/sso/ssrf/")
    assert started.status_code == 502
    assert hits == []  # the internal service was never asked
    # The operator's switch, for a provider inside the network.
    settings.BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES = True
    console.post("/settings/sso/", {"action": "test"})
    assert hits == ["/.well-known/openid-configuration"]


def test_a_provider_that_redirects_is_refused_and_the_redirect_never_followed(internal_service, settings):
    """The issuer's host passes the address check, then answers its discovery request with a redirect to an
    address inside the network (or one that resolves there later): a redirect is refused, never followed,
    since the address it names would be fetched unchecked (``max_redirects=0`` in ``accounts.sso``)."""
    settings.BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES = True  # the test's provider listens on loopback
    url, hits = internal_service
    asked: list[str] = []

    class Redirecting(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            asked.append(self.path)
            self.send_response(302)
            self.send_header("Location", f"{url}/internal")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True).start()
    try:
        issuer = f"http://127.0.0.1:{server.server_address[1]}"
        tenant = tenant_create(slug="ssrf-redirect", name="Redirect")
        admin = membership_create(tenant=tenant, email="admin@redirect.example", role="admin", clearance="restricted")
        SsoConfig.objects.create(tenant=tenant, issuer=issuer, client_id="c", enabled=True,
                                 admit_domains=["redirect.example"])
        tested = console_client(admin).post("/settings/sso/", {"action": "test"})
        assert b"redirects are not followed" in tested.content, tested.content[-2000:]
        assert Client().get("/sso/ssrf-redirect/").status_code == 502
    finally:
        server.shutdown()
        server.server_close()
    assert asked == ["/.well-known/openid-configuration"] * 2  # the settings' test and the anonymous start
    assert hits == []  # the redirect's target was never asked


def test_a_provider_name_that_rebinds_after_the_check_is_never_connected_to_its_new_address(monkeypatch, settings):
    """DNS rebinding: the provider's name resolves to a public address when the server checks it and to an
    internal one when the HTTP library connects. The request now connects to the address the check passed
    (``accounts.sso`` pins it; the library never resolves the name again), and each request is checked.
    The loopback network plays both parts: 127.0.0.1 is "the internet", 127.0.0.2 the server's network."""
    settings.BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES = False
    internal_asked: list = []
    internal = json_server(INTERNAL, 0, {"issuer": SECRET, "note": SECRET}, internal_asked)
    port = internal.server_address[1]
    name = "idp.rebind.test"
    issuer = f"http://{name}:{port}"
    public_asked: list = []
    public = json_server(PUBLIC, port, {"issuer": "https://elsewhere.example"}, public_asked)
    answers = rebinding_name(monkeypatch, name, port)
    loopback_is_the_internet(monkeypatch)
    try:
        tenant = tenant_create(slug="rebind", name="Rebind")
        admin = membership_create(tenant=tenant, email="admin@rebind.example", role="admin", clearance="restricted")
        SsoConfig.objects.create(tenant=tenant, issuer=issuer, client_id="c", enabled=True,
                                 admit_domains=["rebind.example"])
        console = console_client(admin)
        # The first answer is public, every later one internal.
        answers[:] = [PUBLIC, INTERNAL]
        tested = console.post("/settings/sso/", {"action": "test"})
        assert SECRET.encode() not in tested.content
        answers[:] = [PUBLIC, INTERNAL]
        assert Client().get("/sso/rebind/").status_code == 502
        assert internal_asked == []  # the internal service was never asked
        # A name that stays public: the request reaches it, under the provider's name.
        answers[:] = [PUBLIC]
        tested = console.post("/settings/sso/", {"action": "test"})
        assert b"elsewhere.example" in tested.content  # the discovery answer was read (and refused: a mix-up)
        assert public_asked == [("/.well-known/openid-configuration", f"{name}:{port}")]
    finally:
        for server in (internal, public):
            server.shutdown()
            server.server_close()


def test_the_discovery_documents_endpoints_inside_the_network_are_never_fetched(monkeypatch, settings):
    """The issuer passes the address check, and its discovery document names a JWKS and a token endpoint
    inside the server's network: both are checked before the server fetches them, and refused. The
    loopback network plays both parts (127.0.0.1 "the internet", 127.0.0.2 the server's network)."""
    settings.BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES = False
    internal_asked: list = []
    internal = json_server(INTERNAL, 0, {"keys": [{"kty": "oct", "k": SECRET}]}, internal_asked)
    port = internal.server_address[1]
    issuer = f"http://127.0.0.1:{port}"
    inside = f"http://127.0.0.2:{port}"
    discovery = {"issuer": issuer, "authorization_endpoint": f"{issuer}/authorize",
                 "token_endpoint": f"{inside}/token", "jwks_uri": f"{inside}/jwks"}
    public_asked: list = []
    public = json_server(PUBLIC, port, discovery, public_asked)
    loopback_is_the_internet(monkeypatch)
    try:
        tenant = tenant_create(slug="endpoints", name="Endpoints")
        admin = membership_create(tenant=tenant, email="admin@endpoints.example", role="admin",
                                  clearance="restricted")
        SsoConfig.objects.create(tenant=tenant, issuer=issuer, client_id="c", enabled=True,
                                 admit_domains=["endpoints.example"])
        tested = console_client(admin).post("/settings/sso/", {"action": "test"})
        assert b"not public" in tested.content and SECRET.encode() not in tested.content
        assert Client().get("/sso/endpoints/").status_code == 502
        assert [path for path, _ in public_asked] == ["/.well-known/openid-configuration"] * 2
        assert internal_asked == []  # neither the JWKS nor the token endpoint inside was asked
    finally:
        for server in (internal, public):
            server.shutdown()
            server.server_close()


def test_a_hostile_page_cannot_sign_a_visitor_into_a_tenant_of_its_choosing(settings):
    """Login CSRF (found attacking identity, 2026-12-03): ``GET /sso/<tenant>/`` redirected to the tenant's
    provider at once, so any page could send a visitor there (a link, an image, a redirect); a provider that
    knew the attacker answered at once, and the visitor was signed into the attacker's tenant -- what they
    then uploaded was the attacker's. The GET now shows a page whose button, a POST carrying this server's
    CSRF token, starts the sign-in; the POST answers 303 to the provider, which the page's ``form-action``
    allows (a browser checks a form's redirects against it)."""
    settings.BULKHEAD_SSO_ALLOW_PRIVATE_ADDRESSES = True  # the test's provider listens on loopback
    discovery: dict = {}
    asked: list = []
    server = json_server(PUBLIC, 0, discovery, asked)
    issuer = f"http://{PUBLIC}:{server.server_address[1]}"
    discovery.update(issuer=issuer, authorization_endpoint=f"{issuer}/authorize", token_endpoint=f"{issuer}/token",
                     jwks_uri=f"{issuer}/jwks")
    try:
        tenant = tenant_create(slug="attacker", name="Attacker")
        SsoConfig.objects.create(tenant=tenant, issuer=issuer, client_id="c", enabled=True,
                                 admit_domains=["attacker.example"])
        visitor = Client(enforce_csrf_checks=True)
        # What a hostile page can make the browser do: a GET, and a POST without this server's token.
        landed = visitor.get("/sso/attacker/")
        assert landed.status_code == 200, landed.status_code
        assert "Location" not in landed and b'id="sso-start-button"' in landed.content
        assert not [key for key in visitor.session.keys() if key.startswith("_state_")]  # no sign-in begun
        assert visitor.post("/sso/attacker/").status_code == 403
        assert not [key for key in visitor.session.keys() if key.startswith("_state_")]
        # The visitor's own click: to the provider, which the page's form may lead to (and nowhere else).
        policy = landed["Content-Security-Policy"]
        directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}  # order is not fixed
        assert directives["form-action"] == ["'self'", issuer], policy
        token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', landed.content).group(1).decode()
        started = visitor.post("/sso/attacker/", {"csrfmiddlewaretoken": token})
        assert started.status_code == 303 and started["Location"].startswith(f"{issuer}/authorize?")
        assert [key for key in visitor.session.keys() if key.startswith("_state_")]
    finally:
        server.shutdown()
        server.server_close()
