"""Activation's 409 names only documents the acting admin may read.

An admin is not above the access rule: one without the clearance or the group of a document
must not learn its title from ``POST /api/v1/index-versions/{id}/activate/`` refusing to switch
to a version that lacks it. Such documents are counted ("and 2 documents you cannot read").
"""

from __future__ import annotations

import json

import pytest

from accounts.policy import AccessLevel
from kb.index_versions import index_version_config, index_version_create
from kb.models import IndexVersion
from tests.api_helpers import make_document, member_with_token

pytestmark = pytest.mark.django_db
pytest_plugins = ["tests.api_fixtures"]

SECRET_TITLES = ["Merger plans Q3", "Layoffs list"]


def _secret_documents(tenant):
    for title in SECRET_TITLES:
        make_document(tenant, title=title, sections=[
            ("root", None, "", AccessLevel.RESTRICTED, ["security-team"], f"{title} body, restricted."),
        ])


def _shadow(tenant) -> IndexVersion:
    version, _ = index_version_create(tenant=tenant, config=index_version_config(settings=["target_tokens=77"]))
    return version


def _activate(client, version):
    return client.post(f"/api/v1/index-versions/{version.id}/activate/", {}, format="json")


def test_activation_conflict_hides_titles_the_admin_cannot_read(world):
    _secret_documents(world.tenant)
    version = _shadow(world.tenant)
    _, key = member_with_token(world.tenant, "low-admin@example.com", "admin", "internal")
    from rest_framework.test import APIClient

    low_admin = APIClient()
    low_admin.credentials(HTTP_AUTHORIZATION=f"Token {key}")

    response = _activate(low_admin, version)
    assert response.status_code == 409, response.content
    body = response.json()
    text = json.dumps(body)
    for title in SECRET_TITLES:
        assert title not in text
    error = body["error"]
    assert error["code"] == "conflict"
    assert "Security policy" in error["message"]  # a document they can read is named
    assert "2 documents you cannot read" in error["message"]
    assert error["details"]["missing"] == ["Security policy"]
    assert error["details"]["not_readable"] == 2
    assert IndexVersion.objects.get(pk=version.pk).is_active is False

    # The admin with the clearance and the group sees every title.
    full = _activate(world.client("admin"), version)
    assert full.status_code == 409
    message = full.json()["error"]["message"]
    assert all(title in message for title in SECRET_TITLES) and "cannot read" not in message


def test_activation_conflict_with_only_unreadable_documents_missing(db):
    from accounts.services import group_create, tenant_create

    tenant = tenant_create(slug="only-secret", name="Only secret")
    group_create(tenant=tenant, slug="security-team")
    _secret_documents(tenant)
    version = _shadow(tenant)
    _, key = member_with_token(tenant, "a@only.example", "admin", "restricted")  # not in security-team
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = _activate(client, version)
    assert response.status_code == 409
    error = response.json()["error"]
    assert all(title not in json.dumps(error) for title in SECRET_TITLES)
    assert "2 documents you cannot read" in error["message"] and error["details"]["missing"] == []
