"""``keyword_idf=2`` in one pass (R, ``kb.retrieval.pool_rescored``) against Q's two-statement form
(:func:`pool_weighted`, the search path as Q was measured), per question, through the real search
(issue 30, twenty-ninth round's qualification; docs/benchmarks.md)::

    python -m bench.keyword_idf_same TENANT_SLUG GOLDEN.jsonl [TENANT_SLUG GOLDEN.jsonl ...]

For every question of each kept ``kb_eval`` tenant, the two searches ``bench.fusion_pair read`` runs in hybrid with
``keyword_idf=2`` (k = 5, budget 1,500, parent expansion, the question's own document; and k = 5 without
expansion), once with R and once with Q's hybrid path: the whole answers (hits, scores, contexts, spans, plan;
timings aside) must be equal. Prints each question that differs and the count. Not product code.
"""

from __future__ import annotations

import dataclasses
import sys
import time


def pool_weighted(reader, version_id, filters, query, vector_rows, keyword_rows, options):
    """``kb.retrieval.pool_rescored``'s scores with the terms and the pool read again, in two statements of their
    own (``query_terms``; the pool's rows through ``readable_chunks`` restricted to its ids, a keyword row it does
    not return dropped): the twenty-eighth round's Q as it was measured, kept as the reference the tests hold the
    search's one-pass form to (tests/test_keyword_idf_pool.py). The search does not call it."""
    from django.db.models import BooleanField, ExpressionWrapper

    from kb import retrieval

    terms = retrieval.query_terms(query)
    if not keyword_rows or not terms:
        return keyword_rows
    ids = sorted({row.id for row in vector_rows} | {row.id for row in keyword_rows})
    columns = {}
    for i, term in enumerate(terms):
        columns[f"m{i}"] = ExpressionWrapper(retrieval.term_matches(term), output_field=BooleanField())
        columns[f"r{i}"] = retrieval.term_rank(term, options)
    pool = {
        values[0]: tuple((values[1 + 2 * i], values[2 + 2 * i]) for i in range(len(terms)))
        for values in retrieval.readable_chunks(reader, version_id, filters).filter(id__in=ids).annotate(**columns)
        .values_list("id", *columns)
    }
    return retrieval.rescored(keyword_rows, pool, len(terms))


def _q_hybrid(reader, version_id, filters, query, vector, top_k, *, piece_weight=0.0, spare=0):
    """``kb.retrieval.hybrid_mode`` as the twenty-eighth round measured Q (at c2f24da)."""
    from kb import retrieval

    depth = max(4 * top_k, 20, top_k + spare)
    vector_rows, plan = retrieval.vector_candidates(reader, version_id, filters, vector, depth)
    keyword_rows = retrieval.keyword_candidates(reader, version_id, filters, query, depth, vector)
    options = retrieval.KEYWORD
    keyword_rows = pool_weighted(reader, version_id, filters, query, vector_rows, keyword_rows, options)
    if piece_weight:
        vector_rows, keyword_rows = retrieval.by_pieces(reader, version_id, filters, [vector_rows, keyword_rows],
                                                        vector, piece_weight)
        vector_rows.sort(key=lambda r: (r.distance, r.id))
    ranked = retrieval.fuse(vector_rows, keyword_rows, options.rrf_k, keyword_weight=options.keyword_weight,
                            keyword_top=options.keyword_top, keyword_gate=options.keyword_gate,
                            keyword_relative=options.keyword_relative, convex=options.convex,
                            keyword_peak=options.keyword_peak)
    return retrieval.Retrieved(ranked[: top_k + spare], plan)


def main(pairs: list[str]) -> int:
    from bench.fusion_pair import _setup, _variant

    if not pairs or len(pairs) % 2:
        raise SystemExit(__doc__)
    from kb import retrieval
    from kb.search import SearchFilters, search

    def answer(response) -> dict:
        out = dataclasses.asdict(response)
        out.pop("timings_ms")
        return out

    one_pass = retrieval.RETRIEVAL_MODES["hybrid"]
    modes = {"R": one_pass, "Q": dataclasses.replace(one_pass, retrieve=_q_hybrid)}
    total = differing = 0
    try:
        for slug, golden in zip(pairs[::2], pairs[1::2], strict=True):
            member, version, questions, vectors = _setup(slug, golden)
            retrieval.KEYWORD = _variant("keyword_idf=2")
            started = time.perf_counter()
            for i, (q, vector) in enumerate(zip(questions, vectors, strict=True)):
                common = {"member": member, "query": q.question, "mode": "hybrid", "index_version": version,
                          "query_vector": vector, "audit": False,
                          "filters": SearchFilters(document_ids=(q.document_id,))}
                got = {}
                for name, mode in modes.items():
                    retrieval.RETRIEVAL_MODES["hybrid"] = mode
                    retrieval.count_cache.clear()
                    own = search(**common, top_k=5, expand="parent", max_contexts=5, context_token_budget=1500)
                    got[name] = (answer(own), answer(search(**common, top_k=5, expand="none")))
                total += 1
                if got["R"] != got["Q"]:
                    differing += 1
                    print(f"differs: {slug} question {i}: {q.question[:80]}")
            print(f"{slug}: {len(questions)} questions, {time.perf_counter() - started:.0f} s", flush=True)
    finally:
        retrieval.RETRIEVAL_MODES["hybrid"] = one_pass
        retrieval.KEYWORD = retrieval.CHOSEN_FUSION
    print(f"{total} questions, {differing} with different hits or contexts")
    return 1 if differing else 0


if __name__ == "__main__":
    from bench.round16 import _django

    _django()
    sys.exit(main(sys.argv[1:]))
