"""A failed re-derivation set the document ``failed`` where readers of a part of it saw it (seventeenth session;
docs/security.md, "Job times").

A policy change starts a re-derivation only when it changes a stored heading path: when a section under the changed
one has readers the change left out of it. Its job is hidden from whoever does not read the document whole
(``kb.selectors.jobs_shown``), but when it failed the document's own status turned ``failed``, with the job's error,
in the API's and the MCP's lists and document, the console's list, page and dashboard: a member reading one part saw
a change above them. The job fails for real here: an operator lowered the chunk limit between the ingestion and the
policy change (``BULKHEAD_MAX_CHUNKS_SMALL``), a limit the pipeline holds every job to.
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from kb.models import Document, IngestionJob
from kb.services import section_set_access
from pipeline.services import jobs_run
from tests.api_helpers import console_client, token_client
from tests.test_attack_job_times import _section, world  # noqa: F401 -- world is a fixture (the same document and members)

pytestmark = pytest.mark.django_db


def _as_seen(member, document) -> dict:
    api, console = token_client(member), console_client(member)
    listed = {d["id"]: d for d in api.get("/api/v1/documents/").json()["results"]}[str(document.pk)]
    one = api.get(f"/api/v1/documents/{document.pk}/").json()
    failed_filter = [d["id"] for d in api.get("/api/v1/documents/?status=failed").json()["results"]]
    return {
        "api list": (listed["status"], listed["error"]), "api document": (one["status"], one["error"]),
        "api failed filter": str(document.pk) in failed_filter,
        "console list": "status-failed" in console.get("/documents/").content.decode(),
        "console failed filter": str(document.pk) in console.get("/documents/?status=failed").content.decode(),
        "console page": "status-failed" in console.get(f"/documents/{document.pk}/").content.decode(),
        "console dashboard": "failed 1" in console.get("/").content.decode(),
    }


def test_a_failed_rederivation_is_not_shown_to_a_reader_of_part_of_the_document(world):  # noqa: F811 -- the imported fixture
    tenant, reader, whole, full, document, mine = world
    before = _as_seen(reader, document)
    assert before["api document"] == ("ready", "")
    jobs_before = set(IngestionJob.objects.values_list("pk", flat=True))
    # Bravo narrowed to a group: Bravo two's heading path loses "Bravo" for its readers, a re-derivation.
    section_set_access(actor=full, section=_section(document, "Bravo"), access_level="restricted", groups=["board"])
    new = list(IngestionJob.objects.exclude(pk__in=jobs_before).values_list("pk", flat=True))
    assert new, "the change started no re-derivation: the test tests nothing"
    with override_settings(BULKHEAD_MAX_CHUNKS_SMALL=1):
        jobs_run(new)
    assert Document.objects.get(pk=document.pk).status == Document.Status.FAILED
    # The reader of Handbook alone: as before, every surface.
    assert _as_seen(reader, document) == before
    # Who reads it whole, and the admin: the failure, with its error.
    for member in (whole, full):
        seen = _as_seen(member, document)
        assert seen["api document"][0] == "failed" and seen["api document"][1], member
        assert seen["api list"][0] == "failed" and seen["api failed filter"] and seen["console page"], member
