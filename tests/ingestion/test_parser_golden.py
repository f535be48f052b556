"""Golden section trees of real documents under tests/fixtures/parsers/.

Each fixture ``NAME.EXT`` has ``NAME.EXT.golden.json`` next to it: the parsed
section tree (keys, parents, kinds, titles, heading paths, spans, lines, policies
and block spans), plus the extracted text for HTML.  A parser change shows up as a
reviewable diff of those files.  To regenerate them on purpose, run:

    BULKHEAD_REGENERATE_GOLDEN=1 .venv/bin/python -m pytest tests/ingestion/test_parser_golden.py -p no:django

and review ``git diff tests/fixtures/parsers``.  Licences: ``NAME.LICENSE``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from ingestion.parsers import parse
from ingestion.structure import ParsedDocument
from tests.ingestion.doc_invariants import assert_well_formed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parsers"
REGENERATE = os.environ.get("BULKHEAD_REGENERATE_GOLDEN") == "1"

CASES = [
    ("pgvector-python-README.md", "text/markdown"),
    ("markdown-it-py-README.html", "text/html"),
    ("wikitexts-excerpt.txt", "text/plain"),
]


def snapshot(doc: ParsedDocument, *, include_text: bool) -> dict:
    """A JSON-able, diff-friendly view of a parsed document."""
    data: dict = {
        "title": doc.title,
        "tags": list(doc.tags),
        "default_policy": _policy(doc.default_policy),
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
                "line": s.line,
                "policy": _policy(s.policy),
                "metadata": s.metadata,
                "blocks": [
                    [b.start, b.end, b.kind] + ([b.embed_text] if b.embed_text is not None else [])
                    for b in s.blocks
                ],
            }
            for s in doc.sections
        ],
    }
    if include_text:
        data["text"] = doc.text
    return data


def _policy(policy):
    return None if policy is None else {"level": policy.level, "groups": list(policy.groups)}


@pytest.mark.parametrize(("name", "content_type"), CASES)
def test_golden(name: str, content_type: str) -> None:
    source = FIXTURES / name
    golden = source.with_name(name + ".golden.json")
    doc = parse(source.read_bytes(), content_type=content_type, filename=name)
    assert_well_formed(doc)
    actual = snapshot(doc, include_text=content_type == "text/html")
    if REGENERATE or not golden.exists():
        golden.write_text(json.dumps(actual, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        if not REGENERATE:
            pytest.fail(f"wrote missing golden file {golden.name}; review it and rerun")
    assert actual == json.loads(golden.read_text(encoding="utf-8"))
