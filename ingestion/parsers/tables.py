"""Serialising a table row so it embeds (and reads) well on its own.

Shared by every parser that produces ``table_row`` blocks (Markdown, HTML, CSV): a
row chunk carries its column names, ``"Plan: Enterprise | Seats: unlimited"``, so a
hit on one row makes sense without the header.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_WS_RE = re.compile(r"\s+")
SEPARATOR = " | "


def clean_cell(value: object) -> str:
    """Collapse whitespace (including newlines) in one cell to single spaces."""
    return _WS_RE.sub(" ", "" if value is None else str(value)).strip()


def column_names(header: Sequence[object], width: int) -> list[str]:
    """Header cells cleaned, padded to ``width`` with ``Column N`` for missing/blank names."""
    names = [clean_cell(cell) for cell in header]
    names += [""] * (width - len(names))
    return [name or f"Column {index + 1}" for index, name in enumerate(names)]


def serialize_row(columns: Sequence[object], values: Sequence[object]) -> str:
    """``"Col: val | Col: val"`` for one row.

    Empty cells are left out (``"Seats: "`` only adds noise to the embedding);
    a value without a column name gets ``Column N``. A row of empty cells gives ``""``.
    """
    names = column_names(columns, len(values))
    parts = []
    for name, value in zip(names, values, strict=False):
        cell = clean_cell(value)
        if cell:
            parts.append(f"{name}: {cell}")
    return SEPARATOR.join(parts)
