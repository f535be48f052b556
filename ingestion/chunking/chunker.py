"""Structure-aware chunking: one section at a time, paragraphs, then sentences.

Invariants (tested with Hypothesis in tests/ingestion/test_chunker_properties.py):

- ``doc.text[chunk.start:chunk.end] == chunk.text`` for every chunk.
- A chunk's span lies inside the blocks of one section: blocks are joined only
  when they are adjacent in that section with no other section's text between.
- ``chunk.token_count`` is the model's count for ``chunk.embed_text`` (special
  tokens excluded) and ``token_count + special_tokens <= max_tokens``, always.
- The embedded body is the span itself, unless the gap between two of the
  chunk's blocks holds more than whitespace (a transcript's cue numbers and
  timing lines, a PDF's removed running header): then it is the chunk's part of
  each block, joined with ``"\n"``, so text the parser kept out of the blocks is
  never embedded.  The span stays contiguous either way.
- Every non-whitespace character of every block is covered by some chunk.
- A cut falls between blocks or sentences; inside a sentence only when that
  sentence alone does not fit the limit (then between words, then tokens; with
  ``long_sentence_lines`` at its line breaks before its words), or,
  with ``boundaries`` "clause" or "line", on a line break or after a clause mark
  (tests/ingestion/test_prose_boundaries.py).
- Same document + same config -> same chunks.

Speed: the document is indexed once (:meth:`HFTokenCounter.token_index`: every
whitespace-separated word counted through a cache), so the count of any span
that starts and ends on whitespace is a lookup; cut points always sit on
whitespace.  The rare chunk that does not (a word cut at tokens, odd Unicode
spaces) is recounted with the tokenizer.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from ingestion.chunking.config import ChunkingConfig
from ingestion.chunking.contextualize import HEADING_SEPARATOR, PART_SEPARATOR, build_prefix, join_embed_text
from ingestion.chunking.packing import BLOCK, CLAUSE, FORCED, LINE, SENTENCE, TOKEN, TOPIC, WORD, pack
from ingestion.chunking.semantic import EmbedFn, topic_boundaries
from ingestion.chunking.sentences import split_lines, split_sentences, split_words
from ingestion.chunking.textables import (
    compact_delimiter_row,
    find_tables,
    is_data_table,
    is_delimiter_row,
    is_row,
    labelled_rows,
)
from ingestion.chunking.tokens import TokenCounter, TokenIndex, at_whitespace_boundary, default_counter
from ingestion.structure import Block, ParsedDocument, Section

# Block kinds whose sentence boundaries semantic splitting may promote (not code, not rows).
SEMANTIC_KINDS = frozenset({"prose", "list_item", "turn", "message"})

# Below this many body tokens per chunk, a heading path is too long to be useful
# in full: it is shortened from the front (the nearest headings matter most).
MIN_BODY_TOKENS = 64

# Strength of each boundary below the paragraph, per ``ChunkingConfig.boundaries``:
# (sentence end, line break inside a block, clause mark).  "sentence" keeps whole
# sentences (lines and clauses are no boundary); "clause" ranks sentence > line >
# clause; "line" ranks every line break above a sentence end (semchunk's order).
BOUNDARY_RANKS = {
    "sentence": (SENTENCE, None, None),
    "clause": (SENTENCE, LINE, CLAUSE),
    "line": (LINE, SENTENCE, CLAUSE),
}
# Whitespace inside a sentence; a cut there is a clause boundary after , ; : or a
# dash, or before a spaced double hyphen / dash.
# The whitespace runs inside a sentence where ``boundaries`` may cut: one with a line break
# (group "line"), one after a clause mark (, ; : or a dash), one before a dash ("-- ", an em or
# en dash and a space); each matched whole, as ``\s+`` would match it. Only these are visited (the
# other gaps, between plain words, are most of them).
_CUT_GAP = re.compile(r"(?P<line>\s*\n\s*)|(?<=[,;:\u2014\u2013])\s+|\s+(?=(?:--|\u2014|\u2013) )")
# A paragraph's first sentence is embedded with its later chunks (``topic_sentence``) up to this size.
MAX_TOPIC_TOKENS = 48
# A colon-ended sentence announcing a table is embedded with it when no longer than this.
MAX_LEAD_IN_CHARS = 300


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


@dataclass(slots=True)
class _Piece:
    start: int
    end: int
    tokens: int
    strength: int  # boundary before this piece (see packing)
    block: int = 0  # index of the piece's block within its run


@dataclass
class _Span:
    """A chunk before it gets its ordinal."""

    section: Section
    start: int
    end: int
    embed_text: str
    token_count: int
    kind: str


def chunk_document(
    doc: ParsedDocument,
    config: ChunkingConfig | None = None,
    counter: TokenCounter | None = None,
    embed: EmbedFn | None = None,
) -> list[Chunk]:
    """Cut a parsed document into chunks; deterministic for a given config, tokenizer (and embed function).

    ``embed(texts) -> np.ndarray`` (one unit vector per text) is needed only with
    ``config.semantic_split``: long prose is then preferably cut where adjacent
    sentences stop being similar (see :mod:`ingestion.chunking.semantic`).  It is
    ignored otherwise, so a caller may always pass it.
    """
    config = config or ChunkingConfig()
    counter = counter or default_counter()
    if config.semantic_split and embed is None:
        raise ValueError(
            "ChunkingConfig(semantic_split=True) needs an embed function: chunk_document(doc, config, counter, "
            "embed=...) with embed(texts) -> unit vectors, e.g. ingestion.embedding.get_embedder().embed"
        )
    return _Chunker(doc, config, counter, embed if config.semantic_split else None).run()


class _Chunker:
    def __init__(self, doc: ParsedDocument, config: ChunkingConfig, counter: TokenCounter, embed: EmbedFn | None):
        self.doc = doc
        self.text = doc.text
        self.config = config
        self.counter = counter
        self.embed = embed
        self.limit = config.content_limit
        self._prefix_cache: dict[tuple, tuple[str, int]] = {}
        self._piece_counts: dict[str, int] = {}
        self._separator_tokens: int | None = None
        self._semchunkers: dict[int, object] = {}
        # Every section start and block start, with its owner, to tell whether
        # anything of another section lies between two blocks.
        marks: list[tuple[int, str]] = [(s.start, s.key) for s in doc.sections]
        marks += [(b.start, s.key) for s in doc.sections for b in s.blocks]
        marks.sort()
        self._mark_pos = [m[0] for m in marks]
        self._mark_owner = [m[1] for m in marks]

    # -- tokens ------------------------------------------------------------

    def _token_index(self) -> TokenIndex:
        build = getattr(self.counter, "token_index", None)
        if build is not None:
            return build(self.text)
        # A counter with only count(): count each distinct word once; not assumed
        # additive, so every chunk gets recounted (the slow but exact path).
        words = split_words(self.text)
        cache: dict[str, int] = {}
        counts = []
        for ws, we in words:
            word = self.text[ws:we]
            if word not in cache:
                cache[word] = self.counter.count(word)
            counts.append(cache[word])
        return TokenIndex([w[0] for w in words], counts, exact=False)

    def _prefix(self, section: Section) -> tuple[str, int]:
        """Prefix text and its token count for a section, shortened if it crowds out the body.

        The result is the prefix of the longest tail of the heading path (nearest
        headings kept) whose prefix leaves ``min_body`` tokens for the body; when
        even the last heading alone does not, that prefix keeps halving its words.

        Linear in the path's length (a deeply nested document must not make this
        cubic): each distinct heading is counted once per document, the tail is
        chosen by running sums, and one real count confirms it.  Only a counter
        whose counts do not add up over whitespace falls back to a binary search
        with real counts.
        """
        key = (section.heading_path, section.context)
        cached = self._prefix_cache.get(key)
        if cached is not None:
            return cached
        result = self._cut_prefix(self._shown_path(section.heading_path), section.context)
        self._prefix_cache[key] = result
        return result

    def _shown_path(self, heading_path: Sequence[str]) -> tuple[str, ...]:
        """The headings the prefix policy shows: all of them, or the title and the nearest one."""
        path = tuple(heading_path)
        if self.config.prefix != "title_leaf":
            return path
        shown = [h for h in path if h and h.strip()]
        return tuple(shown[:1] + shown[-1:]) if len(shown) > 2 else tuple(shown)

    def _piece_count(self, text: str) -> int:
        """Token count of one heading (or context), each distinct text counted once per document."""
        n = self._piece_counts.get(text)
        if n is None:
            n = self._piece_counts[text] = self.counter.count(text) if text else 0
        return n

    def _cut_prefix(self, path: tuple[str, ...], context: str) -> tuple[str, int]:
        policy = self.config.prefix
        if policy == "none":
            return "", 0
        policy = "heading_path"  # "title_leaf" shortened the path already
        count = self.counter.count
        budget = self.limit - min(MIN_BODY_TOKENS, self.limit // 2)  # most tokens the prefix may take
        # The headings that show (build_prefix drops blank ones), and the tails to try:
        # entries[j:] for j = 0 .. last.  Dropping the last heading is allowed only
        # when the path's own last entry is blank (the loop this replaces stopped at
        # one entry left, and a blank one shows nothing).
        if self._separator_tokens is None:
            self._separator_tokens = count(HEADING_SEPARATOR)
        sep = self._separator_tokens
        # Each separator costs a token, so a tail of more than budget + 1 headings
        # never fits: only that many of the nearest headings are looked at.
        keep = budget + 1 if sep >= 1 else len(path)
        entries: list[str] = []
        for heading in reversed(path):
            if heading and heading.strip():
                if len(entries) == keep:
                    break
                entries.append(heading.strip())
        entries.reverse()
        last = len(entries) - 1 if path and path[-1] and path[-1].strip() else len(entries)
        last = max(last, 0)

        def prefix_of(j: int) -> str:
            return build_prefix(entries[j:], context, policy=policy)

        def real(j: int) -> tuple[str, int]:
            text = prefix_of(j)
            return text, (count(text + PART_SEPARATOR) if text else 0)

        # Running sums of the additive estimate: heading counts, separators, context.
        ctx = context.strip() if context else ""
        ctx_tokens = self._piece_count(ctx) if ctx else 0
        part = self._piece_count(PART_SEPARATOR)
        tail = [0] * (len(entries) + 1)
        for j in range(len(entries) - 1, -1, -1):
            tail[j] = tail[j + 1] + self._piece_count(entries[j]) + (sep if j < len(entries) - 1 else 0)

        def estimate(j: int) -> int:
            if j >= len(entries):
                return ctx_tokens + part if ctx else 0
            return tail[j] + (part + ctx_tokens if ctx else 0) + part

        chosen = next((j for j in range(last + 1) if estimate(j) <= budget), None)
        if chosen is not None:
            prefix, tokens = real(chosen)
            exact = tokens == estimate(chosen)
            if exact and chosen > 0 and not getattr(self.counter, "whitespace_additive", False):
                exact = real(chosen - 1)[1] > budget  # the estimate cut where the real counts do
            if exact:
                return prefix, tokens
        # Counts that do not add up: the smallest j whose real prefix fits, by bisection
        # (the count shrinks as headings are dropped).
        lo, hi = 0, last + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if real(mid)[1] <= budget:
                hi = mid
            else:
                lo = mid + 1
        if lo <= last:
            return real(lo)
        prefix, tokens = real(last)
        while prefix and tokens > budget:
            # One heading (or context) alone is too long: keep its first words.
            words = prefix.split()
            prefix = " ".join(words[: max(1, len(words) // 2)]) if len(words) > 1 else ""
            tokens = count(prefix + PART_SEPARATOR) if prefix else 0
        return prefix, tokens

    # -- main --------------------------------------------------------------

    def run(self) -> list[Chunk]:
        text = self.text
        self.index = self._token_index()
        spans: list[_Span] = []
        for section in self.doc.sections:
            blocks = []
            for block in sorted(section.blocks, key=lambda b: (b.start, b.end)):
                if text[block.start : block.end].strip():
                    blocks.append(block)
            if blocks:
                spans.extend(self._section(section, blocks))
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

    def _section(self, section: Section, blocks: list[Block]) -> list[_Span]:
        prefix, prefix_tokens = self._prefix(section)
        body_limit = self.limit - prefix_tokens
        target = min(self.config.target_tokens, body_limit)
        if self.config.prose_target_tokens and not _has_heading(section):
            # No heading: nothing but the body says what the chunk is about.
            target = min(self.config.prose_target_tokens, target)
        out: list[_Span] = []
        if self.config.text_tables and self.config.strategy == "structure":
            blocks = self._split_text_tables(blocks)

        table = section.metadata.get("table") if isinstance(section.metadata, dict) else None
        if isinstance(table, dict) and "start" in table and "end" in table:
            out.extend(self._whole_table(section, table))

        run: list[Block] = []
        for block in blocks:
            if block.kind == "text_table":
                if run:
                    out.extend(self._run(section, run, prefix, prefix_tokens, body_limit, target))
                    run = []
                out.extend(self._text_table(section, block, prefix, prefix_tokens, body_limit, target))
                continue
            if block.kind == "table_row" or not block.joinable:
                if run:
                    out.extend(self._run(section, run, prefix, prefix_tokens, body_limit, target))
                    run = []
                out.extend(self._single(section, block, prefix, prefix_tokens, body_limit, target))
                continue
            if run and not self._joinable(section.key, run[-1], block):
                out.extend(self._run(section, run, prefix, prefix_tokens, body_limit, target))
                run = []
            run.append(block)
        if run:
            out.extend(self._run(section, run, prefix, prefix_tokens, body_limit, target))
        return out

    # -- tables inside plain text --------------------------------------------

    def _split_text_tables(self, blocks: list[Block]) -> list[Block]:
        """Prose blocks holding pipe/tab-delimited tables, cut into prose parts and ``text_table`` parts.

        With ``table_rows``, runs of prose blocks on consecutive lines (a file without blank
        lines has one block per line) are searched as one range, so a table whose rows are
        blocks of their own is found too; the blocks outside the tables are kept as they were.
        """
        text = self.text
        out: list[Block] = []
        for group in self._table_groups(blocks):
            if len(group) == 1 and (group[0].kind != "prose" or not group[0].joinable or group[0].embed_text):
                out.append(group[0])
                continue
            tables = find_tables(
                text, group[0].start, group[-1].end, delimiter_rows=self.config.table_delimiter_rows,
                label_columns=self.config.table_label_columns,
            )
            if len(group) > 1:
                # Only tables whose lines are whole blocks of the group (one block per line).
                starts, ends = {b.start for b in group}, {b.end for b in group}
                tables = [t for t in tables if t[0] in starts and t[2] in ends]
            if not tables:
                out.extend(group)
                continue
            for block in group:
                pos = block.start
                for t_start, _h, t_end in tables:
                    if t_end <= pos or t_start >= block.end:
                        continue
                    if text[pos:t_start].strip():
                        out.append(Block(pos, t_start, "prose"))
                    pos = max(pos, t_end)
                if pos < block.end and text[pos : block.end].strip():
                    out.append(block if pos == block.start else Block(pos, block.end, "prose"))
            for t_start, header_end, t_end in tables:
                metadata: dict = {"header_end": header_end}
                before = sorted((b for b in out if b.end <= t_start), key=lambda b: b.end)
                if self.config.table_context and before and before[-1].kind == "prose" and before[-1].joinable:
                    adjacent = "\n\n" not in text[before[-1].end : t_start].replace(" ", "").replace("\t", "")
                    lead = self._lead_in(before[-1], colon=not (self.config.table_rows and adjacent))
                    if lead:
                        metadata["lead_in"] = lead
                header_lines = text[t_start:header_end].split("\n")
                markdown = len(header_lines) == 2 and is_delimiter_row(header_lines[1])  # find_tables' header
                if self.config.table_rows and (
                    is_data_table(text, t_start, t_end, delimiter_rows=self.config.table_delimiter_rows)
                    or (self.config.markdown_table_rows and markdown)
                ):
                    metadata["rows"] = True
                    metadata["bare"] = not markdown
                out.append(Block(t_start, t_end, "text_table", metadata=metadata))
            out.sort(key=lambda b: (b.start, b.end))
        return out

    def _table_groups(self, blocks: list[Block]) -> list[list[Block]]:
        """Blocks in groups searched for tables together: one block each, unless ``table_rows`` joins
        prose blocks on consecutive lines (only whitespace and one line break between them)."""
        if not self.config.table_rows:
            return [[b] for b in blocks]
        text = self.text
        groups: list[list[Block]] = []
        for block in blocks:
            plain = block.kind == "prose" and block.joinable and not block.embed_text
            if groups and plain:
                prev = groups[-1][-1]
                gap = text[prev.end : block.start]
                prev_plain = prev.kind == "prose" and prev.joinable and not prev.embed_text
                if prev_plain and not gap.strip() and gap.count("\n") <= 1:
                    groups[-1].append(block)
                    continue
            groups.append([block])
        return groups

    def _lead_in(self, block: Block, colon: bool = True) -> str:
        """The sentence that announces a table: the last one of the prose before it, if it ends with a
        colon (or, with ``colon=False``, whatever it ends with: the table follows it on the next line)."""
        sentences = split_sentences(self.text, block.start, block.end)
        if not sentences:
            return ""
        s, e = sentences[-1]
        lead = " ".join(self.text[s:e].split())
        if (colon and not lead.endswith(":")) or len(lead.split()) < 3 or len(lead) > MAX_LEAD_IN_CHARS:
            return ""
        return lead

    def _text_table(
        self, section: Section, block: Block, prefix: str, prefix_tokens: int, body_limit: int, target: int
    ) -> list[_Span]:
        """A whole table when it fits the input, else groups of whole rows, each embedding the header line."""
        text = self.text
        start, end = block.start, block.end
        whole = text[start:end]
        lead = str(block.metadata.get("lead_in") or "")
        table_prefix = PART_SEPARATOR.join(x for x in (prefix, lead) if x)
        embed = join_embed_text(table_prefix, whole)
        n = None
        by_rows = bool(block.metadata.get("rows"))
        if by_rows and self.config.table_rows_over and block.metadata.get("bare"):
            # A small bare-row table stays whole (``table_rows_over``); only it needs the whole count here.
            n = self.counter.count(embed)
            by_rows = n > self.config.table_rows_over
        if by_rows:
            rows = self._table_rows(section, block, table_prefix)
            if rows is not None:
                return rows
        if n is None:
            n = self.counter.count(embed)
        header_end = int(block.metadata.get("header_end", start))
        if n <= self.limit:
            embed, n = self._labelled(table_prefix, text[start:header_end], text[header_end:end], embed, n)
            return [_Span(section, start, end, embed, n, "table")]
        header = self._repeated_header(text[start:header_end].strip())
        header_tokens = self.counter.count(header + "\n") if header else 0
        rows = split_lines(text, header_end, end)
        labels = {}
        if self.config.table_context and header:
            labels = {k: text[s:e].strip() for k, (s, e) in enumerate(rows) if not is_row(text[s:e], header)}
        lead_tokens = self.counter.count(lead + PART_SEPARATOR) if lead else 0
        label_tokens = max((self.counter.count(x + "\n") for x in labels.values()), default=0)
        row_limit = body_limit - header_tokens - lead_tokens - label_tokens
        if not header or row_limit < body_limit // 2 or not rows:
            # A header too long to repeat: cut the table like lines of prose.
            return self._run(section, [Block(start, end, "table")], prefix, prefix_tokens, body_limit, target)
        out: list[_Span] = []
        count = self.index.count
        # With group labels, a label starts a group by preference (rows are sentence-strength cuts).
        row_strength = SENTENCE if labels else BLOCK
        pieces = [_Piece(s, e, count(s, e), BLOCK if k in labels else row_strength) for k, (s, e) in enumerate(rows)]
        # Rows are packed to the target (less the header they repeat), never cut.
        ranges = pack(
            [p.tokens for p in pieces],
            [p.strength for p in pieces],
            target=max(1, min(target, row_limit) - header_tokens // 2),
        )
        for i, j in ranges:
            s, e = pieces[i].start, pieces[j - 1].end
            first = i == 0
            span_start = start if first else s
            label = ""
            if labels and not first and i not in labels:
                # The group label this group's first row falls under, as context.
                label = next((labels[k] for k in range(i - 1, -1, -1) if k in labels), "")
            body = text[span_start:e] if first else "\n".join(x for x in (header, label, text[s:e]) if x)
            embed = join_embed_text(table_prefix, body)
            m = self.counter.count(embed)
            if m > self.limit:
                out.extend(
                    self._run(section, [Block(span_start, e, "table")], prefix, prefix_tokens, body_limit, target)
                )
                continue
            rows_only = text[header_end:e] if first else "\n".join(x for x in (label, text[s:e]) if x)
            embed, m = self._labelled(table_prefix, header, rows_only, embed, m)
            out.append(_Span(section, span_start, e, embed, m, "table_rows"))
        return out

    def _table_rows(self, section: Section, block: Block, table_prefix: str) -> list[_Span] | None:
        """One chunk per row of a data table, each embedding the introducing sentence and the header
        row; the header line is part of the first row's span. None when a row does not fit."""
        text = self.text
        header_end = int(block.metadata.get("header_end", block.start))
        header = self._repeated_header(text[block.start : header_end].strip())
        rows = split_lines(text, header_end, block.end)
        out: list[_Span] = []
        for k, (s, e) in enumerate(rows):
            span_start = block.start if k == 0 else s
            embed = join_embed_text(table_prefix, header + "\n" + text[s:e].strip())
            n = self.counter.count(embed)
            if n > self.limit:
                return None
            embed, n = self._labelled(table_prefix, header, text[s:e].strip(), embed, n)
            out.append(_Span(section, span_start, e, embed, n, "table_row"))
        return out

    def _labelled(self, table_prefix: str, header: str, rows: str, embed: str, n: int) -> tuple[str, int]:
        """With ``table_row_labels``, the embedded text of a table's ``rows`` written with the ``header``'s
        column labels (the header line left out) and its token count; the plain ``embed`` and ``n`` when the
        option is off, nothing changes, or the labelled text would not fit the model input."""
        if not self.config.table_row_labels:
            return embed, n
        plain_rows = rows.strip("\n")
        body = labelled_rows(header, plain_rows)
        if not body.strip() or body == plain_rows:  # no row to label (a header with a group label only)
            return embed, n
        labelled = join_embed_text(table_prefix, body)
        if labelled == embed:
            return embed, n
        m = self.counter.count(labelled)
        return (labelled, m) if m <= self.limit else (embed, n)

    def _repeated_header(self, header: str) -> str:
        """The header a table repeats in its rows' embedded text: with ``compact_table_header``, a
        Markdown delimiter row in it is shortened (``|---|:---:|``); the spans keep the document's text."""
        if not self.config.compact_table_header:
            return header
        return "\n".join(compact_delimiter_row(line) if is_delimiter_row(line) else line for line in header.split("\n"))

    # -- pieces ------------------------------------------------------------

    def _block_pieces(self, block: Block, body_limit: int) -> list[_Piece]:
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
        strengths = [unit_strength] * len(units)
        if self.config.strategy != "fixed" and block.kind != "code" and self.config.boundaries != "sentence":
            units, strengths = self._fine_units(units, self.config.boundaries)
        pieces: list[_Piece] = []
        count = self.index.count
        for (us, ue), strength in zip(units, strengths, strict=True):
            n = count(us, ue)
            if n <= body_limit:
                pieces.append(_Piece(us, ue, n, strength))
                continue
            if self.config.long_sentence_lines and text.find("\n", us, ue) != -1:
                # A "sentence" longer than a chunk (a list without full stops): its lines first.
                pieces.extend(self._line_pieces(us, ue, strength, body_limit))
                continue
            pieces.extend(self._word_pieces(us, ue, body_limit))
        if pieces:
            pieces[0].strength = BLOCK
        return pieces

    def _line_pieces(self, start: int, end: int, strength: int, body_limit: int) -> list[_Piece]:
        """The lines of one overlong sentence as pieces (a line break is a ``LINE`` cut); a line that is
        itself too long goes to its words."""
        pieces: list[_Piece] = []
        count = self.index.count
        for ls, le in split_lines(self.text, start, end):
            span = _trimmed(self.text, ls, le)
            if span is None:
                continue
            ls, le = span
            first = len(pieces)
            n = count(ls, le)
            if n <= body_limit:
                pieces.append(_Piece(ls, le, n, LINE))
            else:
                pieces.extend(self._word_pieces(ls, le, body_limit))
            pieces[first].strength = strength if first == 0 else LINE
        return pieces

    def _word_pieces(self, us: int, ue: int, body_limit: int) -> list[_Piece]:
        """The words of one overlong sentence (or line) as pieces; a word too long is cut at tokens."""
        text = self.text
        words = split_words(text, us, ue)
        counts = self._word_counts(words)
        if max(counts) <= body_limit:
            return [_Piece(ws, we, m, WORD) for (ws, we), m in zip(words, counts, strict=True)]
        pieces: list[_Piece] = []
        for (ws, we), m in zip(words, counts, strict=True):
            if m <= body_limit:
                pieces.append(_Piece(ws, we, m, WORD))
            else:
                pieces.extend(self._split_word(ws, we, body_limit))
        return pieces

    def _fine_units(self, sentences: list[tuple[int, int]], mode: str) -> tuple[list[tuple[int, int]], list[int]]:
        """Sentences cut further at line breaks and clause marks, with the strength before each part.

        Every cut is on whitespace, so the parts' token counts come off the index.
        """
        text = self.text
        sentence_rank, line_rank, clause_rank = BOUNDARY_RANKS[mode]
        units: list[tuple[int, int]] = []
        strengths: list[int] = []
        previous_end = None
        for ss, se in sentences:
            rank = sentence_rank
            if previous_end is not None and text.find("\n", previous_end, ss) != -1:
                rank = max(rank, line_rank)
            start = ss
            for gap in _CUT_GAP.finditer(text, ss, se):
                gs, ge = gap.span()
                units.append((start, gs))
                strengths.append(rank)
                start, rank = ge, (line_rank if gap.lastgroup == "line" else clause_rank)
            units.append((start, se))
            strengths.append(rank)
            previous_end = se
        return units, strengths

    def _word_counts(self, words: list[tuple[int, int]]) -> list[int]:
        """Token count of each word span, read off the index in one slice when its words are these words.

        One overlong "sentence" can hold most of a document (a 5 MB line); two
        bisections per word would dominate the chunking time there.
        """
        index = self.index
        if not words:
            return []
        lo = bisect_left(index.starts, words[0][0])
        hi = lo + len(words)
        starts = index.starts
        aligned = (
            hi <= len(starts)
            and (hi == len(starts) or starts[hi] >= words[-1][1])
            and starts[lo:hi] == [ws for ws, _we in words]
        )
        if aligned:
            cum = index.cum
            return [cum[k + 1] - cum[k] for k in range(lo, hi)]
        # The index splits words elsewhere (e.g. at a form feed, which the tokenizer
        # does not treat as whitespace): count each word on its own.
        return [index.count(ws, we) for ws, we in words]

    def _split_word(self, start: int, end: int, body_limit: int) -> list[_Piece]:
        """Cut one overlong word at token boundaries; each part recounted exactly."""
        word = self.text[start:end]
        offsets = getattr(self.counter, "encode_offsets", None)
        if offsets is not None:
            starts = [start + s for s, _e in offsets(word)]
        else:
            starts = list(range(start, end))  # characters, for a count-only counter
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
            pieces.append(_Piece(ps, pe, n, FORCED if pieces else TOKEN))
            idx += take
        return pieces

    # -- emitting ----------------------------------------------------------

    def _emit(
        self, section: Section, start: int, end: int, prefix: str, tokens: int, kind: str, body: str | None = None
    ) -> _Span:
        """A chunk over ``[start, end)``, embedding ``body`` (default: the span itself) after ``prefix``."""
        if body is None:
            body = self.text[start:end]
        return _Span(section, start, end, join_embed_text(prefix, body), tokens, kind)

    def _run(
        self,
        section: Section,
        run: list[Block],
        prefix: str,
        prefix_tokens: int,
        body_limit: int,
        target: int,
    ) -> list[_Span]:
        pieces: list[_Piece] = []
        kinds = set()
        for number, block in enumerate(run):
            kinds.add(block.kind)
            block_pieces = self._block_pieces(block, body_limit)
            for piece in block_pieces:
                piece.block = number
            if block_pieces and number and self.config.lead_in_glue and self._leads_in(run[number - 1]):
                # A block that ends with a colon introduces the next one: cut there only when no other
                # block boundary will do (a how-to's sentence kept with its command).
                block_pieces[0].strength = SENTENCE
            pieces.extend(block_pieces)
        if not pieces:
            return []
        overlap = self.config.overlap_tokens
        if not self.config.prose_overlap and not _has_heading(section):
            overlap = 0
        inner = self.config.inner
        if inner == "semchunk_headingless" and not _has_heading(section):
            inner = "semchunk"
        if inner == "semchunk" and kinds == {"prose"} and sum(p.tokens for p in pieces) > target:
            spans = self._semchunk_run(section, run, prefix, prefix_tokens, body_limit, target)
            if spans is not None:
                return spans
        balance = self.config.strategy == "structure"
        if self.embed is not None and balance and kinds <= SEMANTIC_KINDS and sum(p.tokens for p in pieces) > target:
            self._mark_topics(pieces)
        kind = kinds.pop() if len(kinds) == 1 else "mixed"
        ranges = pack(
            [p.tokens for p in pieces], [p.strength for p in pieces], target=target, overlap=overlap, balance=balance
        )
        out = []
        for i, j in ranges:
            topic = self._topic(run[pieces[i].block], pieces[i]) if self.config.topic_sentence else None
            if topic is not None:
                topic_text, topic_tokens = topic
                out.extend(
                    self._emit_range(
                        section,
                        pieces,
                        i,
                        j,
                        PART_SEPARATOR.join(x for x in (prefix, topic_text) if x),
                        prefix_tokens + topic_tokens,
                        body_limit - topic_tokens,
                        kind,
                    )
                )
                continue
            out.extend(self._emit_range(section, pieces, i, j, prefix, prefix_tokens, body_limit, kind))
        return out

    def _leads_in(self, block: Block) -> bool:
        """Whether ``block``'s text ends with a colon (a lead-in to what follows it)."""
        return self.text[block.start : block.end].rstrip().endswith(":")

    def _topic(self, block: Block, first: _Piece) -> tuple[str, int] | None:
        """The first sentence of a prose paragraph and its token count (with its separator), for a chunk
        that starts inside the paragraph after that sentence; None when it does not apply or fit."""
        if block.kind != "prose" or first.strength >= BLOCK:
            return None
        sentences = split_sentences(self.text, block.start, block.end)
        if not sentences or first.start < sentences[0][1]:
            return None
        topic = " ".join(self.text[sentences[0][0] : sentences[0][1]].split())
        tokens = self.counter.count(topic + PART_SEPARATOR)
        if tokens > MAX_TOPIC_TOKENS:
            return None
        return topic, tokens

    def _semchunk_run(
        self,
        section: Section,
        run: list[Block],
        prefix: str,
        prefix_tokens: int,
        body_limit: int,
        target: int,
    ) -> list[_Span] | None:
        """A run of prose blocks cut by semchunk toward ``target`` body tokens; None to use the packer.

        semchunk sees the run's text from its first block's start to its last
        block's end, so only runs whose gaps are whitespace go to it (text the parser
        kept out of the blocks is never embedded).  No overlap: semchunk's overlap
        repeats windows cut anywhere (it nearly doubled the chunks on the suite), not
        whole sentences.
        """
        text = self.text
        if any(text[a.end : b.start].strip() for a, b in zip(run, run[1:], strict=False)):
            return None
        import semchunk  # an optional dependency: only this option needs it

        chunker = self._semchunkers.get(target)
        if chunker is None:
            chunker = self._semchunkers[target] = semchunk.chunkerify(self.counter.count, target)
        start, end = run[0].start, run[-1].end
        _texts, offsets = chunker(text[start:end], offsets=True)
        out: list[_Span] = []
        for cs, ce in offsets:
            span = _trimmed(text, start + cs, start + ce)
            if span is None:
                continue
            s, e = span
            body_tokens = self.counter.count(text[s:e])
            if body_tokens > body_limit:
                return None
            out.append(self._emit(section, s, e, prefix, prefix_tokens + body_tokens, "prose"))
        return out

    def _mark_topics(self, pieces: list[_Piece]) -> None:
        """Promote the sentence boundaries of a run where the topic changes to ``TOPIC`` strength.

        The sentences are the pieces between boundaries of sentence strength or
        more (the words of an overlong sentence stay one sentence).
        """
        heads = [k for k, p in enumerate(pieces) if k == 0 or p.strength >= SENTENCE]
        ends = heads[1:] + [len(pieces)]
        texts = [self.text[pieces[h].start : pieces[e - 1].end] for h, e in zip(heads, ends, strict=True)]
        for b in topic_boundaries(texts, self.embed):
            pieces[heads[b]].strength = TOPIC

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
    ) -> list[_Span]:
        start, end = pieces[i].start, pieces[j - 1].end
        text = self.text
        parts = _block_parts(pieces, i, j)
        gaps = zip(parts, parts[1:], strict=False)
        if len(parts) > 1 and any(text[a_end:b_start].strip() for (_, a_end), (b_start, _) in gaps):
            # Something between the blocks that the parser kept out of them (cue
            # timings, page furniture): embed the blocks' own text instead.
            body = "\n".join(text[s:e] for s, e in parts)
            if self.index.exact and all(
                at_whitespace_boundary(text, s) and at_whitespace_boundary(text, e) for s, e in parts
            ):
                # Each part is whitespace-bounded and "\n" is whitespace, so the
                # parts' index counts add up to the joined text's count.
                body_tokens = sum(self.index.count(s, e) for s, e in parts)
            else:
                body_tokens = self.counter.count(body)
        else:
            body = None
            if self.index.exact and at_whitespace_boundary(text, start) and at_whitespace_boundary(text, end):
                # Text between blocks (e.g. list bullets) is in the index too, so this
                # also counts what the pieces' sum leaves out.
                body_tokens = self.index.count(start, end)
            else:
                body_tokens = self.counter.count(text[start:end])
        if body_tokens > body_limit and j - i > 1:
            # Text between the pieces (or a word rejoined differently) pushed it over:
            # split the range and retry.  One piece lies in one block, so it always fits.
            mid = (i + j) // 2
            return self._emit_range(section, pieces, i, mid, prefix, prefix_tokens, body_limit, kind) + (
                self._emit_range(section, pieces, mid, j, prefix, prefix_tokens, body_limit, kind)
            )
        return [self._emit(section, start, end, prefix, prefix_tokens + body_tokens, kind, body)]

    def _single(
        self,
        section: Section,
        block: Block,
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
        pieces = self._block_pieces(block, body_limit)
        ranges = pack([p.tokens for p in pieces], [p.strength for p in pieces], target=target)
        out = []
        for i, j in ranges:
            out.extend(self._emit_range(section, pieces, i, j, prefix, prefix_tokens, body_limit, block.kind))
        return out

    def _whole_table(self, section: Section, table: dict) -> list[_Span]:
        """One chunk over a whole table when it fits the model input."""
        start, end = int(table["start"]), int(table["end"])
        if not (0 <= start < end <= len(self.text)):
            return []
        if self.config.prefix != "none":
            if self._separator_tokens is None:
                self._separator_tokens = self.counter.count(HEADING_SEPARATOR)
            shown = sum(1 for h in section.heading_path if h and h.strip())
            if self._separator_tokens >= 1 and shown - 1 > self.limit:
                # Its separators alone overflow the input: no need to count a path this deep.
                return []
        caption = str(table.get("caption") or "").strip()
        context = "\n".join(x for x in (section.context.strip(), caption) if x)
        prefix = build_prefix(
            self._shown_path(section.heading_path),
            context,
            policy="none" if self.config.prefix == "none" else "heading_path",
        )
        if self.config.prefix == "none":
            prefix = caption
        embed = join_embed_text(prefix, self.text[start:end])
        n = self.counter.count(embed)
        if n > self.limit:
            return []
        return [_Span(section, start, end, embed, n, "table")]


def _has_heading(section: Section) -> bool:
    return any(h and h.strip() for h in section.heading_path)


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _block_parts(pieces: Sequence[_Piece], i: int, j: int) -> list[tuple[int, int]]:
    """The chunk's part of each block for pieces ``[i, j)``: first piece start to last piece end, per block."""
    if pieces[i].block == pieces[j - 1].block:
        return [(pieces[i].start, pieces[j - 1].end)]
    parts: list[tuple[int, int]] = []
    current = -1
    for piece in pieces[i:j]:
        if piece.block != current:
            parts.append((piece.start, piece.end))
            current = piece.block
        else:
            parts[-1] = (parts[-1][0], piece.end)
    return parts


def chunk_texts(chunks: Sequence[Chunk]) -> list[str]:
    """The embed texts of ``chunks``, in order (what an embedder consumes)."""
    return [c.embed_text for c in chunks]
