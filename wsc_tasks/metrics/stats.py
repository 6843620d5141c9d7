"""Significance for Winograd evaluations (thesis §3.8): Wald, χ², and a bootstrap over schemas.

Problems in a schema are not independent (thesis Table 3.9), so the binomial error of problem
accuracy is wrong; the unit of resampling is the lm-eval *document* (a schema, a twin pair, or a
dyad treated as independent schemas, §3.8.3). A metric is a function of the list of per-document
values (``SchemaOutcome`` dicts, or ``{"before", "after"}`` pairs of them), so a bootstrap replicate
is the metric of a resampled list. Shares that are a sum over documents divided by a sum over
documents (every metric with a ratio form in ``registry``) are computed for all
replicates at once, and so is any aggregation that carries its own vectorised ``replicates``
(``values``, ``indexes``) → one value per row (WinoWhy's, associativity's); any other function is
applied to each resampled list.

p-values are Monte Carlo: p ≈ (k + 1)/(R + 1) (eq. 3.98), where k counts the replicates at least as
far from the observed value as the observed value is from the null (the bootstrap distribution
shifted to the null). That p is two-sided (does the value differ from the null?); an estimate also
carries the two one-sided p of the same replicates, for a question with a direction (is the model
above chance? below it?): k counts the shifted replicates at or beyond the observed value on that
side only. Paired differences resample the same documents for both conditions.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wsc_tasks.metrics import ratios, registry
from wsc_tasks.metrics.accuracy import SchemaOutcome

DEFAULT_ITERS = 10_000  # the thesis's R
DEFAULT_SEED = 0
CONFIDENCE = 0.95


# -- binomial statistics (§3.8.1) ----------------------------------------------------------------
def wald_interval(accuracy: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """a ± z·sqrt(a(1 − a)/n) (eq. 3.94): valid only for independent problems (or schemas)."""
    from scipy import stats as scipy_stats  # here: scipy costs ~1 s to import

    z = scipy_stats.norm.ppf(0.5 + confidence / 2)
    half = z * math.sqrt(accuracy * (1 - accuracy) / n)
    return accuracy - half, accuracy + half


def chi_square_test(successes: int, n: int, chance: float = 0.5) -> tuple[float, float]:
    """(t, p): the χ² goodness-of-fit statistic of eq. 3.95 against accuracy ``chance``, 1 dof."""
    observed = [successes, n - successes]
    expected = [chance * n, (1 - chance) * n]
    from scipy import stats as scipy_stats  # here: scipy costs ~1 s to import

    result = scipy_stats.chisquare(observed, expected)
    return float(result.statistic), float(result.pvalue)


def chance_schema_accuracy(outcomes: Sequence[SchemaOutcome]) -> float:
    """Expected schema accuracy of random answers between two options: mean of 2^-size."""
    sizes = [len(g) for o in outcomes for g in o["groups"]]
    return float(np.mean([0.5**s for s in sizes])) if sizes else float("nan")


# -- the bootstrap --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Estimate:
    """A value with its percentile interval, bootstrap standard error and p against ``null``."""

    value: float
    low: float
    high: float
    stderr: float
    p: float | None  # two-sided; None when no null was given
    null: float | None
    n: int  # documents resampled (per condition)
    iters: int
    p_above: float | None = None  # one-sided: the value is above the null (H1: value > null)
    p_below: float | None = None  # one-sided: the value is below the null (H1: value < null)


def resample_indexes(n: int, iters: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``iters`` × ``n`` document indexes drawn with replacement (numpy Generator, fixed seed)."""
    return np.random.default_rng(seed).integers(0, n, size=(iters, n))


def resample_counts(indexes: np.ndarray, n: int) -> np.ndarray:
    """How often each of ``n`` documents occurs in each resample: ``iters`` × ``n`` integers."""
    iters = len(indexes)
    offsets = indexes + (np.arange(iters, dtype=np.int64) * n)[:, None]
    return np.bincount(offsets.ravel(), minlength=iters * n).reshape(iters, n)


def replicates(
    values: Sequence[Any], metric: Callable[..., Any], indexes: np.ndarray
) -> np.ndarray:
    """The metric on every resample (rows of ``indexes``); vectorised for ratio forms and for
    aggregations with their own ``replicates``, which must give the same values as the loop."""
    vectorised = getattr(metric, "replicates", None)
    if vectorised is not None:
        return np.asarray(vectorised(values, indexes), dtype=float)
    found = registry.form(metric)
    if isinstance(found, ratios.Combination):
        return found.function(*(replicates(values, part, indexes) for part in found.parts))
    if isinstance(found, ratios.Difference):
        return replicates(values, found.first, indexes) - replicates(values, found.second, indexes)
    if isinstance(found, ratios.Ratio):
        num, den = found.arrays(values)
        with np.errstate(invalid="ignore", divide="ignore"):
            totals = den[indexes].sum(axis=1)
            return np.where(totals > 0, num[indexes].sum(axis=1) / totals, np.nan)
    return np.array([float(metric([values[i] for i in row])) for row in indexes], dtype=float)


ABOVE, BELOW = 1, -1  # the side of a one-sided p


def p_value(reps: np.ndarray, observed: float, null: float, side: int = 0) -> float:
    """(k + 1)/(R + 1) (eq. 3.98). Two-sided (``side`` 0): k = replicates at least |observed −
    null| from the observed. One-sided: k = replicates with side·(rep − observed) ≥ side·(observed
    − null), i.e. the distribution shifted to the null reaching the observed value or beyond on
    that side (``ABOVE``: H1 value > null; ``BELOW``: H1 value < null)."""
    reps = reps[~np.isnan(reps)]
    if math.isnan(observed) or not len(reps):
        return float("nan")
    if side:
        reach = side * (reps - observed) >= side * (observed - null) - 1e-12
        return (int(np.count_nonzero(reach)) + 1) / (len(reps) + 1)
    distance = abs(observed - null)
    k = int(np.count_nonzero(np.abs(reps - observed) >= distance - 1e-12))
    return (k + 1) / (len(reps) + 1)


def _estimate(
    value: float, reps: np.ndarray, null: float | None, n: int, confidence: float
) -> Estimate:
    finite = reps[~np.isnan(reps)]
    if len(finite):
        tail = (1 - confidence) / 2 * 100
        low, high = (float(x) for x in np.percentile(finite, [tail, 100 - tail]))
        stderr = float(np.std(finite, ddof=1)) if len(finite) > 1 else float("nan")
    else:
        low = high = stderr = float("nan")
    if null is None:
        return Estimate(value, low, high, stderr, None, None, n, len(reps))
    p, above, below = (p_value(reps, value, null, side) for side in (0, ABOVE, BELOW))
    return Estimate(value, low, high, stderr, p, null, n, len(reps), above, below)


def bootstrap(
    values: Sequence[Any],
    metric: Callable[..., Any],
    *,
    null: float | None = None,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """The metric on ``values`` with a percentile interval, and p against ``null`` (e.g. chance)."""
    if not values:
        raise ValueError("bootstrap of an empty list of documents")
    value = float(metric(values))
    reps = replicates(values, metric, resample_indexes(len(values), iters, seed))
    return _estimate(value, reps, null, len(values), confidence)


def paired_difference(
    first: Sequence[Any],
    second: Sequence[Any],
    metric: Callable[..., Any],
    second_metric: Callable[..., Any] | None = None,
    *,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """metric(first) − metric(second) on the same documents (aligned lists), p against 0.

    The same resampled documents enter both conditions, which keeps the correlation between two
    models, two scoring methods or a dataset and its perturbation on the same schemas.
    """
    if len(first) != len(second):
        raise ValueError(f"paired lists differ in length: {len(first)} and {len(second)}")
    if not first:
        raise ValueError("paired difference of empty lists of documents")
    other = second_metric or metric
    value = float(metric(first)) - float(other(second))
    indexes = resample_indexes(len(first), iters, seed)
    reps = replicates(first, metric, indexes) - replicates(second, other, indexes)
    return _estimate(value, reps, 0.0, len(first), confidence)


def unpaired_difference(
    first: Sequence[Any],
    second: Sequence[Any],
    metric: Callable[..., Any],
    *,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """metric(first) − metric(second) on different schemas, each resampled on its own."""
    if not first or not second:
        raise ValueError("unpaired difference needs documents on both sides")
    value = float(metric(first)) - float(metric(second))
    rng = np.random.default_rng(seed)
    a = rng.integers(0, len(first), size=(iters, len(first)))
    b = rng.integers(0, len(second), size=(iters, len(second)))
    reps = replicates(first, metric, a) - replicates(second, metric, b)
    return _estimate(value, reps, 0.0, min(len(first), len(second)), confidence)


def align(first: Mapping[Any, Any], second: Mapping[Any, Any]) -> tuple[list[Any], list[Any]]:
    """The values of the keys (schemas) both conditions share, in sorted key order."""
    shared = sorted(set(first) & set(second), key=repr)
    return [first[k] for k in shared], [second[k] for k in shared]


# -- reporting ------------------------------------------------------------------------------------
def format_p(p: float | None) -> str:
    """p with one significant digit, thesis style: ``< .001``, ``.04``, ``.4``, ``> .9``."""
    if p is None or math.isnan(p):
        return "–"
    if p < 0.001:
        return "< .001"
    if p >= 0.95:
        return "> .9"
    rounded = float(f"{p:.1g}")  # 0.0096 becomes 0.01: one significant digit
    digits = -math.floor(math.log10(rounded))
    return f"{rounded:.{digits}f}".lstrip("0")
