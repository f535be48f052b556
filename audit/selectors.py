"""Reads of the audit trail. Every read is of one tenant, filtered by it first: an id of another
tenant in a filter finds nothing, exactly like an id that does not exist."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.db.models import QuerySet

from audit.models import AuditEvent


def audit_list(
    *, tenant_id: int, membership_id: int | None = None, action: str | None = None,
    document_id: uuid.UUID | None = None, since: datetime | None = None, until: datetime | None = None,
) -> QuerySet[AuditEvent]:
    """The tenant's records, newest first, filtered: by the acting membership, the action, a
    document (an act on it, a read of it, or a search that returned any of its chunks) and a time
    range (``since`` inclusive, ``until`` exclusive)."""
    events = AuditEvent.objects.filter(tenant_id=tenant_id)
    if membership_id is not None:
        events = events.filter(membership_id=membership_id)
    if action:
        events = events.filter(action=action)
    if document_id is not None:
        events = events.filter(document_ids__contains=[document_id])
    if since is not None:
        events = events.filter(created_at__gte=since)
    if until is not None:
        events = events.filter(created_at__lt=until)
    return events.order_by("-created_at", "-id")
