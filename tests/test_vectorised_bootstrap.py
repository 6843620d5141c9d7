"""Vectorised bootstrap replicates equal, bit for bit, the aggregation on each resampled list."""

from __future__ import annotations

import math

import numpy as np
import oracles
import pytest

from wsc_tasks.data.knowledge import CATEGORIES
from wsc_tasks.metrics import accuracy, ratios, registry, stats
from wsc_tasks.metrics.winowhy import make_aggregations
from wsc_tasks.report.estimates import Estimates


def _loop(values, metric, indexes):
    return np.array([float(metric([values[i] for i in row])) for row in indexes], dtype=float)


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def _winowhy_items(seed: int, n: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    items = []
    for q in range(n):
        size = int(rng.integers(1, 7))
        labels = [int(x) for x in rng.integers(0, 2, size)]
        if q % 5 == 0:
            labels = [1] * size  # a question without a negative reason
        scores = {
            "mean": [float(x) for x in rng.integers(-6, 0, size) / 2],  # many ties
            "sum": [float(x) for x in rng.normal(-20, 5, size)],
            "per_byte": [float(x) for x in rng.integers(-3, 0, size) / 4],
        }
        chosen = [c for c in CATEGORIES if rng.random() < 0.3]
        items.append({"scores": scores, "labels": labels, "categories": chosen})
    return items


@pytest.mark.parametrize("seed", [0, 1])
def test_winowhy_replicates_equal_the_loop(seed):
    items = _winowhy_items(seed, 23)
    indexes = stats.resample_indexes(len(items), 200, seed=seed)
    for name, metric in make_aggregations("mean").items():
        if not hasattr(metric, "replicates"):
            continue
        assert _same(stats.replicates(items, metric, indexes), _loop(items, metric, indexes)), name


def test_every_winowhy_metric_but_the_question_count_is_vectorised():
    missing = [n for n, m in make_aggregations("mean").items() if not hasattr(m, "replicates")]
    assert missing == ["n_questions"]


def test_resample_counts():
    indexes = np.array([[0, 0, 2], [1, 2, 1]])
    assert stats.resample_counts(indexes, 4).tolist() == [[2, 0, 1, 0], [0, 2, 1, 0]]


def _pair_items(seed: int, n: int) -> list[dict]:
    rng = np.random.default_rng(seed)

    def side() -> dict:
        return {"correct": [int(x) for x in rng.integers(0, 2, 2)], "groups": [[0, 1]]}

    subsets = ["associative", "nonassociative"]
    return [
        {"before": side(), "after": side(), "subset": subsets[int(rng.random() < 0.8)]}
        for _ in range(n)
    ]


@pytest.mark.parametrize("seed", [0, 3])
def test_associativity_replicates_equal_the_loop(seed):
    items = _pair_items(seed, 9)  # few associative schemas: some resamples have none
    indexes = stats.resample_indexes(len(items), 300, seed=seed)
    oracle = oracles.associativity()
    assert [m.name for m in registry.select(value=registry.TAGGED_PAIR)] == list(oracle)
    for name, expected in oracle.items():
        metric = registry.aggregation(name)
        form = registry.form(metric)
        assert form is not None, name
        assert metric(items) == expected(items) or np.isnan(expected(items)), name
        assert np.isnan(metric(items)) == np.isnan(expected(items)), name
        fast = stats.replicates(items, metric, indexes)
        assert _same(fast, _loop(items, expected, indexes)), name


# -- shared resamples (``stats.Resamples``): the report's bootstraps in few matrix products -------
def _gathered(values, ratio, indexes) -> np.ndarray:
    """A ratio's replicates as drawn: each resample's parts summed in the order drawn."""
    num, den = (np.array([ratio.parts(v)[k] for v in values], dtype=float) for k in (0, 1))
    totals = den[indexes].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(totals > 0, num[indexes].sum(axis=1) / totals, np.nan)


def _weighted(scale: float):
    """A ratio of whole (``scale`` 1e6: float64 product) or fractional parts (gathered)."""
    return ratios.Ratio(f"weighted_{scale}", lambda v: (v["correct"][0] * scale, scale))


@pytest.mark.parametrize("ratio", [ratios.PROBLEM_ACCURACY, ratios.SCHEMA_ACCURACY,
                                   _weighted(1e6), _weighted(0.1)])  # fmt: skip
def test_shared_resamples_give_the_floats_of_the_draws(ratio):
    rng = np.random.default_rng(5)
    values = [accuracy.outcome(rng.random(2) < 0.6, [[0, 1]]) for _ in range(37)]
    others = [accuracy.outcome(rng.random(2) < 0.4, [[0, 1]]) for _ in range(37)]
    shared = stats.Resamples(len(values), 500, seed=3)
    alone = stats.replicates(values, ratio, shared)  # asked before any product: gathered
    shared.prefetch([(values, ratio), (others, ratio)])  # then one product for both lists
    expected = _gathered(values, ratio, stats.resample_indexes(len(values), 500, seed=3))
    assert _same(alone, expected)
    assert _same(stats.replicates(values, ratio, shared), expected)
    assert _same(stats.replicates(others, ratio, stats.Resamples(37, 500, 3)),
                 _gathered(others, ratio, shared.indexes))  # fmt: skip
    assert _same(stats.replicates(others, ratio, shared), _gathered(others, ratio, shared.indexes))


def test_kept_resamples_are_drawn_and_counted_once_a_process(monkeypatch):
    """A sweep's worker makes a leaderboard Board per model: the Boards share one draw of each
    number of documents (drawn and counted once), with the figures of a draw of their own."""
    from wsc_tasks.kept import Latest
    from wsc_tasks.leaderboard import Board

    monkeypatch.setattr(stats, "_KEPT_DRAWS", Latest(4))
    drawn, counted = [], []
    draw, count = stats.resample_indexes, stats.resample_counts
    monkeypatch.setattr(stats, "resample_indexes", lambda n, *a: drawn.append(n) or draw(n, *a))
    monkeypatch.setattr(stats, "resample_counts", lambda i, n: counted.append(n) or count(i, n))
    rng = np.random.default_rng(8)
    values = [accuracy.outcome(rng.random(2) < 0.6, [[0, 1]]) for _ in range(41)]
    boards = [Board("wsc273", 400, 9) for _ in range(2)]
    kept = [board._shared(41) for board in boards]
    assert kept[0] is not kept[1] and kept[0].draw is kept[1].draw
    assert (drawn, counted) == ([41], [41])
    for found in kept:
        found.prefetch([(values, ratios.SCHEMA_ACCURACY)])
    own = stats.Resamples(41, 400, 9)
    expected = _gathered(values, ratios.SCHEMA_ACCURACY, own.indexes)
    for found in kept:
        assert _same(stats.replicates(values, ratios.SCHEMA_ACCURACY, found), expected)
    assert drawn == [41, 41]  # the draw of its own, drawn anew
    stats.Resamples.kept(41, 400, 10)  # another seed: another draw
    assert stats.Resamples.kept(41, 400, 10).draw is not kept[0].draw


def test_report_estimates_equal_each_bootstrap_drawn_on_its_own():
    """Grouped by their numbers of documents and computed on shared resamples, the report's
    bootstraps give the very estimates of each one drawn alone."""
    rng = np.random.default_rng(6)
    a, b = (_outcome_list(rng, 40, p) for p in (0.7, 0.5))
    c = _outcome_list(rng, 25, 0.6)
    asked = Estimates(300, 4)
    form = ratios.SCHEMA_ACCURACY
    cells = {
        "interval": (asked.interval(a, form, p=True), stats.bootstrap(a, form, null=0.25,
                                                                     iters=300, seed=4)),
        "paired": (asked.paired(a, b, form), stats.paired_difference(a, b, form, iters=300,
                                                                     seed=4)),
        "unpaired": (asked.unpaired(a, c, form), stats.unpaired_difference(a, c, form,
                                                                         iters=300, seed=4)),
    }  # fmt: skip
    asked.compute(quiet=True)
    for name, (cell, alone) in cells.items():
        assert cell is not None
        got = cell.estimate
        for field in ("value", "low", "high", "stderr", "p", "p_above", "p_below", "n", "method"):
            mine, its = getattr(got, field), getattr(alone, field)
            both_nan = isinstance(mine, float) and math.isnan(mine) and math.isnan(its)
            assert mine == its or both_nan, (name, field)  # 25 documents unpaired: no p (NaN)


def test_resamples_of_another_size_are_refused():
    values = [accuracy.outcome([1, 0], [[0, 1]])] * 5
    with pytest.raises(ValueError, match="resamples of 6 documents"):
        stats.bootstrap(values, ratios.PROBLEM_ACCURACY, iters=10, resamples=stats.Resamples(6, 10))


def _outcome_list(rng: np.random.Generator, n: int, p: float) -> list:
    return [accuracy.outcome(rng.random(2) < p, [[0, 1]]) for _ in range(n)]


def test_summaries_of_many_bootstraps_equal_each_computed_on_its_own():
    """``stats.summarise`` takes rows without a NaN replicate as one array: the same floats as
    numpy's percentile and standard error of each row alone and the p of eq. 3.98 counted here;
    a row with NaN replicates is summarised on its finite ones; none finite: NaN throughout."""
    rng = np.random.default_rng(8)
    reps = rng.normal(0.3, 0.05, (7, 401)).round(3)  # ties at the interval's ends
    reps[4, ::3] = np.nan
    reps[5] = np.nan
    values = [0.31, 0.25, 0.3, float("nan"), 0.28, 0.3, 0.4]
    nulls = [0.25, None, 0.3, 0.25, 0.0, 0.25, 0.5]
    asked = zip(values, reps, nulls, strict=True)
    found = stats.summarise([stats.Replicated(v, row, null, 40) for v, row, null in asked])
    for value, row, null, got in zip(values, reps, nulls, found, strict=True):
        finite = row[~np.isnan(row)]
        assert (got.value, got.n, got.iters, got.null) == (value, 40, 401, null)
        if not len(finite):
            assert np.isnan([got.low, got.high, got.stderr, got.p]).all()
            continue
        tail = (1 - stats.CONFIDENCE) / 2 * 100  # 2.500000000000002
        assert (got.low, got.high) == tuple(np.percentile(finite, [tail, 100 - tail]))
        assert got.stderr == np.std(finite, ddof=1)
        if null is None:
            assert (got.p, got.p_above, got.p_below) == (None, None, None)
            continue
        if np.isnan(value):
            assert np.isnan([got.p, got.p_above, got.p_below]).all()
            continue
        far = sum(abs(r - value) >= abs(value - null) - 1e-12 for r in finite)
        above = sum(r - value >= value - null - 1e-12 for r in finite)
        below = sum(value - r >= null - value - 1e-12 for r in finite)
        scale = len(finite) + 1
        assert (got.p, got.p_above, got.p_below) == ((far + 1) / scale, (above + 1) / scale,
                                                      (below + 1) / scale)  # fmt: skip
        assert got.p == stats.p_value(row, value, null)
