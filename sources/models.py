"""Sources that stay in sync: a Git repository, a folder on the server or a website, the documents
each owns, and the history of its syncs (docs/sources.md).

A source's documents are ordinary ``kb.Document`` rows marked with the source's id
(``Document.metadata["source_id"]``): the knowledge base refuses a member's replacement or deletion
of them (only their sync changes them, or an admin detaches them first). ``SourceItem`` is what the
last sync stored of each path -- its version at the source (a Git blob id, a file's size and mtime,
an ETag), its content hash and the policy it was given -- so the next sync compares listings, not
content.
"""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q

from accounts.models import Tenant, User
from accounts.policy import LEVEL_CHOICES, MAX_LEVEL, AccessLevel
from kb.models import Document


class Source(models.Model):
    class Kind(models.TextChoices):
        GIT = "git"
        FOLDER = "folder"
        WEB = "web"

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    url = models.CharField(max_length=2000, blank=True, default="")  # git and web
    path = models.CharField(max_length=2000, blank=True, default="")  # folder
    branch = models.CharField(max_length=200, blank=True, default="")  # git: a branch or a tag ("" = HEAD)
    include = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    exclude = ArrayField(models.CharField(max_length=500), default=list, blank=True)
    # The default policy of the source's documents.
    access_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES, default=AccessLevel.INTERNAL)
    access_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)
    # [{"path": GLOB, "level": RANK, "groups": [GROUP_ID, ...]}, ...]: the first match wins.
    access_map = models.JSONField(default=list, blank=True)
    # Web: {"prefix": URL, "rate_per_second": float, "max_pages": int}.
    options = models.JSONField(default=dict, blank=True)
    # Fernet token of {"username", "password"} (https) or {"username", "private_key", "known_hosts"} (ssh)
    # (sources.crypto); never shown again.
    credentials = models.TextField(blank=True, default="")
    # Minutes between scheduled syncs; null: no schedule (the default).
    schedule_minutes = models.PositiveIntegerField(null=True, blank=True)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "name"], name="source_unique_name"),
            models.UniqueConstraint(fields=["id", "tenant"], name="source_id_tenant"),
            models.CheckConstraint(condition=Q(access_level__lte=MAX_LEVEL), name="source_level_known"),
        ]

    def __str__(self) -> str:
        return self.name


class SourceSync(models.Model):
    """One run of a source's sync: queued, running, then succeeded or failed, with counts and errors."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        SUCCEEDED = "succeeded"
        FAILED = "failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="syncs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    stage = models.CharField(max_length=32, blank=True, default="queued")
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    listed = models.PositiveIntegerField(default=0)
    added = models.PositiveIntegerField(default=0)
    changed = models.PositiveIntegerField(default=0)
    renamed = models.PositiveIntegerField(default=0)
    deleted = models.PositiveIntegerField(default=0)
    unchanged = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    # [{"path": ..., "error": ...}] of failed items, [{"path": ..., "reason": ...}] of skipped ones.
    errors = models.JSONField(default=list, blank=True)
    skips = models.JSONField(default=list, blank=True)
    error = models.TextField(blank=True, default="")  # the sync's own failure (a listing that failed)
    # Who may read ``error`` (sources.access.item_access; it may name a subfolder or a page), and what the others read.
    # None with an error: recorded before the rule, read only by an admin who may read every level and group.
    error_access = models.JSONField(null=True, blank=True, default=None)
    error_without_path = models.TextField(blank=True, default="")
    revision = models.CharField(max_length=100, blank=True, default="")  # git: the commit synced
    timings = models.JSONField(default=dict, blank=True)  # seconds per stage
    attempts = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["source", "-created_at"]), models.Index(fields=["status", "heartbeat_at"])]
        constraints = [
            # One unfinished sync per source: a second start answers the running one.
            models.UniqueConstraint(
                fields=["source"], condition=Q(status__in=["queued", "running"]), name="sourcesync_one_unfinished"
            ),
        ]


class SourceItem(models.Model):
    """What the last sync stored of one path of a source."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="items")
    path = models.CharField(max_length=2000)
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    version = models.CharField(max_length=200, blank=True, default="")  # blob id, size:mtime, ETag ...
    etag = models.CharField(max_length=500, blank=True, default="")
    last_modified = models.CharField(max_length=100, blank=True, default="")
    content_hash = models.CharField(max_length=64)
    access_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES)
    access_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)
    synced_by = models.UUIDField(null=True, blank=True)  # the sync that last wrote it (a resumed sync counts once)
    # The default an admin set on the path's document that the syncs keep ({"level", "groups", "narrowing"}; null: the
    # document follows the source): an admin's narrowing stays a bound after the document's default has met the
    # source's (sources.services.admin_default).
    admin_default = models.JSONField(null=True, blank=True, default=None)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "path"], name="sourceitem_unique_path")]
        indexes = [models.Index(fields=["source", "content_hash"])]


class SourceDetached(models.Model):
    """A path of a source whose document an admin detached: every sync skips it ("detached") until an admin
    re-attaches it (docs/sources.md, "Detached documents"). ``document``: the detached document (null once it is
    deleted -- the path stays detached); ``access_level``/``access_groups``: the policy the source gave the path when
    it was detached, which a re-attach hands back to the item (so that a default an admin set on the document since
    is kept by the next sync: ``sources.services.default_kept``)."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="detached")
    path = models.CharField(max_length=2000)
    document = models.ForeignKey(Document, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    access_level = models.PositiveSmallIntegerField(choices=LEVEL_CHOICES)
    access_groups = ArrayField(models.BigIntegerField(), default=list, blank=True)
    admin_default = models.JSONField(null=True, blank=True, default=None)  # the item's, handed back by a re-attach
    # Who may see the path as the last sync that listed it decided (its skip row's ``sources.access.item_access``:
    # the access file's narrowing, which only a listing reads); kept here, so a later sync that writes no row of the
    # path (a failed listing, the file gone) does not forget it. None: no sync listed it since the detach.
    skip_access = models.JSONField(null=True, blank=True, default=None)
    detached_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    detached_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "path"], name="sourcedetached_unique_path")]
