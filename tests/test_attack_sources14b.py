"""Attacking sources, 14b (review 14's follow-up).

1. A folder's walk that met an ``OSError`` outside its ``scandir`` -- a file whose ``stat`` fails between the folder's
   reading and the file's (gone meanwhile, or a path the system will not take) -- raised out of ``sync_run``: the sync
   stayed "running" until the tick sent it again and its attempts ran out. Made for real, also for a worker running as
   root: a file whose folder's path is under PATH_MAX (4096 bytes) but whose own path is past it is listed by the
   folder's ``scandir`` and refused by its ``stat`` ("File name too long"); a source folder whose real path is past
   PATH_MAX is refused by ``Path.is_dir`` (Python 3.11 raises what it does not take for "missing")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from accounts.services import api_token_create, group_create, membership_create, tenant_create
from kb.models import Document
from sources.services import source_create, sync_start
from tests.sources_helpers import new_folder, wait_for_sync, write

NAME = 250  # a folder name's length (the limit is 255)


def _deep(base: Path, names: list[str]) -> None:
    """Folders ``names`` nested below ``base``, made one by one relative to the last (past PATH_MAX too)."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            try:
                os.mkdir(name, dir_fd=fd)
            except FileExistsError:
                pass
            inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = inner
    finally:
        os.close(fd)


def _api(member) -> APIClient:
    _, token = api_token_create(membership=member, name="k")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return api


def _segments(length: int) -> list[str]:
    """Folder names that, joined by ``/``, are ``length`` characters long."""
    names = []
    while length > NAME:
        names.append("d" * (NAME - 10))
        length -= NAME - 9
    return [*names, "d" * length]


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_file_whose_stat_fails_mid_walk_fails_its_item_and_ends_the_sync(celery_worker):
    tenant = tenant_create(slug="src14b", name="Sources 14b")
    group_create(tenant=tenant, slug="finance")
    internal = membership_create(tenant=tenant, email="internal@s14b.example", role="admin", clearance="internal")
    top = membership_create(tenant=tenant, email="top@s14b.example", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    home = new_folder(tenant, "s14b-")
    long = home
    while len(str(long)) < 3500:
        long = long / ("l" * min(NAME, 3500 - len(str(long))))
    long = long / "root"
    # board/<folders>/: a folder path of 3,960 bytes once moved below ``long``; its file's path passes 4,096.
    folder = "board/" + "/".join(_segments(3960 - len(str(long)) - len("/board/")))
    name = "layoffs-" + "p" * 200 + ".md"
    assert len(str(long / folder)) < 4096 < len(str(long / folder / name)), len(str(long / folder))
    short = home / "short"
    write(short, {".bulkhead-access.yaml": "- path: 'board/**'\n  access_level: restricted\n",
                  "handbook/welcome.md": "# Welcome\n\nThe lighthouse keeper polishes the brass lamp.\n",
                  f"{folder}/{name}": "# Plan\n\nThe severance plan for the spring.\n"})
    link = home / "source"
    link.symlink_to(short)
    source = source_create(actor=top, tenant=tenant, kind="folder", name="s14b", path=str(link),
                           access_level="internal")
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.added) == ("succeeded", 2), (sync.error, sync.errors, sync.skips)
    plan = Document.objects.get(tenant=tenant, source=f"{folder}/{name}"[:1000])

    long.parent.mkdir(parents=True)
    os.rename(short, long)
    link.unlink()
    link.symlink_to(long)
    # 1. The file's stat fails: its item fails (as a file that cannot be read), its document stays, the sync ends.
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.failed, sync.deleted, sync.unchanged) == ("failed", 1, 0, 1), (
        sync.status, sync.error, sync.errors)
    assert [(e["path"], e["error"]) for e in sync.errors] == [(f"{folder}/{name}", "unreadable: File name too long")]
    assert Document.objects.filter(pk=plan.pk).exists()
    # Its path is named as an item's: to who may read its policy (restricted by the access file) and its document.
    theirs = _api(internal).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/")
    assert theirs.status_code == 200 and "layoffs-" not in theirs.content.decode(), theirs.content[:300]
    assert (theirs.json()["status"], theirs.json()["errors_hidden"], theirs.json()["errors"]) == ("failed", 1, [])
    seen = _api(top).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").json()
    assert [e["path"] for e in seen["errors"]] == [f"{folder}/{name}"] and seen["errors_hidden"] == 0, seen
    preview = _api(internal).get(f"/api/v1/sources/{source.pk}/preview/")
    assert preview.status_code == 200 and "layoffs-" not in preview.content.decode(), preview.content[:300]

    # 2. The source's own folder is now past PATH_MAX: the listing fails naming the source's path (its setting).
    deeper = long / folder
    _deep(deeper, ["e" * NAME])
    (deeper / "inner").symlink_to("e" * NAME)
    link.unlink()
    link.symlink_to(deeper / "inner")
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.deleted) == ("failed", 0), (sync.status, sync.error)
    assert sync.error == f"could not read the folder {link}: File name too long", sync.error
    assert Document.objects.filter(pk=plan.pk).exists()
