"""A document's jobs date no change to a part a member cannot read (sixteenth session; docs/security.md, "Job times").

A document's time is per reader since the fifteenth session (``kb.changed``): a change of a section a member cannot
read moves no time they are shown. But a member who could see a document saw all of its jobs
(``kb.selectors.jobs_shown``) -- in the console's jobs list, a job's page and its upload line, the dashboard, and
``GET /api/v1/jobs/{id}/`` -- each with its ``created_at`` and ``finished_at``: a replacement's job, or the
re-derivation job a policy change starts when it changes heading paths, dated a change to a part they cannot read
(written down as left open in docs/security.md, fifteenth session).

One document, ingested by the real pipeline (in the test's transaction): ``Handbook`` (internal: "Alpha ..."),
``Bravo`` (restricted) under it and ``Bravo two`` (restricted, its own marker) under that. ``reader`` -- an editor
of internal clearance, who uploaded a document of their own -- reads Handbook only; ``whole`` (a viewer) reads every section;
``full`` (an admin) makes the changes. After each change of Bravo alone -- new text of the same length, its policy
narrowed to a group (Bravo two's stored heading path loses ``Bravo``: a re-derivation job) and widened back (the
path comes back: another) -- every answer ``reader`` gets of the jobs, the dashboard and the document is the same
body, byte for byte (CSRF tokens aside), as before it: every job id of the tenant, the new ones included, answers as
a job that does not exist. ``whole`` sees the new jobs, and ``reader`` still sees their own upload's job, progress
included.
"""

from __future__ import annotations

import re
import uuid

import pytest

from accounts.services import group_create, membership_create, tenant_create
from kb.models import Chunk, Document, IngestionJob, Section
from kb.services import Upload, document_create, document_replace, section_set_access
from pipeline.services import jobs_run
from tests.api_helpers import console_client, token_client

pytestmark = pytest.mark.django_db

V1 = """# Handbook
Alpha: the lunch menu is soup.

## Bravo <!-- access: restricted -->
Bravo: the merger code is heron.

### Bravo two <!-- access: restricted -->
Bravo two: the board meets at nine.
"""
NOTES = """# Notes
The reader's own notes, on the lunch menu.

## Costs <!-- access: confidential -->
What the lunch costs.
"""
UPLOAD = dict(title="Handbook", content_type="text/markdown", source="handbook.md")

_TOKENS = re.compile(r'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]+')
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _body(response, *, ids: dict[str, str] | None = None) -> tuple[int, str]:
    """A response's status and body, the per-response CSRF tokens masked; ``ids``: section ids named by key (new
    content gives every section a new id, keyed by the bytes: the offsets decision, shown on purpose)."""
    body = _TOKENS.sub(r"\1<token>", response.content.decode())
    for section_id, key in (ids or {}).items():
        body = body.replace(section_id, f"<section {key}>")
    return response.status_code, body


def _section_ids(document: Document) -> dict[str, str]:
    return {str(pk): key for pk, key in Section.objects.filter(document=document).values_list("pk", "key")}


def _ids_in(body: str) -> set[str]:
    return set(_UUID.findall(body))


def _job_ids(tenant) -> list[str]:
    return sorted(str(pk) for pk in IngestionJob.objects.filter(tenant=tenant).values_list("pk", flat=True))


def _seen_jobs(member, job_ids) -> dict:
    """What ``member`` gets of each of ``job_ids``: the API's job, the console's job page (and its live part, polled
    while the job runs) and its upload line."""
    api, console = token_client(member), console_client(member)
    seen = {}
    for job_id in job_ids:
        seen[f"api job {job_id}"] = _body(api.get(f"/api/v1/jobs/{job_id}/"))
        seen[f"console job {job_id}"] = _body(console.get(f"/jobs/{job_id}/"))
        seen[f"console job progress {job_id}"] = _body(console.get(f"/jobs/{job_id}/", HTTP_HX_REQUEST="true"))
        seen[f"console job card {job_id}"] = _body(console.get(f"/jobs/{job_id}/card/"))
    return seen


def _as_unknown(member, job_id: str) -> dict:
    """What ``member`` gets for an id no job has, in ``job_id``'s place."""
    made_up = str(uuid.uuid4())
    return {surface.replace(made_up, job_id): (status, body.replace(made_up, job_id))
            for surface, (status, body) in _seen_jobs(member, [made_up]).items()}


def _seen(member, document: Document, job_ids: list[str]) -> dict:
    """Every answer ``member`` gets of jobs -- the console's list (filtered too) and dashboard, and each of
    ``job_ids`` (:func:`_seen_jobs`) -- and of the document (the API's and the console's)."""
    api, console = token_client(member), console_client(member)
    return {
        "console jobs": _body(console.get("/jobs/")),
        "console jobs, document kind": _body(console.get("/jobs/?kind=document")),
        "console jobs, succeeded": _body(console.get("/jobs/?status=succeeded")),
        "console dashboard": _body(console.get("/")),
        "console dashboard jobs": _body(console.get("/", HTTP_HX_REQUEST="true")),
        "api document": _body(api.get(f"/api/v1/documents/{document.pk}/")),
        "console document": _body(console.get(f"/documents/{document.pk}/"), ids=_section_ids(document)),
        **_seen_jobs(member, job_ids),
    }


def _nothing_new(before: dict, after: dict) -> None:
    assert after.keys() == before.keys()
    for surface in before:
        assert after[surface] == before[surface], surface


@pytest.fixture
def world():
    tenant = tenant_create(slug="job-times", name="Job Times")
    for slug in ("board", "kitchen", "legal"):  # no one here is in legal: ``whole`` reads this document whole only
        group_create(tenant=tenant, slug=slug)
    reader = membership_create(tenant=tenant, email="reader@jobtimes.io", role="editor", clearance="internal",
                               group_slugs=["kitchen"])
    whole = membership_create(tenant=tenant, email="whole@jobtimes.io", role="viewer", clearance="restricted",
                              group_slugs=["board", "kitchen"])
    full = membership_create(tenant=tenant, email="full@jobtimes.io", role="admin", clearance="restricted",
                             group_slugs=["board", "kitchen"])
    document, job = document_create(tenant=tenant, created_by=full, upload=Upload(content=V1.encode(), **UPLOAD))
    # The reader's own upload, a part of it marked above them (markers only narrow a text the uploader has): its
    # job is theirs to follow all the same.
    notes, mine = document_create(tenant=tenant, created_by=reader, upload=Upload(
        content=NOTES.encode(), title="Notes", content_type="text/markdown"))
    jobs_run([job.pk, mine.pk])
    assert [j.status for j in IngestionJob.objects.filter(pk__in=[job.pk, mine.pk])] == ["succeeded"] * 2
    titles = sorted(Section.objects.filter(document=document).values_list("title", flat=True))
    assert titles == ["", "Bravo", "Bravo two", "Handbook"], titles  # the document's root, and its headings
    return tenant, reader, whole, full, Document.objects.get(pk=document.pk), str(mine.pk)


def _section(document: Document, title: str) -> Section:
    return Section.objects.get(document=document, title=title)


def _change(full, document: Document, change: str) -> list[str]:
    """Make ``change`` to Bravo alone, run the jobs it starts; their ids."""
    before = set(_job_ids(document.tenant))
    if change == "replaced":
        document_replace(document=document, created_by=full, upload=Upload(
            content=V1.replace("heron", "egret").encode(), tags=None, **UPLOAD))
    else:
        section_set_access(actor=full, section=_section(document, "Bravo"), access_level="restricted",
                           groups=["board"] if change == "narrowed" else [])
    new = sorted(set(_job_ids(document.tenant)) - before)
    assert new, "the change started no job: the test tests nothing"
    jobs_run(new)
    assert {j.status for j in IngestionJob.objects.filter(pk__in=new)} == {"succeeded"}
    return new


@pytest.mark.parametrize("changes", [("replaced",), ("narrowed", "widened")], ids=["replaced", "narrowed, widened"])
def test_a_change_of_a_section_a_reader_cannot_read_shows_them_no_job(world, changes):
    tenant, reader, whole, full, document, mine = world
    before = _seen(reader, document, _job_ids(tenant))
    assert mine in _ids_in(before["console jobs"][1]), "the reader's own upload is not in their list"
    for change in changes:
        new = _change(full, document, change)
        if change != "replaced":
            assert all(IngestionJob.objects.get(pk=j).stats.get("rederive") for j in new)
        document = Document.objects.get(pk=document.pk)
        assert document.status == Document.Status.READY
        after = _seen(reader, document, _job_ids(tenant))
        # Each new job answers as an id no job has; everything else as it did.
        for job_id in new:
            before.update(_as_unknown(reader, job_id))
        _nothing_new(before, after)
        assert not set(new) & _ids_in("".join(body for _, body in after.values()))

        # Whoever reads every section sees the new jobs: the list, the API, the pages.
        api, console = token_client(whole), console_client(whole)
        listed = _ids_in(console.get("/jobs/").content.decode())
        for job_id in new:
            assert job_id in listed, change
            answer = api.get(f"/api/v1/jobs/{job_id}/")
            assert answer.status_code == 200 and answer.json()["finished_at"], change
            assert console.get(f"/jobs/{job_id}/").status_code == 200

    # Usability: the jobs a member started are theirs, whatever the document holds -- their upload's progress too
    # (its bytes are theirs: ``content_by``), though a part of it is above them.
    job = IngestionJob.objects.get(pk=mine)
    notes = Document.objects.get(pk=job.document_id)
    assert token_client(reader).get(f"/api/v1/documents/{notes.pk}/").json()["sections_count"] < \
        Section.objects.filter(document=notes).count(), "the reader reads all of their upload: the test tests less"
    answer = token_client(reader).get(f"/api/v1/jobs/{mine}/").json()
    assert answer["status"] == "succeeded" and answer["progress"] == {"done": job.total, "total": job.total}
    assert job.total > 0
    assert f"{job.total}/{job.total}" in console_client(reader).get(f"/jobs/{mine}/").content.decode()


def test_a_job_a_members_policy_change_started_is_shown_to_them_only_as_to_anyone(world):
    """The re-derivation job a member's own policy change starts is not theirs by creation (found reviewing the job
    times, sixteenth session): whether there is one at all says whether the change renamed a section -- one under
    the changed section whose readers are not all its readers now -- and so tells them the policies of sections
    above them. Here the reader narrows Handbook (which they read) to the kitchen group, in two documents they read
    the same of: under one, Bravo and Bravo two are restricted to every group (a job rebuilds their paths), under
    the other to the kitchen group (no path changes, no job). Every answer the reader gets of jobs is the same
    before and after, the new job answering as an id no job has (it was theirs to see, its progress aside, on the
    code before: 200 and a page). Its total counts every chunk of the document; whoever reads it whole sees it."""
    tenant, reader, whole, full, document, mine = world
    twin, first = document_create(tenant=tenant, created_by=full, upload=Upload(
        content=V1.replace("access: restricted", "access: restricted; groups: kitchen").encode(),
        title="Handbook twin", content_type="text/markdown", source="twin.md"))
    jobs_run([first.pk])
    before_twin = set(_job_ids(tenant))
    section_set_access(actor=reader, section=_section(twin, "Handbook"), access_level="internal", groups=["kitchen"])
    assert set(_job_ids(tenant)) == before_twin, "the twin's change renamed a section: the test compares nothing"

    def jobs_seen(job_ids):  # what the reader gets of jobs (their document's time moved: they changed Handbook)
        seen = _seen(reader, document, job_ids)
        del seen["api document"], seen["console document"]
        return seen

    before = jobs_seen(_job_ids(tenant))
    section_set_access(actor=reader, section=_section(document, "Handbook"), access_level="internal",
                       groups=["kitchen"])
    (new,) = sorted(set(_job_ids(tenant)) - before_twin)
    jobs_run([new])
    job = IngestionJob.objects.get(pk=new)
    assert job.status == "succeeded" and job.created_by_id == reader.user_id and job.stats.get("rederive")
    after = jobs_seen(_job_ids(tenant))
    before.update(_as_unknown(reader, new))
    _nothing_new(before, after)
    assert new not in _ids_in("".join(body for _, body in after.values()))
    # Whoever reads every section sees it, whole.
    assert job.total == Chunk.objects.filter(document=document).count() > Chunk.objects.filter(
        document=document, section__title="Handbook").count(), "the total counts only what the reader reads"
    assert token_client(whole).get(f"/api/v1/jobs/{new}/").json()["progress"] == {"done": job.total,
                                                                                  "total": job.total}
    assert new in _ids_in(console_client(whole).get("/jobs/").content.decode())
    # An editor who reads the document whole (not every group of the tenant: no one is in legal) sees the job their
    # own change starts, as anyone who reads it whole: Handbook widened back, Bravo's paths take it again.
    editor = membership_create(tenant=tenant, email="editor@jobtimes.io", role="editor", clearance="restricted",
                               group_slugs=["board", "kitchen"])
    section_set_access(actor=editor, section=_section(document, "Handbook"), access_level="internal", groups=[])
    (back,) = sorted(set(_job_ids(tenant)) - before_twin - {new})
    jobs_run([back])
    answer = token_client(editor).get(f"/api/v1/jobs/{back}/")
    assert answer.status_code == 200 and answer.json()["progress"]["total"] == job.total


def test_a_job_from_before_content_above_a_reader_went_away_stays_hidden(world):
    """A reader who reads every section now -- the part above them went away -- is still not shown the jobs that
    dated that part (the replacement that changed it, the one that removed it): a job is shown to a reader of part
    of its document only when the document held nothing above them from the job's creation on. A job after that
    is theirs to see."""
    tenant, reader, whole, full, document, mine = world
    jobs = _job_ids(tenant)
    changed = _change(full, document, "replaced")  # Bravo alone
    document_replace(document=Document.objects.get(pk=document.pk), created_by=full, upload=Upload(
        content=V1[:V1.index("## Bravo")].encode(), tags=None, **UPLOAD))
    removed = sorted(set(_job_ids(tenant)) - set(jobs) - set(changed))
    jobs_run(removed)
    document = Document.objects.get(pk=document.pk)
    assert document.status == Document.Status.READY
    assert token_client(reader).get(f"/api/v1/documents/{document.pk}/").json()["sections_count"] == \
        Section.objects.filter(document=document).count() == 2, "the reader does not read every section now"
    api, console = token_client(reader), console_client(reader)
    listed = _ids_in(console.get("/jobs/").content.decode())
    for job_id in sorted(set(jobs) - {mine}) + changed + removed:
        assert api.get(f"/api/v1/jobs/{job_id}/").status_code == 404, job_id
        assert job_id not in listed, job_id

    # New content of Alpha, which the reader reads: its job dates a change they see.
    document_replace(document=document, created_by=full, upload=Upload(
        content=V1[:V1.index("## Bravo")].replace("soup", "stew").encode(), tags=None, **UPLOAD))
    (seen,) = sorted(set(_job_ids(tenant)) - set(jobs) - set(changed) - set(removed))
    jobs_run([seen])
    answer = api.get(f"/api/v1/jobs/{seen}/")
    assert answer.status_code == 200 and answer.json()["finished_at"]
    assert seen in _ids_in(console.get("/jobs/").content.decode())

    # New bytes bringing Bravo back: while they are ingested, the document's new sections are not known yet (its
    # sections are the old ones, all the reader's), so the job is not shown until it has finished -- and then not,
    # as it added a section above them (and the document now holds one: its earlier jobs are hidden too).
    document_replace(document=Document.objects.get(pk=document.pk), created_by=full,
                     upload=Upload(content=V1.encode(), tags=None, **UPLOAD))
    (back,) = sorted(set(_job_ids(tenant)) - set(jobs) - set(changed) - set(removed) - {seen})
    assert api.get(f"/api/v1/jobs/{back}/").status_code == 404
    assert back not in _ids_in(console.get("/jobs/").content.decode())
    jobs_run([back])
    assert IngestionJob.objects.get(pk=back).status == "succeeded"
    assert [api.get(f"/api/v1/jobs/{j}/").status_code for j in (back, seen)] == [404, 404]


def test_a_job_page_reads_the_job_once_and_one_out_of_sight_is_not_found(world, monkeypatch):
    """A job's page read it twice (whether the member may see it, then with its document and creator): a policy
    change committed in between hid it from the second read, and the page was a server error, not the 404 of any
    hidden id (found reviewing the job times, sixteenth session). It reads it once (seventeenth session), in one
    statement: a change committed before that read hides the job, a 404 as any hidden id's; none can land between
    two reads."""
    import console.views.jobs as job_pages

    tenant, reader, whole, full, document, mine = world
    job = IngestionJob.objects.filter(document=document).get()
    reads = []
    real = job_pages.job_get

    def counted(**kwargs):
        reads.append(kwargs["job_id"])
        return real(**kwargs)

    def second_read(**kwargs):
        raise AssertionError("a job's page read the job a second time")

    monkeypatch.setattr(job_pages, "job_get", counted)
    monkeypatch.setattr(job_pages, "job_list", second_read)
    assert console_client(whole).get(f"/jobs/{job.pk}/").status_code == 200
    assert console_client(whole).get(f"/jobs/{job.pk}/card/").status_code == 200
    assert len(reads) == 2  # one read for each page
    # Bravo narrowed to a group no one but admins is in: the document now holds a section above ``whole``.
    section_set_access(actor=None, section=_section(document, "Bravo"), access_level="restricted", groups=["legal"])
    response = console_client(whole).get(f"/jobs/{job.pk}/")
    assert response.status_code == 404
    monkeypatch.undo()
    assert _body(response) == _body(console_client(whole).get(f"/jobs/{uuid.uuid4()}/"))
