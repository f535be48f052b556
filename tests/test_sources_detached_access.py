"""Who sees a source's detached paths (nineteenth session, detached19).

The list of a source's detached paths (API, console page), the single one (re-attach) judged a path by the policy the
source gave it **when it was detached** and the detached document. Once the source's access map narrowed the path --
above an admin's clearance, or to a group they lack -- that admin still saw its name in the list and could re-attach
it, while the sync's skip rows and the preview already hid it. Now a detached path is shown only to an admin who may
read every policy that applies to it now or then: the one at the detach, the source's current one (its access map and
default, ``sources.services.source_path_policies``; the last sync's record of the path, which knows the access file),
an admin's default the tombstone carries, and the detached document's own default (and the document seen); a path
whose current policy cannot be decided (excluded, the access map unreadable) only to an admin who may read every
level and group (docs/security.md, "A source's detached paths")."""

from __future__ import annotations

import pytest

from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document
from kb.services import document_set_access
from sources.models import Source, SourceDetached
from sources.services import source_create, source_update
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import new_folder, write
from tests.sources_helpers import sync_inline as _sync


def _setup(slug: str, **source_fields):
    tenant = tenant_create(slug=slug, name=slug)
    group_create(tenant=tenant, slug="board")
    top = membership_create(tenant=tenant, email=f"top@{slug}.example", role="admin", clearance="restricted",
                            group_slugs=["board"])
    low = membership_create(tenant=tenant, email=f"low@{slug}.example", role="admin", clearance="confidential")
    root = new_folder(tenant, f"{slug}-")
    write(root, {"plans.md": "# Plans\n\nThe walrus budget doubles.\n", "open.md": "# Open\n\nThe keeper waves.\n"})
    source = source_create(actor=top, tenant=tenant, kind="folder", name="plans", path=str(root),
                           access_level="internal", **source_fields)
    _sync(source)
    return tenant, top, low, root, source


def _detach(top, source, path: str = "plans.md") -> SourceDetached:
    document = Document.objects.get(tenant_id=source.tenant_id, source=path)
    answer = token_client(top).post(f"/api/v1/sources/{source.pk}/documents/{document.pk}/detach/")
    assert answer.status_code == 204, answer.content
    return SourceDetached.objects.get(source=source, path=path)


def _seen(member, source, tombstone: SourceDetached) -> dict:
    """What ``member`` is shown of ``tombstone``: the API's list, its hidden count, the console's page, and the
    re-attach (API and console) -- answered as for a made-up id when not shown (nothing changed)."""
    api, console = token_client(member), console_client(member)
    listed = api.get(f"/api/v1/sources/{source.pk}/detached/").json()
    page = console.get(f"/sources/{source.pk}/").content.decode()
    # The page's table of detached paths (the settings above it name the access map's and exclude's globs).
    table = page.split('<table id="detached-paths">', 1)[1].split("</table>", 1)[0]
    more = "1 more detached paths you may not read" in page
    return {"listed": [d["path"] for d in listed["results"]], "hidden": listed["hidden"],
            "page": ("plans.md" in table, more), "page_reattach": f"/detached/{tombstone.pk}/reattach/" in page}


def _refused(member, source, tombstone: SourceDetached) -> None:
    """Re-attach by ``member`` (API and console): the same 404 as a made-up id's, and the tombstone stays."""
    api, console = token_client(member), console_client(member)
    made_up = api.post(f"/api/v1/sources/{source.pk}/detached/987654321/reattach/")
    answer = api.post(f"/api/v1/sources/{source.pk}/detached/{tombstone.pk}/reattach/")
    assert (answer.status_code, answer.json()) == (404, made_up.json()), answer.content
    assert console.post(f"/sources/{source.pk}/detached/{tombstone.pk}/reattach/").status_code == 404
    assert SourceDetached.objects.filter(pk=tombstone.pk).exists()


HIDDEN = {"listed": [], "hidden": 1, "page": (False, True), "page_reattach": False}
SHOWN = {"listed": ["plans.md"], "hidden": 0, "page": (True, False), "page_reattach": True}


@pytest.mark.django_db
@pytest.mark.parametrize("narrowed", [
    {"path": "plans.md", "access_level": "restricted", "groups": []},  # above the low admin's clearance
    {"path": "plans.md", "access_level": "internal", "groups": ["board"]},  # a group they lack
], ids=["level", "group"])
def test_a_path_the_access_map_narrowed_after_its_detach_is_hidden_below_it(narrowed):
    """The leak: the top admin detaches the document; the access map then narrows its path. The confidential admin
    outside ``board`` saw it listed (API, console) and could re-attach it; now hidden, counted, and a 404."""
    tenant, top, low, root, source = _setup(f"dq19-{narrowed['access_level']}")
    tombstone = _detach(top, source)
    assert _seen(low, source, tombstone) == SHOWN  # before the narrowing: the path's every policy is theirs

    source_update(actor=top, source=source, access_map=[narrowed])
    assert _seen(low, source, tombstone) == HIDDEN
    _refused(low, source, tombstone)
    # The sync's skip row hides it from them too (the rule this list now keeps); the top admin sees it everywhere.
    sync = _sync(source)
    assert [s["path"] for s in token_client(low).get(
        f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").json()["skips"]] == []
    assert _seen(top, source, tombstone) == SHOWN
    # Set back: the last sync's record of the path (which also knows an access file's narrowing) still holds it
    # narrowed until the next sync; then shown again, and re-attached by them.
    source_update(actor=top, source=source, access_map=[])
    assert _seen(low, source, tombstone) == HIDDEN
    _sync(source)
    assert _seen(low, source, tombstone) == SHOWN
    answer = token_client(low).post(f"/api/v1/sources/{source.pk}/detached/{tombstone.pk}/reattach/")
    assert answer.status_code == 200, answer.content


@pytest.mark.django_db
def test_a_path_narrower_at_its_detach_stays_hidden_when_the_source_widens_it():
    """The policy at the detach still counts: the path was ``restricted`` then; the source now gives it ``internal``
    and the detached document was opened to ``internal`` -- still hidden from the confidential admin."""
    tenant, top, low, root, source = _setup(
        "dq19-wider", access_map=[{"path": "plans.md", "access_level": "restricted", "groups": []}])
    tombstone = _detach(top, source)
    assert tombstone.access_level == AccessLevel.RESTRICTED
    source_update(actor=top, source=source, access_map=[])
    document_set_access(actor=top, document=tombstone.document, access_level="internal", groups=[])
    assert _seen(low, source, tombstone) == HIDDEN
    _refused(low, source, tombstone)
    assert _seen(top, source, tombstone) == SHOWN


@pytest.mark.django_db
def test_the_detached_documents_default_and_an_admins_narrowing_count():
    """The detached document's own default counts (narrowed after the detach: hidden), and so does an admin's
    narrowing the tombstone carries back to a re-attach, though the document was opened again since."""
    tenant, top, low, root, source = _setup("dq19-default")
    plans = Document.objects.get(tenant=tenant, source="plans.md")
    # An admin narrows the synced document; the next sync that stores it records the narrowing on its item.
    document_set_access(actor=top, document=plans, access_level="restricted", groups=[])
    write(root, {"plans.md": "# Plans\n\nThe walrus budget doubles twice.\n"})
    _sync(source)
    tombstone = _detach(top, source)
    assert tombstone.admin_default and tombstone.admin_default["narrowing"], tombstone.admin_default
    assert (tombstone.access_level, _seen(low, source, tombstone)) == (AccessLevel.INTERNAL, HIDDEN)
    # Opened again after the detach: the document is theirs, but a re-attach would give it the narrowing back.
    document_set_access(actor=top, document=plans, access_level="internal", groups=[])
    assert _seen(low, source, tombstone) == HIDDEN
    _refused(low, source, tombstone)
    assert _seen(top, source, tombstone) == SHOWN


@pytest.mark.django_db
def test_a_path_whose_current_policy_is_undecided_is_shown_only_to_an_admin_who_reads_everything():
    """Fail closed: the path excluded since (no policy of the source's now), or an access map that cannot be read."""
    tenant, top, low, root, source = _setup("dq19-undecided")
    tombstone = _detach(top, source)
    source_update(actor=top, source=source, exclude=["plans.md"])
    assert _seen(low, source, tombstone) == HIDDEN
    _refused(low, source, tombstone)
    assert _seen(top, source, tombstone) == SHOWN
    source_update(actor=top, source=source, exclude=[])
    assert _seen(low, source, tombstone) == SHOWN
    Source.objects.filter(pk=source.pk).update(access_map=[{"path": "[plans]", "level": 1, "groups": []}])
    assert _seen(low, source, tombstone) == HIDDEN
    _refused(low, source, tombstone)
    assert _seen(top, source, tombstone) == SHOWN


@pytest.mark.django_db
def test_a_path_the_access_file_narrowed_after_its_detach_is_hidden_once_a_sync_read_it():
    """The access file is read by a listing only: its narrowing counts from the sync that read it (its skip row's
    record of the path), as the sync's own rows show it."""
    tenant, top, low, root, source = _setup("dq19-file")
    tombstone = _detach(top, source)
    write(root, {".bulkhead-access.yaml": "- path: plans.md\n  access_level: restricted\n"})
    _sync(source)
    assert _seen(low, source, tombstone) == HIDDEN
    _refused(low, source, tombstone)
    assert _seen(top, source, tombstone) == SHOWN


@pytest.mark.django_db
def test_the_list_reads_a_bounded_number_of_queries_however_many_paths():
    """The source's policies for the page's paths in one pass, the documents' defaults and the last sync's skips in
    one query each: the same queries for one detached path as for twenty."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from sources.selectors import detached_page

    tenant, top, low, root, source = _setup("dq19-queries")
    _detach(top, source)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            page = detached_page(member=low, source=source)
        return len(captured), len(page.rows) + page.hidden

    one = queries()
    documents = [Document.objects.create(tenant=tenant, title=f"d{n}", source=f"x{n}.md") for n in range(19)]
    for n, document in enumerate(documents):
        SourceDetached.objects.create(tenant=tenant, source=source, path=f"x{n}.md", document=document,
                                      access_level=AccessLevel.INTERNAL, access_groups=[])
    assert queries() == (one[0], 20), one
