"""``manage.py kb_transfer [--suite DIR] [--k 5] [--chunker NAME]... [--json FILE]``.

The transfer suite of issue 30 (:mod:`bench.transfer_suite`): per source and per question type,
bootstrap intervals, leave-one-source-out. Needs no database.
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from bench import transfer_suite


class Command(BaseCommand):
    help = "Chunkers on the transfer suite: per source, per question type, bootstrap CIs, leave-one-source-out."

    def add_arguments(self, parser):
        parser.add_argument("--suite", default=None, help="suite directory (default evaluation/transfer)")
        parser.add_argument("--k", type=int, default=5)
        parser.add_argument(
            "--chunker",
            action="append",
            default=None,
            help="chunker name as in kb_chunkeval; repeatable; the first is the baseline of the gains",
        )
        parser.add_argument("--cache-dir", default=None, help="embedding cache directory (default .bench-cache)")
        parser.add_argument("--rounds", type=int, default=2000, help="bootstrap rounds")
        parser.add_argument("--json", dest="json_path", default=None, help="also write per-question scores here")

    def handle(self, *args, **options):
        try:
            transfer_suite.run(
                suite=options["suite"],
                k=options["k"],
                chunker=options["chunker"],
                cache_dir=options["cache_dir"],
                rounds=options["rounds"],
                json_path=options["json_path"],
                out=self.stdout,
            )
        except (ValueError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from exc
