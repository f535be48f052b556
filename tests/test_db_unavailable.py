"""A database that refuses connections answers 503 in the error shape -- API and plain views alike.

No mock of PostgreSQL: the request's connection really fails, once against a closed port
(the server is down) and once against the real server refusing it for a role whose
connection limit is reached ("too many connections", what a flood of requests caused).
"""

from __future__ import annotations

import socket
from contextlib import contextmanager

import pytest
from django.db import connection
from django.test import Client

from tests.parallel import xdist_suffix

pytestmark = pytest.mark.django_db(transaction=True)

LIMITED_ROLE = f"bulkhead_no_connections{xdist_suffix()}"  # roles are cluster-wide


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens once the socket is closed


@contextmanager
def connecting_with(**settings):
    """The default connection, reconnecting with ``settings`` (HOST, PORT, USER ...) for the block."""
    saved = dict(connection.settings_dict)
    connection.close()
    connection.settings_dict.update(settings)
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@pytest.fixture
def role_without_connections():
    with connection.cursor() as cursor:
        cursor.execute(f"DROP ROLE IF EXISTS {LIMITED_ROLE}")
        cursor.execute(f"CREATE ROLE {LIMITED_ROLE} LOGIN CONNECTION LIMIT 0")
    yield LIMITED_ROLE
    with connection.cursor() as cursor:
        cursor.execute(f"DROP ROLE IF EXISTS {LIMITED_ROLE}")


@pytest.fixture
def token_key():
    from accounts.services import api_token_create, membership_create, tenant_create

    tenant = tenant_create(slug="db-down", name="Db down")
    membership = membership_create(tenant=tenant, email="v@down.example", role="viewer", clearance="internal")
    return api_token_create(membership=membership)[1]


def _requests(key: str):
    """(method, path, kwargs) of API calls and of a plain Django view, each of which reads the database."""
    token = {"HTTP_AUTHORIZATION": f"Token {key}"}
    session = {"HTTP_COOKIE": "sessionid=" + "s" * 32}
    return [
        ("post", "/api/v1/search/", {"data": {"query": "who do I page?"}, "content_type": "application/json", **token}),
        ("get", "/api/v1/documents/", token),
        ("get", "/api/v1/documents/", session),
        ("get", "/admin/", session),
    ]


def _assert_503(response, path: str) -> None:
    assert response.status_code == 503, (path, response.status_code, response.content[:500])
    assert response["Retry-After"]
    body = response.content.decode()
    assert "Traceback" not in body and "OperationalError" not in body and "connection" not in body.lower()
    if path.startswith("/api/"):
        error = response.json()["error"]
        assert set(error) == {"code", "message", "details"}
        assert error["code"] == "service_unavailable"
    else:
        assert response["Content-Type"].startswith("text/html") and "unavailable" in body


def test_database_down_answers_503(token_key):
    client = Client(raise_request_exception=False)
    with connecting_with(HOST="127.0.0.1", PORT=str(_closed_port())):
        for method, path, kwargs in _requests(token_key):
            _assert_503(getattr(client, method)(path, **kwargs), path)
    assert client.get("/api/v1/documents/", HTTP_AUTHORIZATION=f"Token {token_key}").status_code == 200  # back


def test_too_many_connections_answers_503(token_key, role_without_connections):
    client = Client(raise_request_exception=False)
    with connecting_with(USER=role_without_connections, PASSWORD=""):
        with pytest.raises(Exception, match="too many connections"):  # PostgreSQL itself refuses
            connection.ensure_connection()
        for method, path, kwargs in _requests(token_key):
            _assert_503(getattr(client, method)(path, **kwargs), path)


def test_a_database_error_outside_views_is_a_503_too():
    """Django's 500 handler sees errors raised by middleware (a session save); a lost database there is a 503."""
    from django.db import OperationalError
    from django.test import RequestFactory

    from kb.errors import server_error_view

    for path in ("/api/v1/search/", "/"):
        request = RequestFactory().get(path)
        try:
            raise OperationalError("server closed the connection unexpectedly")
        except OperationalError:
            response = server_error_view(request)
        assert response.status_code == 503 and response["Retry-After"]
    try:
        raise ValueError("a bug")
    except ValueError:
        assert server_error_view(RequestFactory().get("/api/v1/search/")).status_code == 500
