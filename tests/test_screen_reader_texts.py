"""What each chunk's verdict is computed against (``pipeline.screen.readable_document_texts``): the text its
readers may read, and a bounded amount of work however many policies a document's sections carry."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from pipeline.screen import MAX_READER_TEXTS, readable_document_texts


def _section(start, end, level, groups=(), parent=None):
    return SimpleNamespace(id=uuid.uuid4(), parent_id=parent, start=start, end=end, access_level=level,
                           access_groups=list(groups))


def test_a_section_is_screened_against_what_its_readers_read_and_never_more():
    text = "Intro for all.\nSecret board text.\nMore for all."
    root = _section(0, len(text), 10)
    secret = _section(15, 34, 40, parent=root.id)
    texts = readable_document_texts(text, [root, secret])
    assert "Secret" not in texts[root.id] and "Intro" in texts[root.id] and "More for all" in texts[root.id]
    assert texts[secret.id] == text  # restricted readers read everything


def test_many_policies_fall_back_to_each_sections_own_text():
    """A document whose sections carry more distinct group sets than MAX_READER_TEXTS: each section's text alone
    (what its readers may read), not one document-sized text per policy."""
    lines = [f"Line {i} of the document." for i in range(MAX_READER_TEXTS + 4)]
    intro = "An introduction every member reads."
    text = "\n".join([intro, *lines])
    root = _section(0, len(text), 10)
    sections, pos = [root], len(intro) + 1
    for i, line in enumerate(lines):
        sections.append(_section(pos, pos + len(line), 20, groups=[i], parent=root.id))
        pos += len(line) + 1
    texts = readable_document_texts(text, sections)
    assert [texts[s.id] for s in sections[1:]] == lines
    assert texts[root.id].startswith(intro) and "Line" not in texts[root.id]
