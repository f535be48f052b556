"""A fusion variant against the chosen one, per question, through the real search (issue 30, twenty-sixth to
twenty-eighth rounds' candidates O, P and Q; docs/benchmarks.md)::

    python -m bench.fusion_pair read TENANT_SLUG GOLDEN.jsonl OUT.json KEY=VALUE[,KEY=VALUE]
    python -m bench.fusion_pair latency TENANT_SLUG GOLDEN.jsonl KEY=VALUE[,KEY=VALUE] [--questions 120]

``read``: for every question of a kept ``kb_eval`` tenant, context recall (k = 5, budget 1,500, parent expansion,
the question's own document, as ``kb_eval`` searches) and excerpt recall at 5 in vector, in hybrid with
``kb.retrieval.CHOSEN_FUSION`` and in hybrid with the variant (``KeywordFusion`` fields); prints the pooled means,
the variant's gain with a paired bootstrap 95% interval, and per source the questions gained and lost and whether
hybrid is below vector. ``latency``: tenant-wide hybrid search without expansion, the chosen fusion and the variant
in alternating passes (3), p50 and p95 in milliseconds. Not product code: nothing in the product imports it.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import replace


def _setup(slug: str, golden: str, limit: int | None = None):
    from bench.round16 import _django

    _django()
    from accounts.selectors import tenant_get
    from ingestion.golden import load_questions
    from kb import index_versions as versions
    from kb.embedder import embedder
    from kb.evaluation import eval_member, golden_resolve

    tenant = tenant_get(slug=slug)
    member = eval_member(tenant=tenant)
    version = versions.index_version_active(tenant=tenant)
    questions = golden_resolve(tenant=tenant, questions=load_questions(golden))[:limit]
    return member, version, questions, list(embedder().embed([q.question for q in questions]))


def _variant(text: str):
    """``CHOSEN_FUSION`` with ``text``'s fields, read as ``kb_eval --fusion`` reads them."""
    from bench.management.commands.kb_eval import Command
    from kb.retrieval import CHOSEN_FUSION

    return replace(CHOSEN_FUSION, **Command._fusion(text))


def read(slug: str, golden: str, out: str, variant: str) -> None:
    import numpy as np

    from ingestion.quality import intersection_length, score_question, union_ranges

    member, version, questions, vectors = _setup(slug, golden)
    from kb import retrieval
    from kb.search import SearchFilters, search

    chosen, other = retrieval.CHOSEN_FUSION, _variant(variant)
    rows = []
    for i, (q, vector) in enumerate(zip(questions, vectors, strict=True)):
        row = {"i": i, "source": q.corpus.split("/")[0]}
        for name, mode, fusion in (("vector", "vector", chosen), ("hybrid", "hybrid", chosen),
                                   ("variant", "hybrid", other)):
            retrieval.KEYWORD = fusion
            common = {"member": member, "query": q.question, "mode": mode, "index_version": version,
                      "query_vector": vector, "audit": False, "filters": SearchFilters(document_ids=(q.document_id,))}
            own = search(**common, top_k=5, expand="parent", max_contexts=5, context_token_budget=1500)
            covered = union_ranges(s for c in own.contexts for s in c.spans)
            row[f"{name}_ctx"] = intersection_length(union_ranges(q.spans), covered) / sum(e - s for s, e in q.spans)
            flat = search(**common, top_k=5, expand="none")
            row[f"{name}_r5"] = score_question(q.spans, [(h.start, h.end) for h in flat.results]).recall
        retrieval.KEYWORD = chosen
        rows.append(row)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(rows, handle)

    def mean(key, source=None):
        return 100 * float(np.mean([r[key] for r in rows if source is None or r["source"] == source]))

    rng = np.random.default_rng(0)
    for measure in ("ctx", "r5"):
        gains = np.array([r[f"variant_{measure}"] - r[f"hybrid_{measure}"] for r in rows])
        boots = [100 * rng.choice(gains, len(gains)).mean() for _ in range(2000)]
        print(f"{measure}: vector {mean('vector_' + measure):.1f} hybrid {mean('hybrid_' + measure):.1f} "
              f"variant {mean('variant_' + measure):.1f}; gain {100 * gains.mean():+.2f} "
              f"[{np.percentile(boots, 2.5):+.2f}, {np.percentile(boots, 97.5):+.2f}], "
              f"{(gains > 1e-9).sum()} gained, {(gains < -1e-9).sum()} lost")
    for source in sorted({r["source"] for r in rows}):
        mine = [r for r in rows if r["source"] == source]
        lost = [r["i"] for r in mine if r["variant_ctx"] < r["hybrid_ctx"] - 1e-9]
        gained = [r["i"] for r in mine if r["variant_ctx"] > r["hybrid_ctx"] + 1e-9]
        below = [name for name in ("hybrid", "variant")
                 if mean(f"{name}_ctx", source) < mean("vector_ctx", source) - 1e-9
                 or mean(f"{name}_r5", source) < mean("vector_r5", source) - 1e-9]
        print(f"{source:28s} context gained {gained} lost {lost}; below vector: {below}")


def latency(slug: str, golden: str, variant: str, count: int = 120) -> None:
    member, version, questions, vectors = _setup(slug, golden, count)
    from kb import retrieval
    from kb.search import search

    fusions = [("chosen", retrieval.CHOSEN_FUSION), ("variant", _variant(variant))]
    times: dict[str, list[float]] = {name: [] for name, _ in fusions}
    for turn in range(3):
        for name, fusion in fusions if turn % 2 == 0 else fusions[::-1]:
            retrieval.KEYWORD = fusion
            for q, vector in zip(questions, vectors, strict=True):
                started = time.perf_counter()
                search(member=member, query=q.question, mode="hybrid", index_version=version, query_vector=vector,
                       audit=False, top_k=5, expand="none")
                times[name].append((time.perf_counter() - started) * 1000)
    retrieval.KEYWORD = retrieval.CHOSEN_FUSION
    for name, values in times.items():
        values.sort()
        print(f"{name}: p50 {statistics.median(values):.1f} ms, p95 {values[int(0.95 * len(values))]:.1f} ms "
              f"({len(values)} searches)")


if __name__ == "__main__":
    if len(sys.argv) >= 6 and sys.argv[1] == "read":
        read(*sys.argv[2:6])
    elif len(sys.argv) >= 5 and sys.argv[1] == "latency":
        latency(sys.argv[2], sys.argv[3], sys.argv[4],
                int(sys.argv[sys.argv.index("--questions") + 1]) if "--questions" in sys.argv else 120)
    else:
        raise SystemExit(__doc__)
