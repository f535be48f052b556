"""Timing helpers shared by the bench scripts (wall-clock milliseconds of a repeated call)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def p50_p95(run: Callable[[], object], repeat: int) -> tuple[float, float]:
    """The median and the 95th percentile, in milliseconds, of ``repeat`` calls of ``run`` after one warm call."""
    run()  # warm
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) * 1000)
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
