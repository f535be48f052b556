"""Re-screen stored chunks whose detector version is not the current one (no re-embedding)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from accounts.errors import ApplicationError
from accounts.tenancy import tenant_act_for
from ingestion.screening import DETECTOR_VERSION


class Command(BaseCommand):
    help = ("Re-screen chunks screened by another detector version than the current one, without re-embedding: "
            "sends the Celery task, or runs it here with --here.")

    def add_arguments(self, parser):
        parser.add_argument("--tenant", help="only this tenant (slug); default: every tenant with stale chunks")
        parser.add_argument("--here", action="store_true", help="run in this process and print the counts")

    def handle(self, *args, **options):
        from pipeline.rescreen import rescreen
        from pipeline.tasks import rescreen_chunks

        tenant_ids = None
        if options["tenant"]:
            try:
                tenant_ids = [tenant_act_for(slug=options["tenant"]).pk]
            except ApplicationError as exc:
                raise CommandError(str(exc)) from None
        if options["here"]:
            self.stdout.write(json.dumps({"detector": DETECTOR_VERSION, **rescreen(tenant_ids=tenant_ids)}))
            return
        result = rescreen_chunks.delay(tenant_ids)
        self.stdout.write(f"re-screen task {result.id} sent (detector {DETECTOR_VERSION})")
