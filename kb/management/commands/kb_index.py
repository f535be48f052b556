"""Index versions from the command line: create, build, activate, drop, list (thin over kb.index_versions);
and per-tenant vector indexes: ``tenant-indexes list|sync|build|drop`` (thin over kb.tenant_indexes)."""

from __future__ import annotations

import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from accounts.errors import ApplicationError
from accounts.selectors import tenant_get
from accounts.tenancy import tenant_act_for
from kb import index_versions as versions
from kb.models import IngestionJob

FINISHED = (IngestionJob.Status.SUCCEEDED, IngestionJob.Status.FAILED)


class Command(BaseCommand):
    help = "Manage a tenant's index versions (create, build, activate, drop, list) and per-tenant vector indexes."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="create a shadow version from a config; prints its short id")
        create.add_argument("--tenant", required=True)
        create.add_argument("--config", help="a JSON file with chunking config keys")
        create.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="a config key (repeatable; applied after --config), e.g. --set target_tokens=128")
        create.add_argument("--name", default="")
        build = sub.add_parser("build", help="re-index every ready document into the version (resumable)")
        build.add_argument("version", help="short id (12 hex of the config hash) or full uuid")
        build.add_argument("--tenant", required=True)
        build.add_argument("--wait", action="store_true", help="show progress until the build ends")
        build.add_argument("--timeout", type=float, default=0, help="with --wait: give up after N seconds")
        activate = sub.add_parser("activate", help="switch the tenant's searches to the version, atomically")
        activate.add_argument("version")
        activate.add_argument("--tenant", required=True)
        activate.add_argument("--force", action="store_true", help="even if not built for every ready document")
        drop = sub.add_parser("drop", help="delete a non-active version and its chunks")
        drop.add_argument("version")
        drop.add_argument("--tenant", required=True)
        drop.add_argument("--force", action="store_true", help="even while its build runs")
        listing = sub.add_parser("list", help="the tenant's versions with counts, status and config")
        listing.add_argument("--tenant", required=True)
        listing.add_argument("--json", action="store_true")
        partial = sub.add_parser(
            "tenant-indexes", help="per-tenant HNSW indexes: list, sync (build/drop by tenant size), build, drop"
        )
        partial.add_argument("step", choices=("list", "sync", "build", "drop"))
        partial.add_argument("--tenant", help="for build and drop: the tenant's slug")
        partial.add_argument("--min-rows", type=int, help="for sync: the size that earns an index "
                             "(default BULKHEAD_TENANT_INDEX_MIN_ROWS)")

    def handle(self, *args, **options):
        try:
            if options["action"] == "tenant-indexes":
                return self._tenant_indexes(options)
            tenant = tenant_act_for(slug=options["tenant"])
            getattr(self, f"_{options['action']}")(tenant, options)
        except ApplicationError as exc:
            raise CommandError(str(exc)) from None

    def _create(self, tenant, options):
        base = versions.config_from_json_file(options["config"]) if options["config"] else None
        config = versions.index_version_config(base=base, settings=options["set"])
        version, created = versions.index_version_create(tenant=tenant, config=config, name=options["name"])
        note = "" if created else f" (exists: {version.status}{', active' if version.is_active else ''})"
        self.stderr.write(f"version {version.id}: {versions.config_summary(version.config)}{note}")
        self.stdout.write(version.short_id)

    def _build(self, tenant, options):
        version = versions.index_version_get(tenant=tenant, ref=options["version"])
        job = versions.index_version_build(version=version)
        self.stdout.write(f"build job {job.id}: {job.done}/{job.total} documents done")
        if options["wait"]:
            job = self._follow(job, options["timeout"])
        self._report(versions.index_version_build_report(job=job))
        if options["wait"] and job.status == IngestionJob.Status.FAILED:
            raise CommandError(f"the build failed: {job.error}")

    def _follow(self, job: IngestionJob, timeout: float) -> IngestionJob:
        started = time.monotonic()
        interactive = sys.stdout.isatty()
        while True:
            job.refresh_from_db()
            line = f"{job.done}/{job.total} documents ({job.status})"
            if interactive:
                self.stdout.write(f"\r{line}   ", ending="")
            if job.status in FINISHED:
                self.stdout.write(("\n" if interactive else "") + f"build {job.status}: {line}")
                return job
            if timeout and time.monotonic() - started > timeout:
                raise CommandError(f"still building after {timeout:.0f}s: {line}; run build again to resume")
            time.sleep(0.5)

    def _report(self, report: dict) -> None:
        for item in report["skipped"]:
            self.stdout.write(f"skipped {item['title']!r}: {item['reason']}")
        for item in report["failed"]:
            self.stdout.write(f"failed {item['title']!r}: {item['error']}")
        if report["left_out"]:
            self.stdout.write(f"{report['left_out']} documents not ready (pending, processing or failed) were left out")

    def _activate(self, tenant, options):
        version = versions.index_version_get(tenant=tenant, ref=options["version"])
        version = versions.index_version_activate(version=version, force=options["force"])
        self.stdout.write(f"active: {version.short_id} ({versions.config_summary(version.config)})")

    def _drop(self, tenant, options):
        version = versions.index_version_get(tenant=tenant, ref=options["version"])
        deleted = versions.index_version_drop(version=version, force=options["force"])
        self.stdout.write(f"dropped {version.short_id} and {deleted} chunks")

    def _list(self, tenant, options):
        rows = list(versions.index_version_list(tenant=tenant, reader=None))
        if options["json"]:
            self.stdout.write(json.dumps([versions.version_as_dict(v) for v in rows], indent=2))
            return
        header = f"{'':2}{'short id':<14}{'status':<10}{'documents':>10}{'chunks':>9}  {'name':<16}config"
        self.stdout.write(header)
        for v in rows:
            self.stdout.write(
                f"{'*' if v.is_active else '':2}{v.short_id:<14}{v.status:<10}{v.document_count:>10}"
                f"{v.chunk_count:>9}  {v.name[:15]:<16}{versions.config_summary(v.config)}"
            )

    def _tenant_indexes(self, options):
        from accounts.models import Tenant
        from kb import tenant_indexes as partial

        step = options["step"]
        if step in ("build", "drop"):
            if not options["tenant"]:
                raise CommandError(f"tenant-indexes {step} needs --tenant")
            tenant = tenant_get(slug=options["tenant"])
            if step == "build":
                started = time.monotonic()
                index = partial.tenant_index_build(tenant_id=tenant.id)
                self.stdout.write(f"{index.name}: {index.rows} rows, {index.size_bytes / 2**20:.1f} MiB "
                                  f"({time.monotonic() - started:.1f}s)")
            else:
                dropped = partial.tenant_index_drop(tenant_id=tenant.id)
                self.stdout.write(f"dropped {partial.index_name(tenant.id)}" if dropped else "no index to drop")
            return
        if step == "sync":
            report = partial.tenant_indexes_sync(min_rows=options["min_rows"], log=self.stderr.write)
            if report.skipped:
                raise CommandError("another sync is running; try again when it ends")
            self.stdout.write(f"built {len(report.built)}, dropped {len(report.dropped)}")
            return
        slugs = dict(Tenant.objects.values_list("id", "slug"))
        counts = partial.tenant_chunk_counts()
        self.stdout.write(f"{'tenant':<24}{'chunks':>9}{'index rows':>12}{'MiB':>8}  state")
        for index in partial.tenant_indexes():
            slug = slugs.get(index.tenant_id, f"(deleted tenant {index.tenant_id})")
            self.stdout.write(
                f"{slug[:23]:<24}{counts.get(index.tenant_id, 0):>9}{index.rows:>12}"
                f"{index.size_bytes / 2**20:>8.1f}  {'valid' if index.valid else 'INVALID (rebuilt by the next sync)'}"
            )
