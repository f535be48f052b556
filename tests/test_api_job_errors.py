"""A failed ingestion's error shown through the API never quotes document text to members who
may not read it.

Parse errors quote what they stumbled on -- a heading's text, a malformed marker -- and that
text may sit in a restricted part of the document, while the failed job and document are
visible to every member who may read the document's default policy. The API shows:

* the job's creator (who sent the text) and an admin who may read every section a document could hold
  (the top clearance and every group of the tenant): the full message;
* everyone else, admins included: the message with its line number and the kind of problem, and every quoted
  piece of the document replaced by ``…``.
"""

from __future__ import annotations

import json

import pytest

from accounts.models import Group
from accounts.services import membership_set_groups
from ingestion.parsers import parse
from ingestion.structure import ParseError
from kb.models import Document, IngestionJob
from tests.ingestion_helpers import wait_for_jobs

pytest_plugins = ["tests.api_fixtures"]

SECRET = "Project Nightingale acquisition target"
BROKEN = f"""---
access: internal
---
# Overview
Everyone reads this overview.

<!-- access: restricted; groups: security-team -->
The restricted region starts here.

# {SECRET}
More restricted text.
<!-- /access -->
"""


def _parse_error(text: str) -> str:
    with pytest.raises(ParseError) as caught:
        parse(text.encode(), content_type="text/markdown", filename="plan.md")
    return str(caught.value)


def _upload(world) -> tuple[str, str]:
    response = world.client("editor").post(
        "/api/v1/documents/", {"title": "Plans", "content": BROKEN, "content_type": "text/markdown"}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()["id"], response.json()["job"]["id"]


def _check_views(world, document_id: str, job_id: str) -> None:
    full = _parse_error(BROKEN)
    assert SECRET in full and full.startswith("line 10: ")
    for actor in ("viewer", "low_clearance", "editor", "admin"):
        client = world.client(actor)
        job = client.get(f"/api/v1/jobs/{job_id}/")
        document = client.get(f"/api/v1/documents/{document_id}/")
        listed = client.get("/api/v1/documents/", {"status": "failed"})
        if actor == "low_clearance":  # cannot read the default policy: sees neither
            assert job.status_code == document.status_code == 404
            assert document_id not in json.dumps(listed.json())
            continue
        assert job.status_code == document.status_code == listed.status_code == 200, actor
        (row,) = [d for d in listed.json()["results"] if d["id"] == document_id]
        errors = [job.json()["error"], document.json()["error"], row["error"]]
        if actor == "editor":  # the creator
            assert errors == [full] * 3, actor
        else:
            for error in errors:
                assert SECRET not in error and "Nightingale" not in error, error
                assert error.startswith("line 10: heading "), error  # the line and the kind of problem stay
                assert "would close its enclosing section" in error and "line 7" in error


@pytest.mark.django_db
def test_failed_job_error_is_redacted_for_readers_of_the_default_policy(world):
    """The failed state written as ingestion writes it, with the real parser's message."""
    document_id, job_id = _upload(world)
    message = _parse_error(BROKEN)
    IngestionJob.objects.filter(pk=job_id).update(status="failed", stage="failed", error=message)
    Document.objects.filter(pk=document_id).update(status="failed", error=message)
    _check_views(world, document_id, job_id)  # the world's admin is not in "finance": the line and the kind only
    admin = world.actors["admin"].membership
    membership_set_groups(membership=admin, groups=Group.objects.filter(tenant=world.tenant))
    client = world.client("admin")
    assert client.get(f"/api/v1/jobs/{job_id}/").json()["error"] == message  # every group: the full message
    assert client.get(f"/api/v1/documents/{document_id}/").json()["error"] == message


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_failed_ingestion_through_the_worker(celery_worker, world):
    document_id, job_id = _upload(world)
    (job,) = wait_for_jobs([job_id])
    assert job.status == "failed" and SECRET in job.error
    _check_views(world, document_id, job_id)


@pytest.mark.parametrize(
    ("message", "safe"),
    [
        ("line 10: heading 'Secret plan' (level 1) would close its enclosing section",
         "line 10: heading '…' (level 1) would close its enclosing section"),
        ("line 3: malformed access marker in heading \"it's 'secret'\" (a heading marker must be ...)",
         "line 3: malformed access marker in heading '…' (a heading marker must be ...)"),
        ("line 4: unknown access level 'top-secret-merger' (expected one of: public, internal)",
         "line 4: unknown access level '…' (expected one of: public, internal)"),
        ("unknown groups merger-team, nightingale (line 12)", "unknown groups (line 12)"),
        ("line 2: invalid front matter: mapping values are not allowed in 'Secret: x: y'",
         "line 2: invalid front matter"),
        ("malformed CSV: field larger than field limit (131072)", "malformed CSV"),
        ("message 3 of the mailbox: unreadable e-mail message (HeaderParseError: Subject: Merger)",
         "message 3 of the mailbox: unreadable e-mail message"),
        ("this PDF is corrupt or truncated and cannot be read (PdfReadError: bad xref 'Secret')",
         "this PDF is corrupt or truncated and cannot be read"),
        ("line 5: a dangling quote ' Secret words", "line 5: a dangling quote …"),
        ("3 of 10 documents failed", "3 of 10 documents failed"),
        ("", ""),
    ],
)
def test_safe_error(message, safe):
    from kb.serializers import safe_error

    assert safe_error(message) == safe
