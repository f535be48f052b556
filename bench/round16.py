"""Issue 30, sixteenth round (docs/benchmarks.md, "Sixteenth round"): the two registered candidates, measured.

``python -m bench.round16 rowcap [--suite evaluation/transfer] [--json FILE]`` -- **A**, a query-routed row cap,
over the default chunker's own rankings as ``kb_transfer`` makes them (cosine top 20 re-ranked by pieces at 0.5,
then the rest by cosine): the default, the routed cap and the cap on every query, with semchunk 200 as the
reference; per source, per question type, bootstrap intervals and leave-one-source-out
(:mod:`bench.transfer_suite`'s tables and rule). No database.

``python -m bench.round16 fill --tenant SLUG [--version SHORT] --golden FILE [--json FILE]`` -- **B**, a budget
fill, through the real search (:func:`kb.search.search`, the tenant's admin): per question and mode, context
recall at k = 5 and the budget as now, and with the next hits' own chunks added while the budget allows.
Needs the embedded services (started here, as ``manage.py`` does).

Both are measurements of candidates, not product code: nothing in the product imports this module.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import numpy as np

# A query that looks like a row lookup (registered before any number: the cap does not apply to it).
ROW_LOOKUP = re.compile(r"\d|%|\bhow (much|many)\b|\b(percentage|percent|proportion|share|ratio|rate)s?\b", re.I)
ROW_KINDS = ("table_row", "table_rows")
WEIGHT = 0.5  # the default's piece weight
DEPTH = 20  # bench.transfer_suite.PIECES_DEPTH


def _django() -> None:
    """The embedded services started, Django set up and this process logged in as the tenants' owner."""
    import os

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    from bulkhead import embedded_services

    embedded_services.ensure_started()
    import django

    django.setup()
    from accounts.tenancy import owner_login_for_this_process

    owner_login_for_this_process()


def looks_like_row_lookup(query: str) -> bool:
    return ROW_LOOKUP.search(query) is not None


def tables_of(chunks, text: str) -> list[int | None]:
    """Per chunk, the table its rows belong to (None for a chunk that is not a row chunk): a run of row chunks of
    consecutive ordinals in one section with nothing but one line break between one's end and the next's start."""
    out: list[int | None] = []
    table = -1
    for i, c in enumerate(chunks):
        if c.kind not in ROW_KINDS:
            out.append(None)
            continue
        prev = chunks[i - 1] if i else None
        same = (
            prev is not None and prev.kind in ROW_KINDS and prev.section_key == c.section_key
            and prev.ordinal + 1 == c.ordinal and text[prev.end : c.start] == "\n"
        )
        if not same:
            table += 1
        out.append(table)
    return out


def full_order(sims: np.ndarray, query: np.ndarray, pieces: list) -> np.ndarray:
    """The default's ranking: the cosine top :data:`DEPTH` re-ranked by pieces (``kb_transfer``'s
    ``pieces_rerank``), then every other chunk by cosine."""
    from ingestion.pieces import best_piece, piece_score

    order = np.lexsort((np.arange(len(sims)), -sims))
    depth = order[:DEPTH]
    scores = np.array([piece_score(float(sims[j]), best_piece(pieces[j], query), WEIGHT) for j in depth])
    return np.concatenate([depth[np.lexsort((np.arange(len(scores)), -scores))], order[DEPTH:]])


def capped(order: np.ndarray, table: list[int | None], k: int) -> list[int]:
    """The first ``k`` of ``order`` with at most one row chunk of one table among them (the rest after)."""
    taken: list[int] = []
    passed: list[int] = []
    seen: set[int] = set()
    for j in order:
        if len(taken) == k:
            break
        t = table[j]
        if t is not None and t in seen:
            passed.append(int(j))
            continue
        if t is not None:
            seen.add(t)
        taken.append(int(j))
    return (taken + passed)[:k]


def rowcap(suite: str | None, json_path: str | None, k: int = 5, out=sys.stdout) -> None:
    from bench import transfer_suite as ts
    from bench.chunkeval.cli import make_chunker
    from bench.chunkeval.embedding_cache import DEFAULT_CACHE_DIR, CachedEmbedder
    from ingestion.chunking import ChunkingConfig, chunk_document
    from ingestion.chunking.tokens import DEFAULT_MODEL, default_counter
    from ingestion.parsers import parse
    from ingestion.quality import score_question

    questions, texts = ts.load_suite(Path(suite) if suite else ts.DEFAULT_SUITE)
    embedder = CachedEmbedder(DEFAULT_MODEL, cache_dir=DEFAULT_CACHE_DIR)
    config, counter = ChunkingConfig(), default_counter()
    chunks, vectors, pieces, tables = {}, {}, {}, {}
    for doc, text in texts.items():
        parsed = parse(text.encode("utf-8"), content_type="text/plain")
        assert parsed.text == text
        chunks[doc] = chunk_document(parsed, config, counter)
        embed_texts = [c.embed_text for c in chunks[doc]]
        vectors[doc] = embedder.embed(embed_texts)
        tables[doc] = tables_of(chunks[doc], text)
    every = [c.embed_text for doc in texts for c in chunks[doc]]
    embedder.pieces(every)  # one pass, cached
    for doc in texts:
        pieces[doc] = embedder.pieces([c.embed_text for c in chunks[doc]])
    qvec = embedder.embed([q.question for q in questions])
    names = ["bulkhead (pieces=0.5)", "bulkhead (routed row cap)", "bulkhead (row cap, every query)"]
    scores = {n: (np.zeros(len(questions)), np.zeros(len(questions))) for n in names}
    routed = np.zeros(len(questions), dtype=bool)
    moved = np.zeros(len(questions), dtype=bool)
    for i, (q, v) in enumerate(zip(questions, qvec, strict=True)):
        sims = vectors[q.document] @ v
        order = full_order(sims, v, pieces[q.document])
        lookup = looks_like_row_lookup(q.question)
        routed[i] = lookup
        tops = {
            names[0]: [int(j) for j in order[:k]],
            names[2]: capped(order, tables[q.document], k),
        }
        tops[names[1]] = tops[names[0]] if lookup else tops[names[2]]
        moved[i] = tops[names[1]] != tops[names[0]]
        for n in names:
            s = score_question(q.spans, [(chunks[q.document][j].start, chunks[q.document][j].end) for j in tops[n]])
            scores[n][0][i], scores[n][1][i] = s.recall, s.iou
    total = sum(len(c) for c in chunks.values())
    runs = [ts.Run(n, *scores[n], total) for n in names]
    runs += ts.evaluate(questions, texts, dict([make_chunker("semchunk:200")]), embedder, k)
    by_source = ts._groups(questions, lambda q: q.source)
    by_type = ts._groups(questions, lambda q: q.type)
    print(f"k = {k}; {len(questions)} questions, {len(by_source)} sources.\n", file=out)
    print(ts.group_table(runs, by_source, "source"), file=out)
    print("\n" + ts.group_table(runs, by_type, "question type"), file=out)
    print("\nThe route (questions that look like a row lookup: no cap), and questions whose first five moved:", file=out)
    for t, ix in by_type.items():
        print(f"  {t}: {int(routed[ix].sum())} of {len(ix)} routed past the cap; {int(moved[ix].sum())} moved", file=out)
    print(f"\nGains over {names[0]}, paired bootstrap over questions (2000 rounds):", file=out)
    print(ts.gain_table(runs, runs[0]), file=out)
    ref = runs[-1]
    for label, candidates in (("default vs routed cap (the registered rule)", names[:2]), ("all three", names)):
        rows = ts.leave_one_source_out(runs, candidates, ref, by_source)
        chosen = {n: sum(1 for r in rows if r[1] == n) for n in candidates}
        print(f"\nLeave-one-source-out, {label}: " + ", ".join(f"{n} on {c}" for n, c in chosen.items()), file=out)
        for held, name, mine, theirs in rows:
            if len(candidates) == 2 and name != candidates[1]:
                print(f"  {held}: {name} ({100 * mine[0]:.1f} / {100 * mine[1]:.2f}; semchunk "
                      f"{100 * theirs[0]:.1f} / {100 * theirs[1]:.2f})", file=out)
        for n in candidates:
            worst, mean = ts.objective(next(r for r in runs if r.name == n), ref, by_source, list(by_source))
            print(f"  {n}: worst source ratio {worst:.3f}, mean {mean:.3f}", file=out)
    if json_path:
        Path(json_path).write_text(json.dumps({
            "k": k, "questions": [vars(q) | {"source": q.source} for q in questions],
            "routed": routed.tolist(), "moved": moved.tolist(),
            "runs": [{"name": r.name, "recall": r.recall.tolist(), "iou": r.iou.tolist(), "chunks": r.chunks}
                     for r in runs],
        }), encoding="utf-8")


def _covered(spans) -> list[tuple[int, int]]:
    from kb.expansion import merge_spans

    return merge_spans(spans)


def _inside(span: tuple[int, int], covered: list[tuple[int, int]]) -> bool:
    return any(s <= span[0] and span[1] <= e for s, e in covered)


def fill(tenant_slug: str, version_ref: str, golden: str, json_path: str | None, *, k: int = 5, budget: int = 1500,
         modes=("vector", "hybrid"), out=sys.stdout) -> None:
    """Per question and mode: context recall and tokens as the search gives them (k, budget, parent expansion),
    then with the fill (see the module docstring and the registration)."""

    _django()
    from accounts.selectors import tenant_get
    from bench.transfer_suite import paired_bootstrap
    from ingestion.chunking.tokens import default_counter
    from ingestion.golden import load_questions
    from ingestion.quality import intersection_length, union_ranges
    from kb import index_versions as versions
    from kb.embedder import embedder
    from kb.evaluation import eval_member, genre_of, golden_resolve
    from kb.search import SearchFilters, search

    tenant = tenant_get(slug=tenant_slug)
    member = eval_member(tenant=tenant)
    version = (versions.index_version_get(tenant=tenant, ref=version_ref) if version_ref
               else versions.index_version_active(tenant=tenant))
    questions = golden_resolve(tenant=tenant, questions=load_questions(golden))
    types = [json.loads(line).get("type", "") for line in open(golden, encoding="utf-8") if line.strip()]
    vectors = list(embedder().embed([q.question for q in questions]))
    counter = default_counter()
    rows = []
    for mode in modes:
        for i, (q, vector) in enumerate(zip(questions, vectors, strict=True)):
            common = {"member": member, "query": q.question, "mode": mode, "index_version": version,
                      "query_vector": vector, "audit": False,
                      "filters": SearchFilters(document_ids=(q.document_id,))}
            own = search(**common, top_k=k, expand="parent", max_contexts=k, context_token_budget=budget)
            deeper = search(**common, top_k=2 * k, expand="none")
            gold = union_ranges(q.spans)
            gold_chars = sum(e - s for s, e in q.spans)
            spans = [s for c in own.contexts for s in c.spans]
            used = sum(c.token_count for c in own.contexts)
            base = intersection_length(gold, union_ranges(spans)) / gold_chars
            mine = {h.chunk_id for h in own.results}
            added = 0
            filled_tokens = used
            for hit in [h for h in deeper.results if h.chunk_id not in mine][:k]:
                if filled_tokens >= budget:
                    break
                span = (hit.start, hit.end)
                if _inside(span, _covered(spans)):
                    continue
                tokens = counter.count(hit.text)
                if filled_tokens + tokens > budget:
                    continue
                spans.append(span)
                filled_tokens += tokens
                added += 1
            with_fill = intersection_length(gold, union_ranges(spans)) / gold_chars
            rows.append({"mode": mode, "i": i, "source": genre_of(q.corpus), "type": types[i],
                         "context": base, "fill": with_fill, "tokens": used, "fill_tokens": filled_tokens,
                         "added": added, "contexts": len(own.contexts)})
            if (i + 1) % 250 == 0:
                print(f"{mode}: {i + 1}/{len(questions)}", file=sys.stderr, flush=True)
    if json_path:
        Path(json_path).write_text(json.dumps({"tenant": tenant_slug, "version": version.short_id, "k": k,
                                               "budget": budget, "rows": rows}), encoding="utf-8")
    for mode in modes:
        mine = [r for r in rows if r["mode"] == mode]
        base = np.array([r["context"] for r in mine])
        with_fill = np.array([r["fill"] for r in mine])
        tokens = np.array([r["tokens"] for r in mine])
        misses = base < 1 - 1e-9
        room = tokens <= budget - 100
        gain = paired_bootstrap(with_fill, base)
        print(f"{mode} ({len(mine)} questions, version {version.short_id}): context recall {100 * base.mean():.1f} -> "
              f"{100 * with_fill.mean():.1f} with the fill, gain {100 * gain[0]:+.1f} [{100 * gain[1]:+.1f}, "
              f"{100 * gain[2]:+.1f}]; questions gained {int((with_fill > base + 1e-9).sum())}", file=out)
        print(f"  context tokens mean {tokens.mean():.0f} (median {np.median(tokens):.0f}), with the fill "
              f"{np.mean([r['fill_tokens'] for r in mine]):.0f}; questions with >= 100 tokens unused "
              f"{int(room.sum())} of {len(mine)}; of the {int(misses.sum())} under full context recall, "
              f"{int((misses & room).sum())} leave >= 100 tokens unused", file=out)


def fill_built(tenant_slug: str, golden: str, before: str, json_path: str | None, *, k: int = 5,
               budget: int = 1500, out=sys.stdout) -> None:
    """The option as built (``kb.search.search(budget_fill=True)``) on the questions and tenant of a ``fill`` run
    (``before``, its JSON: the same questions and modes, context recall without the fill), paired with it."""

    _django()
    from accounts.selectors import tenant_get
    from bench.transfer_suite import paired_bootstrap
    from ingestion.golden import load_questions
    from ingestion.quality import intersection_length, union_ranges
    from kb import index_versions as versions
    from kb.embedder import embedder
    from kb.evaluation import eval_member, golden_resolve
    from kb.search import SearchFilters, search

    previous = json.loads(Path(before).read_text(encoding="utf-8"))
    tenant = tenant_get(slug=tenant_slug)
    member = eval_member(tenant=tenant)
    version = versions.index_version_get(tenant=tenant, ref=previous["version"])
    questions = golden_resolve(tenant=tenant, questions=load_questions(golden))
    vectors = list(embedder().embed([q.question for q in questions]))
    rows = []
    for row in previous["rows"]:
        q, vector = questions[row["i"]], vectors[row["i"]]
        own = search(member=member, query=q.question, mode=row["mode"], index_version=version, query_vector=vector,
                     audit=False, filters=SearchFilters(document_ids=(q.document_id,)), top_k=k, expand="parent",
                     max_contexts=k, context_token_budget=budget, budget_fill=True)
        covered = union_ranges(s for c in own.contexts for s in c.spans)
        built = intersection_length(union_ranges(q.spans), covered) / sum(e - s for s, e in q.spans)
        rows.append(row | {"built": built, "built_tokens": sum(c.token_count for c in own.contexts),
                           "built_contexts": len(own.contexts)})
        if len(rows) % 250 == 0:
            print(f"{len(rows)}/{len(previous['rows'])}", file=sys.stderr, flush=True)
    if json_path:
        Path(json_path).write_text(json.dumps(previous | {"rows": rows}), encoding="utf-8")
    for mode in sorted({r["mode"] for r in rows}, reverse=True):
        mine = [r for r in rows if r["mode"] == mode]
        base, built = np.array([r["context"] for r in mine]), np.array([r["built"] for r in mine])
        gain = paired_bootstrap(built, base)
        print(f"{mode}: context recall {100 * base.mean():.2f} -> {100 * built.mean():.2f} as built, gain "
              f"{100 * gain[0]:+.2f} [{100 * gain[1]:+.2f}, {100 * gain[2]:+.2f}]; gained "
              f"{int((built > base + 1e-9).sum())}, lost {int((built < base - 1e-9).sum())}; tokens "
              f"{np.mean([r['tokens'] for r in mine]):.0f} -> {np.mean([r['built_tokens'] for r in mine]):.0f}; "
              f"the scratch rule {100 * np.mean([r['fill'] for r in mine]):.2f}", file=out)


def fill_time(tenant_slug: str, golden: str, *, n: int = 300, k: int = 5, budget: int = 1500, out=sys.stdout) -> None:
    """Wall time of one search in hybrid mode with parent contexts, without and with the fill, alternating per
    question over the first ``n`` questions (the query vectors precomputed; the machine's load applies to both)."""
    import time

    _django()
    from accounts.selectors import tenant_get
    from ingestion.golden import load_questions
    from kb.embedder import embedder
    from kb.evaluation import eval_member, golden_resolve
    from kb.search import SearchFilters, search

    tenant = tenant_get(slug=tenant_slug)
    member = eval_member(tenant=tenant)
    questions = golden_resolve(tenant=tenant, questions=load_questions(golden))[:n]
    vectors = list(embedder().embed([q.question for q in questions]))
    times: dict[bool, list[float]] = {False: [], True: []}
    for i, (q, vector) in enumerate(zip(questions, vectors, strict=True)):
        for fill in ((False, True) if i % 2 else (True, False)):
            started = time.perf_counter()
            search(member=member, query=q.question, mode="hybrid", query_vector=vector, audit=False, top_k=k,
                   filters=SearchFilters(document_ids=(q.document_id,)), max_contexts=k, context_token_budget=budget,
                   budget_fill=fill)
            times[fill].append(1000 * (time.perf_counter() - started))
    for fill, ms in times.items():
        print(f"budget_fill={fill}: median {np.median(ms):.1f} ms, p90 {np.percentile(ms, 90):.1f} ms "
              f"({len(ms)} searches)", file=out)


def fill_loso(json_path: str, key: str = "fill", out=sys.stdout) -> None:
    """Leave-one-source-out between without and with the fill on hybrid's context recall (the registered rule:
    each scored by its worst source, ties by the mean), and the per-source table."""
    data = json.loads(Path(json_path).read_text(encoding="utf-8"))
    for mode in ("vector", "hybrid"):
        mine = [r for r in data["rows"] if r["mode"] == mode]
        if not mine:
            continue
        sources = sorted({r["source"] for r in mine})
        score = {name: {s: float(np.mean([r[field] for r in mine if r["source"] == s])) for s in sources}
                 for name, field in (("context", "context"), ("fill", key))}
        changed = [s for s in sources if score["fill"][s] != score["context"][s]]
        print(f"{mode}: sources whose context recall moves with the fill: " + ", ".join(
            f"{s} {100 * score['context'][s]:.1f} -> {100 * score['fill'][s]:.1f}" for s in changed) or "none", file=out)
        if mode != "hybrid":
            continue
        chosen = {"context": 0, "fill": 0}
        for held in sources:
            others = [s for s in sources if s != held]
            best = max(("context", "fill"), key=lambda n: (min(score[n][s] for s in others),
                                                           np.mean([score[n][s] for s in others]),
                                                           -("context", "fill").index(n)))
            chosen[best] += 1
        print(f"hybrid leave-one-source-out: without on {chosen['context']}, with the fill on {chosen['fill']} "
              f"of {len(sources)} folds", file=out)


def fill_pooled(json_paths: list[str], out=sys.stdout) -> None:
    """The seventeenth round's adoption rule (docs/benchmarks.md): ``fill-built`` runs of held-out rounds pooled --
    per mode, questions whose context recall is lower with the fill (in the last run, the new round's), and the
    pooled gain with its paired bootstrap interval over questions."""
    from bench.transfer_suite import paired_bootstrap

    runs = [json.loads(Path(p).read_text(encoding="utf-8"))["rows"] for p in json_paths]
    for mode in ("vector", "hybrid"):
        for name, rows in [(p, [r for r in run if r["mode"] == mode]) for p, run in zip(json_paths, runs, strict=True)]:
            base, built = np.array([r["context"] for r in rows]), np.array([r["built"] for r in rows])
            print(f"{mode} {name}: {len(rows)} questions, {100 * base.mean():.2f} -> {100 * built.mean():.2f}, "
                  f"gained {int((built > base + 1e-9).sum())}, lost {int((built < base - 1e-9).sum())}", file=out)
        rows = [r for run in runs for r in run if r["mode"] == mode]
        base, built = np.array([r["context"] for r in rows]), np.array([r["built"] for r in rows])
        gain = paired_bootstrap(built, base)
        print(f"{mode} pooled ({len(rows)} questions): {100 * base.mean():.2f} -> {100 * built.mean():.2f}, gain "
              f"{100 * gain[0]:+.2f} [{100 * gain[1]:+.2f}, {100 * gain[2]:+.2f}]", file=out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.round16", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("rowcap")
    a.add_argument("--suite", default=None)
    a.add_argument("--json", dest="json_path", default=None)
    b = sub.add_parser("fill")
    b.add_argument("--tenant", required=True)
    b.add_argument("--version", default="")
    b.add_argument("--golden", required=True)
    b.add_argument("--json", dest="json_path", default=None)
    b.add_argument("--mode", action="append", default=None, choices=("vector", "hybrid"))
    d = sub.add_parser("fill-built")
    d.add_argument("--tenant", required=True)
    d.add_argument("--golden", required=True)
    d.add_argument("--before", required=True, help="a fill run's JSON")
    d.add_argument("--json", dest="json_path", default=None)
    t = sub.add_parser("fill-time")
    t.add_argument("--tenant", required=True)
    t.add_argument("--golden", required=True)
    t.add_argument("--n", type=int, default=300)
    c = sub.add_parser("fill-loso")
    c.add_argument("json_path")
    c.add_argument("--key", default="fill", choices=("fill", "built"))
    e = sub.add_parser("fill-pooled")
    e.add_argument("json_paths", nargs="+", help="fill-built runs' JSON, the new round's last")
    args = parser.parse_args(argv)
    if args.command == "fill-pooled":
        fill_pooled(args.json_paths)
    elif args.command == "rowcap":
        rowcap(args.suite, args.json_path)
    elif args.command == "fill":
        fill(args.tenant, args.version, args.golden, args.json_path, modes=tuple(args.mode or ("vector", "hybrid")))
    elif args.command == "fill-time":
        fill_time(args.tenant, args.golden, n=args.n)
    elif args.command == "fill-built":
        fill_built(args.tenant, args.golden, args.before, args.json_path)
    else:
        fill_loso(args.json_path, args.key)


if __name__ == "__main__":
    main()
