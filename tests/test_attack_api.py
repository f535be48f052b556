"""Attacks on the REST API (2026-12-03).

A misspelt search option was ignored: ``{"query": ..., "exclude_flaged": true}`` or ``"spotlite": true``
searched without the option, silently -- released flagged chunks came back to a caller who asked for
none, text came back unwrapped to one who asked for spotlighting. Unknown filters were refused already
(``document_idz``); unknown options now are too, naming the option and the known ones."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.api_fixtures"]


@pytest.mark.parametrize("option", ["exclude_flaged", "spotlite", "Spotlight", "topk"])
def test_an_unknown_search_option_is_refused_naming_it(world, option):
    response = world.client("viewer").post("/api/v1/search/", {"query": "security", "mode": "keyword", option: True},
                                           format="json")
    assert response.status_code == 400, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid" and option in error["details"], error
    assert "exclude_flagged" in str(error["details"][option]) and "spotlight" in str(error["details"][option])

