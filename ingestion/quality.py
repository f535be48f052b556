"""Chunk quality: excerpt-level retrieval metrics over character ranges (Chroma chunking-evaluation
definitions) and the size distribution of a set of chunks. Pure; used by the console's evaluation of an
index version (``kb.evaluation``) and by the chunking benchmarks (``bench.chunkeval``).

Per question, with R the union of the reference ranges and U the union of the
retrieved chunks' ranges (|x| a length in characters):

- recall    = |R ∩ U| / Σ_i |ref_i|
- precision = |R ∩ U| / Σ_{c in top-k} |c|   (each chunk counted in full)
- IoU       = |R ∩ U| / (Σ_{c in top-k} |c| + Σ_i |ref_i \\ U|)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

Range = tuple[int, int]
ORPHAN_CHARS = 50
HISTOGRAM_BIN = 32


def union_ranges(ranges: Iterable[Range]) -> list[Range]:
    """Sorted, merged, non-empty ranges covering the same characters."""
    merged: list[list[int]] = []
    for start, end in sorted(r for r in ranges if r[1] > r[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


def total_length(ranges: Iterable[Range]) -> int:
    """Σ (end - start), overlaps counted as often as they occur."""
    return sum(max(0, e - s) for s, e in ranges)


def intersection_length(a: Sequence[Range], b: Sequence[Range]) -> int:
    """Characters in both unions; ``a`` and ``b`` must already be merged (``union_ranges``)."""
    i = j = 0
    total = 0
    while i < len(a) and j < len(b):
        lo = max(a[i][0], b[j][0])
        hi = min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


@dataclass(frozen=True)
class QuestionScore:
    recall: float
    precision: float
    iou: float


def score_question(references: Sequence[Range], retrieved: Sequence[Range]) -> QuestionScore:
    """Recall, precision and IoU of one question's retrieved chunk ranges against its references."""
    ref_union = union_ranges(references)
    got_union = union_ranges(retrieved)
    hit = intersection_length(ref_union, got_union)
    ref_total = total_length(references)
    chunk_total = total_length(retrieved)
    # Σ_i |ref_i \ U|: each reference's part not covered by any retrieved chunk.
    missed = sum((e - s) - intersection_length([(s, e)], got_union) for s, e in references if e > s)
    recall = hit / ref_total if ref_total else 0.0
    precision = hit / chunk_total if chunk_total else 0.0
    denominator = chunk_total + missed
    iou = hit / denominator if denominator else 0.0
    return QuestionScore(recall, precision, iou)


@dataclass(frozen=True)
class Summary:
    mean: float
    std: float  # population standard deviation
    n: int


def summarize(values: Sequence[float]) -> Summary:
    """Mean and population standard deviation (0 for an empty sequence)."""
    n = len(values)
    if n == 0:
        return Summary(0.0, 0.0, 0)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / n
    return Summary(mean, math.sqrt(var), n)


@dataclass
class ChunkStats:
    count: int
    mean_tokens: float
    max_tokens: int
    orphans: int  # chunks shorter than ORPHAN_CHARS characters
    histogram: dict[str, int]  # "0-31": n, ... over embedded-text tokens


def chunk_stats(chunks: Sequence, token_counts: Sequence[int]) -> ChunkStats:
    """Size distribution of one set of chunks (anything with ``start`` and ``end`` character offsets)."""
    histogram: dict[str, int] = {}
    for n in token_counts:
        lo = (n // HISTOGRAM_BIN) * HISTOGRAM_BIN
        label = f"{lo}-{lo + HISTOGRAM_BIN - 1}"
        histogram[label] = histogram.get(label, 0) + 1
    ordered = dict(sorted(histogram.items(), key=lambda kv: int(kv[0].split("-")[0])))
    return ChunkStats(
        count=len(chunks),
        mean_tokens=float(np.mean(token_counts)) if token_counts else 0.0,
        max_tokens=max(token_counts, default=0),
        orphans=sum(1 for c in chunks if c.end - c.start < ORPHAN_CHARS),
        histogram=ordered,
    )
