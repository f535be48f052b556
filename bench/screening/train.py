"""Train the detector's weights on the development set's *train* split; pick C and the threshold on
*validation*; never read *test* (``bench.screening.evaluate`` does, once, for the report).

Units (sentences) are the training examples: every unit of a clean chunk is negative; a unit of a
planted chunk is positive when its text lies inside the planted instruction (short units that say
nothing by themselves -- "Thanks!", "Signed," -- are left out), negative otherwise.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import sparse
from sklearn.linear_model import LogisticRegression

from ingestion.screening import features as F
from ingestion.screening.detector import RULE_SCORE, WEIGHTS_PATH, Model, chunk_units, score_units

FPR_TARGET = 0.0075  # the threshold keeps at most this share of validation clean chunks flagged (margin under 1%)
TOPIC_FEATURES = ("novel_words", "novel_x_ai", "novel_x_imperative", "novel_x_you")


def _visible(text: str) -> str:
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


@dataclass
class Examples:
    texts: list[str]
    feats: np.ndarray
    labels: np.ndarray


class DocWords:
    """document_words per document text, computed once."""

    def __init__(self) -> None:
        self._cache: dict[int, dict[str, int]] = {}

    def __call__(self, doc_text: str) -> dict[str, int]:
        key = hash(doc_text)
        if key not in self._cache:
            self._cache[key] = F.document_words(doc_text)
        return self._cache[key]


def unit_examples(clean: Iterable[dict], planted: Iterable[dict], words: DocWords) -> Examples:
    texts: list[str] = []
    feats: list[np.ndarray] = []
    labels: list[int] = []
    for rec in clean:
        found, fm = chunk_units(rec["text"], words(rec["doc_text"]))
        texts += [u.text for u in found]
        feats.append(fm)
        labels += [0] * len(found)
    for rec in planted:
        attack = _visible(rec["attack"]["text"])
        doc_words = words(rec["doc_text"])
        for chunk in rec["chunks"]:
            found, fm = chunk_units(chunk, doc_words)
            for i, unit in enumerate(found):
                raw = _visible(chunk[unit.start : unit.end]).strip()
                inside = unit.decoded or (len(raw) >= 3 and raw in attack)
                if inside and len(unit.text.split()) < 3 and not fm[i][: len(F.COMPILED)].any():
                    continue  # "Thanks!", "Signed," -- nothing to learn from
                texts.append(unit.text)
                feats.append(fm[i : i + 1])
                labels.append(1 if inside else 0)
    return Examples(texts, np.concatenate(feats) if feats else np.zeros((0, len(F.NAMES))), np.array(labels))


def _counts(texts: Sequence[str], char_ngrams: int = 0) -> sparse.csr_matrix:
    rows, cols = [], []
    for i, t in enumerate(texts):
        toks = F.hashed_tokens(t, char_ngrams)
        rows += [i] * len(toks)
        cols += toks
    m = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(texts), 1 << F.HASH_BITS))
    m.sum_duplicates()
    return m


def fit(
    ex: Examples,
    c: float,
    drop: Sequence[str] = (),
    alpha: float = 1.0,
    char_ngrams: int = 0,
    counts: sparse.csr_matrix | None = None,
) -> Model:
    """Logistic regression on hashed words (scaled by ``alpha``: below 1, the L2 penalty holds the
    word weights back relative to the hand features) and standardised hand features."""
    feats = ex.feats.copy()
    for name in drop:
        feats[:, F.NAMES.index(name)] = 0.0
    mean = feats.mean(axis=0)
    scale = feats.std(axis=0)
    scale[scale < 1e-6] = 1.0
    if counts is None:
        counts = _counts(ex.texts, char_ngrams)
    x = sparse.hstack([alpha * counts, sparse.csr_matrix((feats - mean) / scale)]).tocsr()
    pos = max(1, int(ex.labels.sum()))
    weight = {0: 1.0, 1: (len(ex.labels) - pos) / pos / 4}
    clf = LogisticRegression(C=c, class_weight=weight, solver="liblinear", max_iter=2000)
    clf.fit(x, ex.labels)
    coef = clf.coef_[0]
    n = 1 << F.HASH_BITS
    feature_weights = coef[n:].copy()
    for name in drop:
        feature_weights[F.NAMES.index(name)] = 0.0
    return Model(
        token_weights=(alpha * coef[:n]).astype(np.float16).astype(np.float32),  # as stored
        feature_weights=feature_weights,
        feature_mean=mean,
        feature_scale=scale,
        bias=float(clf.intercept_[0]),
        threshold=0.5,
        char_ngrams=char_ngrams,
    )


class Prepared:
    """The units of many chunks featurised once, so that many models can be scored fast.

    ``groups[i]`` lists the chunk indexes of item i (a clean chunk is one item of one chunk; a planted
    instruction is one item over the chunks that hold it)."""

    def __init__(self, items: Sequence[Sequence[tuple[str, str]]], words: DocWords) -> None:
        from ingestion.screening.detector import RULES as _RULES

        texts, feats, rule, owner = [], [], [], []
        for i, chunks in enumerate(items):
            for text, doc_text in chunks:
                found, fm = chunk_units(text, words(doc_text))
                texts += [u.text for u in found]
                feats.append(fm)
                rule += [any(p.search(u.text) for _, p in _RULES) for u in found]
                owner += [i] * len(found)
        self.texts = texts
        self._counts: dict[int, sparse.csr_matrix] = {}
        self.feats = np.concatenate(feats) if feats else np.zeros((0, len(F.NAMES)))
        self.rule = np.array(rule, dtype=bool)
        self.owner = np.array(owner, dtype=np.int64)
        self.n = len(items)

    def scores(self, model: Model) -> np.ndarray:
        """Per item: the highest unit score (rules included), as the detector computes it."""
        if model.char_ngrams not in self._counts:
            self._counts[model.char_ngrams] = _counts(self.texts, model.char_ngrams)
        logits = self._counts[model.char_ngrams] @ model.token_weights.astype(np.float64)
        logits += ((self.feats - model.feature_mean) / model.feature_scale) @ model.feature_weights + model.bias
        unit = 1.0 / (1.0 + np.exp(-np.clip(logits, -40, 40)))
        unit[self.rule] = np.maximum(unit[self.rule], RULE_SCORE)
        out = np.zeros(self.n)
        np.maximum.at(out, self.owner, unit)
        return out


def chunk_scores(model: Model, records: Iterable[dict], words: DocWords) -> np.ndarray:
    return np.array([_max(score_units(r["text"], words(r["doc_text"]), model).scores) for r in records])


def planted_scores(model: Model, records: Iterable[dict], words: DocWords) -> np.ndarray:
    """Per planted instruction: the highest score over the chunks that hold part of it."""
    out = []
    for r in records:
        doc_words = words(r["doc_text"])
        out.append(max([_max(score_units(c, doc_words, model).scores) for c in r["chunks"]] or [0.0]))
    return np.array(out)


def _max(scores: np.ndarray) -> float:
    return float(scores.max()) if len(scores) else 0.0


def threshold_for(clean_scores: np.ndarray, fpr: float = FPR_TARGET) -> float:
    """The lowest threshold at which at most ``fpr`` of these clean chunks score at or above it."""
    ordered = np.sort(clean_scores)[::-1]
    allowed = int(np.floor(fpr * len(ordered)))
    # Flagged = score >= t; put t just above the (allowed+1)-th highest clean score.
    return float(np.nextafter(ordered[allowed], 1.0)) if allowed < len(ordered) else 0.5


def save(model: Model, path: Path = WEIGHTS_PATH) -> None:
    np.savez_compressed(
        path,
        names=np.array(F.NAMES),
        token_weights=model.token_weights.astype(np.float16),
        feature_weights=model.feature_weights,
        feature_mean=model.feature_mean,
        feature_scale=model.feature_scale,
        bias=np.float64(model.bias),
        threshold=np.float64(model.threshold),
        char_ngrams=np.int64(model.char_ngrams),
    )
