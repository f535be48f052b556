"""The embedding model: loaded once per process, batched, device chosen automatically.

Pure Python (no Django). Every call to the model is counted, so callers can prove
that a cached path made no model call (tests assert on the counter, not on time).
"""

from __future__ import annotations

import gc
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from ingestion.chunking.tokens import DEFAULT_MODEL, model_path

DIMENSIONS = 384


def pick_device(requested: str | None = None) -> str:
    """``requested`` when given (``cpu``, ``cuda``, ``cuda:1``, ``mps``), else CUDA when present, else CPU."""
    if requested:
        return requested
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@dataclass
class Embedder:
    """A sentence-transformers model with call counters."""

    path: str
    device: str
    batch_size: int = 32
    name: str = DEFAULT_MODEL
    model_calls: int = 0  # encode() calls that reached the model
    texts_embedded: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(self.path, device=self.device)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per text; an empty input makes no model call."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32)
        with self._lock:
            self.model_calls += 1
            self.texts_embedded += len(texts)
            vectors = self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return vectors.astype(np.float32, copy=False)

    def embed_with_pieces(self, texts: Sequence[str]) -> tuple[np.ndarray, list[np.ndarray]]:
        """:meth:`embed`'s vectors and, for each text, its pieces' vectors (:func:`vectors_and_pieces`)."""
        if not texts:
            return np.zeros((0, DIMENSIONS), dtype=np.float32), []
        with self._lock:
            self.model_calls += 1
            self.texts_embedded += len(texts)
            return vectors_and_pieces(self.model, texts, batch_size=self.batch_size)


def vectors_and_pieces(model, texts: Sequence[str], *, batch_size: int = 32) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each text's vector and its pieces' vectors (:mod:`ingestion.pieces`) from one forward pass of a
    sentence-transformers ``model``: its token vectors mean-pooled over the whole text (the text's vector, as the
    model's own mean pooling and normalisation make it) and over each piece (the tokens' character offsets from the
    model's tokenizer, truncated as the model truncates)."""
    from ingestion.pieces import piece_spans, pool_pieces

    tokens = model.encode(list(texts), batch_size=batch_size, output_value="token_embeddings", convert_to_numpy=False,
                          show_progress_bar=False)
    encoded = model.tokenizer(list(texts), return_offsets_mapping=True, truncation=True,
                              max_length=model.max_seq_length)
    vectors = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    pieces: list[np.ndarray] = []
    for i, (text, token_vectors) in enumerate(zip(texts, tokens, strict=True)):
        matrix = token_vectors.float().cpu().numpy()
        mean = matrix.mean(axis=0)
        vectors[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        pieces.append(pool_pieces(matrix, encoded["offset_mapping"][i], piece_spans(text)))
    return vectors, pieces


# One load at a time: ``lru_cache`` calls the function again for every thread that misses before the
# first call returns, and the web threads of a fresh web process all miss on their first searches.
_LOADING = threading.Lock()


def _new_lock_after_fork() -> None:
    """In a forked child, a lock of its own (as ``ingestion.chunking.tokens``'): one held by another thread at the
    fork (a Celery pool child or a multiprocessing worker forked while a thread loads the model) stays held in the
    child, where that thread does not exist."""
    global _LOADING
    _LOADING = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)


def get_embedder(path: str = "", device: str = "", batch_size: int = 32) -> Embedder:
    """The process-wide embedder for a model path/device (loaded on first use only, once, whichever
    threads ask at the same time).

    The model and the libraries it loads (some hundred thousand objects) live as long as the
    process: they are frozen out of the garbage collector's sight (``gc.freeze``), so that a full
    collection does not walk them every few requests of a web worker (docs/benchmarks.md,
    "Console pages"). Reference counting still frees them.

    Loaded under a lock: four web threads whose first searches came together loaded four models,
    and the three that lost the cache's race were never freed -- frozen with the rest, their
    reference cycles are out of the collector's sight (46 MB more resident memory for the three, for
    the process's life, on the development machine)."""
    with _LOADING:
        return _load(path, device, batch_size)


@lru_cache(maxsize=4)
def _load(path: str, device: str, batch_size: int) -> Embedder:
    embedder = Embedder(path=path or model_path(), device=pick_device(device or None), batch_size=batch_size)
    gc.freeze()
    return embedder
