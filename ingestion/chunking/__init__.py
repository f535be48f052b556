"""Chunking: parsed documents in, :class:`Chunk` dataclasses out (no Django imports).

Public API::

    from ingestion.chunking import Chunk, ChunkingConfig, chunk_document, default_counter
"""

from ingestion.chunking.chunker import Chunk, chunk_document, content_hash
from ingestion.chunking.config import ChunkingConfig
from ingestion.chunking.contextualize import build_embed_text
from ingestion.chunking.semantic import EmbedFn
from ingestion.chunking.tokens import HFTokenCounter, TokenCounter, default_counter

__all__ = [
    "Chunk",
    "ChunkingConfig",
    "EmbedFn",
    "HFTokenCounter",
    "TokenCounter",
    "build_embed_text",
    "chunk_document",
    "content_hash",
    "default_counter",
]
