"""A document detached from its source stays detached (found attacking sources, seventeenth session).

Detach deleted the path's ``SourceItem``, so the next sync added the same file again as a new document at the
source's policy, beside the detached one: an admin who had detached a document to narrow it found its text back,
readable by every member the source's policy allows. Detach now leaves a tombstone (``SourceDetached``): every sync
skips the path ("detached") until an admin re-attaches it, which takes the detached document back (docs/sources.md,
"Detached documents")."""

from __future__ import annotations

import pytest

from accounts.policy import AccessLevel
from accounts.services import membership_create, tenant_create
from kb.models import Document
from kb.services import document_set_access
from sources.models import SourceItem
from sources.services import source_create, source_update
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import keyword_found, new_folder, sync_now, write


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_detached_document_is_not_brought_back_by_the_next_sync_until_reattached(celery_worker):
    tenant = tenant_create(slug="detach17", name="Detach17")
    top = membership_create(tenant=tenant, email="top@detach17.example", role="admin", clearance="restricted")
    low = membership_create(tenant=tenant, email="low@detach17.example", role="admin", clearance="internal")
    viewer = membership_create(tenant=tenant, email="viewer@detach17.example", role="viewer", clearance="internal")
    root = new_folder(tenant, "detach17-")
    write(root, {"plans.md": "# Plans\n\nThe walrus budget doubles next spring.\n",
                 "open.md": "# Open\n\nThe lighthouse keeper waves.\n"})
    source = source_create(actor=top, tenant=tenant, kind="folder", name="plans", path=str(root),
                           access_level="internal")
    sync = sync_now(top, source)
    assert (sync.status, sync.added) == ("succeeded", 2), (sync.error, sync.errors)
    reader, admin = token_client(viewer), token_client(top)
    assert keyword_found(reader, "walrus")

    plans = Document.objects.get(tenant=tenant, source="plans.md")
    # The admin detaches the document (to stop it following the source) and narrows it.
    answer = admin.post(f"/api/v1/sources/{source.pk}/documents/{plans.pk}/detach/")
    assert answer.status_code == 204, answer.content
    document_set_access(actor=top, document=plans, access_level="restricted", groups=[])
    assert not keyword_found(reader, "walrus")

    # The next syncs -- the file edited, the source's access map changed -- leave the path alone: no new document, the
    # text not readable at the source's policy, the report says it was skipped as detached.
    write(root, {"plans.md": "# Plans\n\nThe walrus budget doubles next spring.\n\nThe narwhal fund too.\n"})
    for changes in ({}, {"access_map": [{"path": "plans.md", "access_level": "public", "groups": []}]}):
        if changes:
            source_update(actor=top, source=source, **changes)
        sync = sync_now(top, source)
        assert (sync.status, sync.added, sync.skipped) == ("succeeded", 0, 1), (sync.error, sync.errors, sync.skips)
        assert Document.objects.filter(tenant=tenant).count() == 2
        assert not Document.objects.filter(tenant=tenant, metadata__source_id=source.pk, source="plans.md").exists()
        assert not keyword_found(reader, "walrus") and not keyword_found(reader, "narwhal")
        shown = admin.get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").json()
        assert [(s["path"], s["reason"].split(" ")[0]) for s in shown["skips"]] == [("plans.md", "detached")], shown
        preview = admin.get(f"/api/v1/sources/{source.pk}/preview/").json()
        assert {i["path"]: i["action"] for i in preview["items"]}["plans.md"] == "skip", preview
    source_update(actor=top, source=source, access_map=[])

    # The detached paths, as the rule of the source's paths says: an admin below the document's policy sees none.
    listed = admin.get(f"/api/v1/sources/{source.pk}/detached/").json()
    assert [(d["path"], d["document_id"]) for d in listed["results"]] == [("plans.md", str(plans.pk))], listed
    below = token_client(low)
    assert below.get(f"/api/v1/sources/{source.pk}/detached/").json()["results"] == []
    detached_id = listed["results"][0]["id"]
    assert below.post(f"/api/v1/sources/{source.pk}/detached/{detached_id}/reattach/").status_code == 404

    # The console's source page lists it the same way, and re-attaches it (below: the API's).
    page = console_client(top).get(f"/sources/{source.pk}/").content.decode()
    assert "plans.md" in page and f"/detached/{detached_id}/reattach/" in page
    page = console_client(low).get(f"/sources/{source.pk}/").content.decode()
    assert f"/detached/{detached_id}/reattach/" not in page and "1 more detached paths you may not read" in page
    assert console_client(low).post(f"/sources/{source.pk}/detached/{detached_id}/reattach/").status_code == 404

    # Re-attached: the document is the source's again, keeps the admin's narrowing, and the next sync brings it the
    # source's content -- still one document of the path.
    answer = admin.post(f"/api/v1/sources/{source.pk}/detached/{detached_id}/reattach/")
    assert answer.status_code == 200, answer.content
    assert answer.json()["document_id"] == str(plans.pk)
    sync = sync_now(top, source)
    assert (sync.status, sync.changed, sync.added, sync.skipped) == ("succeeded", 1, 0, 0), (sync.errors, sync.skips)
    plans.refresh_from_db()
    assert plans.metadata["source_id"] == source.pk and plans.access_level == AccessLevel.RESTRICTED
    assert Document.objects.filter(tenant=tenant).count() == 2
    assert not keyword_found(reader, "narwhal")
    assert SourceItem.objects.get(source=source, path="plans.md").document_id == plans.pk


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_detached_document_deleted_later_does_not_bring_its_path_back(celery_worker):
    tenant = tenant_create(slug="detach17-gone", name="Detach17 gone")
    top = membership_create(tenant=tenant, email="top@detach17g.example", role="admin", clearance="restricted")
    viewer = membership_create(tenant=tenant, email="viewer@detach17g.example", role="viewer", clearance="internal")
    root = new_folder(tenant, "detach17g-")
    write(root, {"memo.md": "# Memo\n\nThe pelican audit is due.\n"})
    source = source_create(actor=top, tenant=tenant, kind="folder", name="memos", path=str(root))
    assert sync_now(top, source).added == 1
    memo = Document.objects.get(tenant=tenant, source="memo.md")
    admin, reader = token_client(top), token_client(viewer)
    assert admin.post(f"/api/v1/sources/{source.pk}/documents/{memo.pk}/detach/").status_code == 204
    assert admin.delete(f"/api/v1/documents/{memo.pk}/").status_code == 204

    sync = sync_now(top, source)
    assert (sync.status, sync.added, sync.skipped) == ("succeeded", 0, 1), (sync.errors, sync.skips)
    assert not Document.objects.filter(tenant=tenant).exists() and not keyword_found(reader, "pelican")
    listed = admin.get(f"/api/v1/sources/{source.pk}/detached/").json()["results"]
    assert [(d["path"], d["document_id"]) for d in listed] == [("memo.md", None)]

    # Re-attached with no document left: the next sync adds the path anew at the source's policy.
    answer = admin.post(f"/api/v1/sources/{source.pk}/detached/{listed[0]['id']}/reattach/")
    assert answer.status_code == 200 and answer.json()["document_id"] is None, answer.content
    sync = sync_now(top, source)
    assert (sync.status, sync.added, sync.skipped) == ("succeeded", 1, 0), (sync.errors, sync.skips)
    assert keyword_found(reader, "pelican")
    # A second re-attach of the same tombstone: it is gone (404).
    assert admin.post(f"/api/v1/sources/{source.pk}/detached/{listed[0]['id']}/reattach/").status_code == 404


@pytest.mark.django_db
def test_detach_and_reattach_wait_for_an_unfinished_sync():
    from accounts.errors import Conflict
    from sources.models import SourceDetached, SourceSync
    from sources.services import source_document_detach, source_path_reattach, sync_run

    tenant = tenant_create(slug="detach17-busy", name="Detach17 busy")
    top = membership_create(tenant=tenant, email="top@detach17b.example", role="admin", clearance="restricted")
    root = new_folder(tenant, "detach17b-")
    write(root, {"a.md": "# A\n\nalpha\n"})
    source = source_create(actor=top, tenant=tenant, kind="folder", name="busy", path=str(root))
    sync_run(str(SourceSync.objects.create(tenant_id=tenant.pk, source=source).pk))
    document = Document.objects.get(metadata__source_id=source.pk)
    queued = SourceSync.objects.create(tenant_id=tenant.pk, source=source)  # read the path's item; not run yet
    with pytest.raises(Conflict, match="syncing"):
        source_document_detach(actor=top, source=source, document=document)
    assert SourceItem.objects.filter(source=source, path="a.md").exists()
    sync_run(str(queued.pk))
    source_document_detach(actor=top, source=source, document=document)
    queued = SourceSync.objects.create(tenant_id=tenant.pk, source=source)
    detached = SourceDetached.objects.get(source=source, path="a.md")
    with pytest.raises(Conflict, match="syncing"):
        source_path_reattach(actor=top, source=source, detached=detached)
    sync_run(str(queued.pk))
    assert source_path_reattach(actor=top, source=source, detached=detached).pk == document.pk
