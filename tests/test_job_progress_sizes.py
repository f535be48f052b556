"""A job's numbers are the size of its document: shown only to those who can see the document or uploaded it.

A document job's progress (``done``/``total``) counts all of its document's chunks, and a failed job's error
names lines of its document: both move with the document's length. Admins see every job of their tenant, so an
internal admin read off the size of a restricted document they can see no part of -- in chunks from a job's
total, in lines from its error -- and the audit trail gave every admin its size in bytes with each upload,
replacement and deletion (written down as an open gap in docs/security.md, 2026-12-04). Now
(``kb.selectors.jobs_shown``'s ``progress_shown``): the progress is null and the error's numbers read ``…``
for anyone else -- through the API, the Python client and the console (a dash) -- and the trail neither
records nor shows a document's size (records kept before show none).

The documents differ in their number of restricted sections (and of lines), ingested by the real pipeline in
the test's transaction, so nothing is committed beside other tests.
"""

from __future__ import annotations

import json
import re

import httpx
import pytest
from bulkhead_client import Client
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections

from accounts.services import membership_update, tenant_create
from audit.models import Action, AuditEvent
from kb.models import Chunk, IngestionJob
from kb.services import job_retry
from pipeline.services import jobs_run
from tests.api_helpers import console_client, member_with_token

pytestmark = pytest.mark.django_db

ALICE = "a restricted board's minutes"


def _board(sections: int, front: str = "") -> str:
    """A document of ``sections`` sections: restricted by its default policy (set at upload), or by ``front``."""
    return front + "".join(f"# Board item {i}\n\n" + f"The board discussed {ALICE}, item {i}. " * 12 + "\n\n"
                   for i in range(sections))


def _broken(filler: int) -> str:
    """A document the parser refuses naming its lines: the later, the more filler paragraphs come first."""
    return ("# Overview\n" + "Everyone reads this overview.\n\n" * filler
            + "<!-- access: restricted -->\nThe restricted region starts here.\n\n# Secret heading\nMore.\n"
            + "<!-- /access -->\n")


@pytest.fixture
def sizes():
    tenant = tenant_create(slug="sizes", name="Sizes")
    people = {
        "uploader": member_with_token(tenant, "uploader@sizes.example", "editor", "restricted"),
        "reader": member_with_token(tenant, "reader@sizes.example", "viewer", "restricted"),
        "admin": member_with_token(tenant, "admin@sizes.example", "admin", "internal"),  # below the documents
        "member": member_with_token(tenant, "member@sizes.example", "editor", "internal"),  # below them too
        # Uploads what they may not read: markers above the uploader's clearance only narrow a text they have.
        "low_uploader": member_with_token(tenant, "low@sizes.example", "editor", "internal"),
    }
    other = tenant_create(slug="sizes-other", name="Sizes other")
    people["other_tenant"] = member_with_token(other, "admin@other.example", "admin", "restricted")
    return tenant, people


def _api(people, who):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {people[who][1]}")
    return client


def _upload(people, text: str, title: str, who: str = "uploader", level: str = "restricted") -> tuple[str, str]:
    response = _api(people, who).post("/api/v1/documents/", {
        "title": title, "content": text, "content_type": "text/markdown", "access_level": level}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"], response.json()["job"]["id"]


def _without_ids(job: dict) -> dict:
    return {k: v for k, v in job.items() if k not in ("id", "document_id", "created_at", "finished_at")}


_COUNT = re.compile(r'class="job-count[^"]*"[^>]*>([^<]*)<')


def _counts(page: str) -> list[str]:
    """What a console page shows of each job's progress: "done/total", or the dash."""
    return _COUNT.findall(page)


class _InProcess:
    """The Python client over the real WSGI application in this thread (the test's transaction: like the test
    client, the request must not close the test's connection)."""

    def __enter__(self) -> httpx.WSGITransport:
        request_started.disconnect(close_old_connections)
        request_finished.disconnect(close_old_connections)
        return httpx.WSGITransport(app=get_wsgi_application())

    def __exit__(self, *exc) -> None:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def _client_jobs(people, who: str, job_ids: list[str]) -> list[dict]:
    with _InProcess() as transport, Client("http://testserver", people[who][1], transport=transport, allow_http=True) as kb:
        return [kb.get_job(job_id) for job_id in job_ids]


def test_a_jobs_progress_is_shown_only_to_who_sees_its_document_or_uploaded_it(sizes):
    tenant, people = sizes
    small_doc, small = _upload(people, _board(2), "Board, short")
    large_doc, large = _upload(people, _board(7), "Board, long")

    # Queued: the console's line of each upload shows 0/0 to the uploader, a dash to the admin.
    card = console_client(people["uploader"][0]).get(f"/jobs/{small}/card/").content.decode()
    assert _counts(card) == ["0/0"]
    card = console_client(people["admin"][0]).get(f"/jobs/{small}/card/").content.decode()
    assert _counts(card) == ["–"] and "<progress" not in card

    jobs_run([small, large])
    totals = [IngestionJob.objects.get(pk=j).total for j in (small, large)]
    chunks = [Chunk.objects.filter(document_id=d).count() for d in (small_doc, large_doc)]
    assert totals == chunks and totals[0] < totals[1], "the test did not make sizes that differ"
    seen = [{"done": n, "total": n} for n in totals]

    for who in ("uploader", "reader"):  # the uploader, and a reader of the documents: the numbers
        api = [_api(people, who).get(f"/api/v1/jobs/{j}/").json() for j in (small, large)]
        assert [job["progress"] for job in api] == seen, who
        assert [job["progress"] for job in _client_jobs(people, who, [small, large])] == seen, who
        console = console_client(people[who][0])
        assert sorted(_counts(console.get("/jobs/").content.decode())) == sorted(f"{n}/{n}" for n in totals), who
        assert _counts(console.get(f"/jobs/{large}/").content.decode()) == [f"{totals[1]}/{totals[1]}"], who

    # The internal admin sees both jobs, and nothing of them moves with the documents' sizes.
    api = [_api(people, "admin").get(f"/api/v1/jobs/{j}/") for j in (small, large)]
    assert [r.status_code for r in api] == [200, 200]
    assert [r.json()["progress"] for r in api] == [None, None]
    assert _without_ids(api[0].json()) == _without_ids(api[1].json())
    client = _client_jobs(people, "admin", [small, large])
    assert [job["progress"] for job in client] == [None, None] and _without_ids(client[0]) == _without_ids(client[1])
    console = console_client(people["admin"][0])
    for page in (console.get("/jobs/"), console.get(f"/jobs/{small}/"), console.get(f"/jobs/{large}/")):
        assert page.status_code == 200
        body = page.content.decode()
        assert _counts(body) and set(_counts(body)) == {"–"} and "<progress" not in body

    # A member below the documents, and another tenant's admin: no job at all.
    for who in ("member", "other_tenant"):
        assert [_api(people, who).get(f"/api/v1/jobs/{j}/").status_code for j in (small, large)] == [404, 404], who
        console = console_client(people[who][0])
        assert _counts(console.get("/jobs/").content.decode()) == [], who
        assert console.get(f"/jobs/{large}/").status_code == 404, who


def test_an_uploader_sees_the_progress_of_bytes_they_may_not_read(sizes):
    """The whole document marked above the uploader: they can no longer see it, but the bytes, and so
    their size, are theirs (``content_by``); the internal admin still sees no number."""
    tenant, people = sizes
    document_id, job_id = _upload(people, _board(4, "---\naccess: restricted\n---\n"), "Marked", "low_uploader",
                                  "internal")
    jobs_run([job_id])
    job = IngestionJob.objects.get(pk=job_id)
    assert job.status == "succeeded" and job.total == Chunk.objects.filter(document_id=document_id).count() > 0
    assert _api(people, "low_uploader").get(f"/api/v1/documents/{document_id}/").status_code == 404
    mine = _api(people, "low_uploader").get(f"/api/v1/jobs/{job_id}/").json()
    assert mine["progress"] == {"done": job.total, "total": job.total}
    assert _counts(console_client(people["low_uploader"][0]).get(f"/jobs/{job_id}/").content.decode()) == [
        f"{job.total}/{job.total}"]
    assert _api(people, "admin").get(f"/api/v1/jobs/{job_id}/").json()["progress"] is None


def test_a_failed_jobs_error_names_no_line_to_who_cannot_see_its_document(sizes):
    tenant, people = sizes
    jobs, documents = [], []
    for filler in (1, 9):  # the same fault, on lines 7 and 23
        document_id, job_id = _upload(people, _broken(filler), f"Plan {filler}")
        documents.append(document_id)
        jobs.append(job_id)
    jobs_run(jobs)
    errors = [IngestionJob.objects.get(pk=j).error for j in jobs]
    assert errors[0].startswith("line 7: ") and errors[1].startswith("line 23: ")

    uploader = [_api(people, "uploader").get(f"/api/v1/jobs/{j}/").json() for j in jobs]
    assert [job["error"] for job in uploader] == errors  # in full, numbers and quotes
    assert [job["progress"] for job in uploader] == [{"done": 0, "total": 0}] * 2
    reader = [_api(people, "reader").get(f"/api/v1/jobs/{j}/").json()["error"] for j in jobs]
    assert reader[0].startswith("line 7: heading '…'") and reader[1].startswith("line 23: ")  # no quote

    admin = [_api(people, "admin").get(f"/api/v1/jobs/{j}/").json() for j in jobs]
    assert admin[0]["error"] == admin[1]["error"] and not re.search(r"\d", admin[0]["error"]), admin[0]["error"]
    assert admin[0]["error"].startswith("line …: heading '…'")  # the kind of problem stays
    assert [job["progress"] for job in admin] == [None, None]
    assert [job["error"] for job in _client_jobs(people, "admin", jobs)] == [admin[0]["error"]] * 2
    console = console_client(people["admin"][0])
    for page in ("/jobs/?status=failed", f"/jobs/{jobs[1]}/", "/"):
        body = console.get(page).content.decode()
        assert "would close its enclosing section" in body, page
        assert "line 7" not in body and "line 23" not in body and "line …" in body, page

    # A member who retried the job while they could read the document, then lost the clearance: they see their
    # retry (they started it), not its numbers.
    member = membership_update(membership=people["member"][0], clearance="restricted")
    retry = job_retry(job=IngestionJob.objects.get(pk=jobs[1]), actor=member)
    jobs_run([retry.pk])
    membership_update(membership=people["member"][0], clearance="internal")
    mine = _api(people, "member").get(f"/api/v1/jobs/{retry.pk}/")
    assert mine.status_code == 200 and mine.json()["progress"] is None
    assert mine.json()["error"] == admin[0]["error"]
    assert _api(people, "uploader").get(f"/api/v1/jobs/{retry.pk}/").json()["error"] == errors[1]  # their bytes
    assert _api(people, "other_tenant").get(f"/api/v1/jobs/{retry.pk}/").status_code == 404


def test_the_audit_trail_records_and_shows_no_documents_size(sizes):
    tenant, people = sizes
    small_doc, _ = _upload(people, _board(2), "Board, short")
    large_doc, _ = _upload(people, _board(7), "Board, long")
    uploader = _api(people, "uploader")
    replaced = uploader.put(f"/api/v1/documents/{small_doc}/", {
        "title": "Board, short", "content": _board(3), "content_type": "text/markdown",
        "access_level": "restricted"}, format="json")
    assert replaced.status_code == 200, replaced.content
    assert uploader.delete(f"/api/v1/documents/{large_doc}/").status_code == 204
    # A record kept before the size was left out: it holds one, never shown.
    AuditEvent.objects.create(tenant_id=tenant.pk, action=Action.DOCUMENT_CREATE, target_type="document",
                              target_id=small_doc, document_ids=[small_doc], details={"after": {
                                  "size_bytes": 987654, "content_type": "text/markdown",
                                  "policy": {"level": "restricted", "groups": []}}})
    actions = (Action.DOCUMENT_CREATE, Action.DOCUMENT_REPLACE, Action.DOCUMENT_DELETE)
    recorded = list(AuditEvent.objects.filter(tenant_id=tenant.pk, action__in=actions).order_by("id"))
    assert len(recorded) == 5
    assert ["size_bytes" in json.dumps(e.details) for e in recorded] == [False] * 4 + [True]

    admin = _api(people, "admin")
    listed = admin.get("/api/v1/audit/", {"limit": 100})
    assert listed.status_code == 200
    records = [r for r in listed.json()["results"] if r["action"] in actions]
    assert len(records) == 5
    creates = [r["details"] for r in records if r["action"] == Action.DOCUMENT_CREATE]
    assert creates == [{"after": {"content_type": "text/markdown",
                                  "policy": {"level": "restricted", "groups": []}}}] * 3  # the old one too
    exports = [b"".join(admin.get("/api/v1/audit/export/", {"file": f}).streaming_content).decode()
               for f in ("jsonl", "csv")]
    console = console_client(people["admin"][0])
    page = console.get("/audit/").content.decode()
    exports += [b"".join(console.get("/audit/", {"export": f}).streaming_content).decode() for f in ("jsonl", "csv")]
    for text in [listed.content.decode(), page, *exports]:
        assert "size_bytes" not in text and "987654" not in text
        for size in {len(_board(n).encode()) for n in (2, 3, 7)}:
            assert f": {size}" not in text and f":{size}" not in text
    assert "Technical details" in page and "content_type" in page  # the details are shown, without the size
    # Another tenant's admin reads none of these records.
    other = _api(people, "other_tenant").get("/api/v1/audit/", {"limit": 100}).json()["results"]
    assert not [r for r in other if r["action"] in actions]
