"""Every API GET refuses a query parameter it does not take: 400 in the one error shape, naming it (found
reviewing the API, 2026-12-03: the filtered lists refused one, while the lists without filters -- groups,
members, tokens, index versions, sources, a source's syncs -- and every detail GET answered as if it were
absent, so a misspelt ``?limt=5`` listed fifty). The routes are walked from the URL conf, so a new GET is
held to it without being named here; the OpenAPI schema documents exactly the parameters each one takes."""

from __future__ import annotations

import re

import pytest
from django.urls import URLResolver, get_resolver
from rest_framework.test import APIClient

from accounts.api_fields import QueryParametersSerializer
from kb.schema import SchemaApi, SchemaParameters

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.api_fixtures"]  # the `world` fixture

# HTML pages for a browser (Swagger UI, Redoc), like the console's: out of this rule.
BROWSER_PAGES = {"SpectacularSwaggerView", "SpectacularRedocView"}


def _api_get_routes() -> dict[str, type]:
    """``{"api/v1/groups/": view class}`` for every route under /api/ whose view answers GET."""

    def walk(patterns, prefix: str):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            else:
                yield prefix + str(pattern.pattern), getattr(pattern.callback, "view_class", None)

    return {route: view for route, view in walk(get_resolver().url_patterns, "")
            if route.startswith("api/") and view is not None and hasattr(view, "get")
            and view.__name__ not in BROWSER_PAGES}


def _taken(view) -> set[str]:
    parameters = SchemaParameters if view is SchemaApi else getattr(view, "query_parameters", None)
    assert parameters is not None and issubclass(parameters, QueryParametersSerializer), view
    return parameters.known_parameters() - {"format"}


def test_every_api_get_refuses_an_unknown_query_parameter(world):
    routes = _api_get_routes()
    for listed in ("api/v1/groups/", "api/v1/memberships/", "api/v1/tokens/", "api/v1/index-versions/",
                   "api/v1/sources/", "api/v1/documents/", "api/schema/"):
        assert listed in routes, sorted(routes)  # the walk found the routes (and so the rest)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {world.actors['admin'].key}")
    refused = {}
    for route, view in sorted(routes.items()):
        path = "/" + re.sub(r"<[^>]+>", "1", route)  # a made-up id: the parameter is refused before any lookup
        answer = client.get(path, {"bogus": "1"})
        body = answer.json() if answer["Content-Type"].startswith("application/json") else {}
        error = body.get("error", {}) if isinstance(body, dict) else {}
        refused[route] = (answer.status_code, error.get("code"), sorted(error.get("details", {})))
        if refused[route] == (400, "invalid", ["bogus"]):
            known = ", ".join(sorted(_taken(view))) or "none"
            assert error["details"]["bogus"] == [f"unknown query parameter; known: {known}"], route
    assert {route: got for route, got in refused.items() if got != (400, "invalid", ["bogus"])} == {}
    # What a list takes still works; twice is refused, as on the filtered lists.
    assert client.get("/api/v1/groups/", {"limit": 1, "offset": 0}).status_code == 200
    twice = client.get("/api/v1/tokens/?limit=1&limit=2")
    assert twice.status_code == 400 and twice.json()["error"]["details"] == {"limit": ["given more than once; give it once"]}
    assert client.get("/api/schema/", {"format": "json"}).status_code == 200
    # An anonymous call is still a 401, whatever its query string.
    assert APIClient().get("/api/v1/groups/", {"bogus": "1"}).status_code == 401


def test_the_schema_documents_the_query_parameters_each_get_takes(world):
    client = APIClient()
    schema = client.get("/api/schema/", {"format": "json"}).json()["paths"]
    documented = {}
    for route, view in _api_get_routes().items():
        if view is SchemaApi:
            continue  # the schema itself is not in the schema
        operation = schema["/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)]["get"]
        documented[route] = ({p["name"] for p in operation.get("parameters", []) if p["in"] == "query"}, _taken(view))
        assert "400" in operation["responses"], route
    assert {route: pair for route, pair in documented.items() if pair[0] != pair[1]} == {}
    assert documented["api/v1/groups/"][0] == {"limit", "offset"}
