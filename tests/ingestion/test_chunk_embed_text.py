"""What a chunk embeds when its blocks have text between them that no block owns.

A transcript's cue numbers and timing lines lie between the cue blocks of one
section; a chunk joining several cues spans them (its span is contiguous), but
embeds only the blocks' own text.
"""

from __future__ import annotations

from pathlib import Path

from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.parsers import parse
from ingestion.structure import Block, ParsedDocument, Section

COUNTER = default_counter()
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _cue_document(gap: str) -> ParsedDocument:
    first, second = "First cue text.", "Second cue text."
    text = first + gap + second
    section = Section("0", None, "", ("talk.vtt",), "turn", 0, 0, len(text))
    section.blocks = [Block(0, len(first), "turn"), Block(len(text) - len(second), len(text), "turn")]
    return ParsedDocument(text=text, sections=[section])


def test_blocks_joined_over_a_timing_line_embed_only_the_blocks():
    doc = _cue_document("\n\n2\n00:00:02.000 --> 00:00:04.000\n")
    (chunk,) = chunk_document(doc, ChunkingConfig(), COUNTER)
    assert (chunk.start, chunk.end) == (0, len(doc.text)) and chunk.text == doc.text
    assert chunk.embed_text == "talk.vtt\n\nFirst cue text.\nSecond cue text."
    assert chunk.token_count == COUNTER.count(chunk.embed_text)


def test_a_whitespace_gap_keeps_the_span_as_the_body():
    doc = _cue_document("\n\n")
    (chunk,) = chunk_document(doc, ChunkingConfig(), COUNTER)
    assert chunk.embed_text == "talk.vtt\n\nFirst cue text.\n\nSecond cue text."


def test_noise_glued_to_the_blocks_is_counted_exactly():
    # No whitespace around the gap: the token index cannot be used, the body is recounted.
    doc = _cue_document("<--2-->")
    (chunk,) = chunk_document(doc, ChunkingConfig(prefix="none"), COUNTER)
    assert chunk.embed_text == "First cue text.\nSecond cue text."
    assert chunk.token_count == COUNTER.count(chunk.embed_text)


def test_no_timing_line_is_embedded_from_a_real_transcript():
    for name in ("comments.vtt", "sample.srt", "youtube_dl.vtt", "regions.vtt"):
        path = FIXTURES / "transcripts" / name
        doc = parse(path.read_bytes(), filename=name)
        chunks = chunk_document(doc, ChunkingConfig(), COUNTER)
        assert chunks
        for c in chunks:
            assert "-->" not in c.embed_text, (name, c.embed_text)
            assert doc.text[c.start : c.end] == c.text
            assert c.token_count == COUNTER.count(c.embed_text)
    # comments.vtt: three cues in one section, one chunk; the NOTE comments between them are gone from its
    # text too (a player never shows them: cut from the document text, docs/security.md "Hidden text").
    doc = parse((FIXTURES / "transcripts" / "comments.vtt").read_bytes(), filename="comments.vtt")
    (chunk,) = chunk_document(doc, ChunkingConfig(), COUNTER)
    assert "NOTE" not in chunk.text and "NOTE" not in chunk.embed_text
    assert chunk.embed_text.endswith("- Det smakar som te.\n- Ta en kopp")
