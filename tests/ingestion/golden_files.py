"""Golden files for parser output: the section tree and block spans of a real document as JSON.

A golden file sits next to its fixture (``report.pdf`` -> ``report.pdf.golden.json``).
Tests compare a parse against it; a deliberate parser change is recorded by running
the tests with ``BULKHEAD_REGENERATE_GOLDEN=1``, which rewrites the files instead of
comparing, so the change shows up as a reviewable diff.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from ingestion.structure import ParsedDocument

REGENERATE = os.environ.get("BULKHEAD_REGENERATE_GOLDEN") == "1"
# Enough of each block's text to review a golden diff without storing the document twice.
EXCERPT = 60
_SHORT_LIST_RE = re.compile(r"\[\n\s*((?:(?:-?\d+|null|\"[^\"\n]{0,40}\"),\n\s*){0,12}(?:-?\d+|null|\"[^\"\n]{0,40}\"))\n\s*\]")


def golden_view(doc: ParsedDocument) -> dict:
    """A JSON-able summary: every section with its spans, and every block with its span and an excerpt."""
    return {
        "title": doc.title,
        "text_length": len(doc.text),
        "sections": [
            {
                "key": s.key,
                "parent": s.parent,
                "kind": s.kind,
                "title": s.title,
                "heading_path": list(s.heading_path),
                "depth": s.depth,
                "span": [s.start, s.end],
                "context": s.context,
                "metadata": s.metadata,
                "blocks": [
                    {
                        "span": [b.start, b.end],
                        "kind": b.kind,
                        "excerpt": doc.text[b.start : b.end][:EXCERPT],
                        **({"embed_text": b.embed_text[:200]} if b.embed_text else {}),
                        **({"joinable": False} if not b.joinable else {}),
                        **({"metadata": b.metadata} if b.metadata else {}),
                    }
                    for b in s.blocks
                ],
            }
            for s in doc.sections
        ],
    }


def _dump(view: dict) -> str:
    """Indented JSON with short lists of scalars (spans, pages, columns) kept on one line."""
    text = json.dumps(view, indent=1, ensure_ascii=False)
    return _SHORT_LIST_RE.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",\n")) + "]", text) + "\n"


def assert_matches_golden(doc: ParsedDocument, fixture: Path) -> None:
    """Compare ``doc`` with ``<fixture>.golden.json`` (or rewrite it when regenerating)."""
    golden = fixture.with_name(fixture.name + ".golden.json")
    view = json.loads(json.dumps(golden_view(doc), ensure_ascii=False, default=str))
    if REGENERATE:
        golden.write_text(_dump(view), encoding="utf-8")
        return
    if not golden.exists():
        raise AssertionError(f"{golden.name} is missing; create it with BULKHEAD_REGENERATE_GOLDEN=1 and review it")
    expected = json.loads(golden.read_text(encoding="utf-8"))
    assert view == expected, f"parse of {fixture.name} differs from {golden.name} (BULKHEAD_REGENERATE_GOLDEN=1)"
