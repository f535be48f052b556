"""`make demo`: migrate, a demo tenant with three members, the sample corpus, two workers and the web server.

Ctrl-C or SIGTERM stops the web server and the workers; the embedded PostgreSQL and
Redis stay up for reuse (`make stop` stops them).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import Membership, Tenant
from accounts.passwords import password_generate, user_set_password
from accounts.services import api_token_create, group_create, membership_create, tenant_create
from accounts.tenancy import tenant_act_for, tenant_activate
from bulkhead import embedded_services
from kb.models import IngestionJob
from kb.services import Upload, batch_create

DEMO_TENANT = "demo"
MEMBERS = [
    # email, role, clearance, groups
    ("alice@demo.example", "admin", "restricted", ["security-team"]),
    ("bob@demo.example", "editor", "confidential", []),
    ("carol@demo.example", "viewer", "internal", []),
]
EXAMPLE_QUERIES = [
    "who do I page when a security alert fires?",
    "how long must passwords be?",
    "how do I store embeddings with Django?",
]


# The web server: gunicorn with a fixed number of threads, each holding at most one persistent
# database connection (CONN_MAX_AGE), so the demo's web side never holds more than
# WEB_WORKERS * WEB_THREADS of PostgreSQL's connections (100 by default), whatever the load;
# requests beyond the threads wait in gunicorn's queue. Static files come from WhiteNoise.
WEB_WORKERS = 2
WEB_THREADS = 4


def web_command(port: int, *, workers: int = WEB_WORKERS, threads: int = WEB_THREADS, host: str = "127.0.0.1"):
    return [
        sys.executable, "-m", "gunicorn", "bulkhead.wsgi:application", "--bind", f"{host}:{port}",
        "--worker-class", "gthread", "--workers", str(workers), "--threads", str(threads),
        "--timeout", "120", "--graceful-timeout", "10",
    ]


def worker_commands(log_dir: Path) -> list[list[str]]:
    """The demo's Celery workers: the interactive lane alone (with beat), and both lanes."""
    worker = [sys.executable, "-m", "celery", "-A", "bulkhead", "worker", "--pool=solo", "--loglevel=INFO"]
    return [
        [*worker, "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "-n", "demo@%h", "--beat",
         "--schedule", str(log_dir / "celerybeat-schedule")],
        [*worker, "-n", "demo-bulk@%h"],
    ]


class Command(BaseCommand):
    help = (
        "Run the demo: tenant, members, sample corpus, two Celery workers and the web server (gunicorn) on "
        "127.0.0.1:8000."
    )

    def add_arguments(self, parser):
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--samples", default=str(Path(settings.BASE_DIR) / "samples"))
        parser.add_argument("--no-serve", action="store_true", help="set up and ingest, then exit")
        parser.add_argument("--web-workers", type=int, default=WEB_WORKERS, help="gunicorn worker processes")
        parser.add_argument("--web-threads", type=int, default=WEB_THREADS, help="threads per gunicorn worker")

    def handle(self, *args, **options):
        started = time.monotonic()
        # manage.py has started them already, call_command("kb_demo") has not; the workers and the
        # web server spawned below find them running.
        embedded_services.ensure_started()
        call_command("migrate", verbosity=0)
        tokens, passwords = self._tenant_and_members()
        children: list[subprocess.Popen] = []

        def stop(signum=None, frame=None):
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children:
                try:
                    child.wait(15)
                except subprocess.TimeoutExpired:
                    child.kill()
            self.stdout.write("\nstopped the web server and the workers; `make stop` stops PostgreSQL and Redis")
            sys.exit(0)

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        # The children find the same embedded servers through .data/ (or the same *_URL variables).
        env = dict(os.environ)
        log_dir = Path(settings.BASE_DIR) / ".data"
        worker_log = open(log_dir / "demo-worker.log", "ab")
        # Two workers, so one tenant's heavy document cannot hold up another's small upload:
        # "demo" serves the interactive lane alone (small uploads; it also runs beat),
        # "demo-bulk" both lanes (large documents and batch imports, and small uploads when it
        # is free; see kb/jobs.py, enqueue_jobs).
        for command in worker_commands(log_dir):
            children.append(subprocess.Popen(command, env=env, stdout=worker_log, stderr=subprocess.STDOUT))
        if not options["no_serve"]:
            children.append(
                subprocess.Popen(
                    web_command(options["port"], workers=options["web_workers"], threads=options["web_threads"]),
                    env=env, cwd=settings.BASE_DIR,
                )
            )
        batch = self._ingest_samples(Path(options["samples"]))
        if not options["no_serve"]:
            waited = self._wait_healthy(options["port"], children)
            self.stdout.write(self.style.SUCCESS(
                f"/healthz answered 200 after {time.monotonic() - started:.1f}s ({waited:.1f}s after the servers started)"
            ))
        self._follow(batch)
        self._print_help(tokens, passwords, options["port"])
        if options["no_serve"]:
            stop()
        while True:
            for child in children:
                if child.poll() is not None:
                    self.stderr.write(f"a demo process exited with status {child.returncode}; stopping")
                    stop()
            time.sleep(1)

    @transaction.atomic
    def _tenant_and_members(self) -> tuple[dict[str, str], dict[str, str]]:
        """Each demo member's new API token and new console password (both printed once, at the end)."""
        tenant = Tenant.objects.filter(slug=DEMO_TENANT).first() or tenant_create(slug=DEMO_TENANT, name="Demo Ltd.")
        tenant_activate(tenant.pk)  # the demo's setup acts for its tenant (accounts.tenancy)
        if not tenant.groups.filter(slug="security-team").exists():
            group_create(tenant=tenant, slug="security-team", name="Security team")
        tokens, passwords = {}, {}
        for email, role, clearance, groups in MEMBERS:
            membership = Membership.objects.filter(tenant=tenant, user__email=email).first()
            if membership is None:
                membership = membership_create(
                    tenant=tenant, email=email, role=role, clearance=clearance, group_slugs=groups
                )
            tokens[email] = api_token_create(membership=membership, name="demo")[1]
            # The same service as `kb_user set-password`, under the same validators.
            passwords[email] = password_generate()
            user_set_password(email=email, password=passwords[email])
        return tokens, passwords

    def _ingest_samples(self, folder: Path) -> IngestionJob:
        from kb.management.commands.kb_ingest import walk

        tenant = tenant_act_for(slug=DEMO_TENANT)
        files = walk([str(folder)])
        uploads = [
            Upload(content=p.read_bytes(), title=p.name, source=f"samples/{p.name}", access_level="internal")
            for p in files
            if p.name != "LICENSES.md"
        ]
        # The travel guidance and the public speech are for everyone, the rest internal by default.
        uploads = [
            Upload(**{**u.__dict__, "access_level": "public"}) if u.title == "state_of_the_union.txt" else u
            for u in uploads
        ]
        batch = batch_create(tenant=tenant, created_by=None, uploads=uploads)
        self.stdout.write(f"ingesting {len(uploads)} sample documents from {folder} (batch {batch.id})")
        return batch

    def _wait_healthy(self, port: int, children) -> float:
        started = time.monotonic()
        url = f"http://127.0.0.1:{port}/healthz"
        while time.monotonic() - started < 180:
            try:
                with urllib.request.urlopen(url, timeout=2) as response:
                    if response.status == 200:
                        return time.monotonic() - started
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if any(c.poll() is not None for c in children):
                break
            time.sleep(0.3)
        raise SystemExit(f"{url} did not answer 200; see .data/demo-worker.log")

    def _follow(self, batch: IngestionJob) -> None:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            batch.refresh_from_db()
            if batch.status in (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED):
                break
            time.sleep(1)
        for job in IngestionJob.objects.filter(batch=batch).select_related("document").order_by("document__title"):
            mark = "ok " if job.status == "succeeded" else "ERR"
            self.stdout.write(f"  {mark} {job.document.title:<32} {job.total:>4} chunks {job.error[:80]}")

    def _print_help(self, tokens: dict[str, str], passwords: dict[str, str], port: int) -> None:
        self.stdout.write(f"\nConsole: http://127.0.0.1:{port}/  (sign in with an e-mail and password below)")
        self.stdout.write("Demo members (passwords and tokens are new on every run; "
                          "`manage.py kb_user set-password EMAIL` sets your own):")
        self.stdout.write(f"  {'e-mail':<20} {'role':<6} {'clearance':<12} {'groups':<14} {'password':<22} API token")
        for email, role, clearance, groups in MEMBERS:
            self.stdout.write(f"  {email:<20} {role:<6} {clearance:<12} {','.join(groups) or '-':<14} "
                              f"{passwords[email]:<22} {tokens[email]}")
        alice = tokens[MEMBERS[0][0]]
        self.stdout.write("\nTry a search as each member -- the restricted incident-response text reaches alice only:")
        for query in EXAMPLE_QUERIES:
            body = json.dumps({"query": query, "top_k": 3})
            self.stdout.write(f"  .venv/bin/python manage.py kb_search {json.dumps(query)} --tenant demo --as carol@demo.example")
            self.stdout.write(
                f"  curl -s -X POST http://127.0.0.1:{port}/api/v1/search/ -H 'Authorization: Token {alice}' "
                f"-H 'Content-Type: application/json' -d '{body}'"
            )
        self.stdout.write(f"\nAPI docs: http://127.0.0.1:{port}/api/docs/   health: http://127.0.0.1:{port}/healthz")
        self.stdout.write("Ctrl-C stops the web server and the worker.")

