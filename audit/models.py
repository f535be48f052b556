"""The audit trail: one append-only table of events, and each tenant's audit settings.

Rows hold plain ids (tenant, membership, user, documents, chunks, sections), never foreign keys:
a record outlives what it names (a deleted document, a removed member, a tenant), and no
cascade may ever reach this table. The database refuses UPDATE, DELETE and TRUNCATE of events
(triggers in ``audit/migrations/0001_initial.py``); only :func:`audit.services.audit_expire`
deletes, and only rows older than their tenant's retention. docs/security.md ("The audit
trail") describes the whole design.
"""

from __future__ import annotations

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import BrinIndex, GinIndex
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.db.models.functions import Now

# Kept equal to the SQL functions of the migration (audit_retention_days): rows of a tenant
# without settings, and rows of no tenant (failed sign-ins of unknown e-mails), keep this long.
DEFAULT_RETENTION_DAYS = 365
MIN_RETENTION_DAYS = 30
MAX_RETENTION_DAYS = 3650


class Action(models.TextChoices):
    SEARCH = "search"
    DOCUMENT_READ = "document.read"
    DOCUMENT_CREATE = "document.create"
    DOCUMENT_REPLACE = "document.replace"
    DOCUMENT_DELETE = "document.delete"
    DOCUMENT_ACCESS = "document.access"
    SECTION_ACCESS = "section.access"
    MEMBERSHIP_CREATE = "membership.create"
    MEMBERSHIP_UPDATE = "membership.update"
    GROUP_CREATE = "group.create"
    GROUP_UPDATE = "group.update"
    TOKEN_CREATE = "token.create"
    TOKEN_REVOKE = "token.revoke"
    INDEX_VERSION_ACTIVATE = "index_version.activate"
    INDEX_VERSION_EVALUATE = "index_version.evaluate"
    SIGN_IN = "sign_in"
    SIGN_IN_FAILED = "sign_in.failed"
    AUDIT_SETTINGS = "audit.settings"
    # People: invitations, password reset, single sign-on, SCIM provisioning (issue 28).
    INVITATION_CREATE = "invitation.create"
    INVITATION_ACCEPT = "invitation.accept"
    INVITATION_REVOKE = "invitation.revoke"
    PASSWORD_RESET_REQUEST = "password_reset.request"
    PASSWORD_RESET = "password_reset.done"
    MEMBERSHIP_DELETE = "membership.delete"
    GROUP_DELETE = "group.delete"
    SCIM_TOKEN_CREATE = "scim_token.create"
    SCIM_TOKEN_REVOKE = "scim_token.revoke"
    SSO_SETTINGS = "sso.settings"
    # Sources that stay in sync (issue 29).
    SOURCE_CREATE = "source.create"
    SOURCE_UPDATE = "source.update"
    SOURCE_DELETE = "source.delete"
    SOURCE_SYNC = "source.sync"
    SOURCE_DETACH = "source.detach"
    SOURCE_REATTACH = "source.reattach"
    # Screening (issue 24): the tenant's mode, and a reviewer's decision on a flagged chunk.
    SCREENING_SETTINGS = "screening.settings"
    REVIEW_DECISION = "review.decision"


class AuditEvent(models.Model):
    """One thing that happened: who (membership, user, e-mail as it was), when, what, on which ids."""

    created_at = models.DateTimeField(db_default=Now())
    tenant_id = models.BigIntegerField(null=True)  # None: a failed sign-in of an e-mail no tenant knows
    membership_id = models.BigIntegerField(null=True)
    user_id = models.BigIntegerField(null=True)
    actor_email = models.CharField(max_length=254, blank=True)
    action = models.CharField(max_length=32, choices=Action.choices)
    target_type = models.CharField(max_length=32, blank=True)  # "section", "membership", "token", ...
    target_id = models.CharField(max_length=64, blank=True)
    document_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    details = models.JSONField(default=dict, blank=True, encoder=DjangoJSONEncoder)  # before/after of a change, an address, ...
    # Searches. The text is blanked by the database when the tenant keeps only the hash.
    query_text = models.TextField(blank=True)
    query_hash = models.CharField(max_length=64, blank=True)
    mode = models.CharField(max_length=16, blank=True)
    index_version_id = models.UUIDField(null=True)
    plan = models.CharField(max_length=64, blank=True)
    chunk_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    section_ids = ArrayField(models.UUIDField(), default=list, blank=True)
    latency_ms = models.FloatField(null=True)

    class Meta:
        db_table = "audit_event"
        indexes = [
            models.Index(fields=["tenant_id", "-created_at"], name="audit_event_tenant_time"),
            GinIndex(fields=["document_ids"], name="audit_event_documents"),
            # Rows arrive in time order: a tiny BRIN index finds the expired ones for audit_expire.
            BrinIndex(fields=["created_at"], name="audit_event_time_brin"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M:%S} {self.action} by {self.actor_email or '-'}"


class AuditSettings(models.Model):
    """A tenant's choices: how long its records are kept, and whether search text is kept or only its hash."""

    tenant_id = models.BigIntegerField(primary_key=True)
    retention_days = models.PositiveIntegerField(default=DEFAULT_RETENTION_DAYS)
    hash_queries = models.BooleanField(default=False)

    class Meta:
        db_table = "audit_settings"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(retention_days__gte=MIN_RETENTION_DAYS, retention_days__lte=MAX_RETENTION_DAYS),
                name="audit_settings_retention_bounds",
            ),
        ]
