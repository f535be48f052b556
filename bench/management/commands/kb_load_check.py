"""A load check for a running server (not a test): fire requests from many threads, count the
answers by status and sample PostgreSQL's connections meanwhile.

    BULKHEAD_DATA_DIR=.data/demo .venv/bin/python manage.py kb_load_check --url http://127.0.0.1:8000 \\
        --tenant demo --as carol@demo.example --requests 400 --threads 16

Run it from the checkout of the server under test (same ``BULKHEAD_DATA_DIR`` or ``DATABASE_URL``):
it mints API tokens for the member (one per thread, so the per-token throttle is not what is
measured) and samples ``pg_stat_activity`` every 100 ms -- every client connection to the
server's database, its own sampling connection excepted. ``--rate`` fires at a fixed rate
instead (open loop: requests do not wait for earlier answers, like independent clients).
"""

from __future__ import annotations

import itertools
import json
import random
import statistics
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from accounts.models import Membership
from accounts.services import api_token_create

QUERIES = [
    "who do I page when a security alert fires?",
    "how long must passwords be?",
    "how do I store embeddings with Django?",
    "what did the president say about the economy?",
    "incident response steps",
]
CONNECTIONS_SQL = (
    "SELECT count(*) FILTER (WHERE datname = current_database()), count(*) FROM pg_stat_activity "
    "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
)


class Sampler(threading.Thread):
    """Counts client connections (to this database, and to the whole server) until stopped."""

    def __init__(self, interval: float = 0.1):
        super().__init__(daemon=True)
        self.interval = interval
        self.samples: list[tuple[int, int]] = []
        self.stopped = threading.Event()

    def run(self) -> None:
        connection = connections.create_connection("default")
        try:
            while not self.stopped.is_set():
                with connection.cursor() as cursor:
                    cursor.execute(CONNECTIONS_SQL)
                    self.samples.append(tuple(cursor.fetchone()))
                self.stopped.wait(self.interval)
        finally:
            connection.close()


class Command(BaseCommand):
    help = "Fire API requests at a running server from many threads; report statuses and PostgreSQL connections."

    def add_arguments(self, parser):
        parser.add_argument("--url", default="http://127.0.0.1:8000")
        parser.add_argument("--tenant", default="demo")
        parser.add_argument("--as", dest="email", default="carol@demo.example", help="the member whose tokens are used")
        parser.add_argument("--requests", type=int, default=400)
        parser.add_argument("--threads", type=int, default=16)
        parser.add_argument("--rate", type=float, default=0.0, help="requests per second, open loop (0: closed loop)")
        parser.add_argument("--timeout", type=float, default=120.0, help="per request, seconds")
        parser.add_argument("--json", action="store_true", help="print the summary as JSON")

    def handle(self, *args, **options):
        from accounts.tenancy import owner_login_for_this_process

        owner_login_for_this_process()  # a tool over every tenant's rows: the owner (docs/security.md)
        membership = (
            Membership.objects.filter(tenant__slug=options["tenant"], user__email=options["email"])
            .select_related("tenant")
            .first()
        )
        if membership is None:
            raise CommandError(f"no member {options['email']} in tenant {options['tenant']}")
        threads = max(1, options["threads"])
        tokens = [api_token_create(membership=membership, name="load-check")[1] for _ in range(threads)]
        base = options["url"].rstrip("/")
        document_ids = self._document_ids(base, tokens[0], options["timeout"])
        plan = self._plan(options["requests"], document_ids)

        sampler = Sampler()
        sampler.start()
        time.sleep(0.5)  # a baseline before the load
        baseline = sampler.samples[-1] if sampler.samples else (0, 0)
        results: list[tuple[str, int, float]] = []
        lock = threading.Lock()
        local = threading.local()

        assign = itertools.count()

        def fire(index: int) -> None:
            if not hasattr(local, "token"):  # one token per client thread
                local.token = tokens[next(assign) % len(tokens)]
            kind, method, path, body = plan[index]
            started = time.perf_counter()
            status = _request(base + path, method, body, local.token, options["timeout"])
            with lock:
                results.append((kind, status, time.perf_counter() - started))

        started = time.perf_counter()
        if options["rate"] > 0:
            # Open loop: one request every 1/rate s, however long earlier ones take.
            with ThreadPoolExecutor(max_workers=max(threads, 256)) as pool:
                for index in range(len(plan)):
                    delay = started + index / options["rate"] - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                    pool.submit(fire, index)
        else:
            with ThreadPoolExecutor(max_workers=threads) as pool:
                list(pool.map(fire, range(len(plan))))
        elapsed = time.perf_counter() - started
        time.sleep(0.3)
        sampler.stopped.set()
        sampler.join(5)
        self._report(options, results, elapsed, sampler.samples, baseline)

    def _document_ids(self, base: str, token: str, timeout: float) -> list[str]:
        request = urllib.request.Request(f"{base}/api/v1/documents/?limit=100", headers=_headers(token))
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return [d["id"] for d in json.load(response)["results"]]
        except (urllib.error.URLError, OSError) as exc:
            raise CommandError(f"{base} does not answer: {exc}") from None

    def _plan(self, n: int, document_ids: list[str]) -> list[tuple[str, str, str, dict | None]]:
        """A fixed mix: half searches (hybrid and keyword), then document lists, section trees, a static file."""
        rng = random.Random(7)
        plan = []
        for i in range(n):
            slot = i % 10
            if slot < 5:
                mode = "hybrid" if slot % 2 == 0 else "keyword"
                plan.append(("search", "POST", "/api/v1/search/",
                             {"query": rng.choice(QUERIES), "mode": mode, "top_k": 5}))
            elif slot < 8 or not document_ids:
                plan.append(("documents", "GET", "/api/v1/documents/", None))
            elif slot < 9:
                plan.append(("sections", "GET", f"/api/v1/documents/{rng.choice(document_ids)}/sections/", None))
            else:
                plan.append(("static", "GET", "/static/admin/css/base.css", None))
        return plan

    def _report(self, options, results, elapsed, samples, baseline) -> None:
        statuses = Counter(status for _, status, _ in results)
        by_kind: dict[str, list[float]] = {}
        for kind, _, seconds in results:
            by_kind.setdefault(kind, []).append(seconds)
        latencies = sorted(s for _, _, s in results)
        database = [d for d, _ in samples] or [0]
        server = [s for _, s in samples] or [0]
        summary = {
            "url": options["url"], "requests": len(results), "threads": options["threads"], "rate": options["rate"],
            "seconds": round(elapsed, 1), "requests_per_second": round(len(results) / elapsed, 1) if elapsed else 0,
            "statuses": dict(sorted((str(k), v) for k, v in statuses.items())),
            "server_errors": sum(v for k, v in statuses.items() if k >= 500 or k == 0),
            "latency_ms": {
                "p50": round(1000 * statistics.median(latencies), 1) if latencies else None,
                "p95": round(1000 * latencies[int(0.95 * (len(latencies) - 1))], 1) if latencies else None,
                "max": round(1000 * latencies[-1], 1) if latencies else None,
            },
            "latency_p50_ms_by_kind": {k: round(1000 * statistics.median(v), 1) for k, v in sorted(by_kind.items())},
            "pg_connections": {
                "baseline_database": baseline[0], "baseline_server": baseline[1],
                "max_database": max(database), "max_server": max(server),
                "mean_database": round(statistics.mean(database), 1), "samples": len(samples),
            },
        }
        if options["json"]:
            self.stdout.write(json.dumps(summary, indent=2))
            return
        for key, value in summary.items():
            self.stdout.write(f"{key:>24}: {value}")


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Token {token}", "Content-Type": "application/json", "Accept": "application/json"}


def _request(url: str, method: str, body: dict | None, token: str, timeout: float) -> int:
    """The answer's status; 0 when there was none (refused, reset, timed out)."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers=_headers(token))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return response.status
    except urllib.error.HTTPError as exc:
        exc.read()
        return exc.code
    except (urllib.error.URLError, OSError):
        return 0
