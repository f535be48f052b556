"""Celery tasks of the audit trail: thin wrappers over services."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError


@shared_task(name="audit.tasks.expire_audit_records", autoretry_for=(OperationalError, InterfaceError), max_retries=3)
def expire_audit_records() -> int:
    """Delete every tenant's records older than its retention (celery beat runs this hourly)."""
    from audit.services import audit_expire

    return audit_expire()
