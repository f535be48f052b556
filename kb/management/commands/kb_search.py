"""Search as a member from the command line: ranked hits with sources, then the contexts."""

from __future__ import annotations

import argparse
import textwrap

from django.core.management.base import BaseCommand, CommandError

from accounts.errors import ApplicationError
from accounts.selectors import membership_get
from accounts.tenancy import tenant_act_for
from kb.search import search
from kb.search_modes import EXPAND_LEVELS, EXPANDS, MODES


class Command(BaseCommand):
    help = "Search a tenant's knowledge base as one of its members."

    def add_arguments(self, parser):
        parser.add_argument("query")
        parser.add_argument("--tenant", required=True, help="tenant slug")
        parser.add_argument("--as", dest="email", required=True, help="the member's email")
        parser.add_argument("--mode", choices=MODES, default="hybrid")
        parser.add_argument("--expand", choices=EXPANDS, default="parent")
        parser.add_argument("--level", choices=EXPAND_LEVELS, default="leaf", help="parent expansion level")
        parser.add_argument("--k", type=int, default=5, help="number of hits (1-100)")
        parser.add_argument("--neighbors", type=int, default=1)
        parser.add_argument("--max-contexts", type=int, default=5)
        parser.add_argument("--budget", type=int, default=2000, help="context token budget")
        parser.add_argument("--budget-fill", action=argparse.BooleanOptionalAction, default=None,
                            help="the budget fill on or off (neither: the server's default)")
        parser.add_argument("--width", type=int, default=100, help="wrap text at this width")

    def handle(self, *args, **options):
        try:
            tenant = tenant_act_for(slug=options["tenant"])
            member = membership_get(tenant=tenant, email=options["email"])
            response = search(
                member=member, query=options["query"], top_k=options["k"], mode=options["mode"],
                expand=options["expand"], expand_level=options["level"], neighbors=options["neighbors"],
                max_contexts=options["max_contexts"], context_token_budget=options["budget"],
                budget_fill=options["budget_fill"],
            )
        except ApplicationError as exc:
            raise CommandError(exc.message) from None
        width = options["width"]
        out = self.stdout.write
        plan = f", plan {response.plan}" if response.plan else ""
        out(self.style.MIGRATE_HEADING(
            f"{len(response.results)} results ({response.mode}{plan}; index version {response.index_version_id})"
        ))
        for hit in response.results:
            distance = "" if hit.distance is None else f"  distance {hit.distance:.4f}"
            out(f"\n{hit.rank:>2}. score {hit.score:.4f}{distance}")
            out(f"    {hit.document_title}  [{' > '.join(hit.heading_path) or '(no heading)'}]")
            out(f"    document {hit.document_id}  section {hit.section_id}  chars {hit.start}-{hit.end}")
            out(textwrap.indent(textwrap.fill(" ".join(hit.text.split()), width - 4), "    "))
        if response.expand == "none":
            return
        out(self.style.MIGRATE_HEADING(f"\n{len(response.contexts)} contexts ({response.expand})"))
        rank_of = {h.chunk_id: h.rank for h in response.results}
        for i, context in enumerate(response.contexts, 1):
            hits = ", ".join(f"#{rank_of[c]}" for c in context.chunk_ids if c in rank_of) or "none (budget fill)"
            cut = ", truncated" if context.truncated else ""
            out(f"\n[{i}] {context.document_title}  [{' > '.join(context.heading_path) or '(no heading)'}]")
            out(f"    section {context.section_id}  hits {hits}  {context.token_count} tokens{cut}")
            out(f"    spans {', '.join(f'{s}-{e}' for s, e in context.spans)}")
            for paragraph in context.text.split("\n\n"):
                out(textwrap.indent(textwrap.fill(" ".join(paragraph.split()), width - 4), "    "))
