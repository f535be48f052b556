"""Attacking sources, 13: a source's preview and its syncs' results named every path of the source to any admin of
the tenant -- with the policy it would get -- though a file's name is its title in effect
(``board/layoffs-2027.md``). An admin sees only the items whose policy they may read (the access map, then
``.bulkhead-access.yaml``; and the document a path is stored as, which its markers narrow): the others are left
out, counted. An admin who reads every level and group sees all (docs/security.md, "A source's paths")."""

from __future__ import annotations

import os

import pytest

from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document
from sources.selectors import source_preview
from sources.services import source_create, sync_start
from tests.api_helpers import console_client, token_client
from tests.sources_helpers import git_commit, new_folder, wait_for_sync, write

ACCESS = ("- path: 'board/**'\n  access_level: restricted\n"
          "- path: 'finance/**'\n  access_level: internal\n  groups: [finance]\n")
FILES = {
    ".bulkhead-access.yaml": ACCESS,
    "handbook/welcome.md": "# Welcome\n\nThe lighthouse keeper polishes the brass lamp.\n",
    "board/layoffs-2027.md": "# Layoffs\n\nThe severance plan for the spring.\n",
    "board/payroll-2027.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)),  # skipped: binary
    "finance/q3-forecast.md": "# Forecast\n\nThe quarter's numbers.\n",
    # Their source policy is the default (internal); their front matter narrows the whole document to restricted.
    "notes/merger-plan.md": "---\naccess: restricted\n---\n# Merger\n\nThe merger with the rival.\n",
    "notes/merger-memo.md": "---\naccess: restricted\n---\n# Memo\n\nThe memo of the merger.\n",
}
ODD = b"board/\xff-severance.md"  # a name that is not UTF-8: an error of the listing, naming its path
# Each trace of a file the internal admin may not read; ``-2027`` catches the restricted files' names.
RESTRICTED = ("layoffs", "payroll", "severance", "merger", "-2027")
FINANCE = ("q3-forecast",)


def _bodies(member, source, sync_id) -> dict[str, str]:
    """Every answer that tells of the source's items, raw, as ``member``."""
    api, page = token_client(member), console_client(member)
    answers = {
        "api preview": api.get(f"/api/v1/sources/{source.pk}/preview/"),
        "api sync": api.get(f"/api/v1/sources/{source.pk}/syncs/{sync_id}/"),
        "api syncs": api.get(f"/api/v1/sources/{source.pk}/syncs/"),
        "api source": api.get(f"/api/v1/sources/{source.pk}/"),
        "api sources": api.get("/api/v1/sources/"),
        "api unsaved preview": api.post("/api/v1/sources/preview/", {
            "kind": "folder", "name": "again", "path": source.path}, format="json"),
        "console preview": page.get(f"/sources/{source.pk}/?preview=1"),
        "console progress": page.get(f"/sources/{source.pk}/progress/"),
        "console unsaved preview": page.post("/sources/", {
            "kind": "folder", "name": "again", "path": source.path, "access_level": "internal",
            "action": "preview"}),
    }
    for name, answer in answers.items():
        assert answer.status_code == 200, (name, answer.status_code, answer.content[:500])
    return {name: answer.content.decode() for name, answer in answers.items()}


def _traces(bodies: dict[str, str], words) -> dict[str, list[str]]:
    return {name: found for name, body in bodies.items() if (found := [w for w in words if w in body])}


@pytest.mark.django_db(transaction=True)
@pytest.mark.worker
def test_a_sources_paths_are_shown_only_to_admins_who_may_read_them(celery_worker):
    tenant = tenant_create(slug="src13", name="Sources 13")
    group_create(tenant=tenant, slug="finance")
    internal = membership_create(tenant=tenant, email="internal@s13.example", role="admin", clearance="internal")
    restricted = membership_create(tenant=tenant, email="restricted@s13.example", role="admin",
                                   clearance="restricted")
    top = membership_create(tenant=tenant, email="top@s13.example", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    root = new_folder(tenant, "paths-")
    write(root, FILES)
    with open(os.path.join(os.fsencode(root), ODD), "wb") as handle:
        handle.write(b"# Odd\n\nodd\n")
    source = source_create(actor=top, tenant=tenant, kind="folder", name="board", path=str(root),
                           access_level="internal")
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.added, sync.skipped, sync.failed) == (5, 1, 1), (sync.error, sync.errors, sync.skips)
    assert set(Document.objects.filter(metadata__source_id=source.pk).values_list("status", flat=True)) == {"ready"}

    # The next sync: the restricted file renamed (its document kept), the group's file gone, the merger memo a link
    # now (skipped: its document, which the internal admin could not see -- its front matter --, deleted).
    os.rename(root / "board/layoffs-2027.md", root / "board/layoffs-2027-final.md")
    os.unlink(root / "finance/q3-forecast.md")
    os.unlink(root / "notes/merger-memo.md")
    os.symlink(root / "handbook/welcome.md", root / "notes/merger-memo.md")
    preview = source_preview(member=top, source=source)
    actions = {i["path"]: (i["action"], i["renamed_from"]) for i in preview["items"]}
    assert actions["board/layoffs-2027-final.md"] == ("rename", "board/layoffs-2027.md"), actions
    assert actions["finance/q3-forecast.md"][0] == "delete" and actions["notes/merger-memo.md"][0] == "skip", actions
    sync, _ = sync_start(actor=top, source=source)
    sync = wait_for_sync(sync.pk)
    assert (sync.renamed, sync.deleted, sync.skipped, sync.failed) == (1, 2, 2, 1), (sync.errors, sync.skips)

    # What the next preview lists: the merger plan changed (a document the internal admin cannot see, by its
    # front matter, under a policy they may read) and the group's file back; the memo's link gone.
    os.unlink(root / "notes/merger-memo.md")
    write(root, {"notes/merger-plan.md": FILES["notes/merger-plan.md"] + "\nA new line.\n",
                 "finance/q3-forecast.md": "# F\n\nNew.\n"})

    everything = _bodies(top, source, sync.pk)
    assert all(any(w in body for body in everything.values()) for w in RESTRICTED + FINANCE)
    assert all(w in everything["api preview"] and w in everything["console preview"]
               for w in ("layoffs-2027-final", "merger-plan", "q3-forecast", "payroll"))
    for name in ("api sync", "api syncs", "api source", "api sources", "console progress"):
        assert all(w in everything[name] for w in ("payroll", "severance", "merger-memo")), name

    seen = _bodies(internal, source, sync.pk)
    # Not yet synced, a file's markers are not read: an unsaved source's preview names the merger plan by the
    # policy the source gives it (docs/security.md, "A source's paths": what stays open).
    unsaved = {n: seen.pop(n) for n in ("api unsaved preview", "console unsaved preview")}
    assert not _traces(seen, RESTRICTED + FINANCE), _traces(seen, RESTRICTED + FINANCE)
    assert not _traces(unsaved, ("layoffs", "payroll", "severance", "merger-memo", "-2027") + FINANCE)
    assert all("handbook/welcome.md" in body for body in (seen["api preview"], seen["console preview"],
                                                           *unsaved.values()))
    api_preview = token_client(internal).get(f"/api/v1/sources/{source.pk}/preview/").json()
    assert [i["path"] for i in api_preview["items"]] == ["handbook/welcome.md"], api_preview
    assert api_preview["hidden"] == 4 and api_preview["counts"] == {"unchanged": 1}, api_preview
    shown_sync = token_client(internal).get(f"/api/v1/sources/{source.pk}/syncs/{sync.pk}/").json()
    assert (shown_sync["errors"], shown_sync["skips"]) == ([], []), shown_sync
    assert (shown_sync["errors_hidden"], shown_sync["skips_hidden"]) == (1, 2), shown_sync
    assert "you may not read" in seen["console progress"] and "you may not read" in seen["console preview"]

    partly = _bodies(restricted, source, sync.pk)
    assert not _traces(partly, FINANCE), _traces(partly, FINANCE)
    assert all(w in partly["api preview"] and w in partly["console preview"] for w in ("layoffs", "merger-plan"))
    assert all(w in partly["api sync"] and w in partly["console progress"]
               for w in ("payroll", "severance", "merger-memo"))


def test_a_git_sources_preview_names_no_path_above_its_admin(db):
    """The same rule for a Git source's preview (one code path after the listing), saved or not."""
    tenant = tenant_create(slug="src13-git", name="Sources 13 Git")
    group_create(tenant=tenant, slug="finance")
    internal = membership_create(tenant=tenant, email="internal@s13g.example", role="admin", clearance="internal")
    top = membership_create(tenant=tenant, email="top@s13g.example", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    repo = new_folder(tenant, "git-")
    git_commit(repo, {k: v for k, v in FILES.items() if not k.startswith("notes/")})
    source = source_create(actor=top, tenant=tenant, kind="git", name="board", url=str(repo))
    theirs = source_preview(member=internal, source=source)
    assert [i["path"] for i in theirs["items"]] == ["handbook/welcome.md"] and theirs["hidden"] == 3, theirs
    assert not [w for w in RESTRICTED + FINANCE if w in str(theirs)], theirs
    assert {i["path"] for i in source_preview(member=top, source=source)["items"]} == {
        "handbook/welcome.md", "board/layoffs-2027.md", "board/payroll-2027.png", "finance/q3-forecast.md"}
    answer = token_client(internal).post("/api/v1/sources/preview/", {"kind": "git", "name": "again", "url": str(repo)},
                                 format="json")
    assert answer.status_code == 200 and not [w for w in RESTRICTED + FINANCE if w in answer.content.decode()]
    assert [i["path"] for i in answer.json()["items"]] == ["handbook/welcome.md"]


def test_the_access_files_fault_is_told_without_its_words_below_the_top(db):
    """A refused access file fails every item: no item's policy is decided, so none is named below the top
    clearance; the preview's error says what is wrong with the file, its quoted words (globs, a look-alike's
    path) left out for them."""
    tenant = tenant_create(slug="src13-file", name="Sources 13 file")
    group_create(tenant=tenant, slug="finance")
    internal = membership_create(tenant=tenant, email="internal@s13f.example", role="admin", clearance="internal")
    top = membership_create(tenant=tenant, email="top@s13f.example", role="admin", clearance="restricted",
                            group_slugs=["finance"])
    root = new_folder(tenant, "file-")
    write(root, {"handbook/welcome.md": FILES["handbook/welcome.md"],
                 "board/layoffs-2027.md": FILES["board/layoffs-2027.md"],
                 ".bulkhead-access.yaml": "- path: 'board/layoffs-2027.md'\n  access_level: public\n"})
    source = source_create(actor=top, tenant=tenant, kind="folder", name="file", path=str(root))
    full = source_preview(member=top, source=source)
    assert "layoffs-2027" in full["error"] and "widen" in full["error"] and len(full["items"]) == 2, full
    theirs = source_preview(member=internal, source=source)
    assert "widen" in theirs["error"] and "line 1" in theirs["error"], theirs["error"]
    assert theirs["items"] == [] and theirs["hidden"] == 2 and "layoffs" not in str(theirs), theirs

    # A look-alike names its path: the folder it is in is a name too.
    (root / "layoffs-2027").mkdir()
    os.replace(root / ".bulkhead-access.yaml", root / "layoffs-2027/.bulkhead-access.yaml")
    full = source_preview(member=top, source=source)
    assert "layoffs-2027/.bulkhead-access.yaml" in full["error"], full["error"]
    theirs = source_preview(member=internal, source=source)
    assert "named like .bulkhead-access.yaml" in theirs["error"] and "layoffs" not in str(theirs), theirs
