"""``manage.py kb_chunkeval --corpora DIR --questions FILE [--k 5,10] [--chunker NAME]... [--json FILE]``.

A thin wrapper: the evaluation lives in :mod:`bench.chunkeval` (no Django).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from bench.chunkeval import cli


class Command(BaseCommand):
    help = "Evaluate chunkers on a golden set: recall, precision, IoU at k, chunk size distributions."

    def add_arguments(self, parser):
        cli.add_arguments(parser)

    def handle(self, *args, **options):
        try:
            cli.run(
                corpora=options["corpora"],
                questions=options["questions"],
                k=options["k"],
                chunker=options["chunker"],
                json_path=options["json_path"],
                cache_dir=options["cache_dir"],
                no_cache=options["no_cache"],
                histograms=options["histograms"],
                pool=options["pool"],
                loo=options["loo"],
                objective=options["objective"],
                out=self.stdout,
            )
        except (ValueError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from exc
