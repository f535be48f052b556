"""The embedding cache's scope rule, in one place (``pipeline.embed.EmbeddingCache``): a vector is cached
under its section's tenant and effective policy, and a job takes one only from a scope its creator could
read anyway. The end-to-end cases (another tenant, an uploader below the text's level) are in
``tests/test_policy_write_time.py``."""

from __future__ import annotations

import pytest

from accounts.models import Membership
from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb.models import IngestionJob
from pipeline.embed import EmbeddingCache

pytestmark = pytest.mark.django_db

INTERNAL, CONFIDENTIAL, RESTRICTED = int(AccessLevel.INTERNAL), int(AccessLevel.CONFIDENTIAL), int(AccessLevel.RESTRICTED)


@pytest.fixture
def world():
    tenant = tenant_create(slug="cache-co", name="Cache Co")
    other = tenant_create(slug="cache-other", name="Other")
    team = group_create(tenant=tenant, slug="security-team")
    members = {
        "admin": membership_create(tenant=tenant, email="admin@cache.test", role="admin", clearance="internal"),
        "editor": membership_create(tenant=tenant, email="editor@cache.test", role="editor", clearance="confidential"),
        "gone": membership_create(tenant=tenant, email="gone@cache.test", role="editor", clearance="restricted"),
    }
    Membership.objects.filter(pk=members["gone"].pk).update(is_active=False)
    return tenant, other, team, members


def _may_use(tenant, member=None):
    job = IngestionJob(tenant=tenant, created_by=member.user if member else None)
    return EmbeddingCache.may_use(job)


def test_a_job_takes_vectors_only_from_scopes_its_creator_may_read(world):
    tenant, other, team, members = world
    scopes = {
        "internal": (tenant.pk, INTERNAL, ()),
        "confidential": (tenant.pk, CONFIDENTIAL, ()),
        "restricted": (tenant.pk, RESTRICTED, ()),
        "confidential, a group": (tenant.pk, CONFIDENTIAL, (team.pk,)),
        "another tenant": (other.pk, INTERNAL, ()),
    }

    def usable(may_use):
        return sorted(name for name, scope in scopes.items() if may_use(scope))

    # An editor: what their clearance and groups let them read, in their own tenant.
    assert usable(_may_use(tenant, members["editor"])) == ["confidential", "internal"]
    # No creator (the CLI, a re-derivation) and an admin (who may grant themselves any access): the tenant's whole cache.
    whole = ["confidential", "confidential, a group", "internal", "restricted"]
    assert usable(_may_use(tenant)) == whole
    assert usable(_may_use(tenant, members["admin"])) == whole
    # A creator who is no longer an active member: nothing (fail closed).
    assert usable(_may_use(tenant, members["gone"])) == []
