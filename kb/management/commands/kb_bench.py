"""Benchmarks that print numbers (recorded in docs/benchmarks.md), one subcommand each.

    DATABASE_URL=postgresql://postgres:@/bulkhead_bench?host=$PWD/.data/pg \\
        python manage.py kb_bench search --chunks 100000 --tenants 10 --queries 250

``search`` needs its own database (the name must contain "bench"): it creates it when
missing, migrates it, loads the rows and measures; see kb.search_bench.
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
        "`ingest` (pipeline throughput through a real worker vs bare model.encode)."
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
        search.add_argument("--no-tenant-indexes", action="store_true",
                            help="measure search() on the shared HNSW index alone (no per-tenant indexes)")
        search.add_argument("--tenant-index-min-rows", type=int, default=None,
                            help="tenants with this many chunks get their own index (default: the setting)")
        ingest = sub.add_parser("ingest", help="ingestion throughput through a real worker vs bare model.encode")
        ingest.add_argument("paths", nargs="+", help="files or folders of real documents")
        ingest.add_argument("--min-chunks", type=int, default=2000, help="stop adding files past this many chunks")
        ingest.add_argument("--json", dest="json_out", help="also write the numbers as JSON here")

    def handle(self, *args, **options):
        if options["subcommand"] == "search":
            self._search(options)
        elif options["subcommand"] == "ingest":
            self._ingest(options)

    def _ingest(self, options):
        import json

        from ingestion.benchmark import run

        result = run(options["paths"], min_chunks=options["min_chunks"], out=self.stdout.write)
        if options["json_out"]:
            Path(options["json_out"]).write_text(json.dumps(result, indent=2))

    def _search(self, options):
        from kb import search_bench
        from kb.search_bench_corpus import CORPUS_SIZE, build

        _ensure_database()
        call_command("migrate", verbosity=0)
        out = self.stdout.write
        source = Path(options["django_docs"])
        if options["embed"]:
            texts, vectors = build(CORPUS_SIZE, django_source=source, log=out)
        else:
            texts, vectors = search_bench.prepare(chunks=options["chunks"], django_source=source, log=out)
        if not len(vectors):
            raise CommandError("no cached embeddings yet: run with --embed (or python -m kb.search_bench_corpus)")
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
                                    truth=baseline["truth"], log=out)
        ours["series"] |= baseline["series"]
        out("")
        out(search_bench.report(stats, ours))
