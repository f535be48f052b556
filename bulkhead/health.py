"""``GET /healthz`` (readiness: the service can serve) and ``GET /livez`` (liveness: this web process answers).

``/healthz`` answers 200 when the database answers, the broker answers and at least one Celery
worker is alive -- by its heartbeat (:mod:`bulkhead.heartbeat`), not by a ping: a worker busy with
a document (the solo pool cannot answer a ping mid-task) is alive; one that is gone stops beating
and fails the check within three beats. Otherwise 503, naming what fails. ``/livez`` checks
nothing but the web process itself: it is what a container's liveness check should use, so a
database or worker outage never gets a healthy web container restarted (docs/reliability.md,
"Health checks").
"""

from __future__ import annotations

import logging
import threading

from django.db import connection
from django.http import JsonResponse
from django.utils.log import log_response
from django.views.decorators.http import require_GET

logger = logging.getLogger(__name__)


def _check_db() -> tuple[bool, str]:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return True, "ok"
    except Exception as exc:  # any failure means "not healthy"; the type is enough to say why
        return False, f"unavailable ({type(exc).__name__})"


def _check_broker_and_workers() -> tuple[tuple[bool, str], tuple[bool, str]]:
    from bulkhead import heartbeat
    from bulkhead.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=2)
    except Exception as exc:
        return (False, f"unavailable ({type(exc).__name__})"), (False, "unknown (broker unavailable)")
    try:
        workers = heartbeat.alive()
    except Exception as exc:
        return (True, "ok"), (False, f"heartbeats unreadable ({type(exc).__name__})")
    if not workers:
        return (True, "ok"), (False, "no live worker (no heartbeat)")
    lanes = {}
    for worker in workers:
        for queue in worker.get("queues") or ():
            lanes[queue] = lanes.get(queue, 0) + 1
    per_queue = ", ".join(f"{queue}: {count}" for queue, count in sorted(lanes.items()))
    return (True, "ok"), (True, f"{len(workers)} alive" + (f" ({per_queue})" if per_queue else ""))


@require_GET
def healthz(request):
    db = _check_db()
    broker, workers = _check_broker_and_workers()
    checks = {"db": db, "broker": broker, "workers": workers}
    body = {name: ("ok" if ok else detail) for name, (ok, detail) in checks.items()}
    if all(ok for ok, _ in checks.values()):
        body["workers"] = workers[1]
        if _state_changed(()):
            logger.info("%s answers 200 again", request.path)
        return JsonResponse({"status": "ok", **body}, status=200)
    failing = [name for name, (ok, _) in checks.items() if not ok]
    return _unavailable(request, {"status": "unavailable", "failing": failing, **body})


def _unavailable(request, body: dict) -> JsonResponse:
    """The 503, logged at INFO with what failed (django.request would log it as an ERROR).

    A 503 here is this endpoint's answer, not a failed request: a readiness probe asks while the
    workers start (the demo's start, a container's), and whoever asks decides whether it is an
    outage. The line names each failing check and why; while the same checks keep failing, the
    repeats are DEBUG (a probe asks every few seconds), and the next 200 is logged once."""
    response = JsonResponse(body, status=503)
    reasons = ", ".join(f"{name}: {body.get(name, 'failing')}" for name in body["failing"])
    level = "info" if _state_changed(tuple(body["failing"])) else "debug"
    log_response("%s answered 503 (%s)", request.path, reasons, response=response, request=request,
                 logger=logger, level=level)
    return response


# The checks that failed at this process's last answer (none: healthy, as a process is assumed to
# start), so that a 503 is logged once per change, not once per probe.
_last_failing: tuple[str, ...] = ()
_last_failing_lock = threading.Lock()


def _state_changed(failing: tuple[str, ...]) -> bool:
    global _last_failing
    with _last_failing_lock:
        changed, _last_failing = failing != _last_failing, failing
    return changed


@require_GET
def livez(request):
    """The web process answers: nothing else is checked (a container's liveness)."""
    return JsonResponse({"status": "ok"})
