"""Celery tasks of the knowledge base: thin wrappers over services."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError


@shared_task(name="kb.tasks.sync_tenant_indexes", autoretry_for=(OperationalError, InterfaceError), max_retries=3)
def sync_tenant_indexes(min_rows: int | None = None, max_share: float | None = None) -> dict:
    """Build per-tenant vector indexes for tenants that grew, drop those no longer needed
    (the limits default to BULKHEAD_TENANT_INDEX_MIN_ROWS and _MAX_SHARE)."""
    from kb.tenant_indexes import tenant_indexes_sync

    report = tenant_indexes_sync(min_rows=min_rows, max_share=max_share)
    return {"built": [str(t) for t, *_ in report.built], "dropped": [str(t) for t in report.dropped],
            "skipped": report.skipped}
