"""A chunk's pieces (ingestion.pieces): their spans, their pooling, and the one forward pass."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ingestion.pieces import MAX_PIECES, MIN_PIECE_CHARS, best_piece, piece_score, piece_spans, pool_pieces


@given(st.text(alphabet=st.sampled_from(list("ab .!?\n\t")), max_size=400))
@settings(max_examples=300, deadline=None)
def test_piece_spans_are_ordered_disjoint_spans_of_the_text(text):
    spans = piece_spans(text)
    assert 1 <= len(spans) <= MAX_PIECES
    previous_end = 0
    for start, end in spans:
        assert previous_end <= start <= end <= len(text)
        previous_end = end
    if len(spans) > 1 or spans[0] != (0, len(text)):
        assert all(len(text[s:e].strip()) >= MIN_PIECE_CHARS for s, e in spans)


def test_sentences_and_lines_are_pieces_and_short_ones_are_dropped():
    text = "Revenue by segment:\nCollection | 120 | 130\nOk.\nThe year was good. Costs fell by a tenth!"
    assert [text[s:e] for s, e in piece_spans(text)] == [
        "Revenue by segment:", "Collection | 120 | 130", "The year was good.", "Costs fell by a tenth!"]


def test_pooling_is_the_mean_of_the_tokens_inside_each_span():
    tokens = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 3.0], [5.0, 5.0]], dtype=np.float32)
    offsets = [(0, 0), (0, 4), (5, 9), (0, 0)]  # special tokens first and last
    pooled = pool_pieces(tokens, offsets, [(0, 4), (5, 9), (20, 30)])
    assert pooled.shape == (2, 2)  # the span past the tokens has none
    np.testing.assert_allclose(pooled, [[0.0, 1.0], [0.0, 1.0]])
    with pytest.raises(ValueError):
        pool_pieces(tokens, offsets[:3], [(0, 4)])


def test_a_candidates_score_mixes_its_own_similarity_with_its_best_piece():
    pieces = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    assert best_piece(pieces, np.array([0.6, 0.8], dtype=np.float32)) == pytest.approx(0.8)
    assert best_piece(np.zeros((0, 2)), np.array([1.0, 0.0])) is None
    assert piece_score(0.5, 0.9, 0.4) == pytest.approx(0.66)
    assert piece_score(0.5, None, 0.4) == 0.5
    assert piece_score(0.5, 0.9, 0.0) == 0.5


def test_one_forward_pass_gives_the_texts_vectors_and_its_pieces():
    from ingestion.embedding import get_embedder

    embedder = get_embedder()
    texts = ["Revenue by segment:\nCollection | 120 | 130\nRecycling | 40 | 42",
             "Short.", "The fleet grew by two ships. Fuel costs fell in the second half of the year."]
    alone = embedder.embed(texts)
    calls = embedder.model_calls
    vectors, pieces = embedder.embed_with_pieces(texts)
    assert embedder.model_calls == calls + 1
    np.testing.assert_allclose(vectors, alone, atol=1e-5)
    assert [len(p) for p in pieces] == [3, 1, 2]
    # a piece's vector is its own tokens' mean: the fleet sentence is nearer a question about ships
    question = embedder.embed(["How many ships were added to the fleet?"])[0]
    assert float(pieces[2][0] @ question) > float(pieces[2][1] @ question)
    assert best_piece(pieces[2], question) > float(vectors[2] @ question)


def test_stored_pieces_round_trip_as_half_floats_and_half_a_row_is_an_error():
    from ingestion.pieces import pack_pieces, unpack_pieces

    rng = np.random.default_rng(7)
    rows = rng.normal(size=(5, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    stored = pack_pieces(rows)
    assert len(stored) == 5 * 384 * 2  # float16: 768 bytes a piece
    back = unpack_pieces(memoryview(stored), 384)
    assert back.dtype == np.float32 and back.shape == (5, 384)
    assert np.max(np.abs(back @ rows[0] - rows @ rows[0])) < 2e-3  # cosines kept to about 1e-3
    assert unpack_pieces(None, 384) is None
    for broken in (stored[:-2], stored[: 384 * 2 - 1], b""):
        with pytest.raises(ValueError, match="whole rows"):
            unpack_pieces(broken, 384)
    with pytest.raises(ValueError, match="matrix"):
        pack_pieces(rows[0])
