"""A content title filters and sorts, in SQL, as each reader is shown it (seventeenth session).

A document's title from its content is shown to a member only when they may read the section bearing it
(``kb.titles.reader_title``); the documents list's title filter (the console's ``q``), its sort by title and the
audit page's title filter (``kb.selectors.document_ids_titled``) use the same answer in SQL
(``kb.titles.shown_title_sql(..., reader=...)``): a member filtering by the words of a heading they may not read
gets nothing back, and the sort places that document as "untitled", never by the hidden words.
"""

from __future__ import annotations

import pytest

from accounts.services import tenant_create
from kb import retrieval
from kb.selectors import document_ids_titled, document_list
from kb.services import Upload, document_create
from tests.api_helpers import Actor, console_client, member_with_token
from tests.ingestion_helpers import wait_for_jobs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

HIDDEN = b"""Preface for all staff.

# Aardvark merger <!-- access: restricted -->

AARDBODY the terms.

# Cafeteria

Soup on Fridays.
"""


def _upload(actor: Actor, content: bytes, title: str):
    document, job = document_create(
        tenant=actor.membership.tenant, created_by=actor.membership,
        upload=Upload(content=content, title=title, content_type="text/markdown", source="x.md"),
    )
    (job,) = wait_for_jobs([job.id])
    assert job.status == "succeeded", job.error
    return document


def test_a_content_title_is_filtered_and_sorted_as_each_reader_is_shown_it(celery_worker):
    retrieval.count_cache.clear()
    tenant = tenant_create(slug="zoo-co", name="Zoo Co")
    alice = Actor("alice", *member_with_token(tenant, "alice@example.com", "admin", "restricted"))
    carol = Actor("carol", *member_with_token(tenant, "carol@example.com", "viewer", "internal"))
    hidden = _upload(alice, HIDDEN, "untitled")
    kiwi = _upload(alice, b"# Kiwi\n\nKiwi text.\n", "Kiwi notes")
    mango = _upload(alice, b"# Mango\n\nMango text.\n", "Mango notes")

    def titles(actor: Actor, **filters) -> list[tuple[str, str]]:
        rows = document_list(member=actor.membership).filter(**filters).order_by("title_shown", "id")
        return [(str(d.pk), d.title_shown) for d in rows]

    # Alice reads the heading: the title is hers, filtered and sorted by its words.
    assert titles(alice) == [(str(hidden.pk), "Aardvark merger"), (str(kiwi.pk), "Kiwi notes"),
                             (str(mango.pk), "Mango notes")]
    assert titles(alice, title_shown__icontains="aardvark") == [(str(hidden.pk), "Aardvark merger")]
    assert document_ids_titled(member=alice.membership, text="Aardvark") == [hidden.pk]
    # Carol does not: to her it is the first H1 she may read ("Cafeteria") -- it sorts as that, and the hidden
    # heading's words find nothing (nor does an "untitled" tell her a hidden H1 comes first).
    assert titles(carol) == [(str(hidden.pk), "Cafeteria"), (str(kiwi.pk), "Kiwi notes"),
                             (str(mango.pk), "Mango notes")]
    assert titles(carol, title_shown__icontains="cafeteria") == [(str(hidden.pk), "Cafeteria")]
    assert titles(carol, title_shown__icontains="aardvark") == []
    assert document_ids_titled(member=carol.membership, text="Aardvark") == []
    # The console's filter and sort, as she uses them.
    browser = console_client(carol.membership)
    page = browser.get("/documents/", {"q": "aardvark"})
    assert page.status_code == 200 and str(hidden.pk) not in page.content.decode()
    page = browser.get("/documents/", {"sort": "title"}).content.decode()
    assert "Aardvark merger" not in page and page.index(str(hidden.pk)) < page.index(str(kiwi.pk))  # as "Cafeteria"
