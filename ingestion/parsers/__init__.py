"""Parsers: bytes in, :class:`~ingestion.structure.ParsedDocument` out (no Django imports).

Importing this package imports every parser module that exists, so each one
registers itself; a module not written yet is skipped, a module that fails for
another reason (a missing dependency) raises.
"""

from __future__ import annotations

import importlib

from ingestion.parsers.registry import (
    SUPPORTED_CONTENT_TYPES,
    Parser,
    detect_content_type,
    parse,
    parser_for,
    register,
    unsupported_advice,
)

PARSER_MODULES: tuple[str, ...] = (
    "markdown",
    "html",
    "plaintext",
    "pdf",
    "docx",
    "tabular",
    "code",
    "transcripts",
    "email",
)

for _name in PARSER_MODULES:
    _qualified = f"{__name__}.{_name}"
    try:
        importlib.import_module(_qualified)
    except ModuleNotFoundError as exc:
        if exc.name != _qualified:
            raise

__all__ = [
    "PARSER_MODULES",
    "SUPPORTED_CONTENT_TYPES",
    "Parser",
    "detect_content_type",
    "parse",
    "parser_for",
    "unsupported_advice",
    "register",
]
