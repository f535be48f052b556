"""A sync that meets an error no rule of it foresaw (fourteenth session).

``sources.services.sync_run`` caught a listing's ``ListingError``, ``ValueError`` and ``OSError``: any other exception
of the listing raised out of the task, and the sync stayed "running" -- no other sync of its source could start --
until the tick had sent it ``BULKHEAD_SOURCE_MAX_ATTEMPTS`` times. One raised while syncing an item stopped the whole
sync at that item, every time ("the sync stopped: error"): the items after it never synced. Made for real: a Git
source's mirror (``sources.listing.git_cache_path``) whose pack holds an object that no longer inflates -- dulwich
raises ``zlib.error``, neither an ``OSError`` nor a ``ValueError`` -- a blob (read for an item) and then the commit's
tree (read by the listing). Run by a real worker."""

from __future__ import annotations

import os
import shutil
import zlib

import pytest
from dulwich.objects import hex_to_sha
from dulwich.repo import Repo

from sources.models import SourceItem
from sources.selectors import PREVIEW_UNEXPECTED_ITEM
from sources.services import UNEXPECTED_ITEM, UNEXPECTED_LISTING, source_update, sync_start
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import synced_git_mirror, wait_for_sync

# What the error's own text says (dulwich's zlib.error: "Error -3 while decompressing data: ..."): never shown.
ERROR_TEXT = ("Error -3", "decompressing", "zlib")


def _corrupt(cache, sha: bytes) -> None:
    """Scramble the middle of object ``sha``'s deflate stream in every pack of the mirror at ``cache`` that holds it
    (its entry header kept: its size still reads)."""
    repo = Repo(str(cache))
    try:
        found = 0
        for pack in repo.object_store.packs:
            name = hex_to_sha(sha)
            if name not in pack:
                continue
            offsets = sorted(offset for _, offset, _ in pack.index.iterentries())
            start = pack.index.object_offset(name)
            end = next((o for o in offsets if o > start), os.path.getsize(pack.data.path) - 20)  # the trailer: 20
            os.chmod(pack.data.path, 0o644)
            with open(pack.data.path, "r+b") as handle:
                handle.seek(start + 6)
                middle = handle.read(end - start - 12)
                handle.seek(start + 6)
                handle.write(bytes(b ^ 0x55 for b in middle))
            found += 1
        assert found, sha
    finally:
        repo.close()
    fresh = Repo(str(cache))
    try:  # the real condition: reading it raises what is neither an OSError nor a ValueError
        with pytest.raises(zlib.error):
            fresh[sha].as_raw_string()
    finally:
        fresh.close()


def _shown(member, source, sync) -> dict:
    answer = token_client(member).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/")
    assert answer.status_code == 200, answer.content[:300]
    body = answer.content.decode()
    assert not any(text in body for text in ERROR_TEXT), body[:500]
    return answer.json()


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_an_unexpected_error_fails_its_item_or_its_listing_and_ends_the_sync(celery_worker):
    tenant, internal, top, root, commit, source, cache = synced_git_mirror(
        "src-unexpected", {"a.md": "# A\n\nThe lighthouse keeper polishes the brass lamp.\n",
                               "board/plan.md": "# Plan\n\nThe severance plan for the spring, with its dates.\n",
                               "z.md": "# Z\n\nThe gulls watch the harbour from the breakwater.\n"})
    repo = Repo(str(root))
    tree = repo[repo[commit].tree]
    plan_blob = repo.object_store[tree[b"board"][1]][b"plan.md"][1]
    root_tree = repo[commit].tree
    repo.close()

    # 1. An item's blob no longer inflates: with every item's policy changed, each is read again -- that one fails
    # (naming nothing of the error), the others sync, the sync ends.
    _corrupt(cache, plan_blob)
    source = source_update(actor=top, source=source, access_level="confidential",
                           access_map=[{"path": "board/**", "access_level": "restricted", "groups": []}])
    preview = token_client(top).get(f"/api/v1/sources/{source.pk}/preview/")
    assert preview.status_code == 200, preview.content[:300]
    assert not any(text in preview.content.decode() for text in ERROR_TEXT), preview.content[:500]
    rows = {row["path"]: (row["action"], row["reason"]) for row in preview.json()["items"]}
    assert rows["board/plan.md"] == ("fail", PREVIEW_UNEXPECTED_ITEM), rows
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.error, sync.changed, sync.failed) == ("failed", "", 2, 1), (
        sync.status, sync.error, sync.errors)
    assert [(e["path"], e["error"]) for e in sync.errors] == [("board/plan.md", UNEXPECTED_ITEM)]
    assert sync.errors[0]["access"]["level"] == 3  # as the item's other errors: its policy (restricted)
    seen = _shown(top, source, sync)
    assert [(e["path"], e["error"]) for e in seen["errors"]] == [("board/plan.md", UNEXPECTED_ITEM)], seen
    theirs = _shown(internal, source, sync)
    assert (theirs["errors"], theirs["errors_hidden"]) == ([], 1), theirs
    assert SourceItem.objects.get(source=source, path="z.md").access_level == 2  # synced after the failed one
    assert SourceItem.objects.get(source=source, path="board/plan.md").access_level == 2  # its old one, untouched
    log = celery_worker.log_path.read_text(errors="replace")
    assert f"sync {sync.pk}: an item failed on an unexpected error" in log and "zlib.error" in log

    # 2. The commit's tree no longer inflates: the listing fails, the sync ends failed (every admin reads that it
    # did: it names no path), and the next sync starts.
    _corrupt(cache, root_tree)
    preview = token_client(internal).get(f"/api/v1/sources/{source.pk}/preview/")
    assert preview.status_code == 200 and preview.json()["error"] == UNEXPECTED_LISTING, preview.content[:300]
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.error, sync.attempts) == ("failed", UNEXPECTED_LISTING, 1), (sync.status, sync.stage)
    for member in (internal, top):
        assert _shown(member, source, sync)["error"] == UNEXPECTED_LISTING
        page = console_client(member).get(f"/sources/{source.pk}/progress/").content.decode()
        assert not any(text in page for text in ERROR_TEXT), page[:500]
    log = celery_worker.log_path.read_text(errors="replace")
    assert f"sync {sync.pk}: the listing failed on an unexpected error" in log

    shutil.rmtree(cache)  # the operator's mend: the mirror is fetched again
    again, created = sync_start(actor=top, source=source)
    assert created and again.pk != sync.pk
    again = wait_for_sync(again.pk)
    assert (again.status, again.changed) == ("succeeded", 1), (again.error, again.errors)
    assert SourceItem.objects.get(source=source, path="board/plan.md").access_level == 3
