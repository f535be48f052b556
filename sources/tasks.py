"""Celery tasks of sources: thin. A sync is re-delivered when its worker dies (acks_late), and resumes."""

from __future__ import annotations

from celery import shared_task
from django.db import InterfaceError, OperationalError
from kombu.exceptions import OperationalError as BrokerOperationalError

from sources.services import SYNC_TASK, sync_run, syncs_tick

TRANSIENT = (OperationalError, InterfaceError, BrokerOperationalError, ConnectionError)


@shared_task(name=SYNC_TASK, acks_late=True, reject_on_worker_lost=True, autoretry_for=TRANSIENT,
             retry_backoff=2, retry_backoff_max=120, max_retries=5)
def sync_source(sync_id: str) -> str:
    return sync_run(sync_id)


@shared_task(name="sources.tasks.tick", autoretry_for=TRANSIENT, max_retries=3)
def tick() -> dict:
    return syncs_tick()
