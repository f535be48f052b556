"""A title taken from the content follows the policies, not only at upload.

An upload that names no title (none, or "untitled") takes its title from the content -- its first
H1 (``pipeline.services``) -- and the title is blanked to "untitled" when the heading's section is
one that some reader of the document may not read. The rule used to run once, at ingestion: an
attack on the demo showed a heading restricted later through the API (``PATCH /sections/{id}/``)
staying the document's title in the document list, its detail and every search hit's
``document_title``, for members who may no longer read it. A title the uploader typed is theirs
and stays (see docs/security.md, "Document titles from the content").
"""

from __future__ import annotations

import json

import pytest

from accounts.services import tenant_create
from kb import retrieval
from kb.models import Document, IngestionJob, Section
from kb.services import Upload, document_create, document_replace
from tests.api_helpers import Actor, member_with_token
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

SECRET = "Project Kestrel buyout"
DOC = f"""Preface for all staff. The canteen rota is below.

# {SECRET}

KESTRELBODY the buyout terms and the price.

## Timeline of Kestrel

Signing in spring, closing in autumn.

# Cafeteria

The cafeteria opens at eight and serves soup on Fridays.
"""


@pytest.fixture
def people():
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="kestrel-co", name="Kestrel Co")
    alice = Actor("alice", *member_with_token(tenant, "alice@example.com", "admin", "restricted"))
    bob = Actor("bob", *member_with_token(tenant, "bob@example.com", "editor", "confidential"))
    carol = Actor("carol", *member_with_token(tenant, "carol@example.com", "viewer", "internal"))
    return tenant, alice, bob, carol


def _upload(bob: Actor, title: str = "untitled") -> Document:
    document, job = document_create(
        tenant=bob.membership.tenant, created_by=bob.membership,
        upload=Upload(content=DOC.encode(), title=title, content_type="text/markdown", source="kestrel.md"),
    )
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    return document


def _settle(document: Document) -> None:
    """Let the jobs a policy change enqueued (new heading prefixes) finish."""
    wait_for_jobs(IngestionJob.objects.filter(document=document).values_list("id", flat=True))


def _patch(alice: Actor, section: Section, level: str) -> None:
    response = alice.client().patch(f"/api/v1/sections/{section.pk}/", {"access_level": level}, format="json")
    assert response.status_code == 200, response.content


def _titles(actor: Actor, document: Document) -> dict[str, object]:
    """Every title of ``document`` the API shows ``actor``: detail, list, search hits and contexts."""
    client = actor.client()
    detail = client.get(f"/api/v1/documents/{document.pk}/")
    assert detail.status_code == 200, detail.content
    listed = client.get("/api/v1/documents/").json()["results"]
    found = client.post("/api/v1/search/", {"query": "cafeteria soup canteen rota", "mode": "keyword", "top_k": 10},
                        format="json")
    assert found.status_code == 200, found.content
    hits = found.json()["results"]
    assert hits, "the Preface and Cafeteria sections are found"
    return {
        "detail": detail.json()["title"],
        "list": {d["title"] for d in listed if d["id"] == str(document.pk)},
        "hits": {h["document_title"] for h in hits},
        "search": json.dumps(found.json()),
    }


def test_a_heading_restricted_after_upload_leaves_the_title(celery_worker, people):
    tenant, alice, bob, carol = people
    document = _upload(bob)
    document.refresh_from_db()
    # Stored: "untitled" for every reader, the heading's title beside it for readers of its section (seventeenth
    # session: the title is decided per reader, kb.titles.reader_title).
    assert (document.title, document.content_title) == ("untitled", SECRET)
    assert _titles(carol, document)["detail"] == SECRET  # nothing restricted: the heading is the title, as before
    heading = Section.objects.get(document=document, title=SECRET)

    _patch(alice, heading, "restricted")
    _settle(document)
    for reader in (carol, bob):  # bob (confidential) may no longer read it either
        # Shown the first H1 they may read ("Cafeteria"), never "untitled": that would tell them a hidden H1 comes
        # first (seventeenth session: the first title candidate of a section the reader may read).
        seen = _titles(reader, document)
        assert seen["detail"] == "Cafeteria", reader.name
        assert seen["list"] == {"Cafeteria"}, reader.name
        assert seen["hits"] == {"Cafeteria"}, reader.name
        assert "Kestrel" not in seen["search"], reader.name
    assert _titles(alice, document)["detail"] == SECRET  # alice reads the heading: its title, to her

    # Relaxed again: the upload rule shows the heading again, as it would at upload.
    _patch(alice, heading, "internal")
    _settle(document)
    seen = _titles(carol, document)
    assert (seen["detail"], seen["list"], seen["hits"]) == (SECRET, {SECRET}, {SECRET})


def test_the_rule_follows_a_document_default_and_a_replacement(celery_worker, people):
    """A wider default for the rest of the document is a change of policy too; so is new content
    that carries the override over (its title was checked against the file's markers only)."""
    tenant, alice, bob, carol = people
    document = _upload(bob)
    # Restrict the root: every section inherits it, so the title may be the heading's ...
    root = Section.objects.get(document=document, parent=None)
    _patch(alice, root, "restricted")
    _settle(document)
    assert _titles(alice, document)["detail"] == SECRET
    # ... and one section opened to internal readers, who may then know of the document: not to them.
    cafeteria = Section.objects.get(document=document, title="Cafeteria")
    _patch(alice, cafeteria, "internal")
    _settle(document)
    assert _titles(alice, document)["detail"] == SECRET  # still hers: she reads the heading
    assert _titles(carol, document)["detail"] == "Cafeteria"  # the first H1 she may read

    # The root back to inheriting, the heading restricted, then new content (no title given):
    # the override carries over, and the title stays blank.
    response = alice.client().patch(f"/api/v1/sections/{root.pk}/", {"inherit": True}, format="json")
    assert response.status_code == 200, response.content
    _patch(alice, Section.objects.get(document=document, title=SECRET), "restricted")
    _settle(document)
    replaced, job = document_replace(
        document=Document.objects.get(pk=document.pk), created_by=alice.membership,
        upload=Upload(content=(DOC + "\nOne more line.\n").encode(), title="", content_type="text/markdown"),
    )
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    assert Document.objects.get(pk=document.pk).title == "untitled"
    assert "Kestrel" not in _titles(carol, document)["search"]
    assert _titles(alice, document)["detail"] == SECRET


def test_a_typed_title_is_the_uploaders(celery_worker, people):
    """A title the uploader typed is not the heading's: a policy change leaves it."""
    tenant, alice, bob, carol = people
    document = _upload(bob, title="Staff notes")
    heading = Section.objects.get(document=document, title=SECRET)
    _patch(alice, heading, "restricted")
    _settle(document)
    assert _titles(carol, document)["detail"] == "Staff notes"


def test_new_content_sent_with_the_shown_title_keeps_it_the_contents(celery_worker, people):
    """The console's replace form sends the document's title when none is typed (an API client may
    send back what it read): that is still the content's title, and a later restriction blanks it."""
    tenant, alice, bob, carol = people
    document = _upload(bob)
    replaced, job = document_replace(
        document=Document.objects.get(pk=document.pk), created_by=bob.membership,
        upload=Upload(content=(DOC + "\nOne more line.\n").encode(), title=SECRET, content_type="text/markdown"),
    )
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    stored = Document.objects.get(pk=document.pk)
    assert (stored.title, stored.content_title) == ("untitled", SECRET)  # still the content's, not typed
    assert _titles(carol, document)["detail"] == SECRET
    _patch(alice, Section.objects.get(document=document, title=SECRET), "restricted")
    _settle(document)
    assert _titles(carol, document)["detail"] == "Cafeteria"  # the first H1 she may read
