"""Optional semantic splitting: where adjacent sentences stop being similar.

Used only with ``ChunkingConfig(semantic_split=True)``, for a run of prose that
the packer will cut into several chunks anyway.  The chunker stays model-free:
the caller injects ``embed(texts) -> np.ndarray`` (one unit vector per text),
and this module only compares vectors.

The policy: embed each sentence, compare the mean vector of the ``WINDOW``
sentences before each sentence boundary with the mean of the ``WINDOW`` after
it (a window smooths over one odd sentence), and call the lowest
``TOPIC_QUANTILE`` of those similarities that are local minima (the bottom of
a dip) the run's topic boundaries.  The
packer then prefers a topic boundary over any other within its usual size
window, so chunks stay within the target and the limit; where no topic boundary
falls in that window the cut is the usual paragraph or sentence boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# ``embed(texts)`` -> float array of shape (len(texts), dim), rows L2-normalised.
EmbedFn = Callable[[list[str]], np.ndarray]

# Sentences on each side of a boundary whose mean vector represents that side.
WINDOW = 2
# Share of a run's sentence boundaries that become topic boundaries (the least similar ones).
TOPIC_QUANTILE = 0.2
# Fewer sentences than this in a run: too little to tell a topic change from noise.
MIN_SENTENCES = 4


def boundary_similarities(vectors: np.ndarray, window: int = WINDOW) -> np.ndarray:
    """Cosine similarity across each of the ``len(vectors) - 1`` boundaries between consecutive sentences."""
    count = len(vectors)
    if count < 2:
        return np.zeros(0, dtype=np.float64)
    vectors = np.asarray(vectors, dtype=np.float64)
    cumulative = np.vstack([np.zeros((1, vectors.shape[1])), np.cumsum(vectors, axis=0)])
    sims = np.empty(count - 1, dtype=np.float64)
    for b in range(1, count):
        left = cumulative[b] - cumulative[max(0, b - window)]
        right = cumulative[min(count, b + window)] - cumulative[b]
        norm = np.linalg.norm(left) * np.linalg.norm(right)
        sims[b - 1] = float(left @ right / norm) if norm > 0 else 1.0
    return sims


def topic_boundaries(texts: Sequence[str], embed: EmbedFn) -> list[int]:
    """Indices ``b`` (1-based: between ``texts[b - 1]`` and ``texts[b]``) where the topic most likely changes."""
    if len(texts) < MIN_SENTENCES:
        return []
    vectors = np.asarray(embed(list(texts)))
    if vectors.ndim != 2 or len(vectors) != len(texts):
        raise ValueError(f"embed() returned shape {vectors.shape} for {len(texts)} texts; expected one row per text")
    sims = boundary_similarities(vectors)
    threshold = np.quantile(sims, TOPIC_QUANTILE)
    # Strictly below the overall mean too: a run that never changes topic (all
    # similarities alike) gets no topic boundaries at all.
    mean = float(sims.mean())
    # Only the bottom of each dip: the windows make the boundaries next to a
    # topic change dip too, and marking them would let the packer cut a sentence early.
    last = len(sims) - 1
    return [
        b + 1
        for b, sim in enumerate(sims)
        if sim <= threshold and sim < mean and (b == 0 or sim < sims[b - 1]) and (b == last or sim <= sims[b + 1])
    ]
