"""What a Celery worker does when it starts, before any task: it imports the task modules and does not run
Django's system checks, whose messages Celery's Django fixup throws away (``bulkhead/celery.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.bounds import START_WAIT

ROOT = Path(__file__).resolve().parent.parent

# What `celery -A bulkhead worker` runs before it connects: Django set up, the task modules imported
# (celery.loaders.base.BaseLoader.init_worker).
START = """
import sys
import django
django.setup()
from bulkhead.celery import app
app.loader.import_default_modules()
print(sorted(app.tasks.keys()))
print("bulkhead.urls" in sys.modules, "accounts.scim_views" in sys.modules)
"""


def test_a_worker_imports_its_tasks_and_not_the_urlconf_for_checks_it_discards():
    env = {k: v for k, v in os.environ.items() if k != "CELERY_SKIP_CHECKS"}
    run = subprocess.run([sys.executable, "-c", START], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=START_WAIT)
    assert run.returncode == 0, run.stderr[-3000:]
    tasks, loaded = run.stdout.splitlines()[-2:]
    assert "pipeline.tasks.ingest_documents" in tasks and "sources.tasks.sync_source" in tasks, tasks
    assert loaded == "False False", "the worker ran Django's system checks: it imported the URLconf and the views"
