"""Chunk-quality evaluation over golden sets (pure Python, no Django imports).

``python -m ingestion.evaluation --corpora DIR --questions FILE`` runs it; see
:mod:`ingestion.evaluation.cli`.
"""
