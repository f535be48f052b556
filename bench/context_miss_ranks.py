"""Where the context-recall misses rank (issue 30, a diagnosis after the twentieth round; docs/benchmarks.md).

For each question a ``bench.round16 fill`` run found under full context recall in hybrid, the rank (1-based, top 30,
no expansion, the question's own document) of the first hit that overlaps its golden span, in hybrid and in vector::

    python -m bench.context_miss_ranks TENANT_SLUG GOLDEN.jsonl FILL.json

Not product code: nothing imports it.
"""

from __future__ import annotations

import json
import sys


def main(slug: str, golden: str, fill: str) -> None:
    from bench.round16 import _django

    _django()
    from accounts.selectors import tenant_get
    from ingestion.golden import load_questions
    from kb import index_versions as versions
    from kb.embedder import embedder
    from kb.evaluation import eval_member, golden_resolve
    from kb.search import SearchFilters, search

    tenant = tenant_get(slug=slug)
    member = eval_member(tenant=tenant)
    version = versions.index_version_active(tenant=tenant)
    questions = golden_resolve(tenant=tenant, questions=load_questions(golden))
    with open(fill, encoding="utf-8") as handle:
        rows = json.load(handle)["rows"]
    missed = sorted({r["i"] for r in rows if r["mode"] == "hybrid" and r["context"] < 1})
    vectors = list(embedder().embed([questions[i].question for i in missed]))
    for i, vector in zip(missed, vectors, strict=True):
        q = questions[i]
        ranks = []
        for mode in ("hybrid", "vector"):
            found = search(member=member, query=q.question, mode=mode, index_version=version, query_vector=vector,
                           audit=False, top_k=30, expand="none", filters=SearchFilters(document_ids=(q.document_id,)))
            ranks.append(next((n for n, hit in enumerate(found.results, 1)
                               if any(hit.start < end and start < hit.end for start, end in q.spans)), None))
        print(f"{q.question[:80]:80s} | hybrid {ranks[0]} | vector {ranks[1]}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
