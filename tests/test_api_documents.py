"""Documents, sections and jobs through the API: what each member sees, what they may change,
and the request limits (413, 415, malformed JSON, 429)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from accounts.authentication import TokenRateThrottle
from accounts.models import Group
from accounts.policy import AccessLevel
from accounts.services import membership_create, membership_set_groups
from kb.models import Chunk, Document, IngestionJob, Section
from tests import factories
from tests.api_helpers import make_document, snapshot

pytest_plugins = ["tests.api_fixtures"]  # the `world` fixture

pytestmark = pytest.mark.django_db

SECTION_KEYS_SEEN = {
    "viewer": {"root", "intro", "region"},
    "editor": {"root", "intro", "region", "reporting"},
    "admin": {"root", "intro", "incident", "playbook", "region", "reporting"},
}


# ----------------------------------------------------------------------------- reading


@pytest.mark.parametrize("actor", ["viewer", "editor", "admin"])
def test_counts_and_sections_are_what_the_member_may_read(world, actor):
    client = world.client(actor)
    listed = client.get("/api/v1/documents/").json()
    assert listed["count"] == 1
    (doc,) = listed["results"]
    assert doc["id"] == str(world.doc.id)
    assert doc["sections_count"] == doc["chunks_count"] == len(SECTION_KEYS_SEEN[actor])
    assert doc["access_level"] == "internal" and doc["groups"] == [] and doc["tags"] == ["security"]
    one = client.get(f"/api/v1/documents/{world.doc.id}/").json()
    # Screening's summary is given for one document only (null in lists); nothing in this one is flagged.
    assert doc.pop("screening") is None and one.pop("screening") == {"flagged": 0, "held": 0, "reasons": []}
    assert one == doc

    sections = client.get(f"/api/v1/documents/{world.doc.id}/sections/").json()
    key_of = {str(v): k for k, v in world.section_ids.items()}
    assert {key_of[s["id"]] for s in sections} == SECTION_KEYS_SEEN[actor]
    hidden = set(world.section_ids) - SECTION_KEYS_SEEN[actor]
    body = json.dumps(sections)
    for key in hidden:
        assert str(world.section_ids[key]) not in body  # not even as a parent_id


def test_section_tree_skips_unreadable_ancestors(world):
    sections = {s["id"]: s for s in world.client("viewer").get(f"/api/v1/documents/{world.doc.id}/sections/").json()}
    region = sections[str(world.section_ids["region"])]
    # Its parents ("Playbook", "Incident response") are restricted: it hangs off "Security policy".
    assert region["parent_id"] == str(world.section_ids["intro"])
    assert region["heading_path"] == ["Security policy"]
    assert region["level"] == 2
    assert "Incident response" not in json.dumps(list(sections.values()))
    admin_view = {
        s["id"]: s for s in world.client("admin").get(f"/api/v1/documents/{world.doc.id}/sections/").json()
    }
    region = admin_view[str(world.section_ids["region"])]
    assert region["parent_id"] == str(world.section_ids["playbook"])
    assert region["heading_path"] == ["Security policy", "Incident response", "Playbook"]
    assert region["level"] == 4
    incident = admin_view[str(world.section_ids["incident"])]
    assert (incident["access_level"], incident["groups"]) == ("restricted", ["security-team"])


def test_document_with_no_sections_is_visible_by_its_default_policy(world):
    # As an upload stores them (its title screened: factories.document's clean record), before any section.
    restricted = factories.document(
        world.tenant, title="Pending secret", content_type="text/plain", raw=b"x", sha256="0" * 64,
        access_level=AccessLevel.RESTRICTED,
    )
    public = factories.document(
        world.tenant, title="Pending notice", content_type="text/plain", raw=b"x", sha256="0" * 64,
        access_level=AccessLevel.PUBLIC, status=Document.Status.FAILED, error="line 3: unknown group red-team",
    )
    def titles(actor):
        return {d["title"] for d in world.client(actor).get("/api/v1/documents/").json()["results"]}

    assert titles("viewer") == {"Security policy", "Pending notice"}
    assert titles("low_clearance") == {"Pending notice"}
    assert titles("admin") == {"Security policy", "Pending notice", "Pending secret"}
    failed = world.client("viewer").get(f"/api/v1/documents/{public.id}/").json()
    # Group names in the error come from the document: a viewer gets the kind of problem only.
    assert failed["status"] == "failed" and failed["error"] == "line 3: unknown group"
    # An admin is not above the access rule: the quoted line may sit in a section narrowed to a group the
    # admin is not in (the world's admin is not in "finance"), so the kind of problem only; an admin who
    # may read every section a document could hold (the top clearance, every group) reads it in full.
    assert world.client("admin").get(f"/api/v1/documents/{public.id}/").json()["error"] == "line 3: unknown group"
    admin = world.actors["admin"].membership
    membership_set_groups(membership=admin, groups=Group.objects.filter(tenant=world.tenant))
    assert "red-team" in world.client("admin").get(f"/api/v1/documents/{public.id}/").json()["error"]
    assert failed["sections_count"] == failed["chunks_count"] == 0
    assert world.client("viewer").get(f"/api/v1/documents/{restricted.id}/").status_code == 404


def test_list_filters_and_pagination(world):
    make_document(world.tenant, title="Handbook", tags=["hr"], source="hr/handbook.md",
                  sections=[("root", None, "", AccessLevel.PUBLIC, [], "Welcome.")])
    Document.objects.filter(title="Handbook").update(content_type="text/plain", status="pending")
    client = world.client("viewer")

    def titles(query):
        response = client.get(f"/api/v1/documents/{query}")
        assert response.status_code == 200, response.content
        return [d["title"] for d in response.json()["results"]]

    assert titles("") == ["Handbook", "Security policy"]  # newest first
    assert titles("?tag=hr") == ["Handbook"]
    assert titles("?status=ready") == ["Security policy"]
    assert titles("?content_type=text/markdown") == ["Security policy"]
    assert titles("?source=hr/handbook.md") == ["Handbook"]
    assert titles("?limit=1&offset=1") == ["Security policy"]
    page = client.get("/api/v1/documents/?limit=1").json()
    assert page["count"] == 2 and page["next"] and page["previous"] is None
    bad = client.get("/api/v1/documents/?status=exploded")
    assert bad.status_code == 400 and "status" in bad.json()["error"]["details"]


# ----------------------------------------------------------------------------- uploading


def test_upload_json_creates_a_document_and_a_queued_job(world):
    body = {"title": "Runbook", "content": "# Runbook\nRestart it.", "content_type": "text/markdown",
            "source": "ops/runbook.md", "tags": ["ops"], "access_level": "confidential"}
    response = world.client("editor").post("/api/v1/documents/", body, format="json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["status"] == "pending" and data["job"]["status"] == "queued"
    document = Document.objects.get(pk=data["id"])
    assert bytes(document.raw) == b"# Runbook\nRestart it."
    assert (document.source, document.tags, document.access_level) == ("ops/runbook.md", ["ops"], 2)
    assert document.created_by == world.actors["editor"].membership.user
    job = IngestionJob.objects.get(pk=data["job"]["id"])
    assert job.document_id == document.id and job.tenant_id == world.tenant.id
    # The editor can poll their job and see the (pending, policy-visible) document.
    assert world.client("editor").get(f"/api/v1/jobs/{job.id}/").json()["progress"] == {"done": 0, "total": 0}
    assert world.client("editor").get(f"/api/v1/documents/{document.id}/").status_code == 200
    assert world.client("viewer").get(f"/api/v1/documents/{document.id}/").status_code == 404  # confidential


def test_upload_multipart_takes_title_and_source_from_the_file(world):
    # The part's own (guessed) Content-Type does not decide: the name and the bytes do.
    file = SimpleUploadedFile("notes.md", b"# Notes\nSome notes.", content_type="text/plain")
    response = world.client("admin").post(
        "/api/v1/documents/", {"file": file, "tags": ["a", "b"], "groups": ["security-team"]}, format="multipart"
    )
    assert response.status_code == 201, response.content
    document = Document.objects.get(pk=response.json()["id"])
    assert (document.title, document.source, document.content_type) == ("notes.md", "notes.md", "text/markdown")
    assert document.tags == ["a", "b"]
    assert document.access_groups == [world.tenant.groups.get(slug="security-team").id]


@pytest.mark.parametrize(
    ("actor", "change", "status", "code"),
    [
        ("editor", {"access_level": "restricted"}, 403, "permission_denied"),
        ("editor", {"groups": ["security-team"]}, 403, "permission_denied"),
        ("editor", {"groups": ["no-such-group"]}, 400, "unknown_group"),
        ("editor", {"access_level": "top-secret"}, 400, "invalid"),
        ("admin", {"access_level": "restricted", "groups": ["finance"]}, 201, None),
    ],
)
def test_upload_policy_is_checked_against_the_uploader(world, actor, change, status, code):
    before = snapshot()
    body = {"title": "T", "content": "Some text.", **change}
    response = world.client(actor).post("/api/v1/documents/", body, format="json")
    assert response.status_code == status, response.content
    if code:
        assert response.json()["error"]["code"] == code
        assert snapshot() == before


def test_upload_refusals_name_the_problem(world):
    response = world.client("editor").post(
        "/api/v1/documents/", {"title": "T", "content": "x", "groups": ["security-team", "ghosts"]}, format="json"
    )
    assert response.status_code == 400 and response.json()["error"]["details"] == {"groups": ["ghosts"]}
    response = world.client("editor").post(
        "/api/v1/documents/", {"title": "T", "content": "x", "groups": ["security-team"]}, format="json"
    )
    assert response.status_code == 403 and response.json()["error"]["details"] == {"groups": ["security-team"]}


@pytest.mark.parametrize(
    "body",
    [
        {"title": "T", "content": "x", "content_type": "application/x-msdownload"},
        {"title": "T", "content": "x", "content_type": "image/png"},
    ],
)
def test_unsupported_document_content_type_is_415(world, body):
    before = snapshot()
    response = world.client("editor").post("/api/v1/documents/", body, format="json")
    assert response.status_code == 415, response.content
    assert response.json()["error"]["code"] == "unsupported_media_type"
    assert snapshot() == before


def test_binary_file_without_a_known_type_is_415(world):
    file = SimpleUploadedFile("blob", bytes(range(256)) * 4, content_type="application/octet-stream")
    response = world.client("editor").post("/api/v1/documents/", {"file": file}, format="multipart")
    assert response.status_code == 415, response.content


def test_unsupported_request_content_type_is_415(world):
    response = world.client("editor").generic(
        "POST", "/api/v1/documents/", b"title=x", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"
    response = world.client("viewer").generic("POST", "/api/v1/search/", b"hi", content_type="text/plain")
    assert response.status_code == 415


def test_malformed_json_is_400_in_the_error_shape(world):
    before = snapshot()
    response = world.client("editor").generic(
        "POST", "/api/v1/documents/", b'{"title": "x", "content": ', content_type="application/json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "parse_error"
    assert snapshot() == before


class ExplodingInput:
    """A request body that must never be read."""

    def read(self, *args):
        raise AssertionError("the body was read")

    readline = read


def test_too_large_is_413_without_reading_the_body(world, settings):
    settings.BULKHEAD_MAX_UPLOAD_BYTES = 1000
    for content_type in ("application/json", "multipart/form-data; boundary=xyz"):
        response = world.client("editor").generic(
            "POST", "/api/v1/documents/", b"x", content_type=content_type,
            CONTENT_LENGTH="1001", **{"wsgi.input": ExplodingInput()},
        )
        assert response.status_code == 413, response.content
        assert response.json()["error"]["code"] == "payload_too_large"
        assert response.json()["error"]["details"] == {"limit": 1000}
    # Every endpoint, not only uploads.
    response = world.client("admin").generic(
        "POST", "/api/v1/groups/", b"x", content_type="application/json",
        CONTENT_LENGTH="1001", **{"wsgi.input": ExplodingInput()},
    )
    assert response.status_code == 413
    # Anonymous callers get the same answer before anything else happens.
    response = world.client("anonymous").generic(
        "POST", "/api/v1/documents/", b"x", content_type="application/json",
        CONTENT_LENGTH=str(10**12), **{"wsgi.input": ExplodingInput()},
    )
    assert response.status_code == 413


def test_body_within_the_limit_is_accepted_and_a_lying_length_reads_no_further(world, settings):
    settings.BULKHEAD_MAX_UPLOAD_BYTES = 1000
    body = json.dumps({"title": "T", "content": "x" * 500}).encode()
    client = world.client("editor")
    assert client.generic("POST", "/api/v1/documents/", body, content_type="application/json").status_code == 201
    # A Content-Length shorter than the body: only that much is read (and it is not valid JSON).
    short = client.generic("POST", "/api/v1/documents/", body, content_type="application/json",
                           CONTENT_LENGTH="20")
    assert short.status_code == 400
    # No Content-Length at all: no body is read.
    missing = client.generic("POST", "/api/v1/documents/", body, content_type="application/json",
                             CONTENT_LENGTH="")
    assert missing.status_code == 400
    assert set(missing.json()["error"]["details"]) == {"title", "content"}


def test_throttle_is_per_token_with_retry_after(world, monkeypatch):
    monkeypatch.setattr(TokenRateThrottle, "rate", "2/minute", raising=False)  # DRF reads rates at import
    viewer = world.client("viewer")
    assert [viewer.get("/api/v1/documents/").status_code for _ in range(2)] == [200, 200]
    refused = viewer.get("/api/v1/documents/")
    assert refused.status_code == 429
    assert refused.json()["error"]["code"] == "throttled"
    assert 0 < int(refused["Retry-After"]) <= 60
    assert world.client("editor").get("/api/v1/documents/").status_code == 200  # another token: its own count


# ----------------------------------------------------------------------------- changing


def _internal_only_document(world):
    return make_document(world.tenant, title="Open doc", sections=[
        ("root", None, "", AccessLevel.INTERNAL, [], "Open preamble."),
        ("a", "root", "Part A", AccessLevel.CONFIDENTIAL, [], "Confidential part."),
    ])


def test_editor_changes_a_document_whose_every_section_they_read(world):
    document = _internal_only_document(world)
    editor = world.client("editor")
    body = {"title": "Open doc v2", "content": "# Open doc\nNew text.", "content_type": "text/markdown"}
    replaced = editor.put(f"/api/v1/documents/{document.id}/", body, format="json")
    assert replaced.status_code == 200, replaced.content
    assert replaced.json()["job"]["status"] == "queued"
    document.refresh_from_db()
    assert document.title == "Open doc v2" and bytes(document.raw) == b"# Open doc\nNew text."
    assert Chunk.objects.filter(document=document).count() == 2  # old chunks serve until ingestion ends

    assert world.client("viewer").delete(f"/api/v1/documents/{document.id}/").status_code == 403
    deleted = editor.delete(f"/api/v1/documents/{document.id}/")
    assert deleted.status_code == 204 and deleted.content == b""
    assert not Document.objects.filter(pk=document.id).exists()
    assert not Chunk.objects.filter(document_id=document.id).exists()  # gone at once
    assert editor.get(f"/api/v1/documents/{document.id}/").status_code == 404


def test_replace_by_multipart(world):
    document = _internal_only_document(world)
    file = SimpleUploadedFile("open.txt", b"Plain new text.", content_type="text/plain")
    response = world.client("admin").put(f"/api/v1/documents/{document.id}/", {"file": file}, format="multipart")
    assert response.status_code == 200, response.content
    document.refresh_from_db()
    assert (document.title, document.content_type) == ("open.txt", "text/plain")


def test_section_patch_updates_chunks_without_reembedding(world):
    intro = world.section_ids["intro"]
    embeddings_before = list(Chunk.objects.filter(section_id=intro).values_list("id", "embedding"))
    response = world.client("editor").patch(f"/api/v1/sections/{intro}/", {"access_level": "confidential"},
                                            format="json")
    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["id"], data["access_level"], data["groups"]) == (str(intro), "confidential", [])
    assert data["heading_path"] == ["Security policy"] and data["level"] == 1
    chunk_levels = set(Chunk.objects.filter(section_id=intro).values_list("access_level", flat=True))
    assert chunk_levels == {AccessLevel.CONFIDENTIAL}
    after = list(Chunk.objects.filter(section_id=intro).values_list("id", "embedding"))
    assert {i: list(e) for i, e in after} == {i: list(e) for i, e in embeddings_before}  # the same chunks, in any order
    # The viewer (internal) no longer sees it.
    viewer_ids = {s["id"] for s in world.client("viewer").get(f"/api/v1/documents/{world.doc.id}/sections/").json()}
    assert str(intro) not in viewer_ids

    back = world.client("editor").patch(f"/api/v1/sections/{intro}/", {"inherit": True}, format="json")
    assert back.status_code == 200 and back.json()["access_level"] == "internal"  # the root's policy again


def test_section_patch_groups_and_validation(world):
    intro = world.section_ids["intro"]
    admin = world.client("admin")
    response = admin.patch(f"/api/v1/sections/{intro}/", {"groups": ["security-team"]}, format="json")
    assert response.status_code == 200 and response.json()["groups"] == ["security-team"]
    section = Section.objects.get(pk=intro)
    assert section.access_groups == [world.tenant.groups.get(slug="security-team").id]
    # The editor is not in the group: the section is gone from their view (404, not 403).
    assert world.client("editor").patch(f"/api/v1/sections/{intro}/", {"inherit": True}, format="json"
                                        ).status_code == 404
    for body in ({}, {"inherit": True, "access_level": "public"}, {"groups": ["ghosts"]},
                 {"access_level": "cosmic"}):
        before = snapshot()
        refused = admin.patch(f"/api/v1/sections/{intro}/", body, format="json")
        assert refused.status_code == 400, (body, refused.content)
        assert snapshot() == before


def test_admin_may_set_a_policy_above_their_clearance_and_still_gets_the_section_back(world):
    admin = world.actors["admin"].membership
    admin.clearance = AccessLevel.CONFIDENTIAL
    admin.save()
    intro = world.section_ids["intro"]
    response = world.client("admin").patch(f"/api/v1/sections/{intro}/", {"access_level": "restricted"},
                                           format="json")
    assert response.status_code == 200, response.content
    assert response.json()["access_level"] == "restricted"
    assert world.client("admin").patch(f"/api/v1/sections/{intro}/", {"inherit": True}, format="json"
                                       ).status_code == 404  # now out of their reach


# ----------------------------------------------------------------------------- jobs


def test_job_visibility(world):
    editor_user = world.actors["editor"].membership.user
    own_batch = IngestionJob.objects.create(tenant=world.tenant, kind="batch", created_by=editor_user)
    assert world.client("editor").get(f"/api/v1/jobs/{own_batch.id}/").status_code == 200  # creator
    assert world.client("admin").get(f"/api/v1/jobs/{own_batch.id}/").status_code == 200  # admin
    assert world.client("viewer").get(f"/api/v1/jobs/{own_batch.id}/").status_code == 404
    # The same user in another tenant does not see it either.
    membership_create(tenant=world.other, email=editor_user.email, role="admin", clearance="restricted")
    from accounts.services import api_token_create

    _, key = api_token_create(membership=editor_user.memberships.get(tenant=world.other))
    client = world.client("anonymous")
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get(f"/api/v1/jobs/{own_batch.id}/").status_code == 404


def test_job_output_shape(world):
    job = IngestionJob.objects.create(tenant=world.tenant, document=world.doc, status="running", stage="embed",
                                      done=3, total=7)
    # An admin: a viewer reads only part of this document, and is shown none of its jobs (docs/security.md, "Job times").
    data = world.client("admin").get(f"/api/v1/jobs/{job.id}/").json()
    assert data["status"] == "running" and data["stage"] == "embed"
    assert data["progress"] == {"done": 3, "total": 7}
    assert data["document_id"] == str(world.doc.id) and data["finished_at"] is None


# ----------------------------------------------------------------------------- sessions


def test_session_with_one_membership_acts_as_it(world, client):
    client.force_login(world.actors["viewer"].membership.user)
    response = client.get("/api/v1/documents/")
    assert response.status_code == 200 and response.json()["count"] == 1


def test_session_with_several_memberships_needs_the_tenant_header(world, client):
    user = world.actors["viewer"].membership.user
    membership_create(tenant=world.other, email=user.email, role="viewer", clearance="restricted")
    client.force_login(user)
    response = client.get("/api/v1/documents/")
    assert response.status_code == 400 and response.json()["error"]["code"] == "tenant_required"
    acme = client.get("/api/v1/documents/", HTTP_X_BULKHEAD_TENANT="acme").json()
    globex = client.get("/api/v1/documents/", HTTP_X_BULKHEAD_TENANT="globex").json()
    assert [d["title"] for d in acme["results"]] == ["Security policy"]
    assert [d["title"] for d in globex["results"]] == ["Globex secrets"]
    assert client.get("/api/v1/documents/", HTTP_X_BULKHEAD_TENANT="initech").status_code == 401


def test_session_writes_need_the_csrf_token(world):
    from rest_framework.test import APIClient

    client = APIClient(enforce_csrf_checks=True)
    client.force_login(world.actors["editor"].membership.user)
    response = client.post("/api/v1/documents/", {"title": "T", "content": "x"}, format="json")
    assert response.status_code == 403
    assert "CSRF" in response.json()["error"]["message"]


def test_nonexistent_ids_answer_404_in_the_error_shape(world):
    response = world.client("viewer").get(f"/api/v1/jobs/{uuid.uuid4()}/")
    assert response.status_code == 404
    assert response.json() == {"error": {"code": "not_found", "message": "Not found.", "details": {}}}


def test_replace_without_a_policy_keeps_the_documents_own(world):
    """A replacement that leaves access_level/groups out keeps the document's policy; it used to
    fall back to the serializer default (internal) and widen a confidential document."""
    document = make_document(world.tenant, title="Conf doc", default=AccessLevel.CONFIDENTIAL, sections=[
        ("root", None, "", AccessLevel.CONFIDENTIAL, [], "Confidential text."),
    ])
    body = {"title": "Conf doc v2", "content": "# Conf doc\nNew confidential text.", "content_type": "text/markdown"}
    assert world.client("editor").put(f"/api/v1/documents/{document.id}/", body, format="json").status_code == 200
    document.refresh_from_db()
    assert (document.access_level, document.access_groups) == (AccessLevel.CONFIDENTIAL, [])
    # Multipart too; and an explicit policy is still honoured.
    file = SimpleUploadedFile("conf.md", b"# Conf doc\nThird text.", content_type="text/markdown")
    assert world.client("admin").put(f"/api/v1/documents/{document.id}/", {"file": file},
                                     format="multipart").status_code == 200
    document.refresh_from_db()
    assert document.access_level == AccessLevel.CONFIDENTIAL
    body["access_level"] = "internal"
    assert world.client("admin").put(f"/api/v1/documents/{document.id}/", body, format="json").status_code == 200
    document.refresh_from_db()
    assert document.access_level == AccessLevel.INTERNAL


def test_a_long_section_tree_is_asked_for_a_page_at_a_time(world, monkeypatch):
    """A document may hold 100,000 sections; its whole readable tree was 32 MB and 11 s of a web thread for
    any member who may read it (found attacking the demo). Past ``SECTIONS_PAGE_MAX`` sections the tree
    is asked for a page at a time (``?offset=&limit=``): each readable section on exactly one page, in
    document order, none above the reader's access; a whole tree past the maximum is a 400 saying how."""
    from kb import apis

    monkeypatch.setattr(apis, "SECTIONS_PAGE_MAX", 2)
    url = f"/api/v1/documents/{world.doc.id}/sections/"
    client = world.client("viewer")
    readable = [s["id"] for s in client.get(url, {"limit": 1000}).json()]
    assert len(readable) > 2
    whole = client.get(url)
    assert whole.status_code == 400 and whole.json()["error"]["code"] == "too_many_sections"
    assert f"has {len(readable)} sections you may read" in whole.json()["error"]["message"]
    pages = []
    for offset in range(0, len(readable) + 2, 2):
        answer = client.get(url, {"offset": offset, "limit": 2})
        assert answer.status_code == 200 and answer["X-Sections-Total"] == str(len(readable))
        pages += [s["id"] for s in answer.json()]
    assert pages == readable
    admin_ids = {s["id"] for s in world.client("admin").get(url, {"limit": 1000}).json()}
    assert set(readable) < admin_ids  # the viewer's pages hold none of the sections above them
    for bad in ({"limit": 0}, {"limit": 10_001}, {"offset": -1, "limit": 1}, {"limit": "x"}):
        assert client.get(url, bad).status_code == 400, bad
