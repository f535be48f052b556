"""Git sources (issue 29), run in this process against repositories made here: ``ssh://`` through a
stand-in for ``ssh`` (dulwich's SSH vendor runs the command of ``BULKHEAD_SOURCE_SSH_COMMAND``: a
small script that checks the key it is given, as a server would, and runs ``git-upload-pack`` here),
and Git's rename detection for a file moved with edits. Jobs are created but never sent (the test's
transaction never commits): the sync's own decisions are what is checked."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document, IngestionJob
from sources.models import Source, SourceItem, SourceSync
from sources.services import JOB_STATS_KEY, source_create, sync_run
from tests.sources_helpers import git_commit, new_folder

pytestmark = pytest.mark.django_db

MARKER = "b3BlbnNzaC1rZXktdjEAAAAAtest-key-7f3a9c"  # what the stand-in server accepts
KEY = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{MARKER}\n-----END OPENSSH PRIVATE KEY-----\n"
WRONG_KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAAwrong-key-11d2\n-----END OPENSSH PRIVATE KEY-----\n"
KNOWN_HOSTS = "localhost ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKnownHostLineForTheTest\n"

FAKE_SSH = """#!/bin/sh
# Stands in for `ssh [options] [user@]host command`: records its arguments, refuses a key it does not
# know (as the server would: exit 255), and runs the command on this machine.
dir=$(dirname "$0")
printf '%s\\n' "$@" >> "$dir/calls.log"
key=""
while [ $# -gt 1 ]; do
  case "$1" in
    -i) key="$2"; shift 2;;
    -o|-p|-F|-l) shift 2;;
    *) shift;;
  esac
done
if [ -z "$key" ] || ! grep -q "MARKER" "$key"; then
  echo "Permission denied (publickey)." >&2
  exit 255
fi
exec sh -c "$1"
"""


@pytest.fixture
def admin(db):
    tenant = tenant_create(slug="src-git", name="Git sources")
    group_create(tenant=tenant, slug="eng")
    return membership_create(tenant=tenant, email="admin@git.example", role="admin", clearance="restricted")


def _run(source) -> SourceSync:
    sync = SourceSync.objects.create(tenant_id=source.tenant_id, source=source)
    sync_run(str(sync.pk))
    return SourceSync.objects.get(pk=sync.pk)


@pytest.fixture
def fake_ssh(settings, tmp_path) -> Path:
    script = tmp_path / "ssh"
    script.write_text(FAKE_SSH.replace("MARKER", MARKER))
    script.chmod(0o755)
    settings.BULKHEAD_SOURCE_SSH_COMMAND = str(script)
    return tmp_path


@pytest.mark.parametrize("form", ["ssh://git@localhost{repo}", "git@localhost:{repo}"], ids=["ssh-url", "scp-like"])
def test_git_over_ssh_with_a_private_key_that_is_never_shown_again(admin, fake_ssh, caplog, form):
    """Once as ``ssh://user@host/path``, once as Git's scp-like ``user@host:path``: the same options,
    key handling and host check."""
    from rest_framework.test import APIClient

    from accounts.services import api_token_create
    from audit.models import AuditEvent

    repo = new_folder(admin.tenant, "ssh-served-")
    git_commit(repo, {"guide.md": "# Guide\n\nThe heron handbook.\n"})
    _, token = api_token_create(membership=admin, name="k")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    body = {"kind": "git", "name": "over-ssh", "url": form.format(repo=repo), "access_level": "internal",
            "credentials": {"private_key": WRONG_KEY}}
    refused = client.post("/api/v1/sources/", {**body, "credentials": {"private_key": "not a key at all xq"}},
                          format="json")
    assert refused.status_code == 400 and "not a key at all xq" not in refused.content.decode()
    created = client.post("/api/v1/sources/", body, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["has_credentials"] is True and "wrong-key" not in created.content.decode()
    source = Source.objects.get(pk=created.json()["id"])

    sync = _run(source)  # the server refuses the key
    assert sync.status == "failed" and sync.error == "could not fetch the repository: HangupException", sync.error
    changed = client.patch(f"/api/v1/sources/{source.pk}/",
                           {"credentials": {"private_key": KEY, "known_hosts": KNOWN_HOSTS}}, format="json")
    assert changed.status_code == 200 and MARKER not in changed.content.decode()
    stored = Source.objects.get(pk=source.pk).credentials
    assert stored and MARKER not in stored and "PRIVATE KEY" not in stored  # encrypted at rest
    sync = _run(source)
    assert (sync.status, sync.added) == ("succeeded", 1), (sync.error, sync.errors)
    assert SourceItem.objects.get(source=source).path == "guide.md"

    args = (fake_ssh / "calls.log").read_text().splitlines()
    last = args[max(i for i, a in enumerate(args) if a == "-x"):]  # the last call (dulwich adds -x after ours)
    options = [args[i + 1] for i, a in enumerate(args) if a == "-o"]
    for wanted in ("BatchMode=yes", "StrictHostKeyChecking=yes", "HostKeyAlias=localhost", "IdentitiesOnly=yes"):
        assert wanted in options, options
    assert any(o in ("HostName=127.0.0.1", "HostName=::1") for o in options), options  # the checked address
    key_file = Path(last[last.index("-i") + 1])
    known = next(o for o in options if o.startswith("UserKnownHostsFile=")).split("=", 1)[1]
    assert not key_file.exists() and not os.path.exists(known)  # written for the fetch, removed after it
    assert "git@localhost" in last and last[-1] == f"git-upload-pack '{repo}'"

    detail = client.get(f"/api/v1/sources/{source.pk}/")
    history = client.get(f"/api/v1/sources/{source.pk}/syncs/").json()
    everything = " ".join([detail.content.decode(), str(history), " ".join(args),
                           str(list(AuditEvent.objects.values_list("details", flat=True))),
                           str(list(SourceSync.objects.values_list("error", "errors"))), caplog.text])
    assert MARKER not in everything and "wrong-key" not in everything and "PRIVATE KEY" not in everything


GUIDE = "".join(f"Line {i} of the guide: the otter keeps the ledger of the river.\n" for i in range(12))


def test_a_git_file_moved_with_edits_keeps_its_document_and_is_ingested_again(admin, settings):
    repo = new_folder(admin.tenant, "renames-")
    git_commit(repo, {"guide.md": "# Guide\n\n" + GUIDE, "notes.md": "# Notes\n\nThe badger minutes.\n"})
    source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="moves", url=str(repo))
    sync = _run(source)
    assert (sync.status, sync.added) == ("succeeded", 2), sync.errors
    guide = Document.objects.get(metadata__source_id=source.pk, metadata__source_path="guide.md")
    notes = Document.objects.get(metadata__source_id=source.pk, metadata__source_path="notes.md")

    # guide.md moved with a small edit: a rename; notes.md replaced by unrelated text elsewhere: not one.
    edited = "# Guide\n\n" + GUIDE.replace("Line 3 of", "Line three of") + "The heron audits it.\n"
    git_commit(repo, {"guide.md": None, "manual/guide.md": edited, "notes.md": None,
                      "minutes.md": "# Minutes\n\nNothing alike at all: a walrus chair.\n"}, "move and rewrite")
    sync = _run(source)
    assert (sync.status, sync.added, sync.changed, sync.renamed, sync.deleted) == ("succeeded", 1, 0, 1, 1), sync.errors
    moved = Document.objects.get(metadata__source_id=source.pk, metadata__source_path="manual/guide.md")
    assert moved.pk == guide.pk and moved.source == "manual/guide.md" and bytes(moved.raw) == edited.encode()
    assert IngestionJob.objects.filter(document=moved, **{f"stats__{JOB_STATS_KEY}": str(sync.pk)}).count() == 1
    assert not Document.objects.filter(pk=notes.pk).exists()
    assert sorted(SourceItem.objects.filter(source=source).values_list("path", flat=True)) == [
        "manual/guide.md", "minutes.md"]

    # Below the similarity threshold, the same kind of move is a delete and an add.
    settings.BULKHEAD_SOURCE_RENAME_SIMILARITY = 99
    git_commit(repo, {"manual/guide.md": None, "guide.md": edited + "One more line.\n"}, "move again")
    sync = _run(source)
    assert (sync.added, sync.renamed, sync.deleted) == (1, 0, 1), sync.errors
    assert not Document.objects.filter(pk=guide.pk).exists()


SAME = "# Rota\n\nThe stoat rota: mondays the weir, tuesdays the mill.\n"
LEDGER = "# Ledger\n\nThe kingfisher ledger, word for word in both tenants.\n"


def test_the_preview_shows_a_git_rename_as_the_sync_makes_it_and_nothing_of_another_tenant(admin):
    """The console's and the API's preview of a saved source list a path that keeps a stored
    document as "renamed from OLD to NEW" (the sync's own decision: identical content, or Git's
    rename detection for a move with edits), not as a delete and an add; and a sync then does
    exactly that. Another tenant's source holding the same content under its own paths shows in
    neither preview, and its admin cannot see this one's."""
    from rest_framework.test import APIClient

    from accounts.services import api_token_create
    from sources.selectors import source_preview
    from tests.api_helpers import console_client

    repo = new_folder(admin.tenant, "preview-renames-")
    git_commit(repo, {"guide.md": "# Guide\n\n" + GUIDE, "notes.md": "# Notes\n\nThe badger minutes.\n",
                      "same.md": SAME})
    source = source_create(actor=admin, tenant=admin.tenant, kind="git", name="moves", url=str(repo))
    assert _run(source).added == 3
    kept = {p: Document.objects.get(metadata__source_id=source.pk, metadata__source_path=p).pk
            for p in ("guide.md", "same.md")}
    # Another tenant: the very content this tenant's next commit moves and adds, under its own paths.
    other_tenant = tenant_create(slug="src-git-other", name="Other")
    other_admin = membership_create(tenant=other_tenant, email="admin@other.example", role="admin",
                                    clearance="restricted")
    other_repo = new_folder(other_tenant, "other-tenant-")
    git_commit(other_repo, {"canary-b/ledger.md": LEDGER, "canary-b/guide.md": "# Guide\n\n" + GUIDE,
                            "canary-b/same.md": SAME})
    other = source_create(actor=other_admin, tenant=other_tenant, kind="git", name="other", url=str(other_repo))
    assert _run(other).added == 3

    edited = "# Guide\n\n" + GUIDE.replace("Line 3 of", "Line three of") + "The heron audits it.\n"
    git_commit(repo, {"guide.md": None, "manual/guide.md": edited, "same.md": None, "archive/same.md": SAME,
                      "notes.md": None, "minutes.md": "# Minutes\n\nNothing alike at all: a walrus chair.\n",
                      "ledger.md": LEDGER}, "move, rewrite, add")
    wanted = {"manual/guide.md": ("rename", "guide.md"), "archive/same.md": ("rename", "same.md"),
              "minutes.md": ("add", ""), "ledger.md": ("add", ""), "notes.md": ("delete", "")}
    preview = source_preview(member=admin, source=source)
    assert {i["path"]: (i["action"], i["renamed_from"]) for i in preview["items"]} == wanted, preview["items"]
    assert preview["counts"] == {"rename": 2, "add": 2, "delete": 1}
    reasons = {i["path"]: i["reason"] for i in preview["items"]}
    assert reasons["manual/guide.md"] == "moved with edits: ingested again" and reasons["archive/same.md"] == ""

    _, token = api_token_create(membership=admin, name="k")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    answer = api.get(f"/api/v1/sources/{source.pk}/preview/")
    assert answer.status_code == 200
    assert {i["path"]: (i["action"], i["renamed_from"]) for i in answer.json()["items"]} == wanted
    page = console_client(admin).get(f"/sources/{source.pk}/?preview=1")
    html = page.content.decode()
    assert page.status_code == 200
    assert "renamed from <code>guide.md</code> to <code>manual/guide.md</code>" in html
    assert "renamed from <code>same.md</code> to <code>archive/same.md</code>" in html
    assert "<code>guide.md</code></td>" not in html  # the old path is no row of its own (no delete)
    for shown in (html, answer.content.decode(), str(preview)):
        assert "canary-b" not in shown
    # The other tenant's admin gets nothing of this source (a 404, as a missing one), nor its paths in its own.
    _, other_token = api_token_create(membership=other_admin, name="k")
    other_api = APIClient()
    other_api.credentials(HTTP_AUTHORIZATION=f"Token {other_token}")
    assert other_api.get(f"/api/v1/sources/{source.pk}/preview/").status_code == 404
    assert console_client(other_admin).get(f"/sources/{source.pk}/?preview=1").status_code == 404
    theirs = other_api.get(f"/api/v1/sources/{other.pk}/preview/")
    assert theirs.status_code == 200 and {i["action"] for i in theirs.json()["items"]} == {"unchanged"}
    assert "manual/guide.md" not in theirs.content.decode() and "minutes.md" not in theirs.content.decode()

    # The sync does what the preview said.
    sync = _run(source)
    assert (sync.status, sync.added, sync.renamed, sync.deleted) == ("succeeded", 2, 2, 1), sync.errors
    assert Document.objects.get(metadata__source_id=source.pk, metadata__source_path="manual/guide.md").pk == kept["guide.md"]
    assert Document.objects.get(metadata__source_id=source.pk, metadata__source_path="archive/same.md").pk == kept["same.md"]
