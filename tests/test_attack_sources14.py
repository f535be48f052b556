"""Attacking sources, 14: a failed listing's own error named the subfolder it could not list -- "could not list
.../board/2027-layoffs/..." -- to every admin of the tenant, in the sync's `error` (its answer, the list of syncs, the
source's `last_sync`, the console's progress) and the preview's, though review 13 had a source's paths shown only to
an admin who may read them. A folder's name is now shown only to an admin who may read every policy the source could
give a file below it and see every document stored below it; the others read "a folder you may not read could not be
listed", counted in `errors_hidden` (docs/sources.md, "Who sees a source's paths"; docs/security.md).

A folder that cannot be listed is made for real, also for a worker running as root: a path past the system's
PATH_MAX (4096 bytes) cannot be listed ("File name too long"), so a source whose folder is reached through a link to
a long real path meets such a folder a few levels down."""

from __future__ import annotations

import os
import shutil

import pytest

from accounts.policy import AccessLevel
from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document
from sources import access
from sources.services import source_create, sync_start
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import deep_folders, new_folder, wait_for_sync, write

NAME = 250  # a folder name's length (the limit is 255)
FILES = {
    ".bulkhead-access.yaml": "- path: 'board/**'\n  access_level: restricted\n",
    "handbook/welcome.md": "# Welcome\n\nThe lighthouse keeper polishes the brass lamp.\n",
    "board/2027-layoffs/plan.md": "# Plan\n\nThe severance plan for the spring.\n",
}
# Its source policy is the default (internal); its front matter makes the whole document restricted.
MERGER = ["notes", *(f"merger-{i}-" + "m" * (NAME - 9) for i in range(3))]
MERGER_FILE = "/".join(MERGER) + "/memo.md"
PLAIN = "a folder you may not read could not be listed"


def _bodies(member, source, sync_id, *, unsaved: bool = True) -> dict[str, str]:
    """Every answer that tells of the source's failed listing, raw, as ``member``."""
    api, page = token_client(member), console_client(member)
    answers = {
        "api preview": api.get(f"/api/v1/sources/{source.pk}/preview/"),
        "api sync": api.get(f"/api/v1/sources/{source.pk}/syncs/{sync_id}/"),
        "api syncs": api.get(f"/api/v1/sources/{source.pk}/syncs/"),
        "api source": api.get(f"/api/v1/sources/{source.pk}/"),
        "api sources": api.get("/api/v1/sources/"),
        "console preview": page.get(f"/sources/{source.pk}/?preview=1"),
        "console progress": page.get(f"/sources/{source.pk}/progress/"),
    }
    if unsaved:  # an unsaved source has nothing stored: its preview knows no document
        answers["api unsaved preview"] = api.post("/api/v1/sources/preview/", {
            "kind": "folder", "name": "again", "path": source.path}, format="json")
        answers["console unsaved preview"] = page.post("/sources/", {
            "kind": "folder", "name": "again", "path": source.path, "access_level": "internal", "action": "preview"})
    for name, answer in answers.items():
        assert answer.status_code == 200, (name, answer.status_code, answer.content[:500])
    return {name: answer.content.decode() for name, answer in answers.items()}


def _traces(bodies: dict[str, str], word: str) -> list[str]:
    return [name for name, body in bodies.items() if word in body]


def _api_answers(member, source, sync_id) -> list[dict]:
    api = token_client(member)
    sync = api.get(f"/api/v1/sources/{source.pk}/syncs/{sync_id}/").json()
    preview = api.get(f"/api/v1/sources/{source.pk}/preview/").json()
    return [sync, preview]


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_failed_listing_names_its_subfolder_only_to_admins_who_may_read_it(celery_worker):
    tenant = tenant_create(slug="src14", name="Sources 14")
    group_create(tenant=tenant, slug="finance")
    internal = membership_create(tenant=tenant, email="internal@s14.example", role="admin", clearance="internal")
    restricted = membership_create(tenant=tenant, email="restricted@s14.example", role="admin",
                                   clearance="restricted")
    top = membership_create(tenant=tenant, email="top@s14.example", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    home = new_folder(tenant, "s14-")
    short = home / "short"
    write(short, {**FILES, MERGER_FILE: "---\naccess: restricted\n---\n# Memo\n\nThe memo of the merger.\n"})
    link = home / "source"
    link.symlink_to(short)
    source = source_create(actor=top, tenant=tenant, kind="folder", name="s14", path=str(link),
                           access_level="internal")
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.status, sync.added) == ("succeeded", 3), (sync.error, sync.errors, sync.skips)
    memo = Document.objects.get(tenant=tenant, source=MERGER_FILE[:1000])
    assert {s.access_level for s in memo.sections.all()} == {AccessLevel.RESTRICTED}

    # The same tree moved to a real path so long that its deepest folders of notes/ can no longer be listed.
    long = home
    while len(str(long)) < 3500:
        long = long / ("l" * min(NAME, 3500 - len(str(long))))
    long = long / "root"
    long.parent.mkdir(parents=True)
    os.rename(short, long)
    link.unlink()
    link.symlink_to(long)
    assert len(str(long)) + len("/".join(MERGER)) > 4096 > len(str(long)) + len("/notes")

    # 1. notes/merger-…/: its policy is internal, but a document stored below it is restricted (its front matter).
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert sync.status == "failed" and "merger-" in sync.error and sync.deleted == 0, sync.error
    saved = _bodies(internal, source, sync.pk, unsaved=False)
    assert not _traces(saved, "merger-"), _traces(saved, "merger-")
    assert all(PLAIN in body for body in saved.values()), [n for n, b in saved.items() if PLAIN not in b]
    for answer in _api_answers(internal, source, sync.pk):
        assert answer["errors_hidden"] == 1 and answer["error"].startswith(PLAIN), answer
    for member in (restricted, top):
        seen = _bodies(member, source, sync.pk, unsaved=False)
        assert set(_traces(seen, "merger-")) == set(seen), (member.clearance, _traces(seen, "merger-"))
        for answer in _api_answers(member, source, sync.pk):
            assert answer["errors_hidden"] == 0 and "merger-" in answer["error"], answer

    # 2. board/2027-layoffs/…/: restricted by the source's access file.
    shutil.rmtree(long / "notes")
    deep_folders(long, ["board", "2027-layoffs", *["d" * NAME] * 3])
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert sync.status == "failed" and "2027-layoffs" in sync.error, sync.error
    theirs = _bodies(internal, source, sync.pk)
    assert not _traces(theirs, "2027-layoffs"), _traces(theirs, "2027-layoffs")
    assert all(PLAIN in body for body in theirs.values()), [n for n, b in theirs.items() if PLAIN not in b]
    for member in (restricted, top):
        seen = _bodies(member, source, sync.pk)
        assert set(_traces(seen, "2027-layoffs")) == set(seen), (member.clearance, _traces(seen, "2027-layoffs"))

    # 3. handbook/archive-2026/…/: internal, nothing restricted below it -- the internal admin reads its name.
    shutil.rmtree(long / "board" / "2027-layoffs" / ("d" * NAME))
    deep_folders(long, ["handbook", "archive-2026", *["d" * NAME] * 3])
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert sync.status == "failed" and "archive-2026" in sync.error, sync.error
    theirs = _bodies(internal, source, sync.pk)
    assert set(_traces(theirs, "archive-2026")) == set(theirs), _traces(theirs, "archive-2026")
    for answer in _api_answers(internal, source, sync.pk):
        assert answer["errors_hidden"] == 0, answer


def test_a_folders_record_holds_every_policy_a_file_below_it_could_get():
    """``folder_access``, unit by unit: the map's entries that may match below the folder (up to one that matches
    all of it, else the default), every access file entry that may; undecided when one would widen."""
    default = (int(AccessLevel.INTERNAL), ())
    restricted, confidential = int(AccessLevel.RESTRICTED), int(AccessLevel.CONFIDENTIAL)
    file = access.AccessFile(rules=(access.Rule("board/*/minutes-*.md", restricted, (7,), 1),
                                    access.Rule("public/**", int(AccessLevel.PUBLIC), (), 2)))

    def policies(folder, access_map=(), access_file=file):
        record = access.folder_access(folder, default=default, access_map=access_map, access_file=access_file)
        return record.get("policies")

    assert policies("board/2027/") == [[int(AccessLevel.INTERNAL), []], [restricted, [7]]]
    assert policies("handbook/") == [[int(AccessLevel.INTERNAL), []]]
    # A map entry that matches every path below the folder leaves the default out; one that may match only some
    # does not.
    covering = (access.Rule("board/**", confidential, ()),)
    assert policies("board/2027/", covering) == [[confidential, []], [restricted, [7]]]
    partial = (access.Rule("board/*.md", confidential, ()),)
    assert policies("board/", partial) == [[int(AccessLevel.INTERNAL), []], [confidential, []], [restricted, [7]]]
    # An access file's entry that may match below it and would widen: undecided (as its items would fail).
    assert access.folder_access("public/x/", default=default, access_map=(), access_file=file) == access.UNDECIDED
    assert access.folder_access("a/", default=default, access_map=(),
                                access_file=access.AccessFile(error="refused")) == access.UNDECIDED
    # The files above the root read the folder under their own prefix.
    above = access.AccessFile(above=(("src", (access.Rule("src/board/**", restricted, (), 1, "x"),)),))
    assert policies("board/a/", access_file=above) == [[int(AccessLevel.INTERNAL), []], [restricted, []]]
    assert policies("handbook/", access_file=above) == [[int(AccessLevel.INTERNAL), []]]


@pytest.mark.parametrize("glob, folder, may", [
    ("board/**", "board/x/", True), ("board/*.md", "board/x/", False), ("board/*/a.md", "board/x/", True),
    ("**/*.md", "board/x/", True), ("*.md", "board/x/", False), ("b?ard/x/**", "board/x/", True),
    ("board/x", "board/x/", False), ("board/x*/**", "board/xy/", True), ("**/secret/*", "a/b/", True),
    ("board/**/z", "board/x/", True), ("other/**", "board/x/", False), ("board/x/y/**", "board/x/", True),
    ("board/?/**", "board/xy/", False), ("**", "a/", True),
])
def test_a_glob_may_match_below_a_folder(glob, folder, may):
    assert access.glob_may_match_below(glob, folder) is may
