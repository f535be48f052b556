"""Helpers for tests that go through the real worker."""

from __future__ import annotations

import time

from kb.models import IngestionJob
from tests.bounds import JOB_WAIT


def wait_for_jobs(job_ids, timeout: float = JOB_WAIT) -> list[IngestionJob]:
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


# A Markdown document with every kind of access marker (front matter, heading, region; see
# docs/formats.md), shared by end-to-end tests.
POLICY_DOC = """---
title: Security policy
access: internal
tags: [security]
---
# Security policy
Intro for everyone with internal clearance. It explains what this policy covers.

## Incident response <!-- access: restricted; groups: security-team -->
Only the security team reads this. Call the on-call engineer first.

## Reporting
Everyone with internal clearance reads the reporting rules.

<!-- access: confidential -->
A confidential region inside Reporting: the names of past reporters.
<!-- /access -->

Back to internal text about reporting.
"""
