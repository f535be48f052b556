"""Ingestion yields the CPU to searches: the process that runs tasks lowers its priority.

Found by the load harness (``kb_bench load``, docs/reliability.md): on a 2-core machine the
workers embedding uploads at full priority tripled the search p95 of the web process beside them.
The session's real worker (solo pool: tasks run in the worker process itself) is checked.
"""

from __future__ import annotations

import os

import pytest
from django.conf import settings

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_the_worker_runs_below_the_priority_it_was_started_with(celery_worker):
    assert settings.BULKHEAD_WORKER_NICE == 10
    started_with = os.getpriority(os.PRIO_PROCESS, 0)  # the worker inherits this process's niceness
    expected = min(started_with + settings.BULKHEAD_WORKER_NICE, 19)
    assert os.getpriority(os.PRIO_PROCESS, celery_worker.process.pid) == expected
