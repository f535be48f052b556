"""The evaluation's metrics on hand-computed cases, the golden loaders and span location."""

from __future__ import annotations

import json

import pytest

from bench.chunkeval.baselines import SpanChunk, locate
from ingestion.golden import load_chroma_csv, load_jsonl, load_questions
from ingestion.quality import chunk_stats, score_question, summarize, union_ranges


def test_union_ranges():
    assert union_ranges([(5, 10), (0, 3), (2, 4), (10, 12), (7, 7)]) == [(0, 4), (5, 12)]


def test_metrics_hand_computed():
    # refs 10..20 and 30..40 (20 chars); chunks 0..15 and 12..35 (15 + 23 = 38 chars).
    # U = 0..35, R ∩ U = 10..20 + 30..35 = 15; missed = ref2 \ U = 35..40 = 5.
    s = score_question([(10, 20), (30, 40)], [(0, 15), (12, 35)])
    assert s.recall == pytest.approx(15 / 20)
    assert s.precision == pytest.approx(15 / 38)
    assert s.iou == pytest.approx(15 / (38 + 5))


def test_metrics_overlapping_references_count_in_the_denominator_twice():
    # Σ|ref_i| counts overlapping references in full (Chroma's definition).
    s = score_question([(0, 10), (5, 15)], [(0, 15)])
    assert s.recall == pytest.approx(15 / 20)
    assert s.iou == pytest.approx(15 / 15)


def test_metrics_miss_and_summary():
    s = score_question([(0, 10)], [(20, 30)])
    assert (s.recall, s.precision, s.iou) == (0.0, 0.0, 0.0)
    summary = summarize([1.0, 0.0])
    assert summary.mean == 0.5 and summary.std == 0.5 and summary.n == 2


def test_golden_loaders(tmp_path):
    csv_path = tmp_path / "q.csv"
    refs = json.dumps([{"content": "abc", "start_index": 1, "end_index": 4}])
    csv_path.write_text('question,references,corpus_id\n"Why?","' + refs.replace('"', '""') + '",c1\n')
    (q,) = load_chroma_csv(csv_path)
    assert (q.question, q.corpus_id, q.spans) == ("Why?", "c1", ((1, 4),))
    jl = tmp_path / "q.jsonl"
    jl.write_text('{"question": "a", "document": "d", "spans": [[0, 2]]}\n\n{"question": "b", "document": "d"}\n')
    got = load_questions(jl)
    assert [(g.question, g.spans) for g in got] == [("a", ((0, 2),)), ("b", ())]
    jl.write_text('{"question": "a"}\n')
    with pytest.raises(ValueError, match="q.jsonl:1"):
        load_jsonl(jl)


def test_locate_searches_forward_and_handles_overlap():
    text = "aa bb aa bb cc"
    assert [(c.start, c.end) for c in locate(text, ["aa bb", "aa bb", "cc"])] == [(0, 5), (6, 11), (12, 14)]
    assert [(c.start, c.end) for c in locate(text, ["aa bb aa", "bb aa bb"], overlapping=True)] == [(0, 8), (3, 11)]
    with pytest.raises(ValueError):
        locate(text, ["zz"])


def test_chunk_stats():
    chunks = [SpanChunk(0, 10, "x"), SpanChunk(10, 100, "y")]
    stats = chunk_stats(chunks, [5, 40])
    assert stats.count == 2 and stats.max_tokens == 40 and stats.orphans == 1
    assert stats.histogram == {"0-31": 1, "32-63": 1}
