"""Evaluate index versions side by side on a golden set through the real search (thin over kb.evaluation,
with bench.evaluation's tables, JSON and chart)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shlex
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from accounts.errors import ApplicationError
from accounts.selectors import tenant_get
from bench import evaluation
from ingestion.golden import load_questions
from kb import evaluation as product
from kb import index_versions as versions
from kb.search_modes import MODES


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
        parser.add_argument("--mode", action="append", default=[], choices=list(MODES),
                            help="search mode (repeatable: every version is evaluated in each; default hybrid)")
        parser.add_argument("--fusion", action="append", default=[], metavar="KEY=VALUE[,KEY=VALUE]",
                            help="one more keyword/fusion variant (kb.retrieval.KeywordFusion fields, e.g. "
                                 "parser=or,rrf_k=20); keyword and hybrid modes run the default and each variant")
        parser.add_argument("--genres", action="store_true",
                            help="also print the per-genre table (a genre is the folder of the golden document name)")
        parser.add_argument("--loo", action="store_true",
                            help="with --mode vector --mode hybrid and --fusion: choose a hybrid variant "
                                 "leave-one-genre-out (must not lose to vector on recall@k or context recall)")
        parser.add_argument("--budget", type=int, default=1000, help="context token budget (default 1000)")
        parser.add_argument("--budget-fill", action="store_true",
                            help="also evaluate every mode and fusion with the budget fill (kb.search.search's "
                                 "budget_fill: the next hits' own chunks while the contexts leave budget unused)")
        parser.add_argument("--json", dest="json_out", help="write the results as JSON here")
        parser.add_argument("--chart", help="write a PNG chart comparing the versions here")
        parser.add_argument("--load-corpora", metavar="DIR",
                            help="load DIR's files as plain-text documents of a throwaway tenant first")
        parser.add_argument("--config", action="append", default=[], metavar="FILE.json",
                            help="with --load-corpora: build a version of this config (repeatable)")
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="with --load-corpora: one more version, the default config with these keys")
        parser.add_argument("--keep", action="store_true", help="with --load-corpora: keep the tenant")
        parser.add_argument("--by-type", action="store_true",
                            help="with --load-corpora: ingest each file as its name's type (README.md as Markdown, as "
                                 "an upload of it would be), not all as plain text; the golden spans are moved onto "
                                 "the text each parser keeps")

    def handle(self, *args, **options):
        from accounts.tenancy import owner_login_for_this_process

        owner_login_for_this_process()  # a tool over every tenant's rows: the owner (docs/security.md)
        try:
            ks = [int(k) for k in options["k"].split(",") if k.strip()]
        except ValueError:
            raise CommandError(f"--k must be comma-separated integers, got {options['k']!r}") from None
        modes = options["mode"] or ["hybrid"]
        options["mode"] = modes
        try:
            fusions = [("", {})] + [(text, self._fusion(text)) for text in options["fusion"]]
        except (TypeError, ValueError) as exc:
            raise CommandError(f"--fusion: {exc}") from None
        try:
            questions = load_questions(options["golden"])
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        try:
            with self._tenant(options) as (tenant, member, chosen):
                if options["by_type"]:
                    questions, dropped = evaluation.golden_on_stored_text(
                        questions, directory=options["load_corpora"], tenant=tenant)
                    self.stderr.write(f"by type: {dropped} questions whose answer a parser leaves out, dropped")
                resolved = product.golden_resolve(tenant=tenant, questions=questions)
                self.stderr.write(f"{len(resolved)} questions, {len(chosen)} versions, k={ks}, as {member.user.email}")
                reports = self._evaluate(options, member, chosen, resolved, ks, fusions)
        except ApplicationError as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(evaluation.format_table(reports, budget=options["budget"]))
        self.stdout.write("")
        self.stdout.write(evaluation.format_histograms(reports))
        if options["genres"] or options["loo"]:
            self.stdout.write("")
            self.stdout.write(evaluation.format_genre_table(reports, k=ks[0], budget=options["budget"]))
        if options["loo"]:
            self._loo(reports, ks[0])
        if options["json_out"]:
            settings = {"golden": options["golden"], "k": ks, "mode": modes, "budget": options["budget"],
                        "command": shlex.join(["python", "manage.py", "kb_eval", *sys.argv[2:]])}
            Path(options["json_out"]).write_text(json.dumps(evaluation.to_json(reports, settings=settings), indent=2))
        if options["chart"]:
            evaluation.write_chart(reports, options["chart"])

    @staticmethod
    def _fusion(text: str) -> dict:
        from kb.retrieval import KeywordFusion

        fields = {f.name: f.type for f in dataclasses.fields(KeywordFusion)}
        values = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, _, value = item.partition("=")
            if key not in fields:
                raise ValueError(f"unknown key {key!r} (one of {', '.join(fields)})")
            values[key] = value if fields[key] == "str" else float(value) if fields[key] == "float" else int(value)
        dataclasses.replace(KeywordFusion(), **values)  # validates
        return values

    def _evaluate(self, options, member, chosen, resolved, ks, fusions):
        """Every version in every mode; keyword and hybrid once per fusion variant (kb.retrieval.KEYWORD set
        for the duration, this process only). The question vectors are embedded once."""
        from kb import retrieval
        from kb.embedder import embedder

        vectors = None
        if any(retrieval.RETRIEVAL_MODES[m].embeds for m in options["mode"]):
            vectors = list(embedder().embed([q.question for q in resolved]))
        reports = []
        default = retrieval.KEYWORD
        fills = (None, True) if options.get("budget_fill") else (None,)
        for mode in options["mode"]:
            for text, values in (fusions if mode != "vector" else fusions[:1]):
                for fill in fills:
                    label = ",".join(x for x in (text, "budget_fill" if fill else "") if x)
                    retrieval.KEYWORD = dataclasses.replace(default, **values)
                    try:
                        self.stderr.write(f"mode {mode} {label or '(default fusion)'}")
                        batch = product.evaluate_versions(
                            member=member, versions=chosen, questions=resolved, ks=ks, budget=options["budget"],
                            mode=mode, progress=self.stderr.write, vectors=vectors, budget_fill=fill,
                        )
                    finally:
                        retrieval.KEYWORD = default
                    for report in batch:
                        report.fusion = label
                    reports.extend(batch)
        return reports

    def _loo(self, reports, k: int) -> None:
        for version_id in dict.fromkeys(r.version_id for r in reports):
            vector = next((r for r in reports if r.version_id == version_id and r.mode == "vector"), None)
            hybrids = [r for r in reports if r.version_id == version_id and r.mode == "hybrid"]
            if vector is None or not hybrids:
                raise CommandError("--loo needs --mode vector and --mode hybrid")
            self.stdout.write("")
            self.stdout.write(f"leave-one-genre-out, version {hybrids[0].short_id}: hybrid minus vector, points "
                              f"(worst / mean of recall@{k} and context recall)")
            self.stdout.write("| held-out genre | chosen on the other genres | worst | mean |")
            self.stdout.write("|---|---|---|---|")
            for held, chosen, (worst, mean) in evaluation.leave_one_genre_out(hybrids, vector, k=k):
                self.stdout.write(f"| {held} | {chosen.fusion or 'default'} | {worst:+.1f} | {mean:+.1f} |")
            every = sorted({g for r in hybrids for g in r.genres})
            self.stdout.write("all genres (worst / mean): " + "; ".join(
                f"{r.fusion or 'default'}: {w:+.1f} / {m:+.1f}"
                for r in hybrids for w, m in [evaluation.hybrid_margin(r, vector, k=k, genres=every)]
            ))

    @contextlib.contextmanager
    def _tenant(self, options):
        if options["load_corpora"]:
            if options["tenant"] or options["version"]:
                raise CommandError("--load-corpora makes its own tenant; leave out --tenant and --version")
        elif options["by_type"]:
            raise CommandError("--by-type goes with --load-corpora")
        if options["load_corpora"]:
            configs = [
                (Path(path).stem, versions.index_version_config(base=versions.config_from_json_file(path)))
                for path in options["config"]
            ]
            if options["set"]:
                configs.append((" ".join(options["set"])[:100], versions.index_version_config(settings=options["set"])))
            with evaluation.corpora_tenant(
                directory=options["load_corpora"], configs=configs, keep=options["keep"], out=self.stderr.write,
                by_type=options["by_type"]
            ) as (tenant, member, built):
                yield tenant, member, built
            return
        if not options["tenant"]:
            raise CommandError("give --tenant (or --load-corpora DIR)")
        if options["config"] or options["set"]:
            raise CommandError("--config/--set build versions only with --load-corpora; use kb_index create/build")
        tenant = tenant_get(slug=options["tenant"])
        member = product.eval_member(tenant=tenant, email=options["as_email"])
        chosen = [versions.index_version_get(tenant=tenant, ref=ref) for ref in options["version"]]
        if not chosen:
            from kb.index_versions import index_version_active

            chosen = [index_version_active(tenant=tenant)]
        yield tenant, member, chosen
