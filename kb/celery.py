"""The Celery application: broker and settings come from Django settings (CELERY_*)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "kb.settings")

app = Celery("bulkhead")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="kb.ping")
def ping() -> str:
    """A no-op round trip used by health checks and tests."""
    return "pong"
