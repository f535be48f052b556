"""Hostile input to the console answers an error, never a 500 (found by attacking the demo): NULs in
filters and groups, hostile golden files, oversized bodies, too many files at once."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from accounts.services import group_create, membership_create, tenant_create
from console.views.upload import MAX_FILES
from kb.index_versions import index_version_active
from kb.models import Document
from tests.api_helpers import POLICY_SECTIONS, console_client, make_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin():
    tenant = tenant_create(slug="acme", name="Acme")
    group_create(tenant=tenant, slug="security-team")
    membership = membership_create(tenant=tenant, email="admin@acme.test", role="admin", clearance="restricted")
    make_document(tenant, sections=POLICY_SECTIONS)
    return membership


def _client(membership) -> Client:
    return console_client(membership, raise_request_exception=False)


@pytest.mark.parametrize("field", ["q", "tag", "source", "type", "status"])
def test_a_nul_in_a_document_filter_is_not_a_500(admin, field):
    response = _client(admin).get("/documents/", {field: "a\x00b"})
    assert response.status_code == 200


def test_a_nul_in_the_default_groups_is_a_form_error(admin):
    response = _client(admin).post("/documents/upload/", {
        "text": "hello", "title": "t", "content_type": "text/plain", "access_level": "internal", "groups": "\x00",
    })
    assert response.status_code in (200, 400)
    assert Document.objects.count() == 1  # only the fixture's


@pytest.mark.parametrize("golden", [
    b'{"question": "x", "document": "Security policy", "spans": [[99999999999999999999999, 1e400]]}\n',
    b"[" * 100_000,
    b"[1]\n",
    b'"str"\n',
])
def test_a_hostile_golden_file_is_refused_not_a_500(admin, golden):
    version = index_version_active(tenant=admin.tenant)
    response = _client(admin).post(f"/versions/{version.pk}/evaluate/", {
        "golden": SimpleUploadedFile("golden.jsonl", golden), "mode": "hybrid", "k": "1,5",
    })
    assert response.status_code < 500


def test_a_body_larger_than_any_upload_is_refused_before_it_is_read(settings):
    response = Client().post("/sign-in/", data=b"x", content_type="application/octet-stream",
                             CONTENT_LENGTH=str(settings.BULKHEAD_MAX_UPLOAD_BYTES + 2 * 1024 * 1024))
    assert response.status_code == 413


def test_too_many_files_at_once_are_refused_each_with_the_reason(admin):
    files = [SimpleUploadedFile(f"f{i}.txt", b"hello", content_type="text/plain") for i in range(MAX_FILES + 2)]
    response = _client(admin).post("/documents/upload/", {"files": files, "access_level": "internal",
                                                          "content_type": "text/plain"})
    assert response.status_code == 200
    assert response.content.decode().count(f"at most {MAX_FILES} files at once") == 2
