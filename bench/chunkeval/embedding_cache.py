"""Sentence embeddings with an on-disk cache keyed by (model, text hash).

Embedding is the slow part of an evaluation (~40 chunks/s on two CPU cores);
with the cache a repeated run only embeds texts it has not seen.  The cache is a
directory (git-ignored ``.bench-cache/`` by default) holding one ``.npy`` matrix
and one key list per model; vectors are L2-normalised so cosine is a dot product.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

DEFAULT_CACHE_DIR = Path(os.environ.get("BULKHEAD_BENCH_CACHE", ".bench-cache")) / "embeddings"


def text_key(text: str) -> str:
    """Cache key of a text (the model is part of the cache file name)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CachedEmbedder:
    """Embeds texts with a sentence-transformers model, caching every vector on disk."""

    def __init__(
        self, model_name: str, model_path: str | None = None, cache_dir: str | Path | None = DEFAULT_CACHE_DIR
    ):
        self.model_name = model_name
        self._model_path = model_path
        self._model = None
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._index: dict[str, int] = {}
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        self._dirty = False
        self._pieces: dict[str, np.ndarray] | None = None
        self._load()

    def _files(self) -> tuple[Path, Path] | None:
        if self._cache_dir is None:
            return None
        slug = self.model_name.replace("/", "__")
        return self._cache_dir / f"{slug}.npy", self._cache_dir / f"{slug}.keys.json"

    def _load(self) -> None:
        files = self._files()
        if files and files[0].exists() and files[1].exists():
            keys = json.loads(files[1].read_text())
            matrix = np.load(files[0])
            if len(keys) == len(matrix):
                self._index = {k: i for i, k in enumerate(keys)}
                self._matrix = matrix

    def save(self) -> None:
        """Write new vectors to the cache directory (no-op without a cache or new vectors)."""
        files = self._files()
        if not files or not self._dirty:
            return
        files[0].parent.mkdir(parents=True, exist_ok=True)
        keys = sorted(self._index, key=self._index.__getitem__)
        tmp = files[0].with_suffix(".tmp.npy")
        np.save(tmp, self._matrix)
        os.replace(tmp, files[0])
        files[1].write_text(json.dumps(keys))
        self._dirty = False

    def _load_model(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            path = self._model_path
            if path is None:
                from ingestion.chunking.tokens import model_path

                path = model_path()
            self._model = SentenceTransformer(path, device="cpu")
        return self._model

    def pieces(self, texts: Sequence[str], *, batch_size: int = 32) -> list[np.ndarray]:
        """Each text's piece vectors (:mod:`ingestion.pieces`), pooled from the text's own forward pass;
        cached beside the vectors (one pickle per model), computed only for texts not seen."""
        import pickle

        from ingestion.embedding import vectors_and_pieces

        if self._pieces is None:
            self._pieces = {}
            files = self._files()
            if files and files[0].with_suffix(".pieces.pkl").exists():
                self._pieces = pickle.loads(files[0].with_suffix(".pieces.pkl").read_bytes())
        keys = [text_key(t) for t in texts]
        missing = {key: text for key, text in zip(keys, texts, strict=True) if key not in self._pieces}
        if missing:
            model = self._load_model()
            todo = list(missing.items())
            for start in range(0, len(todo), batch_size):
                batch = todo[start : start + batch_size]
                _vectors, pieces = vectors_and_pieces(model, [t for _, t in batch], batch_size=batch_size)
                self._pieces.update(zip((key for key, _ in batch), pieces, strict=True))
            files = self._files()
            if files:
                files[0].parent.mkdir(parents=True, exist_ok=True)
                tmp = files[0].with_suffix(".pieces.tmp")
                tmp.write_bytes(pickle.dumps(self._pieces))
                os.replace(tmp, files[0].with_suffix(".pieces.pkl"))
        return [self._pieces[key] for key in keys]

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> np.ndarray:
        """Normalised embeddings of ``texts`` (one row each), computing only uncached ones."""
        keys = [text_key(t) for t in texts]
        missing: dict[str, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in self._index and key not in missing:
                missing[key] = text
        if missing:
            model = self._load_model()
            vectors = model.encode(
                list(missing.values()), batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True
            ).astype(np.float32)
            base = len(self._index)
            if self._matrix.size == 0:
                self._matrix = vectors
            else:
                self._matrix = np.vstack([self._matrix, vectors])
            for offset, key in enumerate(missing):
                self._index[key] = base + offset
            self._dirty = True
            self.save()
        if not keys:
            return np.zeros((0, self._matrix.shape[1] if self._matrix.ndim == 2 else 0), dtype=np.float32)
        return self._matrix[[self._index[k] for k in keys]]
