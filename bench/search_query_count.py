"""How many SQL queries one search() issues, and its time, per mode: run inside a checkout against a loaded
search benchmark database (``kb_bench search``), with ``manage.py shell < bench/search_query_count.py``;
docs/benchmarks.md, "Before and after the search split"."""

import statistics
import time

import numpy as np
from django.db import connection
from django.test.utils import CaptureQueriesContext

from bench.search_bench import _members
from kb.search import search


def main() -> None:
    tenants, members = _members()
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(60, 384)).astype("float32")
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    for mode, expand in (("vector", "none"), ("hybrid", "parent")):
        counts, times = [], []
        for i, v in enumerate(vecs):
            t = tenants[i % len(tenants)]
            m = [mm for (tid, _), mm in members.items() if tid == t.id][0]
            with CaptureQueriesContext(connection) as ctx:
                t0 = time.perf_counter()
                search(member=m, query="views and forms", top_k=10, mode=mode, expand=expand, query_vector=list(map(float, v)))
                times.append((time.perf_counter() - t0) * 1000)
            counts.append(len(ctx.captured_queries))
        print(mode, expand, "queries per search", sorted(set(counts)), "p50", round(statistics.median(times[5:]), 1),
              "p95", round(sorted(times[5:])[int(0.95 * len(times[5:]))], 1))


if __name__ != "bench.search_query_count":  # run by `manage.py shell < ...`, not when imported
    main()
