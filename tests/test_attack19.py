"""Attacking the nineteenth session's changes (attack19): the detached paths judged by every policy, and the
search's budget fill.

The detached list knew an access file's narrowing of a detached path only from the *last* finished sync's skip row of
the path: a later sync that wrote no such row -- a listing that failed (the folder unreadable for a moment), a source
over its file limit, or the file gone from the source while its tombstone stays -- made the list forget the narrowing,
and the path's name was listed (and re-attachable) to the admin below it again."""

from __future__ import annotations

import pytest

from sources.models import Source, SourceSync
from sources.services import sync_run
from tests.sources_helpers import write
from tests.test_sources_detached_access import HIDDEN, SHOWN, _detach, _refused, _seen, _setup, _sync


def _failed_sync(source: Source) -> SourceSync:
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    sync_run(str(sync.pk))
    sync.refresh_from_db()
    assert sync.status == "failed", (sync.error, sync.errors)
    return sync


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["listing_failed", "file_gone"])
def test_an_access_files_narrowing_of_a_detached_path_is_not_forgotten_by_a_later_sync(how):
    """The access file narrows the detached ``plans.md`` to restricted; a sync reads it (hidden from the confidential
    admin). Then a sync that writes no skip row of the path: the narrowing still holds (it did not: listed again)."""
    tenant, top, low, root, source = _setup(f"a19-{how.replace('_', '-')}")
    tombstone = _detach(top, source)
    write(root, {".bulkhead-access.yaml": "- path: plans.md\n  access_level: restricted\n"})
    _sync(source)
    assert _seen(low, source, tombstone) == HIDDEN
    if how == "listing_failed":
        moved = root.with_name(root.name + "-away")
        root.rename(moved)  # the folder unreadable for a moment: the listing fails, no skip row written
        try:
            _failed_sync(source)
        finally:
            moved.rename(root)
    else:
        write(root, {"plans.md": None})  # gone from the source; its tombstone stays
        _sync(source)
    assert _seen(low, source, tombstone) == HIDDEN
    _refused(low, source, tombstone)
    assert _seen(top, source, tombstone) == SHOWN
