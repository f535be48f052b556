"""Chunk-quality evaluation over golden sets: benchmark tooling (pure Python, no Django imports), which
compares chunkers; the metrics and golden sets it scores with are the library's (``ingestion.quality``,
``ingestion.golden``).

``python -m bench.chunkeval --corpora DIR --questions FILE`` runs it; see
:mod:`bench.chunkeval.cli`.
"""
