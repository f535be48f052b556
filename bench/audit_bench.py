"""The audit benchmark: search latency with and without the audit record, in one run.

``manage.py kb_bench audit`` loads N chunks (default 100,000) over T tenants into a separate
database (its name must contain "bench"), with the search benchmark's loader, layout, policies
and four readers per tenant (100%, 50%, 10%, 1% of their tenant's chunks; bench.search_bench),
builds the shared and per-tenant HNSW indexes, then runs every query as every reader twice --
``kb.search.search(..., audit=True)`` and ``audit=False`` -- alternating which goes first, so
both see the same caches and the same noise of a shared machine. Two modes: vector without
expansion (the fastest search: the record's share is largest there) and hybrid with parent
expansion (the API's usual call).

The rows are synthetic (random words; random unit vectors around 5,000 centres, then noisy
copies): the real-text corpus of the search benchmark takes about 50 minutes to embed on two
cores, and what is measured here -- the cost of one INSERT after the search -- does not depend
on what the text says. Query vectors are noisy copies of stored ones; no model runs.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from audit.models import AuditEvent
from bench import search_bench
from kb.models import IndexVersion
from kb.search import search

BASE_ROWS = 5_000
VOCABULARY = 3_000
MODES = [("vector", "none"), ("hybrid", "parent")]


def synthetic_corpus(*, seed: int = 7, dims: int = 384) -> tuple[list[str], np.ndarray, list[str]]:
    """``BASE_ROWS`` texts of random words and unit vectors (the loader adds noisy copies); the words."""
    rng = np.random.default_rng(seed)
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    words = sorted({"".join(rng.choice(letters, rng.integers(4, 10))) for _ in range(VOCABULARY)})
    texts = [" ".join(rng.choice(words, rng.integers(30, 60))) + "." for _ in range(BASE_ROWS)]
    vectors = rng.normal(size=(BASE_ROWS, dims)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, vectors, words


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def measure(*, vectors: np.ndarray, words: list[str], queries: int, top_k: int = 10, seed: int = 11,
            log=print) -> dict:
    """Every query as every reader, in each mode, with and without the audit record (alternating order)."""
    search_bench._check_database()
    rng = np.random.default_rng(seed)
    tenants, members = search_bench._members()
    picks = rng.integers(0, len(vectors), queries)
    qvecs = vectors[picks] + rng.normal(scale=0.02, size=(queries, vectors.shape[1])).astype(np.float32)
    qvecs /= np.linalg.norm(qvecs, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(words, 3)) for _ in range(queries)]
    latencies: dict[tuple[str, str, bool], list[float]] = {}
    before = AuditEvent.objects.filter(action="search").count()
    audited = 0
    started = time.monotonic()
    warm = 20
    for qi in range(warm + queries):
        q = qi % queries
        tenant = tenants[q % len(tenants)]
        version = IndexVersion.objects.get(tenant=tenant, is_active=True)
        for r, (name, *_) in enumerate(search_bench.READERS):
            member = members[(tenant.id, name)]
            for mode, expand in MODES:
                order = (True, False) if (qi + r) % 2 == 0 else (False, True)
                for audit in order:
                    t0 = time.perf_counter()
                    search(member=member, query=texts[q], top_k=top_k, mode=mode, expand=expand,
                           index_version=version, query_vector=qvecs[q], audit=audit)
                    ms = (time.perf_counter() - t0) * 1000
                    audited += audit
                    if qi >= warm:  # the first passes warm caches and are thrown away
                        latencies.setdefault((name, f"{mode}+{expand}", audit), []).append(ms)
        if qi % 50 == 0:
            log(f"query {qi} of {warm + queries} ({time.monotonic() - started:.0f}s)")
    written = AuditEvent.objects.filter(action="search").count() - before
    return {"latencies": latencies, "queries": queries, "audited": audited, "written": written,
            "seconds": time.monotonic() - started}


def report(build_stats: dict, measured: dict) -> str:
    lines = []
    if build_stats.get("chunks"):
        lines.append(
            f"Rows: {build_stats['chunks']:,} synthetic chunks over {build_stats['tenants']} tenants. "
            f"Load (COPY) {build_stats['load_s']:.0f} s, HNSW build {build_stats['hnsw_build_s']:.0f} s"
            + (f", {build_stats['tenant_indexes']} per-tenant HNSW indexes in {build_stats['tenant_index_build_s']:.0f} s"
               if build_stats.get("tenant_indexes") else "") + "."
        )
    lines.append(
        f"{measured['queries']} queries x {len(search_bench.READERS)} readers x {len(MODES)} modes, each with and "
        f"without the audit record ({measured['seconds']:.0f} s); audit records written: {measured['written']} "
        f"of {measured['audited']} audited searches."
    )
    lines.append("")
    lines.append("| reader reads | mode | p50 ms without | p50 ms with | p95 ms without | p95 ms with | p95 change |")
    lines.append("|---|---|---:|---:|---:|---:|---:|")
    lat = measured["latencies"]
    for mode, expand in MODES:
        key = f"{mode}+{expand}"
        pooled = {False: [], True: []}
        for name, _, _, share in search_bench.READERS:
            off, on = lat[(name, key, False)], lat[(name, key, True)]
            pooled[False] += off
            pooled[True] += on
            lines.append(f"| {share:.0%} | {key} | {statistics.median(off):.1f} | {statistics.median(on):.1f} | "
                         f"{_p95(off):.1f} | {_p95(on):.1f} | {(_p95(on) / _p95(off) - 1):+.1%} |")
        off, on = pooled[False], pooled[True]
        lines.append(f"| **all** | **{key}** | {statistics.median(off):.1f} | {statistics.median(on):.1f} | "
                     f"**{_p95(off):.1f}** | **{_p95(on):.1f}** | **{(_p95(on) / _p95(off) - 1):+.1%}** |")
    return "\n".join(lines)
