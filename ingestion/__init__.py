"""Parsing, chunking and embedding of documents.

Everything under ``ingestion.parsers`` and ``ingestion.chunking`` is pure Python:
bytes in, dataclasses out, no Django imports.  The Django side (tasks, services)
lives in ``pipeline.tasks`` and ``pipeline.services``.
"""
