"""Sources that stay in sync (issue 29): a Git repository made here, synced by the real worker, its
access matrix checked through search after each sync -- adds, a change, a rename that keeps the
document and its API override (also when moved with edits), a delete that is never found again, a
force-push, an unchanged sync."""

from __future__ import annotations

import pytest

from accounts.services import group_create, membership_create, tenant_create
from kb.models import Document, IngestionJob, Section
from kb.search import search
from kb.services import section_set_access
from sources.models import Source, SourceItem
from sources.services import JOB_STATS_KEY, source_create, sync_start
from tests.sources_helpers import git_commit, git_reset_branch, new_folder, wait_for_sync

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.worker]

READERS = {  # name: (clearance, groups)
    "public": ("public", []),
    "internal": ("internal", []),
    "confidential": ("confidential", []),
    "restricted": ("restricted", []),
    "restricted-eng": ("restricted", ["eng"]),
}

FILES = {
    "docs/guide.md": "# Guide\n\nThe lighthouse keeper polishes the brass lamp every evening.\n",
    "secret/plan.md": "# Plan\n\nThe zeppelin budget is forty million.\n",
    "notes/ops.md": "# Ops\n\nGeneral operations text.\n\n## Pager <!-- access: confidential -->\n\nThe wombat rota.\n",
    "notes/hr.md": "# HR\n\nThe flamingo salary sheet.\n",
    ".bulkhead-access.yaml": "- path: notes/hr.md\n  access_level: confidential\n",
    "logo.png": b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)),
}


def _found(members, word: str) -> set[str]:
    return {name for name, member in members.items()
            if any(word in hit.text for hit in search(member=member, query=word, mode="keyword", expand="none").results)}


def _sync(admin, source):
    sync, created = sync_start(actor=admin, source=source)
    assert created
    return wait_for_sync(sync.pk)


def test_a_git_source_stays_in_sync_with_access_mapped_at_the_source(celery_worker):
    tenant = tenant_create(slug="src-git", name="Git source")
    group_create(tenant=tenant, slug="eng")
    admin = membership_create(tenant=tenant, email="admin@src.example", role="admin", clearance="restricted")
    members = {name: membership_create(tenant=tenant, email=f"{name}@src.example", role="viewer", clearance=level,
                                       group_slugs=groups) for name, (level, groups) in READERS.items()}
    repo = new_folder(tenant, "git-")
    first = git_commit(repo, FILES, "first")
    source = source_create(actor=admin, tenant=tenant, kind="git", name="handbook", url=f"file://{repo}",
                           branch="master", access_level="internal",
                           access_map=[{"path": "secret/**", "access_level": "restricted", "groups": ["eng"]}])

    sync = _sync(admin, source)
    assert (sync.status, sync.added, sync.changed, sync.deleted, sync.failed) == ("succeeded", 4, 0, 0, 0), sync.errors
    assert [s["path"] for s in sync.skips] == ["logo.png"] and "binary" in sync.skips[0]["reason"]
    assert sync.revision == first.decode()
    assert _found(members, "lighthouse") == {"internal", "confidential", "restricted", "restricted-eng"}
    assert _found(members, "zeppelin") == {"restricted-eng"}  # the access map: restricted, eng only
    assert _found(members, "flamingo") == {"confidential", "restricted", "restricted-eng"}  # the access file
    assert _found(members, "wombat") == {"confidential", "restricted", "restricted-eng"}  # a marker inside
    guide = Document.objects.get(metadata__source_id=source.pk, metadata__source_path="docs/guide.md")
    # An API override on the guide's section survives a rename.
    section_set_access(actor=None, section=Section.objects.filter(document=guide).order_by("order").first(),
                       access_level="confidential", groups=None)
    assert _found(members, "lighthouse") == {"confidential", "restricted", "restricted-eng"}

    git_commit(repo, {"docs/guide.md": None, "docs/handbook.md": FILES["docs/guide.md"], "secret/plan.md": None,
                      "notes/ops.md": FILES["notes/ops.md"].replace("wombat", "koala")}, "rename, delete, change")
    sync = _sync(admin, source)
    assert (sync.status, sync.added, sync.changed, sync.renamed, sync.deleted) == ("succeeded", 0, 1, 1, 1), sync.errors
    handbook = Document.objects.get(metadata__source_id=source.pk, metadata__source_path="docs/handbook.md")
    assert handbook.pk == guide.pk and handbook.source == "docs/handbook.md"
    assert _found(members, "lighthouse") == {"confidential", "restricted", "restricted-eng"}  # the override kept
    assert _found(members, "zeppelin") == set()  # deleted: never found again, by anyone
    assert not Document.objects.filter(metadata__source_path="secret/plan.md").exists()
    assert _found(members, "koala") == {"confidential", "restricted", "restricted-eng"}
    assert _found(members, "wombat") == set()

    # Moved with an edit: Git's rename detection keeps the document (its id, its override), re-ingested.
    edited = FILES["docs/guide.md"] + "The keeper also winds the clockwork.\n"
    git_commit(repo, {"docs/handbook.md": None, "manual/handbook.md": edited}, "move with an edit")
    sync = _sync(admin, source)
    assert (sync.status, sync.added, sync.changed, sync.renamed, sync.deleted) == ("succeeded", 0, 0, 1, 0), sync.errors
    moved = Document.objects.get(metadata__source_id=source.pk, metadata__source_path="manual/handbook.md")
    assert moved.pk == guide.pk and moved.source == "manual/handbook.md" and bytes(moved.raw) == edited.encode()
    assert IngestionJob.objects.filter(document=moved, **{f"stats__{JOB_STATS_KEY}": str(sync.pk)}).count() == 1
    assert _found(members, "clockwork") == {"confidential", "restricted", "restricted-eng"}  # the override kept
    assert _found(members, "lighthouse") == {"confidential", "restricted", "restricted-eng"}

    # A force-push: the branch is rewritten from the first commit.
    git_reset_branch(repo, first)
    git_commit(repo, {"extra.md": "# Extra\n\nThe quokka appendix.\n"}, "rewritten history")
    sync = _sync(admin, source)
    assert sync.status == "succeeded", sync.errors
    assert (sync.added, sync.changed, sync.renamed, sync.deleted) == (2, 1, 1, 0)  # extra + plan; ops; guide back
    assert _found(members, "clockwork") == set()
    assert _found(members, "quokka") == {"internal", "confidential", "restricted", "restricted-eng"}
    assert _found(members, "koala") == set()
    assert _found(members, "zeppelin") == {"restricted-eng"}
    assert Document.objects.get(metadata__source_path="docs/guide.md").pk == guide.pk

    # Nothing changed: nothing read, nothing ingested.
    jobs_before = IngestionJob.objects.count()
    sync = _sync(admin, source)
    assert (sync.status, sync.added, sync.changed, sync.deleted, sync.unchanged) == ("succeeded", 0, 0, 0, 5)
    assert IngestionJob.objects.count() == jobs_before
    assert SourceItem.objects.filter(source=source).count() == 5
    assert Document.objects.filter(metadata__source_id=source.pk).count() == 5
    assert Source.objects.get(pk=source.pk).kind == "git"
    assert not IngestionJob.objects.filter(**{f"stats__{JOB_STATS_KEY}": str(sync.pk)}).exists()
