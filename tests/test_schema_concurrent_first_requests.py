"""The OpenAPI schema answers 200 to several first requests at once in a fresh process.

drf-spectacular loads its extensions lazily and not thread-safely; eight simultaneous first
requests (gunicorn's threads on a cold worker) answered 500 in most runs before ``kb.schema``
serialised generation. Each try is a fresh interpreter (the extensions load once per process);
two tries: before the fix, about nine runs in ten failed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.bounds import JOB_WAIT

ROOT = Path(__file__).resolve().parent.parent

FIRST_REQUESTS = """
import os, threading
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
import django
django.setup()
from django.test import Client
statuses, start = [], threading.Barrier(8)
def first_request():
    client = Client(raise_request_exception=False)
    start.wait()
    statuses.append(client.get("/api/schema/", HTTP_ACCEPT="application/json").status_code)
threads = [threading.Thread(target=first_request) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(sorted(statuses))
"""


def test_eight_first_schema_requests_at_once_all_answer_200():
    for _ in range(2):
        run = subprocess.run([sys.executable, "-c", FIRST_REQUESTS], cwd=ROOT, capture_output=True, text=True,
                             timeout=JOB_WAIT)
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.strip().splitlines()[-1] == str([200] * 8), run.stdout[-500:]
