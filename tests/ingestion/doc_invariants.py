"""Invariants every ParsedDocument must satisfy, shared by the parser tests."""

from __future__ import annotations

from ingestion.structure import ParsedDocument


def assert_well_formed(doc: ParsedDocument) -> None:
    """Keys, tree order, spans and blocks obey the document-model rules."""
    text = doc.text
    sections = doc.sections
    assert sections, "a document always has a root section"
    root = sections[0]
    assert (root.key, root.parent, root.kind, root.depth) == ("0", None, "document", 0)
    seen: dict[str, object] = {}
    previous_start = -1
    all_blocks = []
    for section in sections:
        assert section.key not in seen, f"duplicate key {section.key}"
        if section.parent is not None:
            parent = seen.get(section.parent)
            assert parent is not None, f"section {section.key}: parent {section.parent} listed after it"
            assert section.depth == parent.depth + 1
            assert parent.start <= section.start <= section.end <= parent.end, (section.key, section.parent)
            if section.kind in ("region", "table"):
                assert section.heading_path[: len(parent.heading_path)] == parent.heading_path
        seen[section.key] = section
        assert 0 <= section.start <= section.end <= len(text)
        assert section.start >= previous_start, "sections are in document order"
        previous_start = section.start
        last_end = -1
        for block in section.blocks:
            assert section.start <= block.start < block.end <= section.end, (section.key, block)
            assert block.start >= last_end, "blocks of a section are ordered and disjoint"
            last_end = block.end
            body = text[block.start : block.end]
            assert body == body.strip(), f"block not trimmed: {body!r}"
            all_blocks.append((block.start, block.end))
    all_blocks.sort()
    for (_, end), (start, _) in zip(all_blocks, all_blocks[1:], strict=False):
        assert end <= start, "blocks of different sections overlap"
