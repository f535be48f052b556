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


def structure_chunker(
    config: ChunkingConfig | None = None, content_type: str = "text/plain", *, markdown_headings: bool | None = None
) -> ChunkerFn:
    """Our chunker: parse (plain text by default), then :func:`chunk_document`. ``markdown_headings`` (plain text
    only): the plain parser with (True) or without (False, the reading before the twentieth session) Markdown's
    ``#`` headings; None: as the parser does."""
    from ingestion.parsers import parse
    from ingestion.parsers.plaintext import parse_text

    config = config or ChunkingConfig()
    counter = default_counter()

    def chunk(text: str) -> list[SpanChunk]:
        doc = parse(text.encode("utf-8"), content_type=content_type)
        if doc.text != text:
            raise ValueError("parser changed the document text; spans would not index the corpus")
        if markdown_headings is not None:
            doc = parse_text(text, markdown_headings=markdown_headings)
        return [SpanChunk(c.start, c.end, c.embed_text) for c in chunk_document(doc, config, counter)]

    return chunk


def raw_offsets(raw: str, parsed: str) -> list[int]:
    """For each character of ``parsed`` (and its end), its offset in ``raw``; ``parsed`` must be ``raw`` with
    characters deleted (a parser that leaves hidden text out: else ValueError). The blocks difflib finds equal are
    taken as they are, the rest matched in order (the leftmost match); where that cannot finish, the whole text is
    matched in order."""
    import difflib

    def greedy(where: list[int], i: int, chars: str) -> int:
        for ch in chars:
            while i < len(raw) and raw[i] != ch:
                i += 1
            if i == len(raw):
                raise ValueError("the parser did more than delete")
            where.append(i)
            i += 1
        return i

    where: list[int] = []
    i = 0
    try:
        for op, a0, a1, b0, b1 in difflib.SequenceMatcher(None, raw, parsed, autojunk=False).get_opcodes():
            if op == "equal" and a0 >= i:
                where.extend(range(a0, a1))
                i = a1
            elif op != "delete":
                i = greedy(where, i, parsed[b0:b1])
    except ValueError:
        where = []
        greedy(where, 0, parsed)
    return [*where, len(raw)]


def structure_chunker_by_type(config: ChunkingConfig | None = None):
    """Our chunker as an upload of the file is chunked: parsed by its name's type (``README.md`` as Markdown, the
    type :func:`ingestion.parsers.detect_content_type` gives, else plain text), then :func:`chunk_document`; the
    chunks' spans on the file's own characters (a parser that leaves hidden text out only deletes: a chunk covers what
    was deleted inside it). Called with the text and the document's name (``takes_name``)."""
    from ingestion.parsers import detect_content_type, parse

    config = config or ChunkingConfig()
    counter = default_counter()

    def chunk(text: str, name: str) -> list[SpanChunk]:
        data = text.encode("utf-8")
        doc = parse(data, content_type=detect_content_type(name.rsplit("/", 1)[-1], data) or "text/plain")
        where = raw_offsets(text, doc.text) if doc.text != text else None
        out = []
        for c in chunk_document(doc, config, counter):
            start, end = (c.start, c.end) if where is None else (where[c.start], where[c.end - 1] + 1)
            out.append(SpanChunk(start, end, c.embed_text))
        return out

    chunk.takes_name = True
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
