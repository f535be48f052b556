"""``manage.py kb_chunk FILE... [--jsonl] [--target-tokens N]``: show how files are chunked.

A thin wrapper: the logic lives in :mod:`ingestion.chunking.inspection` (no Django).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from ingestion.chunking import inspection


class Command(BaseCommand):
    help = "Print each chunk of the given files: span, heading path, access, token count and embedded text."

    def add_arguments(self, parser):
        inspection.add_arguments(parser)

    def handle(self, *args, **options):
        try:
            failures = inspection.run(
                files=options["files"],
                jsonl=options["jsonl"],
                target_tokens=options["target_tokens"],
                out=self.stdout,
                err=self.stderr,
            )
        except ValueError as exc:  # an invalid chunking configuration
            raise CommandError(str(exc)) from exc
        if failures:
            raise CommandError(f"{failures} file(s) could not be chunked")
