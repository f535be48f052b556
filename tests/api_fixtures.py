"""Fixtures for the REST API tests (load with ``pytest_plugins = ["tests.api_fixtures"]``):
two tenants, one member per actor, a document with sections of several policies."""

from __future__ import annotations

import pytest

from accounts.services import group_create, tenant_create
from tests.api_helpers import POLICY_SECTIONS, Actor, World, make_document, member_with_token


@pytest.fixture
def world(db) -> World:
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    group_create(tenant=tenant, slug="finance")
    other = tenant_create(slug="globex", name="Globex")
    group_create(tenant=other, slug="security-team")
    actors = {"anonymous": Actor("anonymous", None, None)}
    for name, tenant_, role, clearance, groups in [
        ("other_tenant", other, "admin", "restricted", ["security-team"]),
        ("low_clearance", tenant, "editor", "public", []),
        ("viewer", tenant, "viewer", "internal", []),
        ("editor", tenant, "editor", "confidential", []),
        ("admin", tenant, "admin", "restricted", ["security-team"]),
    ]:
        membership, key = member_with_token(tenant_, f"{name}@example.com", role, clearance, groups)
        actors[name] = Actor(name, membership, key)
    doc = make_document(tenant, sections=POLICY_SECTIONS, tags=["security"], source="policies/security.md")
    other_doc = make_document(other, title="Globex secrets", sections=POLICY_SECTIONS, source="globex.md")
    return World(tenant, other, actors, doc, other_doc, doc.section_ids)
