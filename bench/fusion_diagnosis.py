"""Hybrid against vector, question by question, through the real search (issue 30).

Two things, on a tenant ``kb_eval --load-corpora ... --keep`` left behind:

* ``scores``: per question, excerpt recall@k and context recall at the budget in each mode and fusion,
  from :func:`kb.evaluation.evaluate_versions` called one question at a time (which reproduces
  ``kb_eval``'s table), written as JSON for the intervals (:func:`bench.transfer_suite.paired_bootstrap`)
  and leave-one-source-out.
* ``ranks``: for the questions of some sources, inside the question's document (as recall@k searches),
  the best rank of a chunk that overlaps the gold spans in the vector list, the keyword list and the
  fused list; the query's lexemes with the number of the document's chunks each matches; and the
  keyword side's first hits.

    BULKHEAD_DATA_DIR=.data/f7 python -m bench.fusion_diagnosis scores --tenant eval-xxxx \\
        --golden evaluation/transfer/questions.jsonl --fusion "" --fusion keyword_idf=1 --json out.json
    python -m bench.fusion_diagnosis report --json out.json
    python -m bench.fusion_diagnosis merge old.json new.json --json all.json   # two tenants' questions as one
    BULKHEAD_DATA_DIR=.data/f7 python -m bench.fusion_diagnosis ranks --tenant eval-xxxx \\
        --golden evaluation/transfer/questions.jsonl --source pkg-authlib --source pkg-banks
    BULKHEAD_DATA_DIR=.data/f7 python -m bench.fusion_diagnosis losses --tenant eval-xxxx \\
        --golden evaluation/transfer/questions.jsonl --mode hybrid

``losses``: where context recall is lost in one mode -- each question under full context recall at the
budget, by why: its gold text was among the ``k`` hits yet left out of the contexts (packing), partly among
them, found at ranks k+1..2k of a search 2k deep, or not there (the question's document only, as kb_eval's
context measure searches; a hybrid search's candidates depend on its depth, so a few "not there" were in
the first k of that deeper search).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys


def _setup():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    import django

    django.setup()
    from accounts.tenancy import owner_login_for_this_process

    owner_login_for_this_process()  # a benchmark reads a kept evaluation tenant as the owner


def _fusion(text: str) -> dict:
    from bench.management.commands.kb_eval import Command

    return Command._fusion(text) if text else {}


def _context(args):
    from accounts.selectors import tenant_get
    from ingestion.golden import load_questions
    from kb import evaluation
    from kb.embedder import embedder
    from kb.index_versions import index_version_active

    tenant = tenant_get(slug=args.tenant)
    member = evaluation.eval_member(tenant=tenant)
    version = index_version_active(tenant=tenant)
    questions = evaluation.golden_resolve(tenant=tenant, questions=load_questions(args.golden))
    if args.source:
        questions = [q for q in questions if evaluation.genre_of(q.corpus) in args.source]
    vectors = list(embedder().embed([q.question for q in questions]))
    return member, version, questions, vectors


def _memoize_candidates(retrieval) -> None:
    """The two candidate lists do not depend on the fusion: fetch each (question, filters, depth) once in
    this process, not once per fusion variant (the keyword list once per way of building it)."""
    vector_candidates, keyword_candidates = retrieval.vector_candidates, retrieval.keyword_candidates
    seen: dict = {}

    def columns(terms):  # what a TermColumns reads (its terms, rank and normalisation), not the fusion it came with
        return None if terms is None else (terms.terms, terms.options.rank, terms.options.normalization)

    def vector(reader, version_id, filters, vector, depth, *rest, **kw):
        key = ("v", version_id, filters, vector.tobytes() if hasattr(vector, "tobytes") else repr(vector), depth,
               tuple(columns(r) if isinstance(r, retrieval.TermColumns) else r for r in rest),
               tuple(sorted((k, columns(v) if isinstance(v, retrieval.TermColumns) else v) for k, v in kw.items())))
        if key not in seen:
            seen[key] = vector_candidates(reader, version_id, filters, vector, depth, *rest, **kw)
        return seen[key]

    def keyword(reader, version_id, filters, query, depth, vector=None, options=None, *, parsed=None, terms=None):
        o = options or retrieval.KEYWORD
        key = ("k", version_id, filters, query, depth, vector is None, o.parser, o.rank, o.normalization, o.keyword_idf,
               parsed, columns(terms))
        if key not in seen:
            seen[key] = keyword_candidates(reader, version_id, filters, query, depth, vector, options, parsed=parsed,
                                           terms=terms)
        return seen[key]

    retrieval.vector_candidates, retrieval.keyword_candidates = vector, keyword


def scores(args) -> None:
    """Per question R@k and context recall, vector once and hybrid under each fusion."""
    from kb import evaluation, retrieval

    member, version, questions, vectors = _context(args)
    default = retrieval.KEYWORD
    _memoize_candidates(retrieval)
    runs = {}
    plan = [("vector", "", None)] + [("hybrid", t, None) for t in args.fusion]
    if args.budget_fill:  # each run again with the budget fill (kb.search.search(budget_fill=True)), after the rest
        plan += [(mode, text, True) for mode, text, _ in plan[1:]] + [("vector", "", True)]
    for mode, text, fill in plan:
        retrieval.KEYWORD = dataclasses.replace(default, **_fusion(text))
        rows = []
        try:
            for q, v in zip(questions, vectors, strict=True):
                (report,) = evaluation.evaluate_versions(
                    member=member,
                    versions=[version],
                    questions=[q],
                    ks=[args.k],
                    budget=args.budget,
                    mode=mode,
                    vectors=[v],
                    budget_fill=fill,
                )
                rows.append([report.excerpt[args.k]["all"]["recall"].mean, report.context["recall"].mean])
        finally:
            retrieval.KEYWORD = default
        name = " ".join(x for x in (mode, text, "fill" if fill else "") if x)
        runs[name] = rows
        print(f"{name}: done", file=sys.stderr)
    out = {
        "questions": [{"question": q.question, "source": evaluation.genre_of(q.corpus)} for q in questions],
        "runs": runs,
        "k": args.k,
        "budget": args.budget,
        "version": version.short_id,
    }
    with open(args.json, "w") as fh:
        json.dump(out, fh, indent=1)


def ranks(args) -> None:
    """The target's rank in each list, the lexemes' document frequency and the keyword side's top hits."""
    from accounts.selectors import reader_for
    from kb import retrieval
    from kb.models import Chunk
    from kb.search_types import SearchFilters

    member, version, questions, vectors = _context(args)
    reader = reader_for(member)
    options = dataclasses.replace(retrieval.KEYWORD, **_fusion(args.with_fusion))
    depth = max(4 * args.k, 20)
    for q, vector in zip(questions, vectors, strict=True):
        filters = SearchFilters(document_ids=(q.document_id,))
        vrows, _ = retrieval.vector_candidates(reader, version.pk, filters, vector, depth)
        krows = retrieval.keyword_candidates(reader, version.pk, filters, q.question, depth, vector, options)
        fused = retrieval.fuse(
            vrows,
            krows,
            options.rrf_k,
            keyword_weight=options.keyword_weight,
            keyword_top=options.keyword_top,
            keyword_gate=options.keyword_gate,
            keyword_relative=options.keyword_relative,
            convex=options.convex,
            keyword_peak=options.keyword_peak,
        )
        gold = {
            c.id
            for c in Chunk.objects.filter(index_version=version, document_id=q.document_id)
            if any(c.start < e and s < c.end for s, e in q.spans)
        }

        def best(ids, gold=gold):
            return next((i for i, cid in enumerate(ids, 1) if cid in gold), None)

        chunks = retrieval.readable_chunks(reader, version.pk, filters)
        terms = retrieval.query_terms(q.question)
        total, df = retrieval.term_counts(chunks, terms)
        idf = retrieval.term_weights(chunks, terms)
        print(f"\n## {q.corpus} | {q.question}")
        print(
            f"target chunks {len(gold)}; rank vector {best([r.id for r in vrows])}, "
            f"keyword {best([r.id for r in krows])}, fused {best([r.id for r, *_ in fused])}"
        )
        print(
            f"terms: chunks of the document's {total} readable matching, idf: "
            + ", ".join(f"{t} {n} {idf[t]:.2f}" for t, n in df.items())
        )
        for i, r in enumerate(krows[:5], 1):
            mark = "*" if r.id in gold else " "
            print(
                f"  kw{i}{mark} rank {r.rank:.3f} v{next((j for j, v in enumerate(vrows, 1) if v.id == r.id), '-')}"
                f" | {' '.join(r.text.split())[:110]}"
            )
        for i, (r, _score, vr, kr) in enumerate(fused[: args.k], 1):
            mark = "*" if r.id in gold else " "
            print(f"  fused{i}{mark} v{vr} k{kr} | {' '.join(r.text.split())[:100]}")


def report(args) -> None:
    """From ``scores``' JSON: per source R@k / context recall of each run, hybrid minus vector with paired
    bootstrap 95% intervals per source and pooled, each variant minus the default hybrid pooled, and
    leave-one-source-out over the hybrid runs (each fold: the run whose worst hybrid-minus-vector margin over
    {R@k, context} on the other sources is best, then the best mean; an exact tie goes to the first listed,
    the default)."""
    import numpy as np

    from bench.transfer_suite import paired_bootstrap

    data = json.loads(open(args.json).read())
    if args.source:  # only these sources' questions (the same rows of every run)
        keep = [i for i, q in enumerate(data["questions"]) if q["source"] in args.source]
        data["questions"] = [data["questions"][i] for i in keep]
        data["runs"] = {name: [rows[i] for i in keep] for name, rows in data["runs"].items()}
    sources = sorted({q["source"] for q in data["questions"]})
    index = {s: np.array([q["source"] == s for q in data["questions"]]) for s in sources}
    runs = {
        name: np.array(rows, dtype=float) * 100
        for name, rows in data["runs"].items()
        if name == "vector" or not args.only or name in args.only
    }
    vector = runs.pop("vector")
    names = list(runs)

    def margins(run, chosen):
        return [float((run[index[s], m] - vector[index[s], m]).mean()) for s in chosen for m in (0, 1)]

    def objective(run, chosen):
        values = margins(run, chosen)
        return min(values), sum(values) / len(values)

    def ci(a, b):
        mean, lo, hi = paired_bootstrap(a, b)
        return f"{mean:+.1f} [{lo:+.1f}, {hi:+.1f}]" if (lo, hi) != (0.0, 0.0) or mean else "+0.0"

    print(
        f"| source (n) | vector | {' | '.join(names)} | " + " | ".join(f"{n} - vector, R@k / ctx" for n in names) + " |"
    )
    print("|---" * (2 + 2 * len(names)) + "|")
    for s in [*sources, "all"]:
        rows = index[s] if s != "all" else np.ones(len(vector), dtype=bool)
        cells = [f"{vector[rows, 0].mean():.1f} / {vector[rows, 1].mean():.1f}"]
        cells += [f"{runs[n][rows, 0].mean():.1f} / {runs[n][rows, 1].mean():.1f}" for n in names]
        cells += [f"{ci(runs[n][rows, 0], vector[rows, 0])} / {ci(runs[n][rows, 1], vector[rows, 1])}" for n in names]
        print(f"| {s} ({rows.sum()}) | " + " | ".join(cells) + " |")
    base = runs[names[0]]
    for n in names[1:]:
        print(
            f"\n{n} minus {names[0]}, pooled: R@k {ci(runs[n][:, 0], base[:, 0])}, ctx {ci(runs[n][:, 1], base[:, 1])}"
        )
        moved = [(data["questions"][i], base[i], runs[n][i]) for i in range(len(base)) if (base[i] != runs[n][i]).any()]
        for q, b, c in moved:
            print(f"  {q['source']}: {q['question'][:70]} | {b[0]:.0f}/{b[1]:.0f} -> {c[0]:.0f}/{c[1]:.0f}")
    print("\n| held-out source | chosen on the other sources | worst | mean |\n|---|---|---|---|")
    chosen_count = dict.fromkeys(names, 0)
    for held in sources:
        rest = [s for s in sources if s != held]
        best = max(names, key=lambda n: (objective(runs[n], rest), -names.index(n)))
        chosen_count[best] += 1
        worst, mean = objective(runs[best], [held])
        print(f"| {held} | {best} | {worst:+.1f} | {mean:+.1f} |")
    print("folds choosing each: " + ", ".join(f"{n} {c}" for n, c in chosen_count.items()))
    print(
        "all sources (worst / mean): "
        + "; ".join(f"{n} {objective(runs[n], sources)[0]:+.1f} / {objective(runs[n], sources)[1]:+.1f}" for n in names)
    )
    for n in names:
        losing = [s for s in sources if min(margins(runs[n], [s])) < 0]
        print(f"{n}: below vector on {len(losing)} of {len(sources)} sources: {', '.join(losing)}")


def merge(args) -> None:
    """Several ``scores`` JSONs over disjoint questions (one tenant per batch of sources: a question is
    searched inside its own document, so its scores do not depend on the tenant's other documents) as
    one: the runs every input has, the questions in input order. The inputs must agree on k, budget
    and the index version's config (``version``)."""
    parts = [json.loads(open(path).read()) for path in args.inputs]
    for key in ("k", "budget", "version"):
        values = {part[key] for part in parts}
        if len(values) != 1:
            raise SystemExit(f"the inputs differ on {key}: {sorted(map(str, values))}")
    names = [name for name in parts[0]["runs"] if all(name in part["runs"] for part in parts)]
    out = {
        "questions": [q for part in parts for q in part["questions"]],
        "runs": {name: [row for part in parts for row in part["runs"][name]] for name in names},
        **{key: parts[0][key] for key in ("k", "budget", "version")},
    }
    with open(args.json, "w") as fh:
        json.dump(out, fh, indent=1)
    print(f"{len(out['questions'])} questions, runs: {', '.join(names)}", file=sys.stderr)


def losses(args) -> None:
    """Context recall lost per question, by cause (module docstring)."""
    from collections import defaultdict

    from ingestion.quality import intersection_length, union_ranges
    from kb import evaluation
    from kb.search import search
    from kb.search_types import SearchFilters

    member, version, questions, vectors = _context(args)
    lost: dict[str, list[float]] = defaultdict(list)
    by_source: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    total = 0.0
    for q, vector in zip(questions, vectors, strict=True):
        if not q.spans:
            continue
        common = {"member": member, "query": q.question, "mode": args.mode, "index_version": version,
                  "query_vector": vector, "audit": False, "filters": SearchFilters(document_ids=(q.document_id,))}
        found = search(**common, top_k=args.k, expand="parent", max_contexts=args.k, context_token_budget=args.budget)
        deeper = search(**common, top_k=2 * args.k, expand="none")
        gold = union_ranges(q.spans)
        chars = sum(e - s for s, e in gold)
        context = intersection_length(gold, union_ranges(s for c in found.contexts for s in c.spans)) / chars
        total += 1
        if context >= 0.999:
            continue
        hits = intersection_length(gold, union_ranges((h.start, h.end) for h in found.results)) / chars
        later = any(intersection_length(gold, [(h.start, h.end)]) for h in deeper.results[args.k:])
        cause = ("packing" if hits >= 0.999 else "partly in the hits" if hits > 0
                 else f"ranks {args.k + 1}-{2 * args.k}" if later else f"not at ranks {args.k + 1}-{2 * args.k}")
        lost[cause].append(1 - context)
        by_source[evaluation.genre_of(q.corpus)][cause] += 1 - context
    print(f"{args.mode}, k={args.k}, budget {args.budget}: {int(total)} questions, context recall "
          f"{100 * (1 - sum(sum(v) for v in lost.values()) / total):.1f}")
    print("| cause | questions | context recall lost (points) |\n|---|---|---|")
    for cause, values in sorted(lost.items(), key=lambda kv: -sum(kv[1])):
        print(f"| {cause} | {len(values)} | {100 * sum(values) / total:.2f} |")
    print("\nby source (points of the source's own context recall lost, by cause):")
    for source, causes in sorted(by_source.items()):
        n = sum(1 for q in questions if q.spans and evaluation.genre_of(q.corpus) == source)
        print(f"  {source}: " + ", ".join(f"{c} {100 * v / n:.1f}" for c, v in sorted(causes.items())))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("scores", "ranks", "losses"):
        p = sub.add_parser(name)
        p.add_argument("--tenant", required=True)
        p.add_argument("--golden", required=True)
        p.add_argument("--source", action="append", default=[], help="only these sources (repeatable)")
        p.add_argument("--k", type=int, default=5)
        p.add_argument("--budget", type=int, default=1500)
    sub.choices["scores"].add_argument(
        "--fusion", action="append", default=[], help='hybrid fusion variants ("" = the default), repeatable'
    )
    sub.choices["scores"].add_argument("--json", required=True)
    sub.choices["scores"].add_argument(
        "--budget-fill", action="store_true", help='each run again with the budget fill ("... fill"), vector last'
    )
    sub.choices["losses"].add_argument("--mode", default="hybrid", choices=("vector", "keyword", "hybrid"))
    sub.choices["ranks"].add_argument("--with-fusion", default="", help="the fusion whose lists are shown")
    sub.add_parser("report").add_argument("--json", required=True, help="the JSON ``scores`` wrote")
    sub.choices["report"].add_argument("--only", action="append", default=[], help="only these hybrid runs, in order")
    sub.choices["report"].add_argument("--source", action="append", default=[], help="only these sources (repeatable)")
    merged = sub.add_parser("merge")
    merged.add_argument("inputs", nargs="+", help="``scores`` JSONs over disjoint questions")
    merged.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    if args.command in ("report", "merge"):
        {"report": report, "merge": merge}[args.command](args)
        return
    _setup()
    {"scores": scores, "ranks": ranks, "losses": losses}[args.command](args)


if __name__ == "__main__":
    main()
