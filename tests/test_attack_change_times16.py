"""Change times attacked again (sixteenth session; docs/security.md, "Change times").

A heading longer than a section row's title (1,000 characters) was stored in full in the heading paths
ingestion derived (``pipeline.plan.plan_content`` passed the parsed titles), while every re-derivation after a
policy change (``kb.services.apply_policies``) derived them from the rows' titles, cut to 1,000: so any policy
change anywhere in the document -- a section the reader cannot read narrowed or widened -- "renamed" every
section under the long heading, set its ``changed_at`` and rebuilt its chunks; the rebuild (planned from the
parsed titles again) renamed them back, and set ``changed_at`` once more. A reader of those sections alone saw
their time move with each change to a section they cannot read, and when its rebuild ran. One derivation now:
the heading paths come from the rows' titles, as stored, everywhere; kb migration 0012 cuts the paths stored
before to the same length (without moving any time).

And a PDF page's left-out text was counted on the first section holding the page's text: a section sharing its page
with one the reader cannot read told them how much was cut from that one, and moved their time when it changed
(``ingestion.parsers.pdf._mark_hidden``: counted on none where several sections share the page).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from accounts.services import membership_create, tenant_create
from kb import retrieval
from kb.mcp_server import Caller, list_documents_work
from kb.models import Document, IngestionJob, Section, SectionGone
from kb.services import Upload, document_create, document_replace, section_set_access
from pipeline.services import jobs_run
from tests.api_helpers import token_client
from tests.application_role import as_application_role
from tests.ingestion.hidden_payloads import pdf_with_outline, text_op

PAST = datetime(2026, 1, 1, tzinfo=UTC)
BETWEEN = PAST + timedelta(days=1)
LONG = "Alpha" + " lunch" * 250  # 1,505 characters: longer than a section row's title
TEXT = (f"# {LONG}\nAlpha: the lunch menu is soup.\n\n## Bravo <!-- access: restricted -->\n"
        "Bravo: the merger code is heron.\n")
# Bravo's policy narrowed and widened back, twice: none of it the reader's to see.
CHANGES = ["confidential", "restricted", "confidential", "restricted"]


def _run_queued(document: Document) -> None:
    """Every job the changes queued (a rebuild of the sections they renamed), run here."""
    queued = list(IngestionJob.objects.filter(document=document, status="queued").values_list("id", flat=True))
    if queued:
        jobs_run(queued)
    assert not IngestionJob.objects.filter(document=document).exclude(status="succeeded").exists()


def _backdate(document: Document) -> None:
    Document.objects.filter(pk=document.pk).update(shown_changed_at=PAST, updated_at=PAST)
    Section.objects.filter(document=document).update(changed_at=PAST)
    SectionGone.objects.filter(document=document).update(gone_at=PAST)


def _seen(member, document: Document) -> dict:
    """What ``member`` is told of the document's time: the REST list and document, MCP's list, and which of
    their searches' time filters find it."""
    retrieval.count_cache.clear()
    api = token_client(member)
    seen = {
        "api list": [d["updated_at"] for d in api.get("/api/v1/documents/").json()["results"]],
        "api document": api.get(f"/api/v1/documents/{document.pk}/").json()["updated_at"],
        "mcp list": [d["updated_at"] for d in list_documents_work(None, 20, 0)(
            member, Caller(lambda: member, "http://testserver"))["results"]],
    }
    for name in ("updated_after", "updated_before"):
        answer = api.post("/api/v1/search/", {"query": "lunch soup", "mode": "keyword", "top_k": 5,
                                              "filters": {name: BETWEEN.isoformat()}}, format="json")
        assert answer.status_code == 200, answer.content
        seen[f"search {name}"] = sorted({r["document_id"] for r in answer.json()["results"]})
    return seen


@pytest.fixture
def world(db):
    tenant = tenant_create(slug="times-long", name="Times Long")
    reader = membership_create(tenant=tenant, email="reader@long.io", role="viewer", clearance="internal")
    full = membership_create(tenant=tenant, email="full@long.io", role="admin", clearance="restricted")
    document, job = document_create(tenant=tenant, created_by=None, upload=Upload(
        content=TEXT.encode(), title="Handbook", content_type="text/markdown", source="handbook.md"))
    jobs_run([job.id])
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    _backdate(document)
    return reader, full, document


def _paths(document: Document) -> list:
    return list(Section.objects.filter(document=document).order_by("order").values_list("heading_path", flat=True))


@pytest.mark.django_db
def test_a_policy_change_of_a_section_a_reader_cannot_read_moves_no_time_of_a_long_heading(world):
    reader, full, document = world
    alpha = Section.objects.get(document=document, title__startswith="Alpha")
    assert len(alpha.title) == 1000 and len(LONG) > 1000
    before, paths = _seen(reader, document), _paths(document)
    assert before["api document"] == "2026-01-01T00:00:00Z" and before["search updated_before"]
    bravo = Section.objects.get(document=document, title="Bravo")
    for level in CHANGES:
        section_set_access(actor=None, section=Section.objects.get(pk=bravo.pk), access_level=level, groups=[])
        _run_queued(document)  # the rebuild of what the change renamed, if anything
        assert _seen(reader, document) == before, level
        assert _seen(full, document)["api document"] != before["api document"]  # the full reader saw Bravo change
    assert _paths(document) == paths  # as ingestion derived them: nothing was renamed
    # The rule is no freeze: Bravo widened to the reader shows them Bravo, and its time.
    section_set_access(actor=None, section=Section.objects.get(pk=bravo.pk), access_level="internal", groups=[])
    _run_queued(document)
    assert _seen(reader, document)["api document"] == _seen(full, document)["api document"] != before["api document"]


# ----------------------------------------------------------------------------- a PDF page shared by two sections


def _pdf(hidden: str) -> bytes:
    """One page: Alpha, then Bravo, with ``hidden`` (white on white) under Bravo's text."""
    page = "".join(text_op(text, y=y, size=size) for text, y, size in (
        ("Alpha", 740, 18), ("Alpha: the lunch menu is soup.", 710, 12),
        ("Bravo", 660, 18), ("Bravo: the merger code is heron.", 630, 12)))
    return pdf_with_outline([page + "q 1 1 1 rg " + text_op(hidden, y=600) + "Q "], [("Alpha", 0), ("Bravo", 0)])


@pytest.mark.django_db
def test_text_left_out_of_a_section_a_reader_cannot_read_moves_no_count_or_time_of_theirs():
    """Bravo (restricted through the API) shares a PDF page with Alpha; new content changes only what is left out
    of the page under Bravo. The reader of Alpha is told no count of it, and their time stays (fails with the page's
    count on its first section, Alpha: 16 characters, then 35, and Alpha's time moved)."""
    tenant = tenant_create(slug="times-pdf", name="Times PDF")
    reader = membership_create(tenant=tenant, email="reader@pdf.io", role="viewer", clearance="internal")
    upload = dict(title="Report", content_type="application/pdf", source="report.pdf")
    document, job = document_create(tenant=tenant, created_by=None, upload=Upload(content=_pdf("planted words"),
                                                                                  **upload))
    jobs_run([job.id])
    bravo = Section.objects.get(document=document, title="Bravo")
    section_set_access(actor=None, section=bravo, access_level="restricted", groups=[])
    _run_queued(document)
    _backdate(document)
    before = _seen(reader, document)
    counts = {s["heading_path"][-1]: s["hidden_chars_removed"] for s in token_client(reader).get(
        f"/api/v1/documents/{document.pk}/sections/").json() if s["heading_path"]}
    assert counts == {"Alpha": 0}
    document, job = document_replace(document=Document.objects.get(pk=document.pk), created_by=None, upload=Upload(
        content=_pdf("planted words and many more planted words"), tags=None, **upload))
    jobs_run([job.id])
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    assert Section.objects.get(document=document, title="Bravo").access_level == 3  # the override carried over
    after_counts = {s["heading_path"][-1]: s["hidden_chars_removed"] for s in token_client(reader).get(
        f"/api/v1/documents/{document.pk}/sections/").json() if s["heading_path"]}
    assert after_counts == counts
    assert _seen(reader, document) == before


def _migrate(target) -> None:
    with connection.cursor() as cursor:  # the test's transaction: its deferred checks run now, before any DDL
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])


def _latest(app: str) -> tuple[str, str]:
    (leaf,) = MigrationExecutor(connection).loader.graph.leaf_nodes(app)
    return leaf


@pytest.mark.django_db
@pytest.mark.parametrize("as_role", [False, True], ids=["as-the-owner", "as-a-role-under-the-wall"])
def test_the_migration_cuts_the_stored_paths_of_long_headings_moving_no_time(world, as_role, settings):
    """Paths stored before, with the whole heading (two tenants): the migration cuts them as the rows' titles are,
    in each tenant -- as the owner and as a role the tenant wall holds; no time moves, and a policy change of a
    section the reader cannot read then moves none of theirs."""
    reader, full, document = world
    other = tenant_create(slug="times-other", name="Times Other")
    elsewhere, job = document_create(tenant=other, created_by=None, upload=Upload(
        content=TEXT.encode(), title="Handbook", content_type="text/markdown", source="handbook.md"))
    jobs_run([job.id])
    _backdate(elsewhere)
    _migrate(("kb", "0011_change_times"))
    for each in (document, elsewhere):  # as ingestion stored them before
        Section.objects.filter(document=each, title__startswith="Alpha").update(heading_path=[LONG])
        Section.objects.filter(document=each, title="Bravo").update(heading_path=[LONG, "Bravo"])
    with as_application_role(as_role):
            _migrate(("kb", "0012_heading_paths_as_titles_are_stored"))
    _migrate(_latest("kb"))  # the later migrations, as the owner, for the code below
    for each in (document, elsewhere):
        assert _paths(each) == [[], [LONG[:1000]], [LONG[:1000], "Bravo"]]
        assert set(Section.objects.filter(document=each).values_list("changed_at", flat=True)) == {PAST}
    before = _seen(reader, document)
    bravo = Section.objects.get(document=document, title="Bravo")
    section_set_access(actor=None, section=bravo, access_level="confidential", groups=[])
    _run_queued(document)
    assert _seen(reader, document) == before
