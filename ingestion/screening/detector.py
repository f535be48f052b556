"""The detector behind ``ingestion.screening``.

Each chunk is cut into units (sentences within lines, decoded base64 blobs; see
:mod:`ingestion.screening.normalize`). Every unit is scored by a logistic model over the hashed
words and word pairs of its normalised text plus hand features (:mod:`ingestion.screening.features`),
among them how novel its words are to the rest of the document (the topic-distance feature). The
chunk's score is the highest unit score; the units at or above the threshold are its spans.

A few patterns are certain enough to flag on their own (chat-format special tokens, "ignore the
previous instructions" in any of the languages listed): their units score at least
``RULE_SCORE``.

The weights (``weights.npz``, beside this file) are trained by ``python -m bench.screening train``
on the development set that ``python -m bench.screening build`` makes; see docs/screening.md.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ingestion.screening import features as F
from ingestion.screening.normalize import ACROSS_SCORE, Unit, units
from ingestion.screening.seams import Seam, may_cross

DETECTOR_VERSION = "lexical-5.6"

# The families a reason names, in the order docs/screening.md describes them.
FAMILIES: tuple[str, ...] = (
    "override",  # "ignore previous instructions", "new system prompt"
    "hijack",  # "instead, do X" addressed to the assistant
    "answer_manipulation",  # language, encoding, format of the answer; promotion; fabricated facts
    "code_injection",  # code or commands the answer must include
    "exfiltration",  # links or images that carry data out; "send ... to ..."
    "role_tokens",  # chat-format and role tokens
)

WEIGHTS_PATH = Path(__file__).with_name("weights.npz")
RULE_SCORE = 0.99

_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("role_tokens", re.compile(r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id)\|>|"
                               r"\[/?inst\]|<</?sys>>|<start_of_turn>|<end_of_turn>")),
    ("override", re.compile(
        r"\b(?:ignore|disregard|forget|override|bypass)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|preceding|"
        r"all|any|your|the)\b[^.\n]{0,20}\b(?:instructions?|prompts?|directives|directions|guidelines|system prompt)\b")),
    # The classic override without the word "instructions": "ignore the above and ...", "disregard
    # everything above", "forget everything you were told before". A person's "you can ignore the above
    # warning" or "ignore the above if you use SQLite" names what to skip, or says when: not flagged.
    ("override", re.compile(
        r"\b(?:ignore|disregard|forget)\s+(?:all\s+(?:of\s+)?|everything\s+|anything\s+)?(?:the\s+|that\s+)?"
        r"(?:above|foregoing|preceding)\b(?!\s*(?:[\w-]+\s+)?(?:warnings?|notes?|steps?|errors?|messages?|sections?|paragraphs?|"
        r"examples?|code|commands?|output|lines?|snippets?|if|when|unless|for|on|in|until|as|because|since)\b)|"
        r"\b(?:ignore|disregard|forget)\s+(?:all|everything|anything)\s+(?:(?:(?:written|said|stated)|"
        r"(?:you\s+(?:were|have\s+been|'ve\s+been)\s+told))\s+)?(?:above|before|so\s+far|until\s+now|up\s+to\s+now|"
        r"previously|earlier)\b(?!\s*(?:v?\d|version|release|django|python))")),
    ("override", F._COMPILED[F.NAMES.index("override_xx")][2]),
)  # fmt: skip
RULES = _RULES  # public: the training script scores with the same rules


@dataclass(frozen=True)
class Screening:
    """One chunk's verdict. ``spans`` are (start, end) character offsets of the triggering parts."""

    flagged: bool
    score: float
    reasons: tuple[str, ...]
    detector: str
    spans: tuple[tuple[int, int], ...] = ()

    def as_dict(self) -> dict:
        return {
            "flagged": self.flagged,
            "score": round(self.score, 4),
            "reasons": list(self.reasons),
            "detector": self.detector,
            "spans": [list(span) for span in self.spans],
        }


@dataclass(frozen=True)
class Model:
    """A logistic model: hashed-token weights, hand-feature weights, bias and the flag threshold."""

    token_weights: np.ndarray  # (2**HASH_BITS,)
    feature_weights: np.ndarray  # (len(features.NAMES),)
    feature_mean: np.ndarray
    feature_scale: np.ndarray
    bias: float
    threshold: float
    char_ngrams: int = 0  # n of the hashed character n-grams (0: words and word pairs only)

    def logits(self, texts: Sequence[str], feats: np.ndarray) -> np.ndarray:
        token_part = np.array(
            [float(self.token_weights[F.hashed_tokens(t, self.char_ngrams)].sum()) if t else 0.0 for t in texts],
            dtype=np.float64,
        )
        feat_part = ((feats - self.feature_mean) / self.feature_scale) @ self.feature_weights
        return token_part + feat_part + self.bias


# One load at a time (as ``ingestion.embedding.get_embedder``): ``lru_cache`` calls the function again for every
# thread that misses before the first call returns, and each such thread kept weights of its own.
_LOADING = threading.Lock()


def _new_lock_after_fork() -> None:
    """In a forked child, a lock of its own (as ``ingestion.chunking.tokens``'): one held by another thread at the
    fork stays held in the child, where that thread does not exist."""
    global _LOADING
    _LOADING = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)


def load_model(path: str = str(WEIGHTS_PATH)) -> Model:
    """The detector's weights at ``path`` (the trained ones by default), loaded once per process whichever threads
    ask at the same time; the last path asked for is kept."""
    with _LOADING:
        return _load_model(path)


@lru_cache(maxsize=1)
def _load_model(path: str) -> Model:
    with np.load(path, allow_pickle=False) as data:
        names = tuple(str(n) for n in data["names"])
        if names != F.NAMES:
            raise RuntimeError(f"{path}: trained on features {names}, the code has {F.NAMES}; retrain")
        return Model(
            token_weights=data["token_weights"].astype(np.float32),
            feature_weights=data["feature_weights"].astype(np.float64),
            feature_mean=data["feature_mean"].astype(np.float64),
            feature_scale=data["feature_scale"].astype(np.float64),
            bias=float(data["bias"]),
            threshold=float(data["threshold"]),
            char_ngrams=int(data["char_ngrams"]) if "char_ngrams" in data.files else 0,
        )


@dataclass(frozen=True)
class ScoredUnits:
    """The units of one chunk with their features and scores (the benchmark and training read these)."""

    units: list[Unit]
    features: np.ndarray
    scores: np.ndarray


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40, 40)))


def chunk_units(text: str, doc_words: dict[str, int] | None) -> tuple[list[Unit], np.ndarray]:
    """The units of a chunk and their hand features (shared by scoring and training)."""
    found = units(text)
    return found, F.feature_matrix([u.text for u in found], doc_words, [u.decoded for u in found])


def score_units(text: str, doc_words: dict[str, int] | None, model: Model | None = None) -> ScoredUnits:
    model = model or load_model()
    found, feats = chunk_units(text, doc_words)
    return _scored(found, feats, model)


def _scored(found: list[Unit], feats: np.ndarray, model: Model) -> ScoredUnits:
    if not found:
        return ScoredUnits(found, feats, np.zeros(0))
    scores = _sigmoid(model.logits([u.text for u in found], feats))
    for i, unit in enumerate(found):
        if any(pattern.search(unit.text) for _, pattern in _RULES):
            scores[i] = max(scores[i], RULE_SCORE)
        if unit.across and scores[i] < ACROSS_SCORE:
            scores[i] = 0.0  # a reading across a line break counts only when it is clearly an instruction
    return ScoredUnits(found, feats, scores)


def _reasons(unit: Unit, feats: np.ndarray) -> list[str]:
    found = [family for family, pattern in _RULES if pattern.search(unit.text)]
    found += F.families_of(feats)
    return found or ["hijack"]


def _verdict(text: str, doc_words: dict[str, int] | None, model: Model) -> Screening:
    return _verdict_of(score_units(text, doc_words, model), model)


def _verdict_of(scored: ScoredUnits, model: Model) -> Screening:
    if not scored.units:
        return Screening(False, 0.0, (), DETECTOR_VERSION, ())
    score = float(scored.scores.max())
    hits = [i for i, s in enumerate(scored.scores) if s >= model.threshold]
    reasons: list[str] = []
    for i in hits:
        for family in _reasons(scored.units[i], scored.features[i]):
            if family not in reasons:
                reasons.append(family)
    spans = sorted({(scored.units[i].start, scored.units[i].end) for i in hits})
    return Screening(bool(hits), score, tuple(reasons), DETECTOR_VERSION, tuple(spans))


def screen_chunks(texts: Sequence[str], *, document_text: str | None = None) -> list[Screening]:
    """One verdict per text, in order. ``document_text`` (the whole document) gives the topic the
    chunks' units are compared with (without it, the chunks together stand for the document).
    The embedding model is not called (docs/screening.md, "Why no embedding features")."""
    model = load_model()
    doc_words = F.document_words(document_text if document_text is not None else "\n".join(texts))
    return [_verdict(text, doc_words, model) for text in texts]


def screen_seams(seams: Sequence[Seam], *, document_text: str | None = None) -> list[Screening]:
    """One verdict per seam (:class:`ingestion.screening.seams.Seam`: the end of one chunk and the start of the next,
    as a model reads them joined), in order, made of the units that cross the seam alone -- those that hold text of
    both chunks: each chunk's own verdict judged the rest. Scored as a chunk's units are (the same model, rules and
    line-break bar), against ``document_text``'s words; the spans are offsets into the seam's window."""
    model = load_model()
    doc_words = F.document_words(document_text if document_text is not None else "\n".join(s.text for s in seams))
    out = []
    for seam in seams:
        crossing = [u for u in units(seam.text) if u.start < seam.second_start and u.end > seam.first_end] \
            if may_cross(seam) else []
        feats = F.feature_matrix([u.text for u in crossing], doc_words, [u.decoded for u in crossing])
        out.append(_verdict_of(_scored(crossing, feats, model), model))
    return out
