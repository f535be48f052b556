"""A chunk's pieces: its sentences and lines, each a vector pooled from the chunk's own forward pass.

Issue 30 (docs/benchmarks.md, "Thirteenth round"): the answer to a question is often one sentence or
one table row of a chunk whose other sentences are about something else, and the chunk's one vector
(the mean of all its tokens) dilutes it. A piece vector is the mean of the *same* token vectors the
chunk's vector is the mean of, over the tokens of one piece (a sentence, or a line), so it costs no
model work: the model reads the chunk once, in context, and the pooling is done twice. A search may
then score a candidate chunk by its best piece beside its own vector (:func:`best_piece`).

Pure Python and numpy (no Django, no model): :mod:`ingestion.embedding` runs the model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

# A piece ends where a sentence ends (., ! or ? followed by white space) or at a line break.
PIECE_BREAK = re.compile(r"(?<=[.!?])\s+|\n+")
# Pieces shorter than this (stripped) are too short to say anything alone ("1.", a heading word).
MIN_PIECE_CHARS = 16
# At most this many pieces are kept per chunk (the first ones): a chunk of 256 tokens of one-word
# lines would otherwise store a vector per line.
MAX_PIECES = 48


def piece_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of ``text``'s pieces, in order; the whole text when no piece is long enough."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for match in PIECE_BREAK.finditer(text):
        spans.append((pos, match.start()))
        pos = match.end()
    spans.append((pos, len(text)))
    kept = [(s, e) for s, e in spans if len(text[s:e].strip()) >= MIN_PIECE_CHARS]
    return (kept or [(0, len(text))])[:MAX_PIECES]


def pool_pieces(
    token_vectors: np.ndarray, offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]
) -> np.ndarray:
    """Unit-length mean of the token vectors overlapping each span, one row per span that has a token.

    ``offsets`` are the tokens' character spans in the text (a tokenizer's offset mapping; special
    tokens have an empty span and belong to no piece). A span past the model's input limit (the text
    was truncated) has no token and no row."""
    if len(offsets) != len(token_vectors):
        raise ValueError(f"{len(offsets)} token offsets for {len(token_vectors)} token vectors")
    starts = np.array([a for a, _ in offsets], dtype=np.int64)
    ends = np.array([z for _, z in offsets], dtype=np.int64)
    real = ends > starts
    rows = []
    for s, e in spans:
        mask = real & (starts < e) & (ends > s)
        if not mask.any():
            continue
        vector = token_vectors[mask].mean(axis=0)
        norm = float(np.linalg.norm(vector))
        if norm > 0:
            rows.append(vector / norm)
    dims = token_vectors.shape[1] if token_vectors.ndim == 2 else 0
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), dims)


# Stored form (``kb.models.Chunk.pieces``): the rows as little-endian float16, one after another. Half
# precision keeps a cosine to about 1e-3 (the rows are unit vectors) at half float32's bytes.
STORED_DTYPE = np.dtype("<f2")


def pack_pieces(pieces: np.ndarray) -> bytes:
    """``pieces`` (n x dims, unit rows) as stored: n x dims little-endian float16 values."""
    if pieces.ndim != 2:
        raise ValueError(f"pieces must be a matrix, got shape {pieces.shape}")
    return np.ascontiguousarray(pieces, dtype=STORED_DTYPE).tobytes()


def unpack_pieces(data: bytes | memoryview | None, dims: int) -> np.ndarray | None:
    """The stored pieces as a float32 matrix of ``dims`` columns (None when none are stored); bytes that
    are not whole rows are an error (fail closed: never a matrix read from half a row)."""
    if data is None:
        return None
    raw = bytes(data)
    row_bytes = dims * STORED_DTYPE.itemsize
    if not raw or len(raw) % row_bytes:
        raise ValueError(f"stored pieces of {len(raw)} bytes are not whole rows of {dims} float16 values")
    return np.frombuffer(raw, dtype=STORED_DTYPE).astype(np.float32).reshape(-1, dims)


def best_piece(pieces: np.ndarray | None, query: np.ndarray) -> float | None:
    """The cosine similarity of ``query`` (unit length) to the nearest piece; None without pieces."""
    if pieces is None or len(pieces) == 0:
        return None
    return float(np.max(pieces @ query))


def piece_score(similarity: float, best: float | None, weight: float) -> float:
    """A candidate's similarity with its pieces: (1 - weight) * its own + weight * its best piece's
    (its own alone when it has no piece or ``weight`` is 0)."""
    if not weight or best is None:
        return similarity
    return (1.0 - weight) * similarity + weight * best
