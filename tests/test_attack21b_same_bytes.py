"""The same bytes read again another way keep their sections' ids: a read racing that store must not mix them.

Found attacking time (twenty-first session): a section's id is keyed by the document's bytes and the section's
place among the parsed sections (``pipeline.plan.section_id``), so new content made of the *same bytes* read
another way -- re-uploaded as Markdown instead of plain text, which leaves an HTML comment out of the text -- is
stored as new text under sections with the *same ids* and other offsets. The two reads that race
a replacement (search: the hits' sections, then their text, ``kb.expansion.fetch_texts``; a document's page: its
sections, then its text, ``kb.selectors.document_text_and_span_rows``) checked only that the sections read
first still exist when the text is read: they did, so the old offsets cut the new text, and an internal reader
was served the restricted section, which was restricted before and after. Both now check that each section is
the very row version they loaded (PostgreSQL's ``xmin``).

Each interleaving is deterministic: a statement hook runs the replacement's real ingestion job (its store
commits) right after the read's first statement that loads the sections' spans.
"""

from __future__ import annotations

import contextlib

import pytest
from django.db import connection

from accounts.policy import AccessLevel
from accounts.services import tenant_create
from kb import selectors
from kb.models import Document, IngestionJob, Section
from kb.search import search
from pipeline.services import jobs_run
from tests.api_helpers import member_with_token, token_client

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "okapisalaryfigure"
HIDDEN = "<!-- " + "an editorial note " * 12 + "-->"
CONTENT = f"""Opening notes for all staff. {HIDDEN} End of the opening.

Handbook
========

Welcome words for everyone here.

Salaries
========

The chief executive earns {SECRET} a year.
"""


def _run_queued(document_id) -> None:
    queued = list(IngestionJob.objects.filter(document_id=document_id, status="queued").values_list("id", flat=True))
    if queued:
        jobs_run(queued)
    failed = IngestionJob.objects.filter(document_id=document_id).exclude(status="succeeded")
    assert not failed.exists(), list(failed.values_list("error", flat=True))


@pytest.fixture
def world(unserved_queue):
    tenant = tenant_create(slug="same-bytes", name="Same bytes")
    admin, admin_key = member_with_token(tenant, "admin@same.example", "admin", "restricted")
    viewer, _ = member_with_token(tenant, "viewer@same.example", "viewer", "internal")
    api = token_client(admin)
    made = api.post("/api/v1/documents/", {"title": "Handbook", "content": CONTENT, "content_type": "text/plain",
                                           "access_level": "internal"}, format="json")
    assert made.status_code == 201, made.content
    document_id = made.json()["id"]
    _run_queued(document_id)
    salaries = Section.objects.get(document_id=document_id, title="Salaries")
    narrowed = api.patch(f"/api/v1/sections/{salaries.pk}/", {"access_level": "restricted"}, format="json")
    assert narrowed.status_code == 200, narrowed.content
    _run_queued(document_id)
    ids = set(Section.objects.filter(document_id=document_id).values_list("id", flat=True))
    # The same bytes, as Markdown: the comment leaves the text, everything after it moves.
    replaced = api.put(f"/api/v1/documents/{document_id}/", {"content": CONTENT, "content_type": "text/markdown",
                                                            "title": "Handbook"}, format="json")
    assert replaced.status_code == 200, replaced.content
    return Document.objects.get(pk=document_id), viewer, ids


@contextlib.contextmanager
def stored_after_the_spans_are_read(document_id):
    """Run the document's queued job (its store commits) right after the first statement reading sections' spans."""
    state = {"done": False}

    def hook(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not state["done"] and "body_spans" in sql:
            state["done"] = True
            _run_queued(document_id)
        return result

    with connection.execute_wrapper(hook):
        yield state


def _same_ids_kept(document, ids) -> None:
    """The premise: the replacement kept every section's id, with new text and offsets."""
    document.refresh_from_db()
    assert set(Section.objects.filter(document=document).values_list("id", flat=True)) == ids
    assert HIDDEN not in document.text and document.content_type == "text/markdown"
    assert Section.objects.get(document=document, title="Salaries").access_level == AccessLevel.RESTRICTED


@pytest.mark.parametrize("expand", ["parent", "neighbors"])
def test_a_search_racing_a_same_bytes_replacement_serves_no_restricted_text(world, expand):
    document, viewer, ids = world
    before = search(member=viewer, query="opening notes staff", mode="keyword", expand=expand, audit=False)
    assert before.results and SECRET not in repr(before), "the viewer reads the opening, never the salaries"
    with stored_after_the_spans_are_read(document.pk) as state:
        response = search(member=viewer, query="opening notes staff", mode="keyword", expand=expand, audit=False)
    assert state["done"], "the store never ran between the reads; the test proves nothing"
    _same_ids_kept(document, ids)
    assert response.results, "nothing found to expand; the test proves nothing"
    assert SECRET not in repr(response), [c.text for c in response.contexts]


def test_a_document_read_racing_a_same_bytes_replacement_serves_no_restricted_text(world):
    document, viewer, ids = world
    assert SECRET not in repr(selectors.document_readable_text(member=viewer, document=document).pieces)
    with stored_after_the_spans_are_read(document.pk) as state:
        text = selectors.document_readable_text(member=viewer, document=Document.objects.get(pk=document.pk))
    assert state["done"], "the store never ran between the reads; the test proves nothing"
    _same_ids_kept(document, ids)
    shown = "".join(piece.text for piece in text.pieces)
    assert "Opening notes" in shown or "Welcome words" in shown, shown
    assert SECRET not in shown, shown

