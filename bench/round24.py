"""Issue 30, the twenty-fourth round's candidate J (docs/benchmarks.md, "Twenty-fourth round"): spare hits taken in
turn with growth, steering a context cut to its share.

For every question of ``GOLDEN`` in a kept ``kb_eval --load-corpora`` tenant, in vector and hybrid, context recall at
k = 5 and the budget as the search is by default (the budget fill off) and with J
(``kb.search.search(spare_steer=True)``), per source and pooled with the paired bootstrap::

    python -m bench.round24 TENANT_SLUG GOLDEN.jsonl [--json FILE]

Not product code: nothing in the product imports this module.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

import numpy as np


def main(tenant_slug: str, golden: str, json_path: str | None, *, k: int = 5, budget: int = 1500) -> None:
    from bench.round16 import _django

    _django()
    from accounts.selectors import tenant_get
    from bench.transfer_suite import paired_bootstrap
    from ingestion.golden import load_questions
    from ingestion.quality import intersection_length, union_ranges
    from kb import index_versions as versions
    from kb.embedder import embedder
    from kb.evaluation import eval_member, genre_of, golden_resolve
    from kb.search import SearchFilters, search

    tenant = tenant_get(slug=tenant_slug)
    member = eval_member(tenant=tenant)
    version = versions.index_version_active(tenant=tenant)
    questions = golden_resolve(tenant=tenant, questions=load_questions(golden))
    vectors = list(embedder().embed([q.question for q in questions]))
    rows = []
    for mode in ("vector", "hybrid"):
        for i, (q, vector) in enumerate(zip(questions, vectors, strict=True)):
            row = {"mode": mode, "i": i, "source": genre_of(q.corpus)}
            for name, flag in (("base", False), ("j", True)):
                found = search(member=member, query=q.question, mode=mode, index_version=version,
                               query_vector=vector, audit=False, filters=SearchFilters(document_ids=(q.document_id,)),
                               top_k=k, expand="parent", max_contexts=k, context_token_budget=budget,
                               budget_fill=False, spare_steer=flag)
                covered = union_ranges(s for c in found.contexts for s in c.spans)
                row[name] = intersection_length(union_ranges(q.spans), covered) / sum(e - s for s, e in q.spans)
                row[f"{name}_tokens"] = sum(c.token_count for c in found.contexts)
            rows.append(row)
    for mode in ("vector", "hybrid"):
        mine = [r for r in rows if r["mode"] == mode]
        before, after = np.array([r["base"] for r in mine]), np.array([r["j"] for r in mine])
        gain, low, high = paired_bootstrap(after, before)
        print(f"{mode} ({len(mine)} questions): context recall by default {100 * before.mean():.1f}, with J "
              f"{100 * after.mean():.1f}, gain {100 * gain:+.1f} [{100 * low:+.1f}, {100 * high:+.1f}]; gained "
              f"{int((after > before).sum())}, lost {int((after < before).sum())}; tokens "
              f"{np.mean([r['base_tokens'] for r in mine]):.0f} -> {np.mean([r['j_tokens'] for r in mine]):.0f}, at most "
              f"{max(r['j_tokens'] for r in mine)}")
        by: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for r in mine:
            entry = by[r["source"]]
            entry[0] += 1
            entry[1] += r["j"] > r["base"]
            entry[2] += r["j"] < r["base"]
        print("  " + "; ".join(f"{s} {n}: +{g} -{lost}" for s, (n, g, lost) in sorted(by.items())))
    if json_path:
        with open(json_path, "w", encoding="utf-8") as handle:
            json.dump({"tenant": tenant_slug, "k": k, "budget": budget, "rows": rows}, handle)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tenant")
    parser.add_argument("golden")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    main(args.tenant, args.golden, args.json)
