"""`make demo`: migrate, a demo tenant with three members, the sample corpus, two workers and the web server.

Before anything starts it checks what it needs (bulkhead.launch.preflight): that no demo already
runs on this data folder, and that BULKHEAD_HOST:BULKHEAD_PORT is free (it binds the port itself
and hands it to gunicorn); either refusal is one line, exit status 1. Whichever way it ends --
Ctrl-C, SIGTERM, a failed start, the web server or a worker exiting -- every process it started
ends with it (bulkhead.launch.Supervisor); the embedded PostgreSQL and Redis stay up for reuse
(`make stop` stops them).
"""

from __future__ import annotations

import json
import os
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
from bulkhead import embedded_services, launch
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
# Every URL the banner prints, (label, path), all on BULKHEAD_HOST:BULKHEAD_PORT: a new way in adds its row.
DEMO_URLS = [
    ("Console", "/"),
    ("Search API", "/api/v1/search/"),
    ("API docs", "/api/docs/"),
    ("Health", "/healthz"),
    ("MCP", "/mcp"),
]
# How long the demo waits for /healthz to answer 200 once the web server and the workers are started
# (a process that exits meanwhile ends the wait at once). On 2 busy cores the workers took 130 s.
READY_SECONDS = 300
WEB_WORKERS, WEB_THREADS = launch.WEB_WORKERS, launch.WEB_THREADS


def worker_commands(log_dir: Path) -> list[tuple[str, list[str]]]:
    """The demo's Celery workers: the interactive lane alone (with beat), and both lanes."""
    worker = [sys.executable, "-m", "celery", "-A", "bulkhead", "worker", "--pool=solo", "--loglevel=INFO"]
    return [
        ("the worker demo@", [*worker, "-Q", settings.CELERY_TASK_DEFAULT_QUEUE, "-n", "demo@%h", "--beat",
                              "--schedule", str(log_dir / "celerybeat-schedule")]),
        ("the worker demo-bulk@", [*worker, "-n", "demo-bulk@%h"]),
    ]


class Command(BaseCommand):
    help = (
        "Run the demo: tenant, members, sample corpus, two Celery workers and the web server (gunicorn) on "
        "BULKHEAD_HOST:BULKHEAD_PORT (127.0.0.1:8000 by default)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--host", default=settings.BULKHEAD_HOST, help="default: BULKHEAD_HOST")
        parser.add_argument("--port", type=int, default=settings.BULKHEAD_PORT, help="default: BULKHEAD_PORT")
        parser.add_argument("--samples", default=str(Path(settings.BASE_DIR) / "samples"))
        parser.add_argument("--no-serve", action="store_true", help="set up and ingest, then exit")
        parser.add_argument("--web-workers", type=int, default=WEB_WORKERS, help="gunicorn worker processes")
        parser.add_argument("--web-threads", type=int, default=WEB_THREADS, help="threads per gunicorn worker")

    def handle(self, *args, **options):
        serve = not options["no_serve"]
        host, port = options["host"], options["port"]
        try:
            # Before anything starts (manage.py leaves starting the embedded servers to this command).
            held = launch.preflight(
                "demo", launch.ROLES if serve else ["worker"], host=host, port=port if serve else None,
                command="make demo",
            )
        except launch.Refused as exc:
            self.stderr.write(f"Not started: {exc}")
            sys.exit(1)
        try:
            with held, launch.Supervisor() as supervisor:
                self._run(supervisor, held, options)
        except launch.Stopped:
            self.stdout.write("\nstopped the web server and the workers; `make stop` stops PostgreSQL and Redis")
        except launch.ChildExited as exc:
            self.stderr.write(f"{exc}: stopped the demo's other processes")
            sys.exit(1)

    def _run(self, supervisor: launch.Supervisor, held: launch.Preflight, options) -> None:
        started = time.monotonic()
        serve, host, port = not options["no_serve"], options["host"], options["port"]
        self.stdout.write(f"starting the demo on the data folder {embedded_services.data_path()}: PostgreSQL and "
                          "Redis (or the ones DATABASE_URL and REDIS_URL name), migrations, the demo tenant")
        embedded_services.ensure_started()
        call_command("migrate", verbosity=0)
        tokens, passwords = self._tenant_and_members()
        # The children find the same embedded servers through the data folder (or the same *_URL variables).
        log_dir = embedded_services.data_dir()
        worker_log = log_dir / "demo-worker.log"
        with open(worker_log, "ab") as log:
            # Two workers, so one tenant's heavy document cannot hold up another's small upload:
            # "demo" serves the interactive lane alone (small uploads; it also runs beat),
            # "demo-bulk" both lanes (large documents and batch imports, and small uploads when it
            # is free; see kb/jobs.py, enqueue_jobs).
            for name, command in worker_commands(log_dir):
                supervisor.start(name, command, log=str(worker_log), stdout=log, stderr=log)
        if serve:
            fd = held.listener.fileno()
            supervisor.start(
                "the web server (gunicorn)",
                launch.web_command(fd, workers=options["web_workers"], threads=options["web_threads"]),
                pass_fds=(fd,), cwd=settings.BASE_DIR,
            )
            held.listener.close()  # gunicorn holds the port now
            held.listener = None
        batch = self._ingest_samples(Path(options["samples"]))
        if serve:
            self.stdout.write("waiting for the web server and the workers (/healthz answers 503 until they are up)")
            waited = self._wait_ready(supervisor, launch.base_url(host, port), worker_log)
            self.stdout.write(self.style.SUCCESS(
                f"/healthz answered 200 after {time.monotonic() - started:.1f}s ({waited:.1f}s after the servers started)"
            ))
        self._follow(supervisor, batch)
        if not serve:
            self.stdout.write("set up and ingested (--no-serve): stopping the workers")
            return
        self._print_help(tokens, passwords, host, port, worker_log)
        supervisor.wait()

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

    def _print_mcp(self, base: str, token: str) -> None:
        member = MEMBERS[-1][0]
        http, stdio = mcp_configs(base, token, Path(settings.BASE_DIR))
        self.stdout.write(f"\nMCP server (agents): {base}/mcp, Streamable HTTP, `Authorization: Bearer <API token>`. "
                          f"Paste-ready configurations, as {member}:")
        self.stdout.write("  over HTTP:  " + json.dumps(http))
        self.stdout.write("  over stdio: " + json.dumps(stdio))

    def _wait_ready(self, supervisor: launch.Supervisor, base: str, worker_log: Path) -> float:
        """Until /healthz answers 200 (a 503 says what is not up yet); a process exiting ends the wait."""
        started = time.monotonic()
        url, last = f"{base}/healthz", "nothing (no connection yet)"
        while time.monotonic() - started < READY_SECONDS:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    if response.status == 200:
                        return time.monotonic() - started
            except urllib.error.HTTPError as exc:
                last = f"{exc.code} {_failing(exc)}"
            except (urllib.error.URLError, OSError) as exc:
                last = f"nothing ({getattr(exc, 'reason', exc)})"
            supervisor.sleep(1.0)
        raise SystemExit(
            f"the demo was not ready after {READY_SECONDS} s: {url} last answered {last}; the workers' log is "
            f"{worker_log}, the web server's is above. Stopped the demo's processes."
        )

    def _follow(self, supervisor: launch.Supervisor, batch: IngestionJob) -> None:
        deadline = time.monotonic() + 900
        while time.monotonic() < deadline:
            batch.refresh_from_db()
            if batch.status in (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED):
                break
            supervisor.sleep(1)
        for job in IngestionJob.objects.filter(batch=batch).select_related("document").order_by("document__title"):
            mark = "ok " if job.status == "succeeded" else "ERR"
            self.stdout.write(f"  {mark} {job.document.title:<32} {job.total:>4} chunks {job.error[:80]}")

    def _print_help(self, tokens: dict[str, str], passwords: dict[str, str], host: str, port: int,
                    worker_log: Path) -> None:
        base = launch.base_url(host, port)
        self.stdout.write(f"\nBulkhead demo on {host}:{port} (BULKHEAD_HOST, BULKHEAD_PORT):")
        for label, path in DEMO_URLS:
            self.stdout.write(f"  {label:<11} {base}{path}")
        if host in launch.WILDCARD_HOSTS:
            self.stdout.write(f"  ({host} listens on every interface; from another machine use this one's address, "
                              "listed in ALLOWED_HOSTS, and BULKHEAD_SECURE_COOKIES=0 over plain HTTP)")
        self.stdout.write("\nDemo members: sign in to the console with an e-mail and password below "
                          "(passwords and tokens are new on every run; `manage.py kb_user set-password EMAIL` sets your own):")
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
                f"  curl -s -X POST {base}/api/v1/search/ -H 'Authorization: Token {alice}' "
                f"-H 'Content-Type: application/json' -d '{body}'"
            )
        self._print_mcp(base, tokens[MEMBERS[-1][0]])
        self.stdout.write(f"\nLogs: the workers' in {worker_log}, the web server's here.")
        self.stdout.write("Ctrl-C stops the web server and the workers; `make stop` also stops PostgreSQL and Redis.")


def mcp_configs(base: str, token: str, checkout: Path) -> tuple[dict, dict]:
    """Client configuration for the MCP server, ready to paste (the ``mcpServers`` shape most agents
    read): Streamable HTTP with the bearer header, and stdio through ``manage.py kb_mcp``."""
    http = {"mcpServers": {"bulkhead": {"type": "http", "url": f"{base}/mcp",
                                        "headers": {"Authorization": f"Bearer {token}"}}}}
    stdio = {"mcpServers": {"bulkhead": {"command": str(checkout / ".venv" / "bin" / "python"),
                                         "args": [str(checkout / "manage.py"), "kb_mcp"],
                                         "env": {"BULKHEAD_TOKEN": token}}}}
    if os.environ.get("BULKHEAD_DATA_DIR"):  # the demo's own data folder, where kb_mcp finds its database
        stdio["mcpServers"]["bulkhead"]["env"]["BULKHEAD_DATA_DIR"] = str(embedded_services.data_path())
    return http, stdio


def _failing(error: urllib.error.HTTPError) -> str:
    """What a /healthz 503 says is not up, e.g. "(workers: no worker replied)"."""
    try:
        body = json.loads(error.read() or b"{}")
        failing = body.get("failing") or []
        return "(" + ", ".join(f"{name}: {body.get(name, 'failing')}" for name in failing) + ")"
    except (ValueError, AttributeError, OSError):
        return ""
