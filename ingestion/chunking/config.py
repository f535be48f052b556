"""The chunking configuration: a validated, hashable value object.

An index version records :meth:`ChunkingConfig.config_hash`; two configs with the
same hash produce the same chunks from the same document.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass

from ingestion.chunking.tokens import DEFAULT_MODEL

# "fixed": word-aligned token windows inside each section (a baseline that still
# respects access boundaries).
STRATEGIES = ("structure", "fixed")
# "title_leaf": only the first (the document title) and the nearest heading of the path.
PREFIX_POLICIES = ("heading_path", "none", "title_leaf")
# Where a sentence of prose may be cut (see ``ChunkingConfig.boundaries``).
BOUNDARIES = ("sentence", "clause", "line")
# What cuts a run of plain prose blocks: our packer, or semchunk toward the same target.
# "semchunk_headingless": semchunk only in sections without a heading (where prose_target_tokens applies).
INNER_SPLITTERS = ("packer", "semchunk", "semchunk_headingless")

# Budget reserved for the heading-path prefix when validating target_tokens: a
# target that leaves less than this for the prefix is rejected up front (the
# chunker still shrinks the body budget per section when a long path needs more).
MIN_PREFIX_BUDGET = 16

# Fields whose "off" value is what a stored config without them meant (see from_dict).
ADDED_OFF = {
    "prose_target_tokens": 0,
    "text_tables": False,
    "boundaries": "sentence",
    "inner": "packer",
    "prose_overlap": True,
    "table_context": False,
    "table_rows": False,
    "topic_sentence": False,
    "table_delimiter_rows": False,
    "markdown_table_rows": False,
    "compact_table_header": False,
    "long_sentence_lines": False,
    "table_rows_over": 0,
    "table_label_columns": False,
    "piece_weight": 0.0,
    "table_row_labels": False,
    "lead_in_glue": False,
}
# Fields added after index versions were first stored: left out of the hash while they
# hold these defaults, so every config stored before keeps its hash (and its version id).
HASH_STABLE_DEFAULTS = {"embedding_dimensions": 384, **ADDED_OFF}


def valid_piece_weight(value) -> float:
    """``value`` as a ``piece_weight`` (a number in [0, 1), 0 = off); anything else is a ValueError."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1:
        raise ValueError(f"piece_weight must be a number in [0, 1) (0 = off), got {value!r}")
    return float(value)


@dataclass(frozen=True)
class ChunkingConfig:
    """How documents are cut into chunks.

    - ``strategy``: ``"structure"`` (sections, paragraphs, sentences; the default),
      or ``"fixed"`` (word-aligned token windows inside each section, a baseline).
    - ``target_tokens``: body size the packer aims for (content tokens). Chosen by
      leave-one-genre-out on the evaluation suite, see docs/benchmarks.md.
    - ``overlap``: fraction of ``target_tokens`` repeated between consecutive chunks
      of one split section (sentence-aligned); never across sections.
    - ``max_tokens``: the model's input limit *including* its special tokens; the
      prefix plus the body of every chunk fit in it, always.
    - ``prefix``: ``"heading_path"`` prepends the section's heading path (and its
      context lines) to the embedded text; ``"none"`` embeds the body alone.
    - ``semantic_split``: cut long prose preferably where adjacent sentences stop
      being similar (needs an embed function passed to ``chunk_document``; see
      :mod:`ingestion.chunking.semantic`). Off by default: on the evaluation set it
      tied on recall and was within noise on IoU, at ~7x the embedding work
      (docs/benchmarks.md). ``strategy="structure"`` only.
    - ``embedding_dimensions``: the size of the vectors ``model`` produces; recorded
      so that an index version holds its whole embedding configuration.
    - ``prose_target_tokens``: body size for text with no structure around it (a
      section without a heading: a headingless file, text before the first
      heading); 0 means ``target_tokens``, and it never exceeds ``target_tokens``.  Headingless prose has no heading path
      to carry the chunk's topic, so smaller chunks retrieve more precisely there.
    - ``text_tables``: recognise pipe- and tab-delimited tables inside plain prose
      blocks (:mod:`ingestion.chunking.textables`): a whole table is one chunk when
      it fits, else groups of whole rows that each embed the header line.
    - ``boundaries``: where prose may be cut below the paragraph. ``"sentence"``
      (the default): between sentences, inside one only when it alone exceeds the
      limit (then between words).  ``"clause"``: sentence, then a line break inside
      a sentence, then after a comma/semicolon/colon/dash, then words; the packer
      takes a weaker boundary only when no stronger one leaves the chunk half its
      goal size.  ``"line"``: every line break outranks a sentence end (semchunk's
      order: paragraph, line, sentence, clause, word).
    - ``inner``: ``"packer"`` (the default) or ``"semchunk"``: a run of plain prose
      blocks is cut by semchunk toward the same target instead (needs the semchunk
      package; ``strategy="structure"`` only, not with ``semantic_split``);
      ``"semchunk_headingless"``: only in sections without a heading.
    - ``prose_overlap``: whether sections without a heading get ``overlap`` too
      (False, the default: overlap only where a heading path frames the chunk;
      repeated text in headingless prose cost IoU and did not buy recall).
    - ``table_context``: a text table embeds the colon-ended sentence that
      announces it (``The values are:``), and a row group the group label its
      first row falls under; group labels become the preferred cuts.
      ``prose_overlap=False`` and ``table_context=True`` are the default together:
      what leave-one-genre-out's rule (each candidate scored by its worst genre)
      chose over all genres; ``boundaries`` and ``inner`` stay as they were
      (docs/benchmarks.md, "third round").
    - ``table_rows``: a table of records with numbers written as bare rows inside prose
      (same cell count on every line, numeric cells, no leading pipe needed;
      :func:`ingestion.chunking.textables.is_data_table`) becomes one chunk per row, each
      embedding the sentence that introduces the table and the header row; the table is also
      found when each of its lines is a block of its own (a file without blank lines), and its
      introducing sentence is the last sentence of the prose right above it even without a
      colon.  Chosen on the transfer suite (issue 30, docs/benchmarks.md).
    - ``topic_sentence``: a prose paragraph cut into several chunks embeds its first sentence
      (its topic) in front of every chunk after the first (the span is unchanged).
    - ``table_delimiter_rows``: a Markdown pipe table in text (``| a | b |`` over ``|---|---|``)
      is found from its header line: the delimiter row is part of the header, so the header is
      never left with the prose above the table and every row group repeats it (off, the
      delimiter row ended the table and its first data row was read as the header).  Issue 30,
      docs/benchmarks.md.
    - ``markdown_table_rows``: with ``table_rows`` and ``table_delimiter_rows``, a Markdown pipe
      table (one with a delimiter row) is cut one row per chunk like a data table even when its
      cells are words (each row embeds the sentence that introduces the table and the header;
      the first row's span holds the header).  Chosen on the transfer suite's third round
      (issue 30, five sources with such tables, docs/benchmarks.md); off in configs stored before.
    - ``compact_table_header``: the header a Markdown pipe table repeats in the embedded text of its
      row chunks (and row groups) carries its delimiter row compacted to ``|---|:---:|`` (alignment
      kept): a column-padded table (what Markdown formatters write) has a delimiter row of hundreds
      of hyphens, each counted as a token, which left no room for the rows.  The chunks' spans are
      unchanged.  On by default since the sixth round of issue 30: built in the fourth round, it won
      the padded tables of two held-out sources in the fifth (+2.8 recall, +0.58 IoU, both outside
      their intervals) and passed the pairwise rule registered for the sixth (no new source worse,
      a gain on the whole suite, chosen on every leave-one-source-out fold; docs/benchmarks.md); off
      in configs stored before (``ADDED_OFF``), which keep their hash and chunks.
    - ``long_sentence_lines``: a "sentence" longer than a chunk (a list without full stops, lines
      of text with no sentence end) is cut at its line breaks before falling back to words; prose
      whose sentences fit is untouched.  Off by default: its gain on the transfer suite lies inside
      its interval (issue 30, fourth round).
    - ``table_rows_over`` (0 = off): a bare-row table (no Markdown delimiter row) whose whole text, with
      its introducing sentence and heading path, embeds in at most this many tokens stays one chunk
      instead of one chunk per row; larger tables are still cut per row.  Near-identical row chunks (a
      five-year record's years, segments named in other words in the prose) crowd each other and the
      paragraphs' chunks out of the first five; the whole table holds every row with its header and
      lead-in.  The default (192) since issue 30's tenth round: chosen leave-one-source-out on 53
      sources, then adopted by a rule registered before three new reports were read (recall +11.5
      [+5.3, +17.6] there, IoU still above semchunk's; docs/benchmarks.md); 0 in configs stored before
      (``ADDED_OFF``), which keep their hash and chunks.
    - ``table_label_columns``: a short line between a table's rows (a group label, ``Coastal units``) keeps
      the table going only when the row after it has the header's columns; otherwise it is the lead-in of
      the next table and the first ends before it.  Without it, a lead-in such as ``Projects under way:``
      between a four-column and a six-column table joined them, and the second table's rows were chunked
      under the first's lead-in and header.  A fix, on by default since issue 30's twelfth round (found
      reading that round's report; it changes the chunks of no other document of the repository's
      suites, docs/benchmarks.md); off in configs stored before (``ADDED_OFF``), which keep their chunks.
    - ``piece_weight`` (0 = off; 0 <= w < 1): not a chunking option but a search one, recorded here because it
      decides what a version stores.  With w > 0 each chunk also stores its *pieces* (its sentences and lines,
      each a vector mean-pooled from the chunk's own forward pass, :mod:`ingestion.pieces`; no extra model
      work), and a search on the version scores each candidate (1 - w) x its cosine similarity + w x its best
      piece's (:func:`ingestion.pieces.piece_score`; ``kb.retrieval``): an answer sentence inside a chunk
      about something else is no longer diluted by the rest of the chunk.  The chunks themselves (spans,
      embedded texts, vectors) are those of the same config with w = 0.  0.5 by default since issue 30's
      thirteenth round: chosen leave-one-source-out on 68 sources, then adopted by a rule registered before
      five new sources were read (recall +3.7 [+1.2, +6.7] there, the default mode's context recall 94.4 ->
      95.0%; docs/benchmarks.md, "Thirteenth round"); off in configs stored before (``ADDED_OFF``), which keep
      their hash -- a tenant moves to it by a shadow build (``kb_index``).
    - ``table_row_labels``: the text a table inside plain text embeds (the whole table, a group of its rows or
      one row) writes each row with its column labels and leaves the header line out
      (``2021: Revenue £m 168.2; Operating profit £m 9.6`` instead of ``Year | Revenue £m | ...`` over
      ``2021 | 168.2 | 9.6``; :func:`ingestion.chunking.textables.labelled_rows`); the spans and the split into
      chunks are those without it, and a chunk whose labelled text would not fit the model input embeds the
      plain one.  A table of numbers says little to the model about which measure a number is; a question
      names the measure and the year.  Tables parsed from HTML, DOCX or PDF are not changed.  On by default
      since issue 30's fourteenth round: chosen leave-one-source-out on 73 sources, then adopted by a rule
      registered before eight new sources were read (row questions' recall there 60.5 -> 61.7, the default
      mode's context recall 92.6 -> 94.0%; docs/benchmarks.md, "Fourteenth round"); off in configs stored
      before (``ADDED_OFF``), which keep their hash and chunks -- a tenant moves to it by a shadow build.
    - ``lead_in_glue``: a block whose text ends with a colon introduces the next block of its run (``You can
      install it with vcpkg:`` over the commands), so the boundary between them counts as a sentence's, not a
      block's: the packer cuts there only when no other block boundary leaves a chunk half its goal.  Off by
      default and in configs stored before (``ADDED_OFF``); issue 30's fifteenth round (docs/benchmarks.md).
    """

    strategy: str = "structure"
    target_tokens: int = 192
    overlap: float = 0.125
    max_tokens: int = 256
    prefix: str = "heading_path"
    model: str = DEFAULT_MODEL
    semantic_split: bool = False
    special_tokens: int = 2
    embedding_dimensions: int = 384
    prose_target_tokens: int = 160
    text_tables: bool = True
    boundaries: str = "sentence"
    inner: str = "packer"
    prose_overlap: bool = False
    table_context: bool = True
    table_rows: bool = True
    topic_sentence: bool = False
    table_delimiter_rows: bool = True
    markdown_table_rows: bool = True
    compact_table_header: bool = True
    long_sentence_lines: bool = False
    table_rows_over: int = 192
    table_label_columns: bool = True
    piece_weight: float = 0.5
    table_row_labels: bool = True
    lead_in_glue: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown chunking strategy {self.strategy!r}; expected one of {STRATEGIES}")
        if self.prefix not in PREFIX_POLICIES:
            raise ValueError(f"unknown prefix policy {self.prefix!r}; expected one of {PREFIX_POLICIES}")
        for name in ("target_tokens", "max_tokens", "embedding_dimensions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if not isinstance(self.special_tokens, int) or self.special_tokens < 0:
            raise ValueError(f"special_tokens must be a non-negative integer, got {self.special_tokens!r}")
        if isinstance(self.overlap, bool) or not isinstance(self.overlap, int | float):
            raise ValueError(f"overlap must be a fraction, got {self.overlap!r}")
        if not 0 <= self.overlap < 1:
            raise ValueError(f"overlap must be in [0, 1) of target_tokens (overlap < target), got {self.overlap!r}")
        if self.overlap_tokens >= self.target_tokens:
            raise ValueError("overlap must be smaller than target_tokens")
        reserve = MIN_PREFIX_BUDGET if self.prefix != "none" else 0
        if self.target_tokens + reserve + self.special_tokens > self.max_tokens:
            raise ValueError(
                f"target_tokens={self.target_tokens} plus prefix budget {reserve} and {self.special_tokens} "
                f"special tokens exceeds the model limit max_tokens={self.max_tokens}"
            )
        if (
            not isinstance(self.prose_target_tokens, int)
            or isinstance(self.prose_target_tokens, bool)
            or self.prose_target_tokens < 0
        ):
            raise ValueError(f"prose_target_tokens must be a non-negative integer, got {self.prose_target_tokens!r}")
        for name in (
            "text_tables", "prose_overlap", "table_context", "table_rows", "topic_sentence", "table_delimiter_rows",
            "markdown_table_rows", "compact_table_header", "long_sentence_lines", "table_label_columns",
            "table_row_labels", "lead_in_glue",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be a bool")
        if isinstance(self.table_rows_over, bool) or not isinstance(self.table_rows_over, int) or self.table_rows_over < 0:
            raise ValueError(f"table_rows_over must be a non-negative integer (0 = off), got {self.table_rows_over!r}")
        valid_piece_weight(self.piece_weight)
        if self.boundaries not in BOUNDARIES:
            raise ValueError(f"unknown boundaries {self.boundaries!r}; expected one of {BOUNDARIES}")
        if self.inner not in INNER_SPLITTERS:
            raise ValueError(f"unknown inner splitter {self.inner!r}; expected one of {INNER_SPLITTERS}")
        if self.inner != "packer" and (self.strategy != "structure" or self.semantic_split):
            raise ValueError(f"inner={self.inner!r} needs strategy='structure' and no semantic_split")
        if not isinstance(self.model, str) or not self.model:
            raise ValueError("model must be a non-empty model name")
        if not isinstance(self.semantic_split, bool):
            raise ValueError("semantic_split must be a bool")
        if self.semantic_split and self.strategy != "structure":
            raise ValueError("semantic_split needs strategy='structure' (fixed windows ignore sentences)")

    @property
    def content_limit(self) -> int:
        """Content tokens (prefix + body) a chunk may hold: the model limit minus special tokens."""
        return self.max_tokens - self.special_tokens

    @property
    def overlap_tokens(self) -> int:
        """Overlap budget in tokens."""
        return int(self.target_tokens * self.overlap)

    def as_dict(self) -> dict:
        """Plain-JSON form, stored with an index version."""
        return asdict(self)

    def config_hash(self) -> str:
        """Stable sha256 of the canonical JSON of :meth:`as_dict` (see ``HASH_STABLE_DEFAULTS``)."""
        data = {k: v for k, v in self.as_dict().items() if HASH_STABLE_DEFAULTS.get(k, object()) != v}
        canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    @classmethod
    def from_dict(cls, data: dict) -> ChunkingConfig:
        """Inverse of :meth:`as_dict`; rejects unknown keys."""
        unknown = set(data) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(f"unknown chunking config keys: {sorted(unknown)}")
        # A stored config without these keys predates them: it meant them off.
        return cls(**{**ADDED_OFF, **data})
