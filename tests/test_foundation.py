"""The foundation: extension, constraints, tokens, a task round trip through a real worker."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from accounts.models import ApiToken, GroupMembership
from accounts.services import (
    api_token_authenticate,
    api_token_create,
    api_token_revoke,
    group_create,
    membership_create,
    tenant_create,
)
from tests import factories
from tests.bounds import JOB_WAIT

pytestmark = pytest.mark.django_db


def test_vector_extension_exists_after_migrate():
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    assert row is not None
    assert tuple(int(p) for p in row[0].split(".")[:2]) >= (0, 8)


def test_embedded_server_runs_with_our_shared_buffers():
    import os

    from bulkhead import embedded_services

    if os.environ.get("DATABASE_URL"):
        pytest.skip("DATABASE_URL points at an external server: its settings are its own")
    with connection.cursor() as cursor:
        cursor.execute("SELECT setting::bigint * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'")
        (megabytes,) = cursor.fetchone()
    assert megabytes == embedded_services.shared_buffers_mb() > 128


@pytest.fixture
def two_tenants():
    return tenant_create(slug="t-one", name="One"), tenant_create(slug="t-two", name="Two")


def _rejects(make):
    with pytest.raises(IntegrityError), transaction.atomic():
        make()
        # Composite foreign keys are deferred; force the check inside this block.
        with connection.cursor() as cursor:
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def test_chunk_tenant_must_equal_document_tenant(two_tenants):
    one, two = two_tenants
    doc = factories.document(one)
    section = factories.section(doc)
    version = factories.index_version(one)
    factories.chunk(section, version)  # the honest row is accepted
    _rejects(lambda: factories.chunk(section, version, tenant=two, ordinal=1))


def test_section_tenant_must_equal_document_tenant(two_tenants):
    one, two = two_tenants
    doc = factories.document(one)
    _rejects(lambda: factories.section(doc, tenant=two))


def test_chunk_span_must_be_nonempty_and_ordered(two_tenants):
    one, _ = two_tenants
    doc = factories.document(one)
    section = factories.section(doc)
    version = factories.index_version(one)
    _rejects(lambda: factories.chunk(section, version, start=5, end=5))
    _rejects(lambda: factories.chunk(section, version, start=6, end=2, ordinal=2))


def test_unknown_access_level_is_rejected(two_tenants):
    one, _ = two_tenants
    doc = factories.document(one)
    _rejects(lambda: factories.section(doc, access_level=7))


def test_one_active_index_version_per_tenant(two_tenants):
    one, two = two_tenants
    factories.index_version(one, is_active=True)
    factories.index_version(two, is_active=True)  # another tenant may have its own
    factories.index_version(one, is_active=False)
    _rejects(lambda: factories.index_version(one, is_active=True))


def test_group_membership_cannot_cross_tenants(two_tenants):
    one, two = two_tenants
    foreign_group = group_create(tenant=two, slug="spies")
    membership = membership_create(tenant=one, email="m@example.com", role="viewer", clearance="internal")
    _rejects(lambda: GroupMembership.objects.create(membership=membership, group=foreign_group))


def test_tokens_are_stored_hashed_and_authenticate(two_tenants):
    one, _ = two_tenants
    membership = membership_create(tenant=one, email="tok@example.com", role="editor", clearance="confidential")
    token, key = api_token_create(membership=membership)
    stored = ApiToken.objects.get(pk=token.pk)
    assert key not in (stored.key_hash, stored.prefix)
    assert stored.prefix in key and len(stored.prefix) <= 12
    assert key.split("_", 2)[2] not in str(stored.__dict__)
    assert api_token_authenticate(key).pk == token.pk
    assert api_token_authenticate(key + "x") is None
    api_token_revoke(token=stored)
    assert api_token_authenticate(key) is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_task_round_trip_through_a_real_worker(celery_worker):
    from bulkhead.celery import ping

    result = ping.delay()
    assert result.get(timeout=JOB_WAIT) == "pong"
    # The answer came from the worker process, not from this one.
    assert celery_worker.process.poll() is None
    assert "kb.ping" in celery_worker.log_path.read_text()
