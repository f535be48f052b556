"""A document's time as each reader may know it (fifteenth session; docs/security.md, "Change times").

A change to a section a reader cannot read -- its policy narrowed or widened, its text replaced -- moved the
document's ``updated_at``, which that reader is shown (the documents list and page of the REST API, MCP's
``list_documents``, the console's document page) and which their search filters on (``updated_after`` /
``updated_before``): so they learned *when* the part they cannot read changed, and, bisecting the filters,
exactly when. A reader's time is now the latest change of what they can read (``kb.changed``).

Two members: ``reader`` reads the internal section A only; ``full`` reads every section. Every timestamp of
the document and its sections is first set to ``PAST`` (whatever columns the models have), and the searches
filter at ``BETWEEN``, a day later: after a change of B alone, everything ``reader`` gets back is exactly what
they got before -- values and results -- while ``full`` sees the new time, the one ``updated_at`` holds.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.db.models import DateTimeField
from django.test.utils import CaptureQueriesContext

from accounts.policy import AccessLevel
from accounts.selectors import reader_for
from accounts.services import group_create, membership_create, tenant_create
from kb import retrieval
from kb.changed import documents_updated
from kb.mcp_server import Caller, document_work, list_documents_work, read_section_work, search_work
from kb.models import Document, Section, SectionGone
from kb.services import Upload, document_create, document_replace, section_set_access
from tests.api_helpers import console_client, make_document, token_client
from tests.ingestion_helpers import wait_for_jobs

PAST = datetime(2026, 1, 1, tzinfo=UTC)
BETWEEN = PAST + timedelta(days=1)
QUERY = "alpha bravo lunch merger"


def _backdate(document: Document) -> None:
    """Every time the document and its sections hold, whatever the columns are called, set to ``PAST``."""
    for model, rows in ((Document, Document.objects.filter(pk=document.pk)),
                        (Section, Section.objects.filter(document_id=document.pk))):
        rows.update(**{f.name: PAST for f in model._meta.concrete_fields if isinstance(f, DateTimeField)})


def _hits(answer: dict) -> list:
    return sorted((r["document_id"], r["text"]) for r in answer["results"])


def _without_ids(value):
    """A section tree as a reader sees it, less the section ids (new content gives every section a new one)."""
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in value.items() if k not in ("id", "parent_id")}
    return value


def _seen(member, document: Document, section_id=None) -> dict:
    """Everything ``member`` is told of ``document``'s time and everything a time filter gives them back:
    the REST API's list, document, section tree and searches, MCP's list, document, section and searches, the
    console's document page."""
    retrieval.count_cache.clear()
    api = token_client(member)
    caller = Caller(lambda: member, "http://testserver")  # the functions MCP's tools and resource run
    seen = {
        "api list": api.get("/api/v1/documents/").json()["results"],
        "api document": api.get(f"/api/v1/documents/{document.pk}/").json(),
        "api sections": _without_ids(api.get(f"/api/v1/documents/{document.pk}/sections/").json()),
        "mcp list": list_documents_work(None, 20, 0)(member, caller)["results"],
        "mcp document": json.loads(document_work(str(document.pk))(member, caller)),
    }
    if section_id is not None:
        seen["mcp section"] = read_section_work(str(section_id))(member, caller)
    for name in ("updated_after", "updated_before"):
        filters = {name: BETWEEN.isoformat()}
        answer = api.post("/api/v1/search/", {"query": QUERY, "mode": "keyword", "top_k": 20, "filters": filters},
                          format="json")
        assert answer.status_code == 200, answer.content
        seen[f"api search {name}"] = _hits(answer.json())
        seen[f"mcp search {name}"] = _hits(search_work({"query": QUERY, "mode": "keyword", "top_k": 20,
                                                        "filters": filters})(member, caller))
    page = console_client(member).get(f"/documents/{document.pk}/")
    assert page.status_code == 200
    seen["console updated"] = re.search(r"<dt>Updated</dt><dd>([^<]*)</dd>", page.content.decode()).group(1)
    return seen


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _full_sees_the_change(full, document: Document) -> None:
    """The member who reads every section sees the change's time: the one ``updated_at`` holds (today's)."""
    seen = _seen(full, document)
    stored = Document.objects.get(pk=document.pk).updated_at
    assert _time(seen["api document"]["updated_at"]) == stored > BETWEEN
    assert [_time(d["updated_at"]) for d in seen["api list"]] == [stored]
    assert [_time(d["updated_at"]) for d in seen["mcp list"]] == [stored]
    assert seen["api search updated_after"] and seen["mcp search updated_after"]
    assert seen["api search updated_before"] == seen["mcp search updated_before"] == []


# ----------------------------------------------------------------------------- a policy changed


CHANGES = {
    "narrowed": dict(access_level="restricted", groups=["board"]),
    "widened": dict(access_level="confidential", groups=[]),
    "returned to a group": dict(access_level="restricted", groups=["board", "legal"]),
}


@pytest.fixture
def policy_world(db):
    tenant = tenant_create(slug="times-co", name="Times Co")
    for slug in ("board", "legal"):
        group_create(tenant=tenant, slug=slug)
    reader = membership_create(tenant=tenant, email="reader@times.io", role="viewer", clearance="internal")
    full = membership_create(tenant=tenant, email="full@times.io", role="admin", clearance="restricted",
                             group_slugs=["board", "legal"])
    document = make_document(tenant, title="Handbook", sections=[
        ("a", None, "Alpha", AccessLevel.INTERNAL, [], "Alpha: the lunch menu is soup."),
        ("b", None, "Bravo", AccessLevel.RESTRICTED, [], "Bravo: the merger code is heron."),
    ])
    _backdate(document)
    return reader, full, document


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_a_policy_change_of_a_section_a_reader_cannot_read_moves_no_time_they_see(policy_world, change):
    reader, full, document = policy_world
    section_a, section_b = (document.section_ids[k] for k in ("a", "b"))
    before = _seen(reader, document, section_a)
    assert [d["updated_at"] for d in before["api list"]] == [before["api document"]["updated_at"]]
    assert _time(before["api document"]["updated_at"]) == PAST
    assert before["api search updated_before"] and before["api search updated_after"] == []

    section_set_access(actor=None, section=Section.objects.get(pk=section_b), **CHANGES[change])

    after = _seen(reader, document, section_a)
    for surface in before:
        assert after[surface] == before[surface], surface
    _full_sees_the_change(full, document)


def test_a_policy_change_through_the_api_moves_no_time_a_reader_below_it_sees(policy_world):
    reader, full, document = policy_world
    before = _seen(reader, document, document.section_ids["a"])
    answer = token_client(full).patch(f"/api/v1/sections/{document.section_ids['b']}/",
                                      {"access_level": "confidential"}, format="json")
    assert answer.status_code == 200, answer.content
    assert _seen(reader, document, document.section_ids["a"]) == before
    _full_sees_the_change(full, document)


def test_a_change_a_reader_can_read_moves_their_time(policy_world):
    """The rule is no blanket freeze: widening B to the reader's level shows them B, and its time."""
    reader, full, document = policy_world
    section_set_access(actor=None, section=Section.objects.get(pk=document.section_ids["b"]),
                       access_level="internal", groups=[])
    seen = _seen(reader, document)
    assert _time(seen["api document"]["updated_at"]) == Document.objects.get(pk=document.pk).updated_at > BETWEEN
    assert seen["api search updated_after"] and seen["api search updated_before"] == []


def test_a_section_leaving_a_readers_access_moves_their_time(policy_world):
    """A section the reader could read, narrowed above them: they saw it go (``SectionGone``), so their time moves
    though every section they read now is as it was."""
    reader, full, document = policy_world
    section_set_access(actor=None, section=Section.objects.get(pk=document.section_ids["b"]),
                       access_level="internal", groups=[])
    _backdate(document)  # the reader reads A and B, both as of PAST
    assert _time(_seen(reader, document)["api document"]["updated_at"]) == PAST
    section_set_access(actor=None, section=Section.objects.get(pk=document.section_ids["b"]),
                       access_level="confidential", groups=[])
    seen = _seen(reader, document)
    assert seen["api document"]["sections_count"] == 1
    assert _time(seen["api document"]["updated_at"]) == Document.objects.get(pk=document.pk).updated_at > BETWEEN
    assert seen["api search updated_after"] and seen["api search updated_before"] == []


def test_the_search_filters_read_the_time_the_list_shows(policy_world):
    """``kb.changed.documents_updated`` (the filters, as sets) against ``updated_at_shown`` (the list's greatest),
    for both members, at every time the documents hold and a microsecond either side: the same documents."""
    reader, full, document = policy_world
    tenant, days = document.tenant, [PAST + timedelta(days=d) for d in range(1, 6)]

    def made(times: dict, gone=()) -> Document:
        made = make_document(tenant, title=f"D{len(times)}{len(gone)}", sections=[
            ("a", None, "Alpha", AccessLevel.INTERNAL, [], "Alpha."),
            ("b", None, "Bravo", AccessLevel.RESTRICTED, [], "Bravo.")])
        Document.objects.filter(pk=made.pk).update(shown_changed_at=times.get("shown", PAST))
        for key in ("a", "b"):
            Section.objects.filter(pk=made.section_ids[key]).update(changed_at=times.get(key, PAST))
        for level, at in gone:
            SectionGone.objects.create(tenant=tenant, document=made, access_level=level, gone_at=at)
        return made

    made({"shown": days[0], "a": days[2]})
    made({"shown": days[3], "a": days[0]})
    made({"a": days[0], "b": days[4]})
    made({}, gone=[(AccessLevel.INTERNAL, days[1]), (AccessLevel.RESTRICTED, days[4])])
    made({"b": days[2]}, gone=[(AccessLevel.RESTRICTED, days[3])])
    thresholds = sorted({t + timedelta(microseconds=d) for t in (PAST, *days) for d in (-1, 0, 1)})
    for member in (reader, full):
        shown = {d["id"]: _time(d["updated_at"]) for d in token_client(member).get("/api/v1/documents/").json()["results"]}
        assert len(shown) == 6 and len(set(shown.values())) > 3

        for at in thresholds:
            for bound, expected in (("after", {pk for pk, time in shown.items() if time >= at}),
                                    ("before", {pk for pk, time in shown.items() if time < at})):
                ids = documents_updated(reader_for(member), **{bound: at}).values_list("pk", flat=True)
                assert {str(pk) for pk in ids} & set(shown) == expected, (member, bound, at)


def test_the_documents_list_reads_each_readers_time_in_a_bounded_number_of_statements(policy_world):
    reader, full, document = policy_world
    api = token_client(reader)
    assert api.get("/api/v1/documents/").status_code == 200  # a first request reads what later ones remember
    counts = []
    for extra in (0, 3):
        for n in range(extra):
            make_document(document.tenant, title=f"More {len(counts)}-{n}", sections=[
                ("a", None, "Alpha", AccessLevel.INTERNAL, [], "Alpha again.")])
        with CaptureQueriesContext(connection) as queries:
            assert api.get("/api/v1/documents/").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1], counts


# ----------------------------------------------------------------------------- new content


V1 = """# Handbook
Alpha: the lunch menu is soup.

## Bravo <!-- access: restricted -->
Bravo: the merger code is heron.
"""
REPLACEMENTS = {
    "the same length": V1.replace("heron", "egret"),
    "longer, with a subsection": V1.replace("heron.", "egret, and the board meets at nine.\n\n### Bravo two\nMore."),
    # Gone: only the full reader saw it (SectionGone), and sees its time.
    "without it": V1[:V1.index("## Bravo")],
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
@pytest.mark.parametrize("replacement", sorted(REPLACEMENTS))
def test_new_content_that_changes_only_a_section_a_reader_cannot_read_moves_no_time_they_see(
        celery_worker, replacement):
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="times-new", name="Times New")
    reader = membership_create(tenant=tenant, email="reader@new.io", role="viewer", clearance="internal")
    full = membership_create(tenant=tenant, email="full@new.io", role="admin", clearance="restricted")
    upload = dict(title="Handbook", content_type="text/markdown", source="handbook.md")
    document, job = document_create(tenant=tenant, created_by=None, upload=Upload(content=V1.encode(), **upload))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    _backdate(document)
    before = _seen(reader, document)
    assert _time(before["api document"]["updated_at"]) == PAST and before["api search updated_before"]

    document, job = document_replace(document=document, created_by=None,
                                     upload=Upload(content=REPLACEMENTS[replacement].encode(), tags=None, **upload))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    assert Document.objects.get(pk=document.pk).text == REPLACEMENTS[replacement]  # stored, as its own text

    after = _seen(reader, document)
    if replacement != "the same length":
        # Where the readable sections sit moves with the length of the hidden text (docs/security.md, "Offsets":
        # shown on purpose); the time does not.
        for seen in (before, after):
            seen["api sections"] = [{k: v for k, v in node.items() if k not in ("start", "end")}
                                    for node in seen["api sections"]]
    for surface in before:
        assert after[surface] == before[surface], surface
    _full_sees_the_change(full, document)
