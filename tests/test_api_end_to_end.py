"""Upload through the API, ingest on the real worker, poll the job, and search as members
with different clearances: each sees exactly what the markers allow them."""

from __future__ import annotations

import json
import time

import pytest
from django.core.cache import cache

from accounts.services import api_token_create, group_create, membership_create, tenant_create
from kb.screening import screening_settings_update
from tests.api_helpers import Actor
from tests.bounds import JOB_WAIT
from tests.ingestion_helpers import POLICY_DOC

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

INTRO, SECRET, REGION = "Intro for everyone", "Only the security team", "names of past reporters"


@pytest.fixture
def people():
    cache.clear()
    tenant = tenant_create(slug="e2e-co", name="E2E")
    group_create(tenant=tenant, slug="security-team")
    actors = {}
    for name, role, clearance, groups in [
        ("uploader", "editor", "restricted", ["security-team"]),
        ("internal", "viewer", "internal", []),
        ("confidential", "viewer", "confidential", []),
        ("restricted_no_group", "viewer", "restricted", []),
        ("security", "viewer", "restricted", ["security-team"]),
        ("public", "viewer", "public", []),
    ]:
        membership = membership_create(tenant=tenant, email=f"{name}@e2e.io", role=role, clearance=clearance,
                                       group_slugs=groups)
        actors[name] = Actor(name, membership, api_token_create(membership=membership)[1]).client()
    # These tests are about access, not screening. The detector (lexical-4 to lexical-5) flags the shared document's
    # "Call the on-call engineer first." -- a false positive, listed in docs/screening.md -- which the
    # default quarantine would hold for review; in flag mode it is returned with its flag.
    admin = membership_create(tenant=tenant, email="admin@e2e.io", role="admin", clearance="restricted")
    screening_settings_update(actor=admin, mode="flag")
    return actors


def _poll(client, job_id, timeout=JOB_WAIT):
    deadline = time.monotonic() + timeout
    while True:
        response = client.get(f"/api/v1/jobs/{job_id}/")
        assert response.status_code == 200, response.content
        job = response.json()
        if job["status"] in ("succeeded", "failed"):
            return job
        assert time.monotonic() < deadline, f"job still {job['status']} ({job['stage']}) after {timeout}s"
        time.sleep(0.25)


def _visible_text(client, query):
    response = client.post("/api/v1/search/", {"query": query, "top_k": 20, "mode": "hybrid"}, format="json")
    assert response.status_code == 200, response.content
    return json.dumps(response.json())


def test_upload_poll_and_search_per_clearance(celery_worker, people):
    uploader = people["uploader"]
    created = uploader.post("/api/v1/documents/", {"title": "Security policy", "content": POLICY_DOC,
                                                   "content_type": "text/markdown", "tags": ["security"]},
                            format="json")
    assert created.status_code == 201, created.content
    job = _poll(uploader, created.json()["job"]["id"])
    assert job["status"] == "succeeded", job["error"]
    assert job["stage"] == "done" and job["progress"]["done"] == job["progress"]["total"] > 0
    assert job["finished_at"]

    document_id = created.json()["id"]
    document = people["internal"].get(f"/api/v1/documents/{document_id}/").json()
    assert document["status"] == "ready" and document["tags"] == ["security"]
    full = people["security"].get(f"/api/v1/documents/{document_id}/").json()
    assert full["chunks_count"] > document["chunks_count"] > 0

    expectations = {
        "internal": {INTRO: True, SECRET: False, REGION: False},
        "confidential": {INTRO: True, SECRET: False, REGION: True},
        "restricted_no_group": {INTRO: True, SECRET: False, REGION: True},
        "security": {INTRO: True, SECRET: True, REGION: True},
    }
    for actor, expected in expectations.items():
        seen = " ".join(_visible_text(people[actor], q) for q in (
            "who reads the security policy intro", "incident response on-call engineer", "past reporters names"))
        for text, visible in expected.items():
            assert (text in seen) is visible, (actor, text)
        if not expected[SECRET]:
            assert "Incident response" not in seen  # not even its heading

    # The public member cannot see the document, its sections, or its job.
    public = people["public"]
    assert public.get(f"/api/v1/documents/{document_id}/").status_code == 404
    assert public.get(f"/api/v1/jobs/{job['id']}/").status_code == 404
    assert json.loads(_visible_text(public, "security policy"))["results"] == []

    # A permission change through the API applies at once, without re-ingestion.
    sections = people["security"].get(f"/api/v1/documents/{document_id}/sections/").json()
    incident = next(s for s in sections if s["heading_path"][-1:] == ["Incident response"])
    patched = uploader.patch(f"/api/v1/sections/{incident['id']}/", {"access_level": "internal", "groups": []},
                             format="json")
    assert patched.status_code == 200, patched.content
    assert SECRET in _visible_text(people["internal"], "incident response on-call engineer")


def test_upload_with_an_unknown_group_marker_ends_failed_naming_it(celery_worker, people):
    bad = POLICY_DOC.replace("groups: security-team", "groups: red-team")
    created = people["uploader"].post("/api/v1/documents/", {"title": "Bad", "content": bad,
                                                             "content_type": "text/markdown"}, format="json")
    assert created.status_code == 201, created.content
    job = _poll(people["uploader"], created.json()["job"]["id"])
    assert job["status"] == "failed"
    assert "red-team" in job["error"] and "line 9" in job["error"]
    document = people["uploader"].get(f"/api/v1/documents/{created.json()['id']}/").json()
    assert document["status"] == "failed" and "red-team" in document["error"]
    assert document["chunks_count"] == 0
