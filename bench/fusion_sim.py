"""Fusion functions compared offline on the real search's candidate lists (issue 30).

Hybrid search fuses two lists: the vector side's nearest chunks and the keyword side's full-text matches,
each ``max(4 * k, 20)`` deep. The lists do not depend on the fusion, so they are fetched once per question
through the real retrieval functions (the reader's access rule, screening's filter, the question's own
document, as excerpt recall@k searches) and every fusion function is then scored on them without the
database:

* ``dump``: the two lists of every question (chunk id, span, cosine distance, keyword rank) as JSON;
* ``grid``: excerpt recall@k of each fusion function in :data:`FUNCTIONS` (and vector alone) per question,
  per source with paired bootstrap intervals against vector, and leave-one-source-out over the functions
  (each fold chooses on the other sources the function whose worst hybrid-minus-vector margin is best,
  then the better mean; an exact tie goes to the first listed, the default).

The product's fusions are ranked by :func:`kb.retrieval.fuse` itself (the others, marked exploratory, by
functions here). Recall@k here equals ``kb_eval``'s excerpt recall@k for the default fusion (``grid`` prints both when
given ``--check`` with the per-question scores of ``bench.fusion_diagnosis scores``). Context recall needs
the packing and is measured through the real search (``bench.fusion_diagnosis scores``) for the functions
this shortlists.

    BULKHEAD_DATA_DIR=.data/f8 python -m bench.fusion_sim dump --tenant eval-xxxx \\
        --golden evaluation/transfer/questions.jsonl --json .data/lists.json
    python -m bench.fusion_sim grid --json .data/lists.json
"""

from __future__ import annotations

import argparse
import json
import os
import uuid
from collections.abc import Callable


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    import django

    django.setup()


def dump(args) -> None:
    _django()
    from accounts.selectors import reader_for
    from accounts.tenancy import owner_login_for_this_process
    from bench.fusion_diagnosis import _context
    from kb import evaluation, retrieval
    from kb.search_types import SearchFilters

    owner_login_for_this_process()
    member, version, questions, vectors = _context(args)
    reader = reader_for(member)
    depth = max(4 * args.k, 20)
    out = []
    for q, vector in zip(questions, vectors, strict=True):
        filters = SearchFilters(document_ids=(q.document_id,))
        vrows, _ = retrieval.vector_candidates(reader, version.pk, filters, vector, depth)
        krows = retrieval.keyword_candidates(reader, version.pk, filters, q.question, depth, vector)
        out.append({
            "question": q.question,
            "source": evaluation.genre_of(q.corpus),
            "spans": [list(s) for s in q.spans],
            "vector": [[str(r.id), r.start, r.end, r.distance] for r in vrows],
            "keyword": [[str(r.id), r.start, r.end, r.distance, r.rank] for r in krows],
        })
    with open(args.json, "w") as fh:
        json.dump({"k": args.k, "version": version.short_id, "questions": out}, fh)


# ----------------------------------------------------------------------------- fusion functions

Candidate = dict  # id -> {"span": (start, end), "sim": cosine similarity, "v": vector position, "kw": rank, "k": keyword position}


def _candidates(q: dict) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for position, (cid, start, end, distance) in enumerate(q["vector"], 1):
        found[cid] = {"span": (start, end), "sim": 1.0 - distance, "v": position, "kw": 0.0, "k": None}
    for position, (cid, start, end, distance, rank) in enumerate(q["keyword"], 1):
        row = found.setdefault(cid, {"span": (start, end), "sim": 1.0 - distance, "v": None, "kw": 0.0, "k": None})
        row["kw"], row["k"] = rank, position
    return found


def _order(found: dict[str, dict], score: Callable[[dict], float]) -> list[str]:
    big = 10**9
    return sorted(found, key=lambda c: (-score(found[c]), min(found[c]["v"] or big, found[c]["k"] or big), c))


def product(**options):
    """The product's own fusion (:func:`kb.retrieval.fuse`) with these ``KeywordFusion`` fields, on the
    dumped lists: what the search would rank, not a copy of it."""

    def order(q):
        from kb.retrieval import KeywordFusion, Row, fuse

        o = KeywordFusion(**options)  # validates
        vector = [Row(uuid.UUID(c), None, None, 0, s, e, "", distance=d) for c, s, e, d in q["vector"]]
        keyword = [Row(uuid.UUID(c), None, None, 0, s, e, "", distance=d, rank=r) for c, s, e, d, r in q["keyword"]]
        fused = fuse(vector, keyword, o.rrf_k, keyword_weight=o.keyword_weight, keyword_top=o.keyword_top,
                     keyword_gate=o.keyword_gate, keyword_relative=o.keyword_relative, convex=o.convex,
                     keyword_peak=o.keyword_peak)
        return [str(row.id) for row, *_ in fused]

    return order


def convex_normalised(alpha: float, norm: str):
    """Exploratory, not in the product: the convex combination with both sides normalised over the
    candidates -- ``minmax`` maps each side onto [0, 1]; ``tmm`` divides the vector side by its
    theoretical minimum's distance to the best (cosine + 1 over the best + 1) and the keyword rank by the
    first hit's. (With cosine similarity as it is, it is the product's ``convex``.)"""

    def order(q):
        found = _candidates(q)
        sims = [c["sim"] for c in found.values()]
        top = q["keyword"][0][4] if q["keyword"] else 0.0
        low = min((r[4] for r in q["keyword"]), default=0.0)
        smin, smax = (min(sims), max(sims)) if sims else (0.0, 1.0)

        def score(c):
            if norm == "minmax":
                sim = (c["sim"] - smin) / (smax - smin) if smax > smin else 1.0
                kw = ((c["kw"] - low) / (top - low) if top > low else 1.0) if c["k"] else 0.0
            else:
                sim = (c["sim"] + 1.0) / (smax + 1.0)
                kw = c["kw"] / top if c["k"] and top else 0.0
            return alpha * sim + (1 - alpha) * kw

        return _order(found, score)

    return order


def rrf_peaked(k: int = 20, weight: float = 1.0, at: int = 5):
    """Exploratory, not in the product: RRF whose keyword weight is how far the first keyword hit stands
    above the ``at``-th: weight *
    (1 - rank_at / rank_1) (a flat list, 0: vector alone; fewer than ``at`` hits, the whole weight)."""

    def order(q):
        found = _candidates(q)
        kws = [r[4] for r in q["keyword"]]
        w = weight * (1.0 - kws[at - 1] / kws[0]) if len(kws) >= at and kws[0] else weight

        def score(c):
            s = 1.0 / (k + c["v"]) if c["v"] else 0.0
            if c["k"]:
                s += w / (k + c["k"])
            return s

        return _order(found, score)

    return order


def convex_peaked_sqrt(alpha: float, at: int = 5):
    """Exploratory, not in the product: ``convex`` with ``keyword_peak``'s weight taken to the power 0.5,
    (1 - alpha) * (1 - rank_at / rank_1) ** 0.5."""

    def order(q):
        found = _candidates(q)
        kws = [r[4] for r in q["keyword"]]
        g = (1.0 - kws[at - 1] / kws[0]) ** 0.5 if len(kws) >= at and kws[0] else 1.0
        top = kws[0] if kws else 0.0

        def score(c):
            kw = c["kw"] / top if c["k"] and top else 0.0
            return alpha * c["sim"] + (1 - alpha) * g * kw

        return _order(found, score)

    return order


def vector_protected(base: Callable, m: int, k: int = 5):
    """Exploratory, not in the product: ``base``'s order, but the vector side's first ``m`` candidates are
    always among the first ``k`` (the first ``k`` are then ``base``'s order over them and its best others):
    a keyword hit can take a page slot only from a vector candidate below the ``m``-th."""

    def order(q):
        fused = base(q)
        keep = {r[0] for r in q["vector"][:m]}
        others = [c for c in fused if c not in keep][: max(k - len(keep), 0)]
        page = set(keep) | set(others)
        return [c for c in fused if c in page] + [c for c in fused if c not in page]

    return order


def vector_only(q):
    return [r[0] for r in q["vector"]]


FUNCTIONS: dict[str, Callable] = {
    "rrf20": product(parser="or", rank="ts_rank", rrf_k=20),  # the default (CHOSEN_FUSION)
    "rrf20-relative": product(rrf_k=20, keyword_relative=1),
    "rrf20-w0.5": product(rrf_k=20, keyword_weight=0.5),
    "rrf60": product(rrf_k=60),
    "rrf20-peaked5": rrf_peaked(20, 1.0, 5),
    "rrf20-peaked3": rrf_peaked(20, 1.0, 3),
    **{f"cc{a}": product(convex=a) for a in (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9)},
    **{f"cc{a}-tmm": convex_normalised(a, "tmm") for a in (0.5, 0.6, 0.7, 0.8, 0.9)},
    **{f"cc{a}-minmax": convex_normalised(a, "minmax") for a in (0.5, 0.6, 0.7, 0.8, 0.9)},
    **{f"cc{a}-peaked{at}": product(convex=a, keyword_peak=at) for a in (0.3, 0.4, 0.5, 0.6, 0.7) for at in (3, 5, 10)},
    **{f"cc{a}-peaked5-sqrt": convex_peaked_sqrt(a, 5) for a in (0.4, 0.5, 0.6, 0.7)},
    **{f"rrf20-protect{m}": vector_protected(product(parser="or", rank="ts_rank", rrf_k=20), m) for m in (1, 2, 3, 4)},
    **{f"cc0.7-protect{m}": vector_protected(product(convex=0.7), m) for m in (1, 2, 3)},
}


def recall_at(q: dict, ids: list[str], k: int) -> float:
    from ingestion.quality import score_question

    spans = {r[0]: (r[1], r[2]) for r in q["vector"]} | {r[0]: (r[1], r[2]) for r in q["keyword"]}
    return score_question([tuple(s) for s in q["spans"]], [spans[c] for c in ids[:k]]).recall


def grid(args) -> None:
    import numpy as np

    _django()  # the product's fuse (kb.retrieval) scores the product's fusions

    from bench.transfer_suite import paired_bootstrap

    data = json.loads(open(args.json).read())
    k, questions = data["k"], data["questions"]
    names = args.only or list(FUNCTIONS)
    vector = np.array([recall_at(q, vector_only(q), k) for q in questions]) * 100
    runs = {n: np.array([recall_at(q, FUNCTIONS[n](q), k) for q in questions]) * 100 for n in names}
    sources = sorted({q["source"] for q in questions})
    index = {s: np.array([q["source"] == s for q in questions]) for s in sources}

    def margin(n, s):
        return float((runs[n][index[s]] - vector[index[s]]).mean())

    def objective(n, chosen):
        values = [margin(n, s) for s in chosen]
        return min(values), sum(values) / len(values)

    print(f"{len(questions)} questions, {len(sources)} sources, R@{k}; vector {vector.mean():.1f}")
    print("| function | R@k | - vector [95%] | - default [95%] | worst source (margin) | sources below vector |")
    print("|---|---|---|---|---|---|")
    base = runs[names[0]]
    for n in names:
        mean, lo, hi = paired_bootstrap(runs[n], vector)
        dm, dlo, dhi = paired_bootstrap(runs[n], base)
        worst = min(sources, key=lambda s: margin(n, s))
        below = sum(1 for s in sources if margin(n, s) < 0)
        print(f"| {n} | {runs[n].mean():.1f} | {mean:+.1f} [{lo:+.1f}, {hi:+.1f}] | {dm:+.1f} [{dlo:+.1f}, {dhi:+.1f}] "
              f"| {worst} ({margin(n, worst):+.1f}) | {below} |")
    chosen = dict.fromkeys(names, 0)
    held_margins = []
    for held in sources:
        rest = [s for s in sources if s != held]
        best = max(names, key=lambda n: (objective(n, rest), -names.index(n)))
        chosen[best] += 1
        held_margins.append((held, best, margin(best, held)))
    print("leave-one-source-out, folds choosing each: " + ", ".join(f"{n} {c}" for n, c in chosen.items() if c))
    losing = [f"{h} ({b}: {m:+.1f})" for h, b, m in held_margins if m < 0]
    print(f"held-out margin below 0 on {len(losing)} folds: {', '.join(losing)}")
    if args.check:
        real = json.loads(open(args.check).read())
        hybrid = np.array([r[0] for r in real["runs"]["hybrid"]]) * 100
        vec = np.array([r[0] for r in real["runs"]["vector"]]) * 100
        print(f"check against the real search: hybrid {hybrid.mean():.2f} vs {runs[names[0]].mean():.2f} here "
              f"({int((abs(hybrid - runs[names[0]]) > 1e-6).sum())} questions differ); vector {vec.mean():.2f} vs "
              f"{vector.mean():.2f} ({int((abs(vec - vector) > 1e-6).sum())} differ)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("dump")
    p.add_argument("--tenant", required=True)
    p.add_argument("--golden", required=True)
    p.add_argument("--source", action="append", default=[], help="only these sources (repeatable)")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--json", required=True)
    g = sub.add_parser("grid")
    g.add_argument("--json", required=True)
    g.add_argument("--only", action="append", default=[], help="only these functions, in order (the first is the base)")
    g.add_argument("--check", default="", help="bench.fusion_diagnosis scores' JSON over the same questions")
    args = parser.parse_args(argv)
    {"dump": dump, "grid": grid}[args.command](args)


if __name__ == "__main__":
    main()
