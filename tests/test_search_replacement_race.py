"""A search racing a content replacement never returns text of the new content by the old offsets.

Found by the load harness (``kb_bench load``, docs/reliability.md): a public reader's search got,
in a parent-expanded context, the canary of a section restricted both before and after. Search
loads the hits' sections (their spans and policies) in one statement and reads their text from
``document.text`` in a later one; a replacement committing between the two (new text, new
sections, in one transaction) made the old spans cut the *new* text, whatever section sits there
now. The text query now reads only spans whose section still exists in its own snapshot (sections
and text change together), and a context with a span that vanished is dropped.

The interleaving is made deterministic by committing the replacement just before the text is read.
"""

from __future__ import annotations

import pytest

from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb import expansion
from kb.models import Document, Section
from kb.search import search
from tests import factories
from tests.api_helpers import POLICY_SECTIONS, make_document

pytestmark = pytest.mark.django_db(transaction=True)

SECRET = "zebraphrase"


def _replace_content(document: Document) -> None:
    """What a replacement's store step commits: new text, the old sections gone, new ones in."""
    text = (SECRET + " ") * (len(document.text) // len(SECRET) + 2)
    Document.objects.filter(pk=document.pk).update(text=text, sha256="0" * 64)
    Section.objects.filter(document=document).delete()
    document.text = text
    factories.section(document, key="new", order=0, start=0, end=len(text), body_spans=[[0, len(text)]],
                      own_level=AccessLevel.RESTRICTED, access_level=AccessLevel.RESTRICTED)


@pytest.mark.parametrize("expand", ["parent", "neighbors"])
def test_a_replacement_between_loading_sections_and_reading_text_leaks_nothing(monkeypatch, expand):
    tenant = tenant_create(slug=f"race-{expand}", name="Race")
    group_create(tenant=tenant, slug="security-team")
    document = make_document(tenant, sections=POLICY_SECTIONS)
    viewer = membership_create(tenant=tenant, email=f"v@{expand}.example", role="viewer", clearance="internal")
    real = expansion.fetch_texts

    def replaced_first(tenant_id, pieces):
        _replace_content(Document.objects.get(pk=document.pk))
        real(tenant_id, pieces)

    monkeypatch.setattr(expansion, "fetch_texts", replaced_first)
    response = search(member=viewer, query="intro internal readers", mode="keyword", expand=expand)
    assert response.results, "the search found nothing to expand; the test proves nothing"
    texts = [c.text for c in response.contexts]
    assert not any(SECRET in text for text in texts), texts
