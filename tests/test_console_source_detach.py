"""Detaching a synced document in the console (eighteenth session): the API's detach
(``POST /api/v1/sources/{id}/documents/{document_id}/detach/``) had no button, so an admin on a synced document's page
could not let it go without the API. "Detach from its source…" on the document page leads to a confirmation that says
the document stays and stops following the source; the POST detaches it as the API does -- the same admins, the same
service, the same audit record. The authorization matrix has the route (``tests/test_console_authorization.py``); a
real browser clicks it (``tests/browser/test_console_sources.py``)."""

from __future__ import annotations

import pytest

from accounts.services import membership_create, tenant_create
from audit.models import Action, AuditEvent
from kb.models import Document
from kb.services import document_set_access
from sources.models import SourceDetached, SourceItem, SourceSync
from sources.services import source_create, sync_run
from tests import factories
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import new_folder, write

pytestmark = pytest.mark.django_db


def _world():
    tenant = tenant_create(slug="cdetach18", name="Console detach")
    top = membership_create(tenant=tenant, email="top@cdetach18.example", role="admin", clearance="restricted")
    low = membership_create(tenant=tenant, email="low@cdetach18.example", role="admin", clearance="internal")
    editor = membership_create(tenant=tenant, email="editor@cdetach18.example", role="editor", clearance="restricted")
    root = new_folder(tenant, "cdetach18-")
    write(root, {"plans.md": "# Plans\n\nThe walrus budget doubles.\n", "memo.md": "# Memo\n\nThe heron waits.\n",
                 "board.md": "# Board\n\nThe minutes.\n"})
    source = source_create(actor=top, tenant=tenant, kind="folder", name="handbook", path=str(root),
                           access_level="internal")
    sync_run(str(SourceSync.objects.create(tenant_id=tenant.pk, source=source).pk))  # the sync's own code, inline
    docs = {d.source: d for d in Document.objects.filter(tenant=tenant)}
    document_set_access(actor=top, document=docs["board.md"], access_level="restricted", groups=[])
    return tenant, top, low, editor, source, docs


def _state(source) -> list:
    return [sorted(SourceItem.objects.filter(source=source).values_list("path", "document_id")),
            sorted(SourceDetached.objects.filter(source=source).values_list("path", "document_id")),
            sorted((str(pk), sorted(m)) for pk, m in Document.objects.filter(tenant_id=source.tenant_id)
                   .values_list("pk", "metadata")),
            AuditEvent.objects.filter(action=Action.SOURCE_DETACH).count()]


def test_an_admin_detaches_a_synced_document_from_its_page_as_the_api_does():
    tenant, top, low, editor, source, docs = _world()
    plans, memo = docs["plans.md"], docs["memo.md"]
    admin = console_client(top)

    # The document page offers it to an admin, naming the source; the confirmation says what happens.
    page = admin.get(f"/documents/{plans.pk}/").content.decode()
    assert f"/documents/{plans.pk}/detach/" in page and "Detach from its source" in page and "handbook" in page
    confirm = admin.get(f"/documents/{plans.pk}/detach/")
    assert confirm.status_code == 200
    text = confirm.content.decode()
    assert "stays" in text and "stops following the source" in text and "re-attaches" in text
    assert 'name="csrfmiddlewaretoken"' in text
    assert not SourceDetached.objects.exists()  # a GET detaches nothing

    # Detached in the console: a message, the document stays, its path a tombstone; the audit record is the API's.
    answer = admin.post(f"/documents/{plans.pk}/detach/", follow=True)
    assert answer.redirect_chain == [(f"/documents/{plans.pk}/", 302)], answer.redirect_chain
    shown = answer.content.decode()
    assert "was detached from the source handbook" in shown and "stays as it is" in shown
    assert f"/documents/{plans.pk}/detach/" not in shown  # no source's any more: no button
    plans.refresh_from_db()
    assert "source_id" not in plans.metadata and Document.objects.filter(pk=plans.pk).exists()
    assert list(SourceDetached.objects.filter(source=source).values_list("path", "document_id")) == [
        ("plans.md", plans.pk)]
    assert not SourceItem.objects.filter(source=source, path="plans.md").exists()
    assert token_client(top).post(f"/api/v1/sources/{source.pk}/documents/{memo.pk}/detach/").status_code == 204
    events = [(e.action, e.membership_id, e.user_id, e.target_type, e.target_id, e.details, len(e.document_ids))
              for e in AuditEvent.objects.filter(action=Action.SOURCE_DETACH).order_by("created_at")]
    expected = (Action.SOURCE_DETACH, top.pk, top.user_id, "source", str(source.pk), {}, 1)
    assert events == [expected, expected], events
    assert [e.document_ids for e in AuditEvent.objects.filter(action=Action.SOURCE_DETACH).order_by("created_at")] == [
        [plans.pk], [memo.pk]]

    # Detached already (so no source's document), or never synced: refused, naming why, nothing changed.
    uploaded = factories.document(tenant, title="Uploaded")
    for document in (plans, uploaded):
        before = _state(source)
        for method in ("get", "post"):
            answer = getattr(admin, method)(f"/documents/{document.pk}/detach/")
            assert answer.status_code == 409 and "belongs to no source" in answer.content.decode(), method
        assert _state(source) == before


def test_only_an_admin_who_can_see_the_document_detaches_it_and_not_while_it_syncs():
    tenant, top, low, editor, source, docs = _world()
    board, memo = docs["board.md"], docs["memo.md"]
    before = _state(source)
    # An editor (restricted: sees every section) gets the console's refusal page, and no button.
    as_editor = console_client(editor)
    assert "/detach/" not in as_editor.get(f"/documents/{memo.pk}/").content.decode()
    for method in ("get", "post"):
        answer = getattr(as_editor, method)(f"/documents/{memo.pk}/detach/")
        assert answer.status_code == 403 and "console/forbidden.html" in [t.name for t in answer.templates], method
    # An admin below the document's policy cannot see it: the same 404 as a made-up id.
    as_low = console_client(low)
    made_up = as_low.post("/documents/00000000-0000-4000-8000-000000000000/detach/")
    for method in ("get", "post"):
        answer = getattr(as_low, method)(f"/documents/{board.pk}/detach/")
        assert answer.status_code == 404 and made_up.status_code == 404, method
        assert answer.content == made_up.content
    assert _state(source) == before
    # While a sync of the source is unfinished: refused (409) with the service's reason.
    SourceSync.objects.create(tenant_id=tenant.pk, source=source)
    answer = console_client(top).post(f"/documents/{memo.pk}/detach/")
    assert answer.status_code == 409 and "the source is syncing" in answer.content.decode()
    assert _state(source) == before
