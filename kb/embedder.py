"""The embedding model, built from settings: one factory for ingestion and search alike.

Queries and chunks must be embedded by the same model with the same settings, so both
sides ask this module; the model is loaded once per process (``get_embedder`` caches it).
"""

from __future__ import annotations

from django.conf import settings

from ingestion.embedding import Embedder, get_embedder

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"


def embedder() -> Embedder:
    return get_embedder(
        settings.BULKHEAD_EMBEDDING_MODEL_PATH, settings.BULKHEAD_EMBEDDING_DEVICE, settings.BULKHEAD_EMBEDDING_BATCH_SIZE
    )


def embedder_name() -> str:
    """The name stored with each index version (a path when a custom model is configured)."""
    return settings.BULKHEAD_EMBEDDING_MODEL_PATH or DEFAULT_MODEL_NAME
