"""Benchmarks that print numbers (recorded in docs/benchmarks.md), one subcommand each.

    DATABASE_URL=postgresql://postgres:@/bulkhead_bench?host=$PWD/.data/pg \\
        python manage.py kb_bench search --chunks 100000 --tenants 10 --queries 250

``search`` needs its own database (the name must contain "bench"): it creates it when
missing, migrates it, loads the rows and measures; see bench.search_bench.

``load`` is the soak-and-chaos harness (bench.load_harness): it starts gunicorn, Celery workers and
beat on the embedded servers of a data folder of its own, drives a mixed load with faults and
checks every answer for leaks (results in docs/reliability.md)::

    BULKHEAD_DATA_DIR=.data/load python manage.py kb_bench load --seconds 60 --json out/load.json
"""

from __future__ import annotations

from pathlib import Path

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection


def _ensure_database() -> None:
    """Create the (bench) database named in settings when it does not exist yet."""
    import psycopg
    from psycopg import sql

    settings = connection.settings_dict
    name = settings["NAME"]
    if "bench" not in name:
        raise CommandError(f"refusing to benchmark in database {name!r}: its name must contain 'bench'")
    params = {"dbname": "postgres", "user": settings["USER"], "password": settings["PASSWORD"] or None,
              "host": settings["HOST"] or None, "port": settings["PORT"] or None}
    with psycopg.connect(**{k: v for k, v in params.items() if v}, autocommit=True) as admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone():
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


class Command(BaseCommand):
    help = (
        "Benchmarks: `search` (filtered vector/hybrid search latency and recall), "
        "`ingest` (pipeline throughput through a real worker vs bare model.encode), "
        "`load` (soak and chaos: mixed load with faults, leaks and invariants checked)."
    )

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="subcommand", required=True)
        search = sub.add_parser("search", help="latency and recall of permission-filtered search")
        search.add_argument("--chunks", type=int, default=100_000)
        search.add_argument("--tenants", type=int, default=10)
        search.add_argument("--queries", type=int, default=250)
        search.add_argument("--django-docs", default="/tmp/djsrc/django-5.2.19",
                            help="an unpacked Django source distribution (its docs/ are part of the corpus)")
        search.add_argument("--embed", action="store_true",
                            help="embed every missing text first (slow); default: use the vectors cached so far")
        search.add_argument("--skip-load", action="store_true", help="measure the rows already loaded")
        search.add_argument("--corpus", type=int, default=None,
                            help="use the cached corpus of this many real texts (default: the full one); "
                                 "rows beyond it are noisy copies of its embeddings")
        search.add_argument("--rls", action="store_true",
                            help="instead of (c)-(f): each search mode with and without the tenant wall, side by side")
        search.add_argument("--rls-no-audit", action="store_true",
                            help="with --rls: the walled side without the search's audit record (the wall alone)")
        search.add_argument("--rls-access", action="store_true",
                            help="with --rls: then again with the access rule as a chunk policy as well")
        search.add_argument("--no-tenant-indexes", action="store_true",
                            help="measure search() on the shared HNSW index alone (no per-tenant indexes)")
        search.add_argument("--tenant-index-min-rows", type=int, default=None,
                            help="tenants with this many chunks get their own index (default: the setting)")
        audit = sub.add_parser("audit", help="search latency with and without the audit record, in one run")
        audit.add_argument("--chunks", type=int, default=100_000)
        audit.add_argument("--tenants", type=int, default=10)
        audit.add_argument("--queries", type=int, default=250)
        audit.add_argument("--skip-load", action="store_true", help="measure the rows already loaded")
        ingest = sub.add_parser("ingest", help="ingestion throughput through a real worker vs bare model.encode")
        ingest.add_argument("paths", nargs="+", help="files or folders of real documents")
        ingest.add_argument("--min-chunks", type=int, default=2000, help="stop adding files past this many chunks")
        ingest.add_argument("--json", dest="json_out", help="also write the numbers as JSON here")
        ingest.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="ingest into a version of the default config with these keys (e.g. piece_weight=0.4)")
        ingest.add_argument("--queries", default="",
                            help="a golden .jsonl: also time search() (vector and hybrid) over the ingested corpus")
        sources = sub.add_parser("sources", help="a Git source made from a documentation tree: sync stages")
        sources.add_argument("docs", help="a folder of documentation (e.g. Django's docs/)")
        sources.add_argument("--no-ingest", action="store_true", help="time the sync's stages only (no worker)")
        sources.add_argument("--ingest-changes-only", action="store_true",
                             help="ingest the re-syncs' changes only (the first sync's jobs are not run)")
        self._load_arguments(sub)

    def _load_arguments(self, sub) -> None:
        from bench.load_harness import SCENARIOS, LoadConfig

        defaults = LoadConfig()
        load = sub.add_parser("load", help="soak and chaos: mixed load, faults, leak and invariant checks")
        load.add_argument("--seconds", type=float, default=defaults.seconds, help="load time per scenario")
        load.add_argument("--max-requests", type=int, default=defaults.max_requests, help="per scenario")
        load.add_argument("--scenarios", default=",".join(SCENARIOS),
                          help=f"comma-separated, in order; any of {', '.join(SCENARIOS)}")
        load.add_argument("--readers", type=int, default=defaults.readers, help="reader threads per tenant")
        load.add_argument("--reader-think", type=float, default=defaults.reader_think,
                          help="mean seconds between a reader's requests (0: back to back, saturating)")
        load.add_argument("--editors", type=int, default=defaults.editors, help="editor threads per tenant")
        load.add_argument("--documents", type=int, default=defaults.documents, help="per tenant, before the load")
        load.add_argument("--sync-files", type=int, default=defaults.sync_files,
                          help="files of the sync scenario's Git repository (at least 40)")
        load.add_argument("--web-workers", type=int, default=defaults.web_workers)
        load.add_argument("--web-threads", type=int, default=defaults.web_threads)
        load.add_argument("--workers", type=int, default=defaults.workers, help="Celery worker processes")
        load.add_argument("--down-seconds", type=float, default=defaults.down_seconds,
                          help="how long a restarted dependency stays down")
        load.add_argument("--settle-seconds", type=float, default=defaults.settle_seconds)
        load.add_argument("--idle-searches", type=int, default=defaults.idle_searches,
                          help="searches one at a time before the load (the idle latency)")
        load.add_argument("--scale", action="store_true",
                          help="also measure ingestion and search throughput with 1, 2 and 4 processes")
        load.add_argument("--scale-documents", type=int, default=defaults.scale_documents)
        load.add_argument("--scale-seconds", type=float, default=defaults.scale_seconds)
        load.add_argument("--seed", type=int, default=defaults.seed)
        load.add_argument("--worker-pool", choices=("prefork", "solo"), default=defaults.worker_pool,
                          help="the workers' Celery pool: prefork as `make worker`, solo as the demo")
        load.add_argument("--keep-services", action="store_true",
                          help="leave the data folder's PostgreSQL and Redis running afterwards")
        load.add_argument("--json", dest="json_out", help="also write the report as JSON here")

    def handle(self, *args, **options):
        from accounts.tenancy import owner_login_for_this_process

        # A benchmark sets up and checks every tenant's rows: it works as the owner (past the tenant
        # wall). What it measures runs as the application: the servers and workers it starts log in as
        # the application's role, and `search --rls` switches to it for the measured searches.
        owner_login_for_this_process()
        if options["subcommand"] == "search":
            self._search(options)
        elif options["subcommand"] == "audit":
            self._audit(options)
        elif options["subcommand"] == "ingest":
            self._ingest(options)
        elif options["subcommand"] == "load":
            self._load(options)
        elif options["subcommand"] == "sources":
            from bench.sources_bench import run

            call_command("migrate", verbosity=0)  # a new data folder has no tables yet
            run(options["docs"], out=self.stdout.write, ingest=not options["no_ingest"],
                ingest_changes_only=options["ingest_changes_only"])

    def _load(self, options):
        import json
        import os
        import signal
        import sys

        from bench.load_harness import SCENARIOS, Harness, LoadConfig, format_report

        # The harness restarts the embedded servers and starts processes on them: never on servers
        # named by URL, and never on the default data folder (a developer's demo).
        if os.environ.get("DATABASE_URL") or os.environ.get("REDIS_URL"):
            raise CommandError("kb_bench load runs on embedded servers only: unset DATABASE_URL and REDIS_URL")
        if not os.environ.get("BULKHEAD_DATA_DIR"):
            raise CommandError("set BULKHEAD_DATA_DIR to a data folder of its own (e.g. .data/load)")
        scenarios = tuple(s.strip() for s in options["scenarios"].split(",") if s.strip())
        unknown = [s for s in scenarios if s not in SCENARIOS]
        if unknown:
            raise CommandError(f"unknown scenarios {unknown}; choose from {', '.join(SCENARIOS)}")
        config = LoadConfig(
            seconds=options["seconds"], max_requests=options["max_requests"], scenarios=scenarios,
            readers=options["readers"], reader_think=options["reader_think"], editors=options["editors"],
            documents=options["documents"],
            web_workers=options["web_workers"], web_threads=options["web_threads"], workers=options["workers"],
            down_seconds=options["down_seconds"], settle_seconds=options["settle_seconds"],
            idle_searches=options["idle_searches"], scale=options["scale"],
            scale_documents=options["scale_documents"], scale_seconds=options["scale_seconds"], seed=options["seed"],
            keep_services=options["keep_services"], worker_pool=options["worker_pool"],
            sync_files=options["sync_files"],
        )
        # SIGTERM (a test's clean-up, a CI timeout) unwinds like Ctrl-C, so the harness stops what it started.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
        out = self.stdout.write
        report = Harness(config, log=lambda line: (out(line), self.stdout.flush())).run_all()
        out(format_report(report))
        if options["json_out"]:
            Path(options["json_out"]).parent.mkdir(parents=True, exist_ok=True)
            Path(options["json_out"]).write_text(json.dumps(report, indent=2, default=str))

    def _ingest(self, options):
        import json

        from bench.ingest_bench import run

        result = run(options["paths"], min_chunks=options["min_chunks"], out=self.stdout.write,
                     settings=options["set"], queries=options["queries"])
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(result, indent=2))

    def _audit(self, options):
        from django.conf import settings

        from bench import audit_bench, search_bench

        _ensure_database()
        call_command("migrate", verbosity=0)
        out = self.stdout.write
        texts, vectors, words = audit_bench.synthetic_corpus()
        stats: dict = {}
        if not options["skip_load"]:
            stats = search_bench.load(texts=texts, vectors=vectors, chunks=options["chunks"],
                                      tenants=options["tenants"], log=out)
            stats |= search_bench.build_tenant_indexes(min_rows=settings.BULKHEAD_TENANT_INDEX_MIN_ROWS, log=out)
            out(str(stats))
        stored, _ = search_bench.perturbed(vectors, options["chunks"])
        measured = audit_bench.measure(vectors=stored, words=words, queries=options["queries"], log=out)
        out("")
        out(audit_bench.report(stats, measured))

    def _search(self, options):
        from bench import search_bench
        from bench.search_bench_corpus import CORPUS_SIZE, build

        _ensure_database()
        call_command("migrate", verbosity=0)
        out = self.stdout.write
        source = Path(options["django_docs"])
        if options["embed"]:
            texts, vectors = build(CORPUS_SIZE, django_source=source, log=out)
        else:
            texts, vectors = search_bench.prepare(chunks=options["chunks"], django_source=source, log=out,
                                                  corpus=options["corpus"] or CORPUS_SIZE)
        if not len(vectors):
            raise CommandError("no cached embeddings yet: run with --embed (or python -m bench.search_bench_corpus)")
        from django.conf import settings

        stats = {}
        if not options["skip_load"]:
            stats = search_bench.load(texts=texts, vectors=vectors, chunks=options["chunks"],
                                      tenants=options["tenants"], log=out)
            out(str(stats))
        # (a) and (b) first, on the shared index alone: (b) is the common single-index setup.
        search_bench.drop_tenant_indexes()
        baseline = search_bench.measure(texts=texts, queries=options["queries"], phase="baseline", log=out)
        if not options["no_tenant_indexes"]:
            min_rows = options["tenant_index_min_rows"] or settings.BULKHEAD_TENANT_INDEX_MIN_ROWS
            stats |= search_bench.build_tenant_indexes(min_rows=min_rows, log=out)
            out(str(stats))
        ours = search_bench.measure(texts=texts, queries=options["queries"], phase="ours",
                                    truth=baseline["truth"], log=out, wall="rls" if options["rls"] else "",
                                    audit=not options["rls_no_audit"])
        if options["rls"] and options["rls_access"]:
            search_bench.access_policy(create=True)
            try:
                access = search_bench.measure(texts=texts, queries=options["queries"], phase="ours",
                                              truth=baseline["truth"], log=out, wall="access",
                                              audit=not options["rls_no_audit"])
            finally:
                search_bench.access_policy(create=False)
            ours["series"] |= access["series"]
        ours["series"] |= baseline["series"]
        out("")
        out(search_bench.report(stats, ours))
