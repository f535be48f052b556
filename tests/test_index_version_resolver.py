"""The active index version: one resolver for every read (``kb.selectors.active_index_version``),
resolved once per request, and an activation in the same request seen at once."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from accounts.services import membership_create, tenant_create
from ingestion.chunking.config import ChunkingConfig
from kb import selectors
from kb.index_versions import index_version_activate, index_version_active, index_version_create
from kb.selectors import active_index_version, active_index_version_id, index_version_for_reading
from tests.api_helpers import console_client


def _active_version_queries(queries) -> int:
    return sum(1 for q in queries if 'FROM "kb_indexversion"' in q["sql"] and '"is_active"' in q["sql"])


@pytest.mark.django_db
def test_the_dashboard_resolves_the_active_version_once():
    """The dashboard reads the active version for its document counts and for its own line."""
    tenant = tenant_create(slug="resolver-page", name="Resolver page")
    admin = membership_create(tenant=tenant, email="a@resolver.test", role="admin", clearance="restricted")
    version = index_version_active(tenant=tenant)
    client = console_client(admin)
    with CaptureQueriesContext(connection) as queries:
        page = client.get("/")
    assert page.status_code == 200 and page.context["overview"].active_version == version
    assert _active_version_queries(queries.captured_queries) == 1


@pytest.mark.django_db
def test_remembered_in_a_request_forgotten_after_an_activation_and_the_request():
    tenant = tenant_create(slug="resolver", name="Resolver")
    first = index_version_active(tenant=tenant)
    second, _ = index_version_create(tenant=tenant, config=ChunkingConfig(target_tokens=150), name="second")
    selectors._versions_remember()  # what request_started does
    try:
        with CaptureQueriesContext(connection) as queries:
            assert active_index_version(tenant_id=tenant.pk) == first
            assert active_index_version_id(tenant_id=tenant.pk) == first.pk
            assert index_version_for_reading(tenant_id=tenant.pk) == first
        assert _active_version_queries(queries.captured_queries) == 1
        index_version_activate(version=second, force=True)
        assert active_index_version(tenant_id=tenant.pk) == second  # the activation is seen at once
    finally:
        selectors._versions_forget()  # what request_finished does
    # Outside a request every call reads.
    with CaptureQueriesContext(connection) as queries:
        assert active_index_version(tenant_id=tenant.pk) == second
        assert active_index_version(tenant_id=tenant.pk) == second
    assert _active_version_queries(queries.captured_queries) == 2


@pytest.mark.django_db
def test_a_tenant_without_a_version_reads_its_unsaved_default():
    tenant = tenant_create(slug="resolver-empty", name="Empty")
    assert active_index_version(tenant_id=tenant.pk) is None
    default = index_version_for_reading(tenant_id=tenant.pk)
    assert default.is_active and default._state.adding  # unsaved: reads create nothing
    assert index_version_active(tenant=tenant).pk == default.pk  # the one the first ingestion creates
