"""A folder source rooted below the tenant's folder reads the access files of the folders above its root (found
reviewing sources, review 13: a source -- or an unsaved preview -- on ``<tenant folder>/board`` read no
``.bulkhead-access.yaml`` above its root, so an internal admin got ``board/layoffs-2027.md``, which the tenant
folder's access file makes restricted, under the policy they gave it). Each such file applies as if the source
were rooted at its folder, and only narrows (docs/sources.md, "Access"; docs/security.md)."""

from __future__ import annotations

import shutil

import pytest
from rest_framework.test import APIClient

from accounts.policy import AccessLevel
from accounts.services import api_token_create, group_create, membership_create, tenant_create
from sources.models import SourceItem
from sources.selectors import source_preview
from sources.services import source_create, sync_start
from tests.sources_helpers import git_commit, tenant_folder, wait_for_sync, write

# The tenant folder's file: a group-only entry first (the first match wins), then the whole board restricted.
ABOVE = ("- path: 'board/minutes/budget-*.md'\n  access_level: internal\n  groups: [finance]\n"
         "- path: 'board/**'\n  access_level: restricted\n")
# board/'s own file, its glob relative to board/: narrows the minutes' notes to the finance group too.
BOARD = "- path: 'minutes/notes-*.md'\n  access_level: restricted\n  groups: [finance]\n"
FILES = {
    ".bulkhead-access.yaml": ABOVE,
    "board/.bulkhead-access.yaml": BOARD,
    "board/layoffs-2027.md": "# Layoffs\n\nThe severance plan for the spring.\n",
    "board/minutes/budget-2027.md": "# Budget\n\nThe budget of the board.\n",
    "board/minutes/notes-2027.md": "# Notes\n\nThe notes of the meeting.\n",
}
NAMES = ("layoffs", "budget", "notes-2027", "-2027")


def _tenant(slug: str):
    tenant = tenant_create(slug=slug, name=slug)
    finance = group_create(tenant=tenant, slug="finance")
    internal = membership_create(tenant=tenant, email=f"internal@{slug}.example", role="admin", clearance="internal")
    top = membership_create(tenant=tenant, email=f"top@{slug}.example", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    folder = tenant_folder(tenant)
    shutil.rmtree(folder)  # what an earlier run left
    write(folder, FILES)
    return tenant, finance, internal, top, folder


def _policies(preview: dict) -> dict:
    return {i["path"]: (i["action"], i["access_level"], tuple(i["groups"])) for i in preview["items"]}


RESTRICTED, INTERNAL = AccessLevel.RESTRICTED.name.lower(), AccessLevel.INTERNAL.name.lower()


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_subfolder_source_reads_the_access_files_above_its_root(celery_worker):
    tenant, finance, internal, top, folder = _tenant("src-above")
    board = source_create(actor=top, tenant=tenant, kind="folder", name="board", path=str(folder / "board"),
                          access_level="internal")
    minutes = source_create(actor=top, tenant=tenant, kind="folder", name="minutes",
                            path=str(folder / "board/minutes"), access_level="internal")
    expected = {
        board.pk: {"layoffs-2027.md": ("add", RESTRICTED, ()),
                   "minutes/budget-2027.md": ("add", INTERNAL, ("finance",)),
                   "minutes/notes-2027.md": ("add", RESTRICTED, ("finance",))},
        minutes.pk: {"budget-2027.md": ("add", INTERNAL, ("finance",)),
                     "notes-2027.md": ("add", RESTRICTED, ("finance",))},
    }
    for source in (board, minutes):
        assert source_preview(member=top, source=source)["error"] == ""
        assert _policies(source_preview(member=top, source=source)) == expected[source.pk]
        # The internal admin is shown none of them: each is above their clearance.
        theirs = source_preview(member=internal, source=source)
        assert theirs["items"] == [] and theirs["hidden"] == len(expected[source.pk]), theirs
        assert not [w for w in NAMES if w in str(theirs)], theirs
    # An unsaved preview too (nothing stored, so the policy is all that hides a row).
    _, token = api_token_create(membership=internal, name="k")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    answer = api.post("/api/v1/sources/preview/", {"kind": "folder", "name": "again", "access_level": "public",
                                                   "path": str(folder / "board/minutes")}, format="json")
    assert answer.status_code == 200 and answer.json()["hidden"] == 2, answer.content
    assert not [w for w in NAMES if w in answer.content.decode()], answer.content

    # A real sync stores them under those policies.
    for source in (board, minutes):
        sync, _ = sync_start(actor=top, source=source)
        sync = wait_for_sync(sync.pk)
        assert (sync.added, sync.failed) == (len(expected[source.pk]), 0), (sync.error, sync.errors)
        stored = {i.path: (AccessLevel(i.access_level).name.lower(),
                           tuple("finance" for g in i.access_groups if g == finance.pk))
                  for i in SourceItem.objects.filter(source=source)}
        assert stored == {p: v[1:] for p, v in expected[source.pk].items()}, stored

    # A file named like the access file above the root fails every item of the sync, naming it.
    write(folder, {"board/.bulkhead-access.yml": "- path: '**'\n  access_level: public\n"})
    sync, _ = sync_start(actor=top, source=minutes)
    sync = wait_for_sync(sync.pk)
    assert (sync.failed, sync.changed) == (2, 0), (sync.error, sync.errors)
    assert all("board/.bulkhead-access.yml" in e["error"] for e in sync.errors), sync.errors


def test_an_entry_of_the_roots_own_file_may_not_widen_one_above(db):
    tenant, finance, internal, top, folder = _tenant("src-above-widen")
    write(folder, {"board/minutes/.bulkhead-access.yaml": "- path: 'budget-*.md'\n  access_level: internal\n"})
    minutes = source_create(actor=top, tenant=tenant, kind="folder", name="minutes",
                            path=str(folder / "board/minutes"), access_level="internal")
    rows = {i["path"]: i for i in source_preview(member=top, source=minutes)["items"]}
    # internal (everyone internal) would widen the finance group's entry above: the item fails.
    assert rows["budget-2027.md"]["action"] == "fail" and "widen" in rows["budget-2027.md"]["reason"], rows
    assert (rows["notes-2027.md"]["access_level"], rows["notes-2027.md"]["groups"]) == (RESTRICTED, ["finance"])
    theirs = source_preview(member=internal, source=minutes)
    assert theirs["items"] == [] and not [w for w in NAMES if w in str(theirs)], theirs


@pytest.mark.parametrize("where, content, said", [
    ("board/.Bulkhead-Access.yaml", "[]\n", "board/.Bulkhead-Access.yaml: named like"),
    (".bulkhead-access.yaml.bak", "[]\n", ".bulkhead-access.yaml.bak: named like"),
    (".bulkhead-access.yaml", "- path: 'board/**'\n  access_level: restricted\n  groups: [nobody]\n",
     "unknown group 'nobody'"),
])
def test_a_refused_or_look_alike_file_above_the_root_fails_the_preview(db, where, content, said):
    tenant, finance, internal, top, folder = _tenant("src-above-bad")
    write(folder, {where: content})
    for path in ("board", "board/minutes"):
        source = source_create(actor=top, tenant=tenant, kind="folder", name=path.replace("/", "-"),
                               path=str(folder / path), access_level="internal")
        full = source_preview(member=top, source=source)
        above = "/" not in where or path.startswith(where.rsplit("/", 1)[0] + "/")
        # One at the root is named relative to the root, as before; one above it relative to the tenant's folder.
        assert (said if above else said.rsplit("/", 1)[-1]) in full["error"], full["error"]
        assert not above or "above the source's root" in full["error"], full["error"]
        assert full["items"] and all(i["action"] == "fail" for i in full["items"]), full["items"]
        theirs = source_preview(member=internal, source=source)
        assert theirs["error"] and theirs["items"] == [] and "nobody" not in theirs["error"], theirs
        assert "Bulkhead-Access" not in theirs["error"] and ".bak" not in theirs["error"], theirs["error"]
        assert not [w for w in NAMES if w in str(theirs)], theirs


def _run(source):
    from sources.models import SourceSync
    from sources.services import sync_run

    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    sync_run(str(sync.pk))
    return SourceSync.objects.get(pk=sync.pk)


@pytest.mark.parametrize("form", ["{repo}", "file://{repo}"])
def test_a_local_git_repository_reads_the_access_files_above_it(db, form):
    """A Git repository an operator placed below a folder of the tenant's folder restricted by an access file above
    it (found reviewing sources, review 14: only the repository's own file was read, so its source's admin gave its
    files whatever policy they liked) is under those files as a folder source is: the same folders, read the same
    way (``sources.listing._access_above``, ``sources.access.listing_access_file``)."""
    tenant, finance, internal, top, folder = _tenant(f"src-above-git{'-file' if 'file' in form else ''}")
    repo = folder / "board/minutes"
    git_commit(repo, {"budget-2027.md": FILES["board/minutes/budget-2027.md"],
                      "notes-2027.md": FILES["board/minutes/notes-2027.md"]})
    source = source_create(actor=top, tenant=tenant, kind="git", name="minutes", url=form.format(repo=repo),
                           access_level="internal")
    expected = {"budget-2027.md": ("add", INTERNAL, ("finance",)), "notes-2027.md": ("add", RESTRICTED, ("finance",))}
    full = source_preview(member=top, source=source)
    assert full["error"] == "" and _policies(full) == expected, full
    theirs = source_preview(member=internal, source=source)
    assert theirs["items"] == [] and theirs["hidden"] == 2 and not [w for w in NAMES if w in str(theirs)], theirs
    _, token = api_token_create(membership=internal, name="k")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    answer = api.post("/api/v1/sources/preview/", {"kind": "git", "name": "again", "access_level": "public",
                                                   "url": form.format(repo=repo)}, format="json")
    assert answer.status_code == 200 and answer.json()["hidden"] == 2, answer.content
    assert not [w for w in NAMES if w in answer.content.decode()], answer.content

    sync = _run(source)
    assert (sync.status, sync.added, sync.failed) == ("succeeded", 2, 0), (sync.error, sync.errors)
    stored = {i.path: (AccessLevel(i.access_level).name.lower(),
                       tuple("finance" for g in i.access_groups if g == finance.pk))
              for i in SourceItem.objects.filter(source=source)}
    assert stored == {p: v[1:] for p, v in expected.items()}, stored

    # A file named like the access file in a folder above the repository fails every item, naming it.
    write(folder, {"board/.bulkhead-access.yml": "- path: '**'\n  access_level: public\n"})
    sync = _run(source)
    assert (sync.failed, sync.changed) == (2, 0), (sync.error, sync.errors)
    assert all("board/.bulkhead-access.yml" in e["error"] for e in sync.errors), sync.errors


def test_a_working_tree_pointing_at_a_repository_elsewhere_reads_the_access_files_above_that_repository(db):
    """Found following up review 14: a working tree whose ``.git`` file's ``gitdir:`` leads to a repository elsewhere
    in the tenant's folder -- here ``board/minutes``, restricted by the access files above it -- got the access files
    above the working tree only (``handbook/``: none), so the board's files took the policy its source's admin gave.
    The access files above every folder the fetch reads apply (``sources.listing._repository_roots``): the pointer's,
    as a worktree that ``git worktree add`` made reads its main repository's."""
    import subprocess

    tenant, finance, internal, top, folder = _tenant("src-above-gitdir")
    repo = folder / "board/minutes"
    git_commit(repo, {"budget-2027.md": FILES["board/minutes/budget-2027.md"],
                      "notes-2027.md": FILES["board/minutes/notes-2027.md"]})
    pointer = folder / "handbook/wt"
    pointer.mkdir(parents=True)
    (pointer / ".git").write_text(f"gitdir: {repo / '.git'}\n")
    # A linked worktree, as git makes it: its .git file leads to board/minutes/.git/worktrees/, its commondir on.
    linked = folder / "handbook/linked"
    subprocess.run(["git", "-C", str(repo), "worktree", "add", "-q", "-b", "side", str(linked)], check=True,
                   capture_output=True)
    assert (linked / ".git").read_text().startswith("gitdir: ")
    expected = {"budget-2027.md": ("add", INTERNAL, ("finance",)), "notes-2027.md": ("add", RESTRICTED, ("finance",))}
    for name, where in (("pointer", pointer), ("linked", linked)):
        source = source_create(actor=top, tenant=tenant, kind="git", name=name, url=str(where),
                               access_level="internal", branch="side" if name == "linked" else "")
        full = source_preview(member=top, source=source)
        assert full["error"] == "" and _policies(full) == expected, (name, full)
        theirs = source_preview(member=internal, source=source)
        assert theirs["items"] == [] and theirs["hidden"] == 2, (name, theirs)
        sync = _run(source)
        assert (sync.status, sync.added, sync.failed) == ("succeeded", 2, 0), (name, sync.error, sync.errors)
        stored = {i.path: AccessLevel(i.access_level).name.lower() for i in SourceItem.objects.filter(source=source)}
        assert stored == {"budget-2027.md": INTERNAL, "notes-2027.md": RESTRICTED}, (name, stored)
