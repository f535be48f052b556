"""Evaluate index versions side by side on a golden set through the real search (thin over kb.evaluation)."""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from accounts.errors import ApplicationError
from accounts.selectors import tenant_get
from ingestion.evaluation.golden import load_questions
from kb import evaluation
from kb import index_versions as versions


class Command(BaseCommand):
    help = (
        "Run golden questions through kb.search on one or more index versions and report document hit/recall@k, "
        "excerpt recall/precision/IoU, context recall at a token budget and chunk size distributions."
    )

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names index versions here; Django's own --version (print Django's) gives way.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--golden", required=True, help="questions: Chroma .csv or .jsonl")
        parser.add_argument("--tenant", help="the tenant to evaluate (not with --load-corpora)")
        parser.add_argument("--version", action="append", default=[], metavar="VERSION",
                            help="short id or uuid (repeatable); default: the active version")
        parser.add_argument("--k", default="5,50", help="depths, comma-separated (default 5,50)")
        parser.add_argument("--as", dest="as_email", default="", help="search as this member (default: an admin)")
        parser.add_argument("--mode", default="hybrid", choices=["hybrid", "vector", "keyword"])
        parser.add_argument("--budget", type=int, default=1000, help="context token budget (default 1000)")
        parser.add_argument("--json", dest="json_out", help="write the results as JSON here")
        parser.add_argument("--chart", help="write a PNG chart comparing the versions here")
        parser.add_argument("--load-corpora", metavar="DIR",
                            help="load DIR's files as plain-text documents of a throwaway tenant first")
        parser.add_argument("--config", action="append", default=[], metavar="FILE.json",
                            help="with --load-corpora: build a version of this config (repeatable)")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="with --load-corpora: one more version, the default config with these keys")
        parser.add_argument("--keep", action="store_true", help="with --load-corpora: keep the tenant")

    def handle(self, *args, **options):
        try:
            ks = [int(k) for k in options["k"].split(",") if k.strip()]
        except ValueError:
            raise CommandError(f"--k must be comma-separated integers, got {options['k']!r}") from None
        try:
            questions = load_questions(options["golden"])
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        try:
            with self._tenant(options) as (tenant, member, chosen):
                resolved = evaluation.golden_resolve(tenant=tenant, questions=questions)
                self.stderr.write(f"{len(resolved)} questions, {len(chosen)} versions, k={ks}, as {member.user.email}")
                reports = evaluation.evaluate_versions(
                    member=member, versions=chosen, questions=resolved, ks=ks, budget=options["budget"],
                    mode=options["mode"], progress=self.stderr.write,
                )
        except ApplicationError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(evaluation.format_table(reports, budget=options["budget"]))
        self.stdout.write("")
        self.stdout.write(evaluation.format_histograms(reports))
        if options["json_out"]:
            settings = {"golden": options["golden"], "k": ks, "mode": options["mode"], "budget": options["budget"],
                        "command": shlex.join(["python", "manage.py", "kb_eval", *sys.argv[2:]])}
            Path(options["json_out"]).write_text(json.dumps(evaluation.to_json(reports, settings=settings), indent=2))
        if options["chart"]:
            evaluation.write_chart(reports, options["chart"])

    @contextlib.contextmanager
    def _tenant(self, options):
        if options["load_corpora"]:
            if options["tenant"] or options["version"]:
                raise CommandError("--load-corpora makes its own tenant; leave out --tenant and --version")
            configs = [
                (Path(path).stem, versions.index_version_config(base=versions.config_from_json_file(path)))
                for path in options["config"]
            ]
            if options["set"]:
                configs.append((" ".join(options["set"])[:100], versions.index_version_config(settings=options["set"])))
            with evaluation.corpora_tenant(
                directory=options["load_corpora"], configs=configs, keep=options["keep"], out=self.stderr.write
            ) as (tenant, member, built):
                yield tenant, member, built
            return
        if not options["tenant"]:
            raise CommandError("give --tenant (or --load-corpora DIR)")
        if options["config"] or options["set"]:
            raise CommandError("--config/--set build versions only with --load-corpora; use kb_index create/build")
        tenant = tenant_get(slug=options["tenant"])
        member = evaluation.eval_member(tenant=tenant, email=options["as_email"])
        chosen = [versions.index_version_get(tenant=tenant, ref=ref) for ref in options["version"]]
        if not chosen:
            from kb.services import index_version_active

            chosen = [index_version_active(tenant=tenant)]
        yield tenant, member, chosen
