"""The access preview (``pipeline.preview``): what ingestion would store, before anything is stored.

The preview runs ingestion's planning step on an unsaved document, so it must agree with a real
ingestion run of the same file through the worker -- sections, their effective policies and
heading paths, chunk counts, and for a bad file the very message the job ends with -- and it
must write nothing at all (not even the tenant's first index version). Its REST endpoint takes
the upload's input and answers the tree or the one error shape.
"""

from __future__ import annotations

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from accounts.errors import ApplicationError, PermissionRefused
from accounts.models import Group
from accounts.policy import AccessLevel
from accounts.services import api_token_create, group_create, membership_create, tenant_create
from kb.models import Chunk, EmbeddingCacheEntry, IndexVersion, Section
from kb.services import PayloadTooLarge, Upload, document_create
from pipeline.preview import UnreadableDocument, document_preview
from tests.api_helpers import snapshot
from tests.ingestion_helpers import POLICY_DOC, wait_for_jobs

# Long enough that the restricted section makes several chunks.
LONG_SECTION = "\n\n".join(
    f"Paragraph {i} of the incident runbook: page the on-call engineer, open a ticket, write down what "
    f"happened and when, and keep the timeline current until the incident is closed." for i in range(40)
)
DOC = POLICY_DOC.replace("Only the security team reads this.", "Only the security team reads this.\n\n" + LONG_SECTION)
UNKNOWN_GROUP = "# Handbook\nHello.\n\n## Payroll <!-- access: confidential; groups: payroll -->\nSalaries.\n"
MALFORMED = "# Handbook\nHello.\n\n<!-- access: confidential; grups: a -->\nOops.\n<!-- /access -->\n"


def _world():
    tenant = tenant_create(slug="preview-co", name="Preview Co")
    group_create(tenant=tenant, slug="security-team")
    admin = membership_create(tenant=tenant, email="admin@preview.test", role="admin", clearance="restricted",
                              group_slugs=["security-team"])
    editor = membership_create(tenant=tenant, email="editor@preview.test", role="editor", clearance="confidential")
    viewer = membership_create(tenant=tenant, email="viewer@preview.test", role="viewer", clearance="internal")
    return tenant, admin, editor, viewer


def _upload(text: str, **kw) -> Upload:
    return Upload(content=text.encode(), title=kw.pop("title", "Security policy"), content_type="text/markdown",
                  source=kw.pop("source", "policy.md"), **kw)


def _counts() -> dict:
    return {"snapshot": snapshot(), "versions": IndexVersion.objects.count(),
            "cache": EmbeddingCacheEntry.objects.count()}


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_preview_is_what_ingestion_stores(celery_worker):
    tenant, admin, _, _ = _world()
    preview = document_preview(member=admin, upload=_upload(DOC))

    document, job = document_create(tenant=tenant, created_by=admin, upload=_upload(DOC))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    slugs = dict(Group.objects.filter(tenant=tenant).values_list("id", "slug"))
    stored = {
        s.key: (AccessLevel(s.access_level).label, tuple(sorted(slugs[g] for g in s.access_groups)),
                tuple(s.heading_path))
        for s in Section.objects.filter(document=document).order_by("order")
    }
    previewed = {s.key: (s.access_level, s.groups, s.heading_path) for s in preview.sections}
    assert previewed == stored
    per_section = {s.key: s.chunks for s in preview.sections}
    for key in stored:
        assert per_section[key] == Chunk.objects.filter(document=document, section__key=key).count(), key
    assert preview.chunks == Chunk.objects.filter(document=document).count() == job.total
    # Not a trivial case: three policies, and one section of several chunks.
    assert {s.access_level for s in preview.sections} == {"internal", "restricted", "confidential"}
    assert max(per_section.values()) > 3
    document.refresh_from_db()
    assert preview.title == document.title


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_bad_file_previews_with_the_message_its_job_ends_with(celery_worker):
    tenant, admin, _, _ = _world()
    for text, line in ((UNKNOWN_GROUP, 4), (MALFORMED, 4)):
        with pytest.raises(UnreadableDocument) as refused:
            document_preview(member=admin, upload=_upload(text))
        assert refused.value.details == {"line": line}
        _, job = document_create(tenant=tenant, created_by=admin, upload=_upload(text, source=f"{line}-{text[:5]}"))
        (job,) = wait_for_jobs([job.id])
        assert job.status == "failed"
        assert refused.value.message == job.error


@pytest.mark.django_db(transaction=True)
def test_preview_writes_nothing():
    tenant, admin, editor, _ = _world()
    assert not IndexVersion.objects.filter(tenant=tenant).exists()  # the first ingestion would create one
    before = _counts()
    preview = document_preview(member=editor, upload=_upload(POLICY_DOC, groups=()))
    assert preview.sections and preview.chunks > 0
    with pytest.raises(UnreadableDocument):
        document_preview(member=admin, upload=_upload(UNKNOWN_GROUP))
    assert _counts() == before


@pytest.mark.django_db
def test_preview_tree_counts_and_badges():
    _, admin, _, _ = _world()
    preview = document_preview(member=admin, upload=_upload(POLICY_DOC))
    by_title = {s.title: s for s in preview.sections}
    incident = by_title["Incident response"]
    assert (incident.access_level, incident.groups, incident.marked) == ("restricted", ("security-team",), True)
    assert incident.line == 9 and incident.tokens > 5 and incident.chunks == 1
    reporting = by_title["Reporting"]
    assert (reporting.access_level, reporting.groups, reporting.marked) == ("internal", (), False)
    region = next(s for s in preview.sections if s.kind == "region")
    assert region.access_level == "confidential" and region.parent == reporting.key
    assert preview.access_level == "internal" and preview.tokens == sum(s.tokens for s in preview.sections)


@pytest.mark.django_db
def test_preview_refuses_what_the_upload_would_refuse():
    _, admin, editor, viewer = _world()
    with pytest.raises(PermissionRefused, match="above your clearance"):
        document_preview(member=editor, upload=_upload(POLICY_DOC, access_level="restricted"))
    with pytest.raises(PermissionRefused, match="not in group security-team"):
        document_preview(member=editor, upload=_upload(POLICY_DOC, groups=("security-team",)))
    with pytest.raises(PermissionRefused):
        document_preview(member=viewer, upload=_upload(POLICY_DOC))
    with pytest.raises(ApplicationError, match="unknown access level"):
        document_preview(member=admin, upload=_upload(POLICY_DOC, access_level="secret"))
    with override_settings(BULKHEAD_MAX_UPLOAD_BYTES=100), pytest.raises(PayloadTooLarge):
        document_preview(member=admin, upload=_upload(POLICY_DOC))
    # A marker may narrow beyond the editor's clearance (it only hides part of their own text).
    assert document_preview(member=editor, upload=_upload(POLICY_DOC)).sections


# ----------------------------------------------------------------------------- the REST endpoint


def _client(membership) -> APIClient:
    _, key = api_token_create(membership=membership, name="t")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


@pytest.mark.django_db
def test_rest_preview_answers_the_tree_and_stores_nothing():
    _, admin, editor, viewer = _world()
    clients = {"admin": _client(admin), "editor": _client(editor), "viewer": _client(viewer)}
    before = snapshot()
    body = {"title": "Security policy", "content": POLICY_DOC, "content_type": "text/markdown"}
    response = clients["editor"].post("/api/v1/documents/preview/", body, format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    incident = next(s for s in data["sections"] if s["title"] == "Incident response")
    assert incident["access_level"] == "restricted" and incident["groups"] == ["security-team"]
    assert data["chunks"] == sum(s["chunks"] for s in data["sections"]) > 0

    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("handbook.md", UNKNOWN_GROUP.encode())
    response = clients["admin"].post("/api/v1/documents/preview/", {"file": upload}, format="multipart")
    assert response.status_code == 400
    assert response.json() == {"error": {"code": "unreadable_document", "message": "unknown group payroll (line 4)",
                                         "details": {"line": 4}}}

    response = clients["viewer"].post("/api/v1/documents/preview/", body, format="json")
    assert response.status_code == 403 and set(response.json()["error"]) == {"code", "message", "details"}
    assert APIClient().post("/api/v1/documents/preview/", body, format="json").status_code == 401
    response = clients["editor"].post("/api/v1/documents/preview/", {**body, "access_level": "restricted"},
                                    format="json")
    assert response.status_code == 403 and "above your clearance" in response.json()["error"]["message"]
    assert snapshot() == before
