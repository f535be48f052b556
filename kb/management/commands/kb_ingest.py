"""Bulk ingestion: walk files and folders, one batch job, a progress bar, a summary table."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Sum

from accounts.errors import ApplicationError
from accounts.tenancy import tenant_act_for
from kb.models import IngestionJob
from kb.services import Upload, batch_create


def walk(paths: list[str]) -> list[Path]:
    """Named files always; inside folders, only files of a registered type (hidden ones skipped)."""
    from ingestion.parsers import detect_content_type

    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(names):
                    candidate = Path(root) / name
                    if not name.startswith(".") and detect_content_type(name, b"") is not None:
                        files.append(candidate)
        else:
            raise CommandError(f"no such file or folder: {raw}")
    return files


def _bar(fraction: float, width: int = 28) -> str:
    filled = int(round(fraction * width))
    return "[" + "#" * filled + "." * (width - filled) + "]"


class Command(BaseCommand):
    help = "Ingest files and folders into a tenant as one batch job."

    def add_arguments(self, parser):
        parser.add_argument("paths", nargs="+", help="files and folders to ingest")
        parser.add_argument("--tenant", required=True)
        parser.add_argument("--access", default="internal", help="default access level (default: internal)")
        parser.add_argument("--groups", default="", help="default groups, comma-separated")
        parser.add_argument("--tags", default="", help="tags, comma-separated")
        parser.add_argument("--wait", action="store_true", help="show progress until the batch ends")
        parser.add_argument("--timeout", type=float, default=0, help="with --wait: give up after N seconds")

    def handle(self, *args, **options):
        tenant = self._call(lambda: tenant_act_for(slug=options["tenant"]))
        files = walk(options["paths"])
        if not files:
            raise CommandError("nothing to ingest: no supported files found")
        groups = [g.strip() for g in options["groups"].split(",") if g.strip()]
        tags = [t.strip() for t in options["tags"].split(",") if t.strip()]
        uploads = [
            Upload(
                content=path.read_bytes(), title=path.name, source=str(path.resolve()), tags=tags,
                access_level=options["access"], groups=groups,
            )
            for path in files
        ]
        # The command line acts for the tenant with no member (whoever holds the database): no
        # member's limits apply to the default policy, only that it names a known level and groups.
        batch = self._call(lambda: batch_create(tenant=tenant, created_by=None, uploads=uploads))
        self.stdout.write(f"batch {batch.id}: {len(files)} documents queued in tenant {tenant.slug}")
        if not options["wait"]:
            self.stdout.write("follow it with --wait, the API (GET /api/v1/jobs/<id>/) or the admin")
            return
        self._follow(batch, options["timeout"])

    def _call(self, fn):
        try:
            return fn()
        except ApplicationError as exc:
            raise CommandError(exc.message, returncode=2) from None

    def _follow(self, batch: IngestionJob, timeout: float) -> None:
        from celery import current_app as app

        if not (app.control.ping(timeout=1.0) or []):
            self.stderr.write("warning: no worker answered a ping; start one with `make worker`")
        started = time.monotonic()
        tty = sys.stdout.isatty()
        last_line = ""
        while True:
            batch.refresh_from_db()
            children = IngestionJob.objects.filter(batch=batch)
            chunks = children.aggregate(n=Sum("done"))["n"] or 0
            elapsed = max(time.monotonic() - started, 1e-6)
            rate = chunks / elapsed
            docs_rate = batch.done / elapsed
            eta = f"{(batch.total - batch.done) / docs_rate:.0f}s" if docs_rate > 0 else "--"
            fraction = batch.done / batch.total if batch.total else 1.0
            line = (
                f"{_bar(fraction)} {batch.done}/{batch.total} documents, {chunks} chunks, "
                f"{rate:.1f} chunks/s, ETA {eta}"
            )
            if tty:
                self.stdout.write("\r" + line, ending="")
                self.stdout.flush()
            elif line != last_line and int(elapsed) % 5 == 0:
                self.stdout.write(line)
            last_line = line
            if batch.status in (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED):
                break
            if timeout and elapsed > timeout:
                raise CommandError(f"batch {batch.id} still running after {timeout:.0f}s", returncode=3)
            time.sleep(0.5)
        if tty:
            self.stdout.write("")
        self._summary(batch, time.monotonic() - started)

    def _summary(self, batch: IngestionJob, elapsed: float) -> None:
        rows = list(
            IngestionJob.objects.filter(batch=batch).select_related("document").order_by("document__source")
        )
        width = min(max((len(r.document.title) for r in rows), default=8), 60)
        self.stdout.write(f"\n{'document':<{width}}  {'status':<9}  {'chunks':>6}  error")
        for row in rows:
            error = row.error.replace("\n", " ")[:100]
            self.stdout.write(f"{row.document.title[:width]:<{width}}  {row.status:<9}  {row.total:>6}  {error}")
        failed = [r for r in rows if r.status == IngestionJob.Status.FAILED]
        chunks = sum(r.total for r in rows if r.status == IngestionJob.Status.SUCCEEDED)
        self.stdout.write(
            f"\n{len(rows) - len(failed)} succeeded, {len(failed)} failed, {chunks} chunks in {elapsed:.1f}s "
            f"({chunks / max(elapsed, 1e-6):.1f} chunks/s)"
        )
        if failed:
            names = "; ".join(f"{r.document.source or r.document.title}: {r.error}" for r in failed)
            raise CommandError(f"{len(failed)} document(s) failed: {names}", returncode=1)
