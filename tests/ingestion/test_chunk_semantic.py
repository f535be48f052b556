"""Optional semantic splitting, with fake embed functions (no model): cuts move to topic changes."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given

from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
from ingestion.chunking.semantic import boundary_similarities, topic_boundaries
from ingestion.structure import Block, ParsedDocument, Section
from tests.ingestion.test_chunker_properties import SETTINGS, check_invariants, configs, documents

COUNTER = default_counter()

BILLING = "The invoice for tenant {i} lists every refund and credit note issued during billing period {i}."
KERNEL = "Kernel module {i} schedules threads across cores and flushes the page cache after interrupt {i}."


def topic_embed(texts: list[str]) -> np.ndarray:
    """Two clearly separable topics: a sentence about invoices points one way, anything else the other."""
    return np.array([[1.0, 0.0] if "invoice" in t else [0.0, 1.0] for t in texts])


def hashed_embed(texts: list[str]) -> np.ndarray:
    """Arbitrary but deterministic unit vectors, for the invariants."""
    rows = []
    for t in texts:
        digest = hashlib.sha256(t.encode()).digest()
        v = np.frombuffer(digest, dtype=np.uint8)[:8].astype(np.float64) - 127.5
        rows.append(v / np.linalg.norm(v))
    return np.array(rows)


def _two_topic_document(billing: int, kernel: int) -> tuple[ParsedDocument, int]:
    """One paragraph: ``billing`` invoice sentences, then ``kernel`` kernel sentences; also the change offset."""
    sentences = [BILLING.format(i=i) for i in range(billing)] + [KERNEL.format(i=i) for i in range(kernel)]
    text = " ".join(sentences)
    change = len(" ".join(sentences[:billing]))
    section = Section("0", None, "", ("Notes",), "document", 0, 0, len(text), blocks=[Block(0, len(text))])
    return ParsedDocument(text=text, sections=[section]), change


def test_the_cut_falls_at_the_topic_change():
    doc, change = _two_topic_document(6, 18)
    plain = chunk_document(doc, ChunkingConfig(overlap=0), COUNTER)
    semantic = chunk_document(doc, ChunkingConfig(overlap=0, semantic_split=True), COUNTER, embed=topic_embed)
    # Without it, balanced packing cuts inside the kernel part (so the test means something) ...
    assert len(plain) > 1 and plain[0].end != change
    # ... with it, the first chunk is exactly the billing part.
    assert semantic[0].end == change
    assert "invoice" not in semantic[1].text
    assert all(c.token_count + 2 <= 256 and c.token_count == COUNTER.count(c.embed_text) for c in semantic)


def test_with_overlap_the_first_chunk_still_ends_at_the_topic_change():
    doc, change = _two_topic_document(6, 18)
    semantic = chunk_document(doc, ChunkingConfig(semantic_split=True), COUNTER, embed=topic_embed)
    assert semantic[0].end == change


def test_a_run_that_fits_one_chunk_is_not_embedded():
    doc, _ = _two_topic_document(2, 2)
    calls = []

    def counting_embed(texts):
        calls.append(texts)
        return topic_embed(texts)

    chunks = chunk_document(doc, ChunkingConfig(semantic_split=True), COUNTER, embed=counting_embed)
    assert len(chunks) == 1 and calls == []


def test_semantic_split_needs_an_embed_function_and_is_off_by_default():
    doc, _ = _two_topic_document(6, 18)
    with pytest.raises(ValueError, match="embed function"):
        chunk_document(doc, ChunkingConfig(semantic_split=True), COUNTER)
    assert ChunkingConfig().semantic_split is False
    # Without semantic_split an embed function changes nothing (callers may always pass one).
    assert chunk_document(doc, ChunkingConfig(), COUNTER, embed=topic_embed) == chunk_document(
        doc, ChunkingConfig(), COUNTER
    )
    assert ChunkingConfig(semantic_split=True).config_hash() != ChunkingConfig().config_hash()


def test_topic_boundaries_mark_only_the_bottom_of_a_dip():
    texts = ["invoice"] * 5 + ["kernel"] * 7
    sims = boundary_similarities(topic_embed(texts))
    assert sims.argmin() == 4 and sims[4] == pytest.approx(0.0)
    assert topic_boundaries(texts, topic_embed) == [5]
    assert topic_boundaries(["kernel"] * 12, topic_embed) == []  # no topic change, no boundary
    with pytest.raises(ValueError, match="one row per text"):
        topic_boundaries(texts, lambda t: np.zeros((1, 2)))


@SETTINGS
@given(documents(), configs())
def test_invariants_hold_with_semantic_split(generated, config):
    doc, known_sentences = generated
    config = ChunkingConfig(**{**config.as_dict(), "semantic_split": True})
    chunks = chunk_document(doc, config, COUNTER, embed=hashed_embed)
    check_invariants(doc, config, chunks, known_sentences)
    assert chunk_document(doc, config, COUNTER, embed=hashed_embed) == chunks
