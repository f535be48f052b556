"""Helpers for tests that go through the real worker."""

from __future__ import annotations

import time

from kb.models import IngestionJob


def wait_for_jobs(job_ids, timeout: float = 180) -> list[IngestionJob]:
    """Poll until every job is finished (succeeded or failed); fail loudly on timeout."""
    ids = [str(j) for j in job_ids]
    deadline = time.monotonic() + timeout
    while True:
        jobs = list(IngestionJob.objects.filter(id__in=ids))
        if len(jobs) == len(ids) and all(j.status in ("succeeded", "failed") for j in jobs):
            return sorted(jobs, key=lambda j: ids.index(str(j.id)))
        if time.monotonic() > deadline:
            states = {str(j.id): (j.status, j.stage, j.done, j.total) for j in jobs}
            raise AssertionError(f"jobs not finished after {timeout}s: {states}")
        time.sleep(0.2)
