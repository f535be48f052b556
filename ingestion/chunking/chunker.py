"""Structure-aware chunking: one section at a time, paragraphs, then sentences.

Invariants (tested with Hypothesis in tests/ingestion/test_chunker_properties.py):

- ``doc.text[chunk.start:chunk.end] == chunk.text`` for every chunk.
- A chunk's span lies inside the blocks of one section: blocks are joined only
  when they are adjacent in that section with no other section's text between.
- ``chunk.token_count`` is the model's count for ``chunk.embed_text`` (special
  tokens excluded) and ``token_count + special_tokens <= max_tokens``, always.
- Every non-whitespace character of every block is covered by some chunk.
- A cut falls between blocks or sentences; inside a sentence only when that
  sentence alone does not fit the limit (then between words, then tokens).
- Same document + same config -> same chunks.

Speed: every block is tokenised once (one batched call per document), cut
points are found on the token offsets, and the final count is the sum of the
parts; cut points always sit on whitespace so the parts' counts add up exactly.
The rare chunk whose parts meet elsewhere is recounted with the tokenizer.
"""

from __future__ import annotations

import hashlib
import unicodedata
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from ingestion.chunking.config import ChunkingConfig
from ingestion.chunking.contextualize import PART_SEPARATOR, build_prefix, join_embed_text
from ingestion.chunking.packing import BLOCK, FORCED, SENTENCE, TOKEN, WORD, pack
from ingestion.chunking.sentences import split_lines, split_sentences, split_words
from ingestion.chunking.tokens import TokenCounter, default_counter
from ingestion.structure import Block, ParsedDocument, Section

# Below this many body tokens per chunk, a heading path is too long to be useful
# in full: it is shortened from the front (the nearest headings matter most).
MIN_BODY_TOKENS = 64


@dataclass(frozen=True)
class Chunk:
    """One unit of retrieval: a span of one section's body plus the text embedded for it."""

    section_key: str
    ordinal: int  # position within the document, 0-based
    start: int  # character offsets into the document text
    end: int
    text: str  # == document text[start:end]
    embed_text: str  # what the model embeds: prefix + body (or a table row's embed text)
    token_count: int  # model tokens of embed_text, special tokens excluded
    heading_path: tuple[str, ...]
    kind: str  # block kind ("prose", "code", "table_row", ...), "table" or "mixed"
    content_hash: str  # sha256 of model name + embed_text: the embedding cache key


def content_hash(model: str, embed_text: str) -> str:
    """Embedding cache key: the same text embedded by the same model is the same vector."""
    return hashlib.sha256(f"{model}\x00{embed_text}".encode()).hexdigest()


@dataclass
class _Piece:
    start: int
    end: int
    tokens: int
    strength: int  # boundary before this piece (see packing)


@dataclass
class _Span:
    """A chunk before it gets its ordinal."""

    section: Section
    start: int
    end: int
    embed_text: str
    token_count: int
    kind: str


class _Tokens:
    """Token start offsets of one block, absolute in the document text."""

    __slots__ = ("starts",)

    def __init__(self, starts: list[int]):
        self.starts = starts

    def count(self, start: int, end: int) -> int:
        return bisect_left(self.starts, end) - bisect_left(self.starts, start)


def chunk_document(
    doc: ParsedDocument,
    config: ChunkingConfig | None = None,
    counter: TokenCounter | None = None,
) -> list[Chunk]:
    """Cut a parsed document into chunks; deterministic for a given config and tokenizer."""
    config = config or ChunkingConfig()
    counter = counter or default_counter()
    return _Chunker(doc, config, counter).run()


def _is_pretoken_boundary(text: str, pos: int) -> bool:
    """Whether the tokenizer necessarily splits at ``pos`` (whitespace or punctuation on a side)."""
    if pos <= 0 or pos >= len(text):
        return True
    for ch in (text[pos - 1], text[pos]):
        if ch.isspace() or unicodedata.category(ch).startswith("P") or (ch.isascii() and not ch.isalnum()):
            return True
    return False


class _Chunker:
    def __init__(self, doc: ParsedDocument, config: ChunkingConfig, counter: TokenCounter):
        self.doc = doc
        self.text = doc.text
        self.config = config
        self.counter = counter
        self.limit = config.content_limit
        self._prefix_cache: dict[tuple, tuple[str, int]] = {}
        # Every section start and block start, with its owner, to tell whether
        # anything of another section lies between two blocks.
        marks: list[tuple[int, str]] = [(s.start, s.key) for s in doc.sections]
        marks += [(b.start, s.key) for s in doc.sections for b in s.blocks]
        marks.sort()
        self._mark_pos = [m[0] for m in marks]
        self._mark_owner = [m[1] for m in marks]

    # -- tokens ------------------------------------------------------------

    def _encode_offsets(self, texts: list[str]) -> list[list[tuple[int, int]]]:
        batch = getattr(self.counter, "encode_offsets_batch", None)
        if batch is not None:
            return batch(texts)
        # A counter with only count(): approximate offsets word by word (exact for
        # tokenizers that split on whitespace, which every chunk cut respects).
        result = []
        for text in texts:
            offsets: list[tuple[int, int]] = []
            for ws, we in split_words(text):
                offsets.extend([(ws, we)] * self.counter.count(text[ws:we]))
            result.append(offsets)
        return result

    def _prefix(self, section: Section) -> tuple[str, int]:
        """Prefix text and its token count for a section, shortened if it crowds out the body."""
        key = (section.heading_path, section.context)
        cached = self._prefix_cache.get(key)
        if cached is not None:
            return cached
        policy = self.config.prefix
        path = tuple(section.heading_path)
        prefix = build_prefix(path, section.context, policy=policy)
        tokens = self.counter.count(prefix + PART_SEPARATOR) if prefix else 0
        while prefix and self.limit - tokens < MIN_BODY_TOKENS:
            if len(path) > 1:
                path = path[1:]
                prefix = build_prefix(path, section.context, policy=policy)
            else:
                # One heading (or context) alone is too long: keep its first words.
                words = prefix.split()
                prefix = " ".join(words[: max(1, len(words) // 2)]) if len(words) > 1 else ""
            tokens = self.counter.count(prefix + PART_SEPARATOR) if prefix else 0
        self._prefix_cache[key] = (prefix, tokens)
        return prefix, tokens

    # -- main --------------------------------------------------------------

    def run(self) -> list[Chunk]:
        text = self.text
        work: list[tuple[Section, list[Block]]] = []
        spans_to_encode: list[tuple[int, int]] = []
        for section in self.doc.sections:
            blocks = []
            for block in sorted(section.blocks, key=lambda b: (b.start, b.end)):
                start, end = block.start, block.end
                while start < end and text[start].isspace():
                    start += 1
                while end > start and text[end - 1].isspace():
                    end -= 1
                if start < end:
                    blocks.append(block)
                    spans_to_encode.append((start, end))
            work.append((section, blocks))
        offsets = self._encode_offsets([text[s:e] for s, e in spans_to_encode])
        tokens_iter = iter(
            _Tokens([s + o[0] for o in offs]) for (s, _e), offs in zip(spans_to_encode, offsets, strict=True)
        )

        spans: list[_Span] = []
        for section, blocks in work:
            block_tokens = [next(tokens_iter) for _ in blocks]
            if blocks:
                spans.extend(self._section(section, blocks, block_tokens))
        spans.sort(key=lambda s: (s.start, -s.end))
        model = self.config.model
        chunks = []
        for ordinal, sp in enumerate(spans):
            chunks.append(
                Chunk(
                    section_key=sp.section.key,
                    ordinal=ordinal,
                    start=sp.start,
                    end=sp.end,
                    text=text[sp.start : sp.end],
                    embed_text=sp.embed_text,
                    token_count=sp.token_count,
                    heading_path=tuple(sp.section.heading_path),
                    kind=sp.kind,
                    content_hash=content_hash(model, sp.embed_text),
                )
            )
        return chunks

    def _joinable(self, key: str, prev: Block, block: Block) -> bool:
        """Adjacent within the section: no start of another section or of its blocks in the gap."""
        if not (prev.joinable and block.joinable):
            return False
        lo, hi = prev.end, block.start
        idx = bisect_left(self._mark_pos, lo)
        while idx < len(self._mark_pos) and self._mark_pos[idx] < hi:
            if self._mark_owner[idx] != key:
                return False
            idx += 1
        return True

    def _section(self, section: Section, blocks: list[Block], block_tokens: list[_Tokens]) -> list[_Span]:
        prefix, prefix_tokens = self._prefix(section)
        body_limit = self.limit - prefix_tokens
        target = min(self.config.target_tokens, body_limit)
        out: list[_Span] = []

        table = section.metadata.get("table") if isinstance(section.metadata, dict) else None
        if isinstance(table, dict) and "start" in table and "end" in table:
            out.extend(self._whole_table(section, table))

        run: list[tuple[Block, _Tokens]] = []
        for block, toks in zip(blocks, block_tokens, strict=True):
            if block.kind == "table_row" or not block.joinable:
                if run:
                    out.extend(self._run(section, run, prefix, prefix_tokens, body_limit, target))
                    run = []
                out.extend(self._single(section, block, toks, prefix, prefix_tokens, body_limit, target))
                continue
            if run and not self._joinable(section.key, run[-1][0], block):
                out.extend(self._run(section, run, prefix, prefix_tokens, body_limit, target))
                run = []
            run.append((block, toks))
        if run:
            out.extend(self._run(section, run, prefix, prefix_tokens, body_limit, target))
        return out

    # -- pieces ------------------------------------------------------------

    def _block_pieces(self, block: Block, toks: _Tokens, body_limit: int) -> list[_Piece]:
        """Sentences (lines for code) of one block; overlong ones split further."""
        text = self.text
        if self.config.strategy == "fixed":
            units = split_words(text, block.start, block.end)
            unit_strength = WORD
        elif block.kind == "code":
            units = split_lines(text, block.start, block.end)
            unit_strength = SENTENCE
        else:
            units = split_sentences(text, block.start, block.end)
            unit_strength = SENTENCE
        pieces: list[_Piece] = []
        for us, ue in units:
            n = toks.count(us, ue)
            if n <= body_limit:
                pieces.append(_Piece(us, ue, n, unit_strength))
                continue
            for ws, we in split_words(text, us, ue):
                m = toks.count(ws, we)
                if m <= body_limit:
                    pieces.append(_Piece(ws, we, m, WORD))
                else:
                    pieces.extend(self._split_word(ws, we, toks, body_limit))
        if pieces:
            pieces[0].strength = BLOCK
        return pieces

    def _split_word(self, start: int, end: int, toks: _Tokens, body_limit: int) -> list[_Piece]:
        """Cut one overlong word at token boundaries; each part recounted exactly."""
        starts = [p for p in toks.starts if start <= p < end]
        pieces: list[_Piece] = []
        idx = 0
        # Re-tokenising a word fragment can yield more pieces than its share of
        # the original tokens, so aim below the limit and shrink until it fits.
        step = max(1, body_limit * 3 // 4)
        while idx < len(starts):
            take = min(step, len(starts) - idx)
            while True:
                pe = starts[idx + take] if idx + take < len(starts) else end
                ps = starts[idx] if idx else start
                n = self.counter.count(self.text[ps:pe])
                if n <= body_limit or take == 1:
                    break
                take = max(1, take * 3 // 4)
            pieces.append(_Piece(ps, pe, n, TOKEN if not pieces else FORCED))
            idx += take
        pieces[0].strength = TOKEN
        return pieces

    # -- emitting ----------------------------------------------------------

    def _emit(self, section: Section, start: int, end: int, prefix: str, tokens: int, kind: str) -> _Span:
        body = self.text[start:end]
        return _Span(section, start, end, join_embed_text(prefix, body), tokens, kind)

    def _run(
        self,
        section: Section,
        run: list[tuple[Block, _Tokens]],
        prefix: str,
        prefix_tokens: int,
        body_limit: int,
        target: int,
    ) -> list[_Span]:
        text = self.text
        pieces: list[_Piece] = []
        # Extra tokens contributed by non-whitespace text between blocks (e.g. list
        # bullets kept out of the blocks), attributed to the piece after the gap.
        inexact_joints: set[int] = set()
        kinds = set()
        for block, toks in run:
            kinds.add(block.kind)
            block_pieces = self._block_pieces(block, toks, body_limit)
            if not block_pieces:
                continue
            if pieces:
                gap = text[pieces[-1].end : block_pieces[0].start]
                if gap.strip():
                    block_pieces[0].tokens += self.counter.count(gap)
                    if block_pieces[0].tokens > body_limit:
                        block_pieces[0].strength = FORCED
                    inexact_joints.add(len(pieces))
            pieces.extend(block_pieces)
        if not pieces:
            return []
        kind = kinds.pop() if len(kinds) == 1 else "mixed"
        overlap = self.config.overlap_tokens
        balance = self.config.strategy == "structure"
        ranges = pack(
            [p.tokens for p in pieces], [p.strength for p in pieces], target=target, overlap=overlap, balance=balance
        )
        out = []
        for i, j in ranges:
            out.extend(self._emit_range(section, pieces, i, j, prefix, prefix_tokens, body_limit, kind, inexact_joints))
        return out

    def _emit_range(
        self,
        section: Section,
        pieces: list[_Piece],
        i: int,
        j: int,
        prefix: str,
        prefix_tokens: int,
        body_limit: int,
        kind: str,
        inexact_joints: set[int],
    ) -> list[_Span]:
        start, end = pieces[i].start, pieces[j - 1].end
        body_tokens = sum(p.tokens for p in pieces[i:j])
        # The first piece's gap tokens belong to the previous chunk's joint, not this one.
        exact = True
        if i in inexact_joints:
            exact = False
        for k in range(i + 1, j):
            if k in inexact_joints or not _is_pretoken_boundary(self.text, pieces[k].start):
                exact = False
                break
        if not exact:
            body_tokens = self.counter.count(self.text[start:end])
            if body_tokens > body_limit and j - i > 1:
                # Rare: the joints tokenised differently; split the range and retry.
                mid = (i + j) // 2
                return self._emit_range(
                    section, pieces, i, mid, prefix, prefix_tokens, body_limit, kind, inexact_joints
                ) + self._emit_range(section, pieces, mid, j, prefix, prefix_tokens, body_limit, kind, inexact_joints)
        return [self._emit(section, start, end, prefix, prefix_tokens + body_tokens, kind)]

    def _single(
        self,
        section: Section,
        block: Block,
        toks: _Tokens,
        prefix: str,
        prefix_tokens: int,
        body_limit: int,
        target: int,
    ) -> list[_Span]:
        """A block that is its own chunk (a table row): embedded with its own embed text when given."""
        text = self.text
        start, end = block.start, block.end
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        body = block.embed_text if block.embed_text else text[start:end]
        n = self.counter.count(body)
        if n <= body_limit:
            return [_Span(section, start, end, join_embed_text(prefix, body), prefix_tokens + n, block.kind)]
        # Too long for one input: split the raw text like prose (column names are lost).
        pieces = self._block_pieces(block, toks, body_limit)
        ranges = pack([p.tokens for p in pieces], [p.strength for p in pieces], target=target)
        out = []
        for i, j in ranges:
            out.extend(self._emit_range(section, pieces, i, j, prefix, prefix_tokens, body_limit, block.kind, set()))
        return out

    def _whole_table(self, section: Section, table: dict) -> list[_Span]:
        """One chunk over a whole table when it fits the model input."""
        start, end = int(table["start"]), int(table["end"])
        if not (0 <= start < end <= len(self.text)):
            return []
        caption = str(table.get("caption") or "").strip()
        context = "\n".join(x for x in (section.context.strip(), caption) if x)
        prefix = build_prefix(section.heading_path, context, policy=self.config.prefix)
        if self.config.prefix == "none":
            prefix = caption
        embed = join_embed_text(prefix, self.text[start:end])
        n = self.counter.count(embed)
        if n > self.limit:
            return []
        return [_Span(section, start, end, embed, n, "table")]


def chunk_texts(chunks: Sequence[Chunk]) -> list[str]:
    """The embed texts of ``chunks``, in order (what an embedder consumes)."""
    return [c.embed_text for c in chunks]
