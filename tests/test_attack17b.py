"""Attacking the ways in for agents, identity and sources (seventeenth session, 17b).

1. A source's sync wrote the source's policy over a document's default that an admin had set through the API (the
   console's documents page, ``kb.services.document_set_access``): a synced document narrowed to ``restricted`` was
   open to every ``internal`` reader again at the next edit of its file. docs/sources.md says "policy overrides
   through the API are allowed and survive syncs"; a section's did, the document's default did not."""

from __future__ import annotations

import pytest

from accounts.policy import AccessLevel
from accounts.services import membership_create, tenant_create
from kb.models import Chunk, Document, Section
from kb.services import document_set_access
from sources.models import SourceItem
from sources.services import source_create, source_update
from tests.api_helpers import token_client
from tests.sources_helpers import keyword_found, new_folder, sync_now, write


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_default_an_admin_set_through_the_api_survives_the_sources_next_sync(celery_worker):
    tenant = tenant_create(slug="a17b-default", name="A17b default")
    top = membership_create(tenant=tenant, email="top@a17b.example", role="admin", clearance="restricted")
    viewer = membership_create(tenant=tenant, email="viewer@a17b.example", role="viewer", clearance="internal")
    root = new_folder(tenant, "a17b-")
    write(root, {"notes.md": "# Notes\n\nThe zeppelin hangar opens at dawn.\n",
                 "open.md": "# Open\n\nThe carousel turns at noon.\n"})
    source = source_create(actor=top, tenant=tenant, kind="folder", name="notes", path=str(root),
                           access_level="internal")
    sync = sync_now(top, source)
    assert (sync.status, sync.added) == ("succeeded", 2), (sync.error, sync.errors)
    reader = token_client(viewer)
    assert keyword_found(reader, "zeppelin") and keyword_found(reader, "carousel")

    notes = Document.objects.get(tenant=tenant, source="notes.md")
    opened = Document.objects.get(tenant=tenant, source="open.md")
    # The admin narrows one synced document, and opens the other, through the API's service (the console's action).
    document_set_access(actor=top, document=notes, access_level="restricted", groups=[])
    document_set_access(actor=top, document=opened, access_level="public", groups=[])
    assert not keyword_found(reader, "zeppelin")

    # The file is edited at the source: the next sync re-ingests it.
    write(root, {"notes.md": "# Notes\n\nThe zeppelin hangar opens at dawn.\n\nThe mooring mast is painted red.\n",
                 "open.md": "# Open\n\nThe carousel turns at noon.\n\nThe organ plays waltzes.\n"})
    sync = sync_now(top, source)
    assert (sync.status, sync.changed) == ("succeeded", 2), (sync.error, sync.errors)
    notes.refresh_from_db()
    assert notes.access_level == AccessLevel.RESTRICTED  # the admin's narrowing kept
    assert set(Section.objects.filter(document=notes).values_list("access_level", flat=True)) == {
        AccessLevel.RESTRICTED}
    assert Chunk.objects.filter(document=notes).exists()
    assert set(Chunk.objects.filter(document=notes).values_list("access_level", flat=True)) == {AccessLevel.RESTRICTED}
    assert not keyword_found(reader, "zeppelin") and not keyword_found(reader, "mooring")
    opened.refresh_from_db()
    assert opened.access_level == AccessLevel.PUBLIC  # the admin widened that very policy: kept too
    assert keyword_found(reader, "organ")

    # The source now narrows the opened file past what the admin opened it to: not synced, the item fails naming
    # why; the document keeps its content and the admin's policy until an admin sets it again.
    source_update(actor=top, source=source,
                  access_map=[{"path": "open.md", "access_level": "confidential", "groups": []}])
    write(root, {"open.md": "# Open\n\nThe carousel turns at noon.\n\nThe organ plays waltzes.\n\nSecret brass.\n"})
    sync = sync_now(top, source)
    assert sync.failed == 1, (sync.error, sync.errors)
    assert "wider than this source now gives the path" in sync.errors[0]["error"]
    assert SourceItem.objects.get(source=source, path="open.md").access_level == AccessLevel.INTERNAL
    assert not keyword_found(reader, "brass")
    # Set again (to the source's policy), the next sync takes the new content under the source's policy.
    document_set_access(actor=top, document=opened, access_level="confidential", groups=[])
    sync = sync_now(top, source)
    assert (sync.status, sync.failed, sync.changed) == ("succeeded", 0, 1), (sync.error, sync.errors)
    opened.refresh_from_db()
    assert opened.access_level == AccessLevel.CONFIDENTIAL
    assert not keyword_found(reader, "brass")
