"""Fixtures for the REST API tests (load with ``pytest_plugins = ["tests.api_fixtures"]``):
two tenants, one member per actor, a document with sections of several policies."""

from __future__ import annotations

import pytest

from tests.api_helpers import World, build_world


@pytest.fixture
def world(db) -> World:
    return build_world()
