"""Attacks of the eighteenth session (attack18) on the seventeenth session's surfaces -- per-reader titles and tags,
joins screened when read, detach and re-attach, a document's status per reader. What held is in docs/security.md;
each test here failed on the code before its fix."""

from __future__ import annotations

import pytest

from accounts.services import tenant_create
from kb import retrieval
from kb.models import Document, IngestionJob
from kb.services import Upload, document_create
from tests.api_helpers import Actor, console_client, member_with_token
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]


def _hidden_first(heading: str) -> bytes:
    """A document whose first H1 -- its content title to a reader of it -- is restricted; "Cafeteria" comes next."""
    return (f"# {heading} <!-- access: restricted -->\n\nThe {heading} terms.\n\n"
            f"# Cafeteria\n\nSoup on Fridays.\n").encode()


def _upload(actor: Actor, content: bytes) -> Document:
    document, job = document_create(
        tenant=actor.membership.tenant, created_by=actor.membership,
        upload=Upload(content=content, title="untitled", content_type="text/markdown", source="notes.md"))
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    return document


def _settle(document: Document) -> None:
    (job,) = wait_for_jobs([IngestionJob.objects.filter(document=document).latest("created_at").pk])
    assert job.status == "succeeded", job.error


NEW = "# Notes\n\nNew text for everyone.\n"


def _replace(actor: Actor, document: Document, title: str, via: str) -> None:
    if via == "api":
        response = actor.client().put(f"/api/v1/documents/{document.pk}/",
                                      {"content": NEW, "title": title, "content_type": "text/markdown"}, format="json")
        assert response.status_code == 200, response.content
    else:
        from django.core.files.uploadedfile import SimpleUploadedFile

        response = console_client(actor.membership).post(
            f"/documents/{document.pk}/replace/",
            {"file": SimpleUploadedFile("notes.md", NEW.encode(), content_type="text/markdown"), "title": title})
        assert response.status_code == 302, response.content
    _settle(document)


def _title(actor: Actor, document: Document) -> str:
    response = actor.client().get(f"/api/v1/documents/{document.pk}/")
    assert response.status_code == 200, response.content
    return response.json()["title"]


@pytest.mark.parametrize("via", ["api", "console"])
def test_replacing_a_document_is_no_oracle_of_a_content_title_the_admin_may_not_read(celery_worker, via):
    """New content sent with "the title the content gave" keeps the document titled by its content (the console's
    replace form sends the present title back); any other typed title becomes the document's for every reader. The
    test compared the title sent with the document's *stored* content title -- the first H1, whoever may read it --
    so an internal admin (who may replace any document they can see) typed a guess of a restricted H1 and read the
    answer off the title that followed: their guess kept ("Zebraxyz merger"), or not (the new content's "Notes").
    And re-sending the title they are shown ("Cafeteria", their first readable H1) pinned it as a typed title for
    every reader exactly when a hidden H1 came first. Now the title sent is compared with the one the replacing
    member is shown (``kb.titles.reader_title``): two documents differing only in a heading above them answer alike."""
    retrieval.count_cache.clear()
    tenant = tenant_create(slug=f"replace18-{via}", name="Replace Co")
    alice = Actor("alice", *member_with_token(tenant, "alice@example.com", "admin", "restricted"))
    dave = Actor("dave", *member_with_token(tenant, "dave@example.com", "admin", "internal"))

    # A guess of the hidden H1: right for one document, wrong for its twin.
    right, wrong = _upload(alice, _hidden_first("Zebraxyz merger")), _upload(alice, _hidden_first("Aardvark merger"))
    assert _title(dave, right) == _title(dave, wrong) == "Cafeteria"  # the twins are the same to dave
    for document in (right, wrong):
        _replace(dave, document, "Zebraxyz merger", via)
    assert _title(dave, right) == _title(dave, wrong), "the replace told dave whether his guess was the hidden H1"
    assert _title(alice, right) == _title(alice, wrong)

    # The title dave is shown, sent back: the same outcome whether or not a hidden H1 comes first.
    hidden, plain = _upload(alice, _hidden_first("Aardvark merger")), _upload(alice, b"# Cafeteria\n\nSoup on Fridays.\n")
    assert _title(dave, hidden) == _title(dave, plain) == "Cafeteria"
    for document in (hidden, plain):
        _replace(dave, document, "Cafeteria", via)
    assert _title(dave, hidden) == _title(dave, plain) == "Notes"  # still the content's: the new content's H1
    assert _title(alice, hidden) == _title(alice, plain) == "Notes"
