"""Baseline chunkers for the evaluation, all reduced to character spans.

Every chunker here takes a corpus text and returns :class:`SpanChunk` objects
(character range + the text that is embedded).  The baselines ignore structure:
fixed token windows, LangChain's token-aware recursive splitter, semchunk and
chonkie.  Libraries that return only chunk strings are located in the corpus by
searching forward from the previous chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from ingestion.chunking import ChunkingConfig, chunk_document
from ingestion.chunking.tokens import HFTokenCounter, default_counter, model_path


@dataclass(frozen=True)
class SpanChunk:
    start: int
    end: int
    embed_text: str


ChunkerFn = Callable[[str], list[SpanChunk]]


def locate(text: str, pieces: Sequence[str], *, overlapping: bool = False) -> list[SpanChunk]:
    """Character spans of chunk strings that occur verbatim in ``text``, in order.

    Searches forward from the previous chunk (its end, or its start + 1 when the
    chunker overlaps) so repeated passages resolve to the right occurrence.
    """
    out: list[SpanChunk] = []
    prev_start, prev_end = -1, 0
    for piece in pieces:
        if not piece:
            continue
        origin = prev_start + 1 if overlapping else prev_end
        idx = text.find(piece, max(0, origin))
        if idx < 0:
            idx = text.find(piece)
        if idx < 0:
            raise ValueError(f"chunk not found in corpus: {piece[:80]!r}")
        out.append(SpanChunk(idx, idx + len(piece), piece))
        prev_start, prev_end = idx, idx + len(piece)
    return out


def fixed_windows(size: int, overlap: int = 0, counter: HFTokenCounter | None = None) -> ChunkerFn:
    """Windows of ``size`` model tokens (step ``size - overlap``), spans from token offsets."""
    counter = counter or default_counter()

    def chunk(text: str) -> list[SpanChunk]:
        offsets = counter.encode_offsets(text)
        out = []
        step = size - overlap
        for i in range(0, len(offsets), step):
            window = offsets[i : i + size]
            start, end = window[0][0], window[-1][1]
            out.append(SpanChunk(start, end, text[start:end]))
            if i + size >= len(offsets):
                break
        return out

    return chunk


@lru_cache(maxsize=1)
def _hf_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(model_path())


def langchain_recursive(size: int, overlap: int = 0) -> ChunkerFn:
    """LangChain ``RecursiveCharacterTextSplitter.from_huggingface_tokenizer(size, overlap)``."""
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    splitter = RecursiveCharacterTextSplitter.from_huggingface_tokenizer(
        _hf_tokenizer(), chunk_size=size, chunk_overlap=overlap
    )

    def chunk(text: str) -> list[SpanChunk]:
        return locate(text, splitter.split_text(text), overlapping=overlap > 0)

    return chunk


def semchunk_chunker(size: int) -> ChunkerFn:
    """semchunk with the model's tokenizer; its own offsets."""
    import semchunk

    chunker = semchunk.chunkerify(_hf_tokenizer(), size)

    def chunk(text: str) -> list[SpanChunk]:
        pieces, offsets = chunker(text, offsets=True)
        return [SpanChunk(s, e, text[s:e]) for s, e in offsets]

    return chunk


def chonkie_recursive(size: int) -> ChunkerFn:
    """chonkie ``RecursiveChunker`` with the model's tokenizer."""
    from chonkie import RecursiveChunker

    chunker = RecursiveChunker(tokenizer=default_counter().tokenizer, chunk_size=size)

    def chunk(text: str) -> list[SpanChunk]:
        return [SpanChunk(c.start_index, c.end_index, text[c.start_index : c.end_index]) for c in chunker.chunk(text)]

    return chunk


def structure_chunker(config: ChunkingConfig | None = None, content_type: str = "text/plain") -> ChunkerFn:
    """Our chunker: parse (plain text by default), then :func:`chunk_document`."""
    from ingestion.parsers import parse

    config = config or ChunkingConfig()
    counter = default_counter()

    def chunk(text: str) -> list[SpanChunk]:
        doc = parse(text.encode("utf-8"), content_type=content_type)
        if doc.text != text:
            raise ValueError("parser changed the document text; spans would not index the corpus")
        return [SpanChunk(c.start, c.end, c.embed_text) for c in chunk_document(doc, config, counter)]

    return chunk


def default_chunkers() -> dict[str, ChunkerFn]:
    """Ours (default config) and the usual baselines (LangChain, fixed, semchunk, chonkie), in report order."""
    return {
        "bulkhead (default)": structure_chunker(),
        "fixed 200/0": fixed_windows(200, 0),
        "LangChain 200/0": langchain_recursive(200, 0),
        "LangChain 250/125": langchain_recursive(250, 125),
        "semchunk 200": semchunk_chunker(200),
        "chonkie 200": chonkie_recursive(200),
    }
