"""Leave-one-genre-out choice of a chunking configuration.

For each genre G of the suite, the candidate with the best objective on the
*other* genres is chosen, and its score on G is reported: G's number says how a
choice made without G transfers to G.  The objective, per genre at depth k, is
``min(recall / recall_ref, IoU / IoU_ref)`` against the reference splitter
(semchunk 200 when it ran, the strongest baseline of the held-out data): a
candidate only gains by beating the reference on *both* metrics, so trading
recall for IoU (smaller chunks) or the reverse does not pay.  Without the
reference it is ``recall + IOU_WEIGHT * IoU`` (in %).

How the per-genre objectives make one score (``how``):

* ``"worst"`` (the default): the lowest over the genres, ties broken by the mean. A candidate that
  wins on average but loses on one genre scores that loss: a default must hold on every kind of
  text, not on the average of the ones in the suite.
* ``"mean"``: the mean over the genres (the rule of the first two rounds, docs/benchmarks.md).

Equal scores are told apart by the mean of both ratios (the metric that did not bind), then by
the fewest options changed from the default (an option that changes nothing on the genres it is
judged on is not chosen for it), and only then by name.

The final choice is the candidate with the best score over all genres.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bench.chunkeval.chunkeval import GENRE_PREFIX, ChunkerResult

IOU_WEIGHT = 10.0
REFERENCE = "semchunk 200"
OBJECTIVES = ("worst", "mean")
_reference: dict[str, ChunkerResult] = {}


@dataclass
class LooRow:
    held_out: str
    chosen: str
    recall: float  # % on the held-out genre
    iou: float
    best_baseline: str
    baseline_recall: float
    baseline_iou: float


def _per_genre(result: ChunkerResult, genres: Sequence[str], k: int) -> list[tuple[float, float]]:
    """Per genre: (the objective, the tie-break). Against the reference the objective is the lower
    of the two ratios and the tie-break their mean: two candidates equal on the metric that binds
    (recall, say) are told apart by the other one, not by their names."""
    scores = result.scores[k]
    ref = _reference.get("ref")
    if ref is not None:
        rs = ref.scores[k]
        out = []
        for g in genres:
            recall = scores[g].recall.mean / max(rs[g].recall.mean, 1e-9)
            iou = scores[g].iou.mean / max(rs[g].iou.mean, 1e-9)
            out.append((min(recall, iou), (recall + iou) / 2))
        return out
    return [(v, v) for v in (100 * scores[g].recall.mean + IOU_WEIGHT * 100 * scores[g].iou.mean for g in genres)]


def objective(
    result: ChunkerResult, genres: Sequence[str], k: int, how: str = "worst"
) -> tuple[float, float, float]:
    """The score of ``result`` over ``genres`` (see the module docstring), as a sortable tuple:
    ``worst``: (lowest objective, mean objective, mean tie-break); ``mean``: (mean objective, mean
    objective, mean tie-break)."""
    vals = _per_genre(result, genres, k)
    mean = sum(v for v, _ in vals) / len(vals)
    tie = sum(t for _, t in vals) / len(vals)
    if how == "mean":
        return (mean, mean, tie)
    if how == "worst":
        return (min(v for v, _ in vals), mean, tie)
    raise ValueError(f"unknown objective {how!r}: one of {', '.join(OBJECTIVES)}")


def _simplest_first(name: str) -> tuple[int, str]:
    """A sort key that ranks a candidate with fewer overridden options higher ("bulkhead" is the
    default; "bulkhead (a=1,b=2)" overrides two), then by name; for ``max``."""
    return (-name.count("="), name)


def genres_of(results: Sequence[ChunkerResult], k: int) -> list[str]:
    return sorted(g for g in results[0].scores[k] if g.startswith(GENRE_PREFIX))


def leave_one_out(
    results: Sequence[ChunkerResult], candidates: Sequence[str], baselines: Sequence[str], k: int = 5,
    how: str = "worst",
) -> list[LooRow]:
    by_name = {r.name: r for r in results}
    _set_reference(by_name)
    genres = genres_of(results, k)
    rows = []
    for held in genres:
        train = [g for g in genres if g != held]
        chosen = max(candidates, key=lambda n: (objective(by_name[n], train, k, how), _simplest_first(n)))
        sc = by_name[chosen].scores[k][held]
        best_b = max(baselines, key=lambda n: objective(by_name[n], [held], k, how)) if baselines else ""
        bsc = by_name[best_b].scores[k][held] if best_b else None
        rows.append(
            LooRow(
                held[len(GENRE_PREFIX) :],
                chosen,
                100 * sc.recall.mean,
                100 * sc.iou.mean,
                best_b,
                100 * bsc.recall.mean if bsc else 0.0,
                100 * bsc.iou.mean if bsc else 0.0,
            )
        )
    return rows


def choose(results: Sequence[ChunkerResult], candidates: Sequence[str], k: int = 5, how: str = "worst") -> str:
    """The candidate with the best objective over every genre."""
    by_name = {r.name: r for r in results}
    _set_reference(by_name)
    genres = genres_of(results, k)
    return max(candidates, key=lambda n: (objective(by_name[n], genres, k, how), _simplest_first(n)))


def format_loo(rows: Sequence[LooRow], k: int) -> str:
    lines = [
        f"| held-out genre | chosen on the other genres | recall@{k} | IoU@{k} | best baseline on it | its recall | its IoU |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r.held_out} | {r.chosen} | {r.recall:.1f} | {r.iou:.2f} | {r.best_baseline} | "
            f"{r.baseline_recall:.1f} | {r.baseline_iou:.2f} |"
        )
    return "\n".join(lines)


def _set_reference(by_name: dict[str, ChunkerResult]) -> None:
    if REFERENCE in by_name:
        _reference["ref"] = by_name[REFERENCE]
    else:
        _reference.pop("ref", None)
