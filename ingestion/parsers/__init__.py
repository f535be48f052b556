"""Parsers: bytes in, :class:`~ingestion.structure.ParsedDocument` out (no Django imports).

Importing this package imports every parser module in :data:`PARSER_MODULES`, so each one
registers itself. A listed module that does not exist, or that fails to import (a missing
dependency), is an error: a format must never silently go unread.
"""

from __future__ import annotations

import importlib

from ingestion.parsers.registry import (
    SUPPORTED_CONTENT_TYPES,
    Parser,
    content_type_read,
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



class MissingParserModule(ImportError):
    """A module named in :data:`PARSER_MODULES` does not exist."""


def import_parser_modules(names: tuple[str, ...]) -> None:
    """Import each parser module of ``names`` (they register themselves); one that does not exist
    raises :class:`MissingParserModule` naming it."""
    for name in names:
        qualified = f"{__name__}.{name}"
        try:
            importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:
                raise  # the module exists; something it imports does not
            raise MissingParserModule(f"PARSER_MODULES names {qualified}, which does not exist") from exc


import_parser_modules(PARSER_MODULES)

__all__ = [
    "PARSER_MODULES",
    "MissingParserModule",
    "SUPPORTED_CONTENT_TYPES",
    "Parser",
    "content_type_read",
    "detect_content_type",
    "import_parser_modules",
    "parse",
    "parser_for",
    "unsupported_advice",
    "register",
]
