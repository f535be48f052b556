"""Reads of the audit trail. Every read is of one tenant, filtered by it first: an id of another
tenant in a filter finds nothing, exactly like an id that does not exist."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q, QuerySet

from audit.models import AuditEvent


def audit_list(
    *, tenant_id: int, membership_id: int | None = None, action: str | None = None,
    document_id: uuid.UUID | None = None, since: datetime | None = None, until: datetime | None = None,
    any_document: Iterable[uuid.UUID] | None = None,
) -> QuerySet[AuditEvent]:
    """The tenant's records, newest first, filtered: by the acting membership, the action, a
    document (an act on it, a read of it, or a search that returned any of its chunks), any of
    several documents (``any_document``: the console's title filter, the documents whose title the
    viewer may read and matched; empty: nothing matches) and a time range (``since`` inclusive,
    ``until`` exclusive)."""
    events = AuditEvent.objects.filter(tenant_id=tenant_id)
    if membership_id is not None:
        events = events.filter(membership_id=membership_id)
    if action:
        events = events.filter(action=action)
    if document_id is not None:
        events = events.filter(document_ids__contains=[document_id])
    if any_document is not None:
        events = events.filter(_any_document_q(list(any_document)))
    if since is not None:
        events = events.filter(created_at__gte=since)
    if until is not None:
        events = events.filter(created_at__lt=until)
    return events.order_by("-created_at", "-id")


# Up to this many documents, one containment test each (``@>``, LEAKPROOF: the GIN index serves them
# under the tenant wall, audit/0004); more, one overlap test (``&&``: right, but a scan of the tenant's records).
ANY_DOCUMENT_INDEXED = 50


def _any_document_q(document_ids: list[uuid.UUID]) -> Q:
    if not document_ids:
        return Q(pk__in=[])
    if len(document_ids) > ANY_DOCUMENT_INDEXED:
        return Q(document_ids__overlap=document_ids)
    condition = Q()
    for document_id in document_ids:
        condition |= Q(document_ids__contains=[document_id])
    return condition
