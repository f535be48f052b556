"""The rule that chooses the chunking default (``bench.chunkeval.loo``), on made-up scores."""

from __future__ import annotations

import pytest

from bench.chunkeval.chunkeval import GENRE_PREFIX, ChunkerResult, Scores
from bench.chunkeval.loo import choose, leave_one_out, objective
from ingestion.quality import Summary

GENRES = ("prose", "records", "tables")


def _result(name: str, **by_genre: tuple[float, float]) -> ChunkerResult:
    """``genre=(recall, iou)`` as fractions."""
    scores = {
        GENRE_PREFIX + genre: Scores(Summary(recall, 0, 10), Summary(iou, 0, 10), Summary(iou, 0, 10))
        for genre, (recall, iou) in by_genre.items()
    }
    return ChunkerResult(name, {}, {5: scores})


REFERENCE = _result("semchunk 200", prose=(0.90, 0.02), records=(0.90, 0.04), tables=(0.90, 0.03))
# Best on average (+20% on two genres) but 10% under the reference on tables.
SPIKY = _result("bulkhead (spiky)", prose=(1.08, 0.03), records=(1.08, 0.06), tables=(0.81, 0.04))
# A little over the reference everywhere.
STEADY = _result("bulkhead (steady)", prose=(0.93, 0.03), records=(0.93, 0.05), tables=(0.93, 0.04))


def test_worst_genre_prefers_the_candidate_that_never_loses_and_mean_the_spiky_one():
    results = [REFERENCE, SPIKY, STEADY]
    names = [SPIKY.name, STEADY.name]
    assert choose(results, names, how="worst") == STEADY.name
    assert choose(results, names, how="mean") == SPIKY.name


def test_each_held_out_genre_is_scored_by_a_choice_made_without_it():
    rows = {r.held_out: r for r in leave_one_out([REFERENCE, SPIKY, STEADY], [SPIKY.name, STEADY.name],
                                                 [REFERENCE.name], how="worst")}
    # Without tables in the training genres the spiky candidate never loses: it is chosen, and
    # scored on tables, where it does lose.
    assert rows["tables"].chosen == SPIKY.name and rows["tables"].recall == pytest.approx(81.0)
    assert rows["prose"].chosen == STEADY.name
    assert rows["prose"].best_baseline == REFERENCE.name and rows["prose"].baseline_recall == pytest.approx(90.0)


def test_a_tie_on_the_binding_metric_goes_to_the_better_other_metric_not_to_the_name():
    # Equal recall (the lower ratio in every genre); "b..." sorts after "a...", but "a..." has the better IoU.
    better_iou = _result("bulkhead (a)", prose=(0.95, 0.05), records=(0.95, 0.08), tables=(0.95, 0.06))
    worse_iou = _result("bulkhead (b)", prose=(0.95, 0.04), records=(0.95, 0.07), tables=(0.95, 0.05))
    results = [REFERENCE, better_iou, worse_iou]
    for how in ("worst", "mean"):
        assert choose(results, [better_iou.name, worse_iou.name], how=how) == better_iou.name
    assert objective(better_iou, [GENRE_PREFIX + g for g in GENRES], 5)[0] == pytest.approx(0.95 / 0.90)
    with pytest.raises(ValueError):
        objective(better_iou, [GENRE_PREFIX + "prose"], 5, how="median")


def test_an_option_that_changes_nothing_where_it_is_judged_is_not_chosen():
    # Identical on every genre to the default: the default is kept, whatever the names.
    default = _result("bulkhead", prose=(0.95, 0.05), records=(0.95, 0.08), tables=(0.95, 0.06))
    same = _result("bulkhead (prefix=zzz)", prose=(0.95, 0.05), records=(0.95, 0.08), tables=(0.95, 0.06))
    assert choose([REFERENCE, default, same], [default.name, same.name]) == default.name
