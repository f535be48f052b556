"""``GET /healthz``: database, broker and at least one worker must answer."""

from __future__ import annotations

from django.db import connection
from django.http import JsonResponse
from django.views.decorators.http import require_GET


def _check_db() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return True, "ok"
    except Exception as exc:  # any failure means "not healthy"; the type is enough to say why
        return False, f"unavailable ({type(exc).__name__})"


def _check_broker_and_workers() -> tuple[tuple[bool, str], tuple[bool, str]]:
    from bulkhead.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        return (False, f"unavailable ({type(exc).__name__})"), (False, "unknown (broker unavailable)")
    try:
        replies = app.control.ping(timeout=1.0) or []
    except Exception as exc:
        return (True, "ok"), (False, f"ping failed ({type(exc).__name__})")
    if not replies:
        return (True, "ok"), (False, "no worker replied")
    return (True, "ok"), (True, f"{len(replies)} replied")


@require_GET
def healthz(request):
    db = _check_db()
    broker, workers = _check_broker_and_workers()
    checks = {"db": db, "broker": broker, "workers": workers}
    body = {name: ("ok" if ok else detail) for name, (ok, detail) in checks.items()}
    if all(ok for ok, _ in checks.values()):
        body["workers"] = workers[1]
        return JsonResponse({"status": "ok", **body}, status=200)
    failing = [name for name, (ok, _) in checks.items() if not ok]
    return JsonResponse({"status": "unavailable", "failing": failing, **body}, status=503)
