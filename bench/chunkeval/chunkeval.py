"""The chunk-quality evaluation: chunk each corpus, embed, retrieve, score.

For every chunker: chunk every corpus, embed the chunks' embed texts and the
questions with the real model, take the exact cosine top-k among the chunks of
the question's own corpus, and score the retrieved character ranges against the
question's reference spans (:mod:`ingestion.quality`).  All chunkers
run in the same process on the same embeddings cache, so they are comparable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from bench.chunkeval.baselines import ChunkerFn, SpanChunk
from ingestion.golden import GoldenQuestion, check_references
from ingestion.quality import ChunkStats, Summary, chunk_stats, score_question, summarize

ALL = "all"
GENRE_PREFIX = "genre:"
# Pooled retrieval: chunks of other documents get disjoint fake offsets this far apart,
# so they count in precision/IoU (their size) but never overlap a reference span.
_POOL_STRIDE = 1 << 40


def genre_of(corpus_id: str) -> str | None:
    """The genre of a corpus id ``<genre>/<file>`` (the suite's layout), else None."""
    head, sep, _rest = corpus_id.partition("/")
    return head if sep else None


@dataclass
class Scores:
    recall: Summary
    precision: Summary
    iou: Summary
    doc_hit: Summary | None = None  # document-level hit@k across all corpora (JSONL sets)


@dataclass
class ChunkerResult:
    name: str
    stats: dict[str, ChunkStats]  # per corpus and ALL
    scores: dict[int, dict[str, Scores]] = field(default_factory=dict)  # k -> corpus/ALL -> scores


def load_corpora(directory: str | Path, ids: Sequence[str]) -> dict[str, str]:
    """Corpus texts by id: ``<dir>/<id>`` or ``<dir>/<id>.*`` (read as UTF-8, newlines kept)."""
    base = Path(directory)
    corpora: dict[str, str] = {}
    for corpus_id in sorted(set(ids)):
        candidates = [base / corpus_id] + sorted(base.glob(f"{corpus_id}.*"))
        path = next((p for p in candidates if p.is_file()), None)
        if path is None:
            raise FileNotFoundError(f"no corpus file for {corpus_id!r} in {base}")
        with open(path, encoding="utf-8", newline="") as fh:
            corpora[corpus_id] = fh.read()
    return corpora


def evaluate(
    corpora: Mapping[str, str],
    questions: Sequence[GoldenQuestion],
    chunkers: Mapping[str, ChunkerFn],
    embedder,
    *,
    ks: Sequence[int] = (5, 10),
    count_tokens=None,
    pool: str = "document",
) -> list[ChunkerResult]:
    """Run every chunker over every corpus and score every question at every k.

    ``pool="document"`` retrieves among the chunks of the question's own corpus (the
    benchmark's definition); ``pool="genre"`` among the chunks of every corpus of the
    question's genre (``<genre>/<file>`` ids), so a hit in another file costs precision.
    Scores are kept per corpus, per genre (``genre:<name>``) and for ALL.

    ``embedder.embed(texts) -> np.ndarray`` returns L2-normalised rows.
    ``count_tokens(texts) -> list[int]`` sizes the chunks (defaults to the model's tokenizer).
    """
    check_references(list(questions), dict(corpora))
    if count_tokens is None:
        from ingestion.chunking.tokens import default_counter

        count_tokens = default_counter().count_batch
    corpus_ids = sorted({q.corpus_id for q in questions})
    question_vectors = embedder.embed([q.question for q in questions])
    results = []
    for name, chunker in chunkers.items():
        per_corpus: dict[str, list[SpanChunk]] = {}
        vectors: dict[str, np.ndarray] = {}
        stats: dict[str, ChunkStats] = {}
        all_chunks: list[SpanChunk] = []
        all_tokens: list[int] = []
        token_counts: dict[str, list[int]] = {}
        for cid in corpus_ids:
            text = corpora[cid]
            chunks = chunker(text)
            for c in chunks:
                if not (0 <= c.start < c.end <= len(text)):
                    raise ValueError(f"{name}: chunk span {c.start}:{c.end} outside corpus {cid}")
            per_corpus[cid] = chunks
            tokens = count_tokens([c.embed_text for c in chunks])
            token_counts[cid] = tokens
            stats[cid] = chunk_stats(chunks, tokens)
            all_chunks += chunks
            all_tokens += tokens
            vectors[cid] = embedder.embed([c.embed_text for c in chunks])
        stats[ALL] = chunk_stats(all_chunks, all_tokens)
        for g in sorted({genre_of(c) for c in corpus_ids} - {None}):
            members = [c for c in corpus_ids if genre_of(c) == g]
            g_chunks = [ch for c in members for ch in per_corpus[c]]
            g_tokens = [n for c in members for n in token_counts[c]]
            stats[GENRE_PREFIX + g] = chunk_stats(g_chunks, g_tokens)
        result = ChunkerResult(name, stats)
        for k in ks:
            result.scores[k] = _score(questions, question_vectors, per_corpus, vectors, k, pool=pool)
        results.append(result)
    return results


def _score(
    questions: Sequence[GoldenQuestion],
    question_vectors: np.ndarray,
    per_corpus: Mapping[str, list[SpanChunk]],
    vectors: Mapping[str, np.ndarray],
    k: int,
    pool: str = "document",
) -> dict[str, Scores]:
    if pool not in ("document", "genre"):
        raise ValueError(f"unknown pool {pool!r} (expected 'document' or 'genre')")
    buckets: dict[str, dict[str, list[float]]] = {}
    corpus_ids = sorted(per_corpus)
    # Document-level retrieval searches every corpus at once.
    everything = np.vstack([vectors[c] for c in corpus_ids]) if corpus_ids else np.zeros((0, 0))
    owner = [cid for cid in corpus_ids for _ in per_corpus[cid]]
    pools: dict[str, tuple[np.ndarray, list[tuple[int, int]]]] = {}
    if pool == "genre":
        for g in sorted({genre_of(c) or c for c in corpus_ids}):
            members = [c for c in corpus_ids if (genre_of(c) or c) == g]
            spans = []
            for c in members:
                base = corpus_ids.index(c) * _POOL_STRIDE
                spans += [(base + ch.start, base + ch.end) for ch in per_corpus[c]]
            pools[g] = (np.vstack([vectors[c] for c in members]), spans)
    for q, qv in zip(questions, question_vectors, strict=True):
        chunks = per_corpus[q.corpus_id]
        if pool == "genre":
            matrix, spans = pools[genre_of(q.corpus_id) or q.corpus_id]
            base = corpus_ids.index(q.corpus_id) * _POOL_STRIDE
            top = _top_k(matrix @ qv, k)
            retrieved = [(spans[i][0] - base, spans[i][1] - base) for i in top]
        else:
            top = _top_k(vectors[q.corpus_id] @ qv, k)
            retrieved = [(chunks[i].start, chunks[i].end) for i in top]
        doc_hit = None
        if len(corpus_ids) > 1:
            global_top = _top_k(everything @ qv, k)
            doc_hit = 1.0 if any(owner[i] == q.corpus_id for i in global_top) else 0.0
        genre = genre_of(q.corpus_id)
        for bucket in (q.corpus_id, ALL) + ((GENRE_PREFIX + genre,) if genre else ()):
            b = buckets.setdefault(bucket, {"recall": [], "precision": [], "iou": [], "doc_hit": []})
            if doc_hit is not None:
                b["doc_hit"].append(doc_hit)
            if q.spans:
                s = score_question(q.spans, retrieved)
                b["recall"].append(s.recall)
                b["precision"].append(s.precision)
                b["iou"].append(s.iou)
    return {
        bucket: Scores(
            summarize(v["recall"]),
            summarize(v["precision"]),
            summarize(v["iou"]),
            summarize(v["doc_hit"]) if v["doc_hit"] else None,
        )
        for bucket, v in buckets.items()
    }


def _top_k(similarities: np.ndarray, k: int) -> list[int]:
    """Indices of the k most similar rows, best first; ties broken by position (deterministic)."""
    order = np.lexsort((np.arange(len(similarities)), -similarities))
    return [int(i) for i in order[:k]]


def to_json(results: Sequence[ChunkerResult]) -> dict:
    """Plain-JSON form of the results (``--json``)."""

    def summary(s: Summary | None):
        return None if s is None else {"mean": s.mean, "std": s.std, "n": s.n}

    return {
        "chunkers": [
            {
                "name": r.name,
                "stats": {cid: vars(st) for cid, st in r.stats.items()},
                "scores": {
                    str(k): {
                        cid: {
                            "recall": summary(sc.recall),
                            "precision": summary(sc.precision),
                            "iou": summary(sc.iou),
                            "doc_hit": summary(sc.doc_hit),
                        }
                        for cid, sc in by_corpus.items()
                    }
                    for k, by_corpus in r.scores.items()
                },
            }
            for r in results
        ]
    }


def format_table(results: Sequence[ChunkerResult]) -> str:
    """A Markdown table: per k, recall and IoU per corpus, overall recall/precision/IoU, sizes."""
    if not results:
        return "(no results)"
    genres = [c for c in results[0].stats if c.startswith(GENRE_PREFIX)]
    # With genres (``<genre>/<file>`` ids) the table has a column pair per genre.
    corpus_ids = genres or [c for c in results[0].stats if c != ALL]
    header = ["chunker", "k"]
    for cid in corpus_ids:
        label = cid[len(GENRE_PREFIX) :] if cid.startswith(GENRE_PREFIX) else cid
        header += [f"{label} recall", f"{label} IoU"]
    header += ["all recall", "all precision", "all IoU", "chunks", "mean tok", "max tok", "<50 chars"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    ks = sorted({k for r in results for k in r.scores})
    for k in ks:
        for r in results:
            sc = r.scores.get(k)
            if sc is None:
                continue
            row = [r.name, str(k)]
            for cid in corpus_ids:
                row += [f"{100 * sc[cid].recall.mean:.1f}", f"{100 * sc[cid].iou.mean:.2f}"]
            a = sc[ALL]
            st = r.stats[ALL]
            row += [
                f"{100 * a.recall.mean:.1f} ± {100 * a.recall.std:.1f}",
                f"{100 * a.precision.mean:.2f}",
                f"{100 * a.iou.mean:.2f} ± {100 * a.iou.std:.2f}",
                str(st.count),
                f"{st.mean_tokens:.0f}",
                str(st.max_tokens),
                str(st.orphans),
            ]
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def format_histograms(results: Sequence[ChunkerResult]) -> str:
    """Token histograms (all corpora) per chunker, one line each."""
    out = []
    for r in results:
        hist = r.stats[ALL].histogram
        out.append(f"{r.name}: " + ", ".join(f"{b}:{n}" for b, n in hist.items()))
    return "\n".join(out)
