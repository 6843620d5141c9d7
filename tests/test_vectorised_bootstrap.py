"""Vectorised bootstrap replicates equal, bit for bit, the aggregation on each resampled list."""

from __future__ import annotations

import numpy as np
import oracles
import pytest

from wsc_tasks.data.knowledge import CATEGORIES
from wsc_tasks.metrics import registry, stats
from wsc_tasks.metrics.winowhy import make_aggregations


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
