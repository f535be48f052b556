"""Costly inputs: text that made a worker's time grow with the square of its length.

Found attacking the product (2026-12-03): the sentence splitter's boundary pattern
(``ingestion.chunking.sentences._BOUNDARY``) gave back a run of terminal punctuation one character at a
time when no whitespace followed it, and was tried again from every character of the run: quadratic.
The screening detector splits every unit with it, and ingestion screens each heading and title *whole*,
in the worker's own process (``pipeline.screen.screen_document``), outside the parse child's time limit.
A 100 KB Markdown file whose heading was 100,000 dots held a small-upload worker for 146 s; a 1 MiB one
(still a small upload) would hold it for hours. The chunker splits body text with the same pattern (in
the child, so there it cost the lane's time limit instead).

No wall-time assertion: each input runs in the budgeted child (``ingestion.limits.run_limited``) with a
limit about a hundred times what it takes now on a fast machine (room for a slow, loaded one) and a sixteenth of
what it took before; the quadratic pattern ends with ``OverTimeLimit``.
"""

from __future__ import annotations

import pytest

from ingestion.chunking import ChunkingConfig, chunk_document
from ingestion.chunking.sentences import split_sentences
from ingestion.limits import run_limited
from ingestion.parsers import parse
from ingestion.screening import screen_chunks

GB = 1024 * 1024 * 1024
RUN = 400_000  # characters: ~1 s of work now; ~2,000 s with the quadratic pattern
LIMIT = dict(memory_bytes=2 * GB, seconds=120)


@pytest.mark.parametrize("mark", [".", "\u2026", "?!"], ids=["dots", "ellipsis", "question-exclamation"])
def test_a_heading_of_terminal_punctuation_is_screened_within_the_limit(mark):
    """The heading as ``pipeline.screen`` screens it: whole, alone."""
    heading = (mark * RUN)[:RUN]
    verdicts = run_limited(screen_chunks, [heading], label="screening", **LIMIT)
    assert len(verdicts) == 1 and verdicts[0].detector  # a verdict came back (flagged or not is the model's)


def test_the_sentence_splitter_reads_a_run_without_whitespace_once():
    text = "A first sentence. " + "." * RUN + "and no space. The last one."
    spans = run_limited(split_sentences, text, label="splitting", **LIMIT)
    assert [text[s:e] for s, e in spans] == ["A first sentence.", "." * RUN + "and no space.", "The last one."]


def test_a_body_of_terminal_punctuation_is_chunked_within_the_limit():
    parsed = parse(("# Title\n\n" + "." * RUN + "\n").encode(), content_type="text/markdown")
    chunks = run_limited(chunk_document, parsed, ChunkingConfig(), label="chunking", **LIMIT)
    assert "".join(c.text for c in chunks).count(".") == RUN
