"""The source preview says what the sync does with an admin's document default (eighteenth session).

The sync keeps a default an admin set on a synced document when it narrows the source's policy, or fails the item when
the source now narrows the path past it (``sources.services.default_kept``, ``DefaultWider``); the preview showed the
source's policy for such a path whatever the sync would do. It now shows the policy the document keeps, or the item
failing with the sync's reason -- in the API and the console alike -- and each row only to who may read the source's
policy for the path and see its document, as before. Checked against a real sync that follows it."""

from __future__ import annotations

import re

import pytest

from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document
from kb.services import document_set_access
from sources.services import source_create, source_update
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import new_folder, sync_now, write

FILES = {
    "narrowed.md": "# Narrowed\n\nThe walrus budget doubles.\n",
    "quiet.md": "# Quiet\n\nThe heron waits.\n",
    "opened.md": "# Opened\n\nThe carousel turns at noon.\n",
    "plain.md": "# Plain\n\nThe kettle sings.\n",
    "moved.md": "# Moved\n\nThe ledger of the finance team.\n",
    "bounded.md": "# Bounded\n\nThe vault of the mint.\n",
}


def _rows(answer) -> dict:
    assert answer.status_code == 200, answer.content
    return {i["path"]: i for i in answer.json()["items"]}


def _console_rows(client, source) -> dict:
    """The console preview's table: path -> (action cell, policy cell), whitespace folded."""
    page = client.get(f"/sources/{source.pk}/?preview=1").content.decode()
    found = {}
    for row in re.findall(r"<tr><td><code>(.*?)</code></td>(.*?)</tr>", page, flags=re.S):
        cells = [re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>",
                                                                                             row[1], flags=re.S)]
        found[row[0]] = (cells[0], cells[1])
    return found


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_the_preview_shows_the_default_the_sync_keeps_or_its_failure(celery_worker):
    tenant = tenant_create(slug="preview18", name="Preview18")
    group_create(tenant=tenant, slug="finance")
    top = membership_create(tenant=tenant, email="top@preview18.example", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    # Restricted, but not in finance: reads the paths the source makes restricted, not a finance-only document.
    board = membership_create(tenant=tenant, email="board@preview18.example", role="admin", clearance="restricted")
    low = membership_create(tenant=tenant, email="low@preview18.example", role="admin", clearance="internal")
    root = new_folder(tenant, "preview18-")
    write(root, FILES)
    source = source_create(actor=top, tenant=tenant, kind="folder", name="notes", path=str(root),
                           access_level="internal")
    sync = sync_now(top, source)
    assert (sync.status, sync.added) == ("succeeded", len(FILES)), (sync.error, sync.errors)
    docs = {d.source: d for d in Document.objects.filter(tenant=tenant)}

    # The admin narrows three synced documents and opens two (one to the finance group alone, at every level).
    document_set_access(actor=top, document=docs["narrowed.md"], access_level="confidential", groups=[])
    document_set_access(actor=top, document=docs["quiet.md"], access_level="confidential", groups=[])
    document_set_access(actor=top, document=docs["bounded.md"], access_level="confidential", groups=[])
    document_set_access(actor=top, document=docs["moved.md"], access_level="public", groups=["finance"])
    document_set_access(actor=top, document=docs["opened.md"], access_level="public", groups=[])
    # At the source: two files edited, one moved into board/ (as it is), and the source narrows the opened file and
    # board/ past what the admin opened, and the bounded file past the admin's narrowing.
    write(root, {"narrowed.md": FILES["narrowed.md"] + "\nThe narwhal fund too.\n",
                 "plain.md": FILES["plain.md"] + "\nThe teapot too.\n",
                 "opened.md": FILES["opened.md"] + "\nSecret brass.\n",
                 "moved.md": None, "board/moved.md": FILES["moved.md"]})
    source_update(actor=top, source=source, access_map=[
        {"path": "opened.md", "access_level": "restricted", "groups": []},
        {"path": "bounded.md", "access_level": "restricted", "groups": []},
        {"path": "board/**", "access_level": "restricted", "groups": []}])

    rows = _rows(token_client(top).get(f"/api/v1/sources/{source.pk}/preview/"))
    policies = {p: (r["action"], r["access_level"], r["default_kept"], r["source_access_level"]) for p, r in rows.items()}
    assert policies == {
        "narrowed.md": ("change", "confidential", True, "internal"),  # the admin's narrowing kept with the new content
        "quiet.md": ("unchanged", "confidential", True, "internal"),  # nothing written: its default stays
        "plain.md": ("change", "internal", False, "internal"),
        "opened.md": ("fail", "public", True, "restricted"),  # the source narrows it past the admin's opening
        "board/moved.md": ("fail", "public", True, "restricted"),  # the move would take the document past it
        # The source narrows past the admin's narrowing: the narrower of the two, the source's (a fail before, which
        # left the document confidential).
        "bounded.md": ("change", "restricted", False, "restricted"),
    }, rows
    assert rows["board/moved.md"]["groups"] == ["finance"] and rows["board/moved.md"]["renamed_from"] == "moved.md"
    for path in ("opened.md", "board/moved.md"):
        assert "wider than this source now gives the path" in rows[path]["reason"], rows[path]

    # The console's preview says the same.
    shown = _console_rows(console_client(top), source)
    assert shown["narrowed.md"] == ("change", "confidential an admin's default, kept by the sync; the source gives "
                                              "internal"), shown
    assert shown["opened.md"] == ("fail", "public the document keeps an admin's default; the source now gives "
                                          "restricted"), shown
    assert shown["board/moved.md"][0] == "fail (moving from moved.md)", shown
    assert shown["plain.md"] == ("change", "internal"), shown

    # Who sees which row is unchanged: the source's policy for the path and the document. The internal admin sees the
    # plain file alone; the restricted admin outside finance is not told of the finance-only document's move.
    assert set(_rows(token_client(low).get(f"/api/v1/sources/{source.pk}/preview/"))) == {"plain.md"}
    assert set(_rows(token_client(board).get(f"/api/v1/sources/{source.pk}/preview/"))) == {
        "narrowed.md", "quiet.md", "plain.md", "opened.md", "bounded.md"}
    for member in (low, board):
        page = console_client(member).get(f"/sources/{source.pk}/?preview=1").content.decode()
        assert "moved.md" not in page and "finance" not in page, member.user.email
    assert "narrowed.md" not in console_client(low).get(f"/sources/{source.pk}/?preview=1").content.decode()

    # The sync does what the preview said: the policies kept, the two items failed with the preview's reasons.
    preview = rows
    sync = sync_now(top, source)
    # Its two failed items end it "failed" (as any sync with a failed item); the rest synced.
    assert (sync.status, sync.failed, sync.changed, sync.deleted) == ("failed", 2, 3, 0), (sync.error, sync.errors)
    errors = {e["path"]: e["error"] for e in sync.errors}
    assert errors == {p: preview[p]["reason"] for p in ("opened.md", "board/moved.md")}, sync.errors
    for path, row in preview.items():
        document = Document.objects.get(pk=docs[path.removeprefix("board/")].pk)
        assert AccessLevel(document.access_level).name.lower() == row["access_level"], path
    # The failed move's error, as its preview row: not shown to the restricted admin outside finance.
    shown = token_client(board).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").json()
    assert [e["path"] for e in shown["errors"]] == ["opened.md"] and shown["errors_hidden"] == 1, shown
    shown = token_client(top).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").json()
    assert sorted(e["path"] for e in shown["errors"]) == ["board/moved.md", "opened.md"], shown
