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

**Where the bootstrap is not used** (``Estimate.method``), the one rule of every output:

- *Schema accuracy A* (a schema solved or not): against chance, the exact test of ``exact`` (the
  number solved at random: binomial, Poisson-binomial when schema sizes differ) and a
  Clopper–Pearson interval over the documents; a paired difference of A on the same documents,
  exact McNemar (``exact.sign_flip``) with its ``exact.paired_interval``. At any number of schemas.
- *Any other estimate on fewer than* ``MIN_DOCUMENTS`` *documents, or whose replicates do not
  vary* (the bootstrap collapsed: 0 of 4 gives every replicate 0), p and interval are not the
  bootstrap's: p is the exact two-sided sign test of the documents' values against the null (of
  their differences, paired: exact whenever a document's value is as likely above the null as
  below, which for schemas of two problems is what a = 0.5 means: both right as often as none),
  the interval Clopper–Pearson over the documents of a share in [0, 1] (of (1 + Δ)/2 for a
  paired difference: a document's value varies at most as much as a 0/1 one of the same mean);
  an unpaired difference has neither (NaN, shown "–"). Below 30 documents the bootstrap's
  two-sided p of problem accuracy ran above its level on simulated models at chance (R = 1,000,
  4,000 models: 6.9% at 4 schemas and 7.1% at 10, 12.3% and 10.8% when each schema's problems
  are all right or all wrong; 5.2% and 3.8% at 20, 5.1% and 4.1% at 30); ``tests/test_exact.py``
  shows the rule's levels at 4, 10, 40 and 133 (``tests/levels.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from wsc_tasks.kept import Latest
from wsc_tasks.metrics import exact, ratios, registry
from wsc_tasks.metrics.accuracy import SchemaOutcome
from wsc_tasks.metrics.ratios import Ratio

DEFAULT_ITERS = 10_000  # the thesis's R
DEFAULT_SEED = 0
CONFIDENCE = 0.95
MIN_DOCUMENTS = 30  # fewer: no bootstrap p or interval (the module docstring)
# how an estimate's p and interval were computed (``Estimate.method``)
BOOTSTRAP, EXACT, SIGN_TEST, NONE = "bootstrap", "exact", "sign test", "none"


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
    method: str = BOOTSTRAP  # of p and the interval: BOOTSTRAP, EXACT, SIGN_TEST or NONE


def resample_indexes(n: int, iters: int, seed: int = DEFAULT_SEED) -> np.ndarray:
    """``iters`` × ``n`` document indexes drawn with replacement (numpy Generator, fixed seed)."""
    return np.random.default_rng(seed).integers(0, n, size=(iters, n))


def resample_counts(indexes: np.ndarray, n: int) -> np.ndarray:
    """How often each of ``n`` documents occurs in each resample: ``iters`` × ``n`` integers."""
    iters = len(indexes)
    offsets = indexes + (np.arange(iters, dtype=np.int64) * n)[:, None]
    return np.bincount(offsets.ravel(), minlength=iters * n).reshape(iters, n)


class Draw:
    """One draw of resamples of ``n`` documents: their ``indexes`` and how often each document
    occurs in each (``counts``, and its float forms for exact products), each made when first
    asked."""

    def __init__(self, n: int, iters: int, seed: int, indexes: np.ndarray | None = None) -> None:
        self.n, self.iters, self.seed = n, iters, seed
        if indexes is not None:
            self.__dict__["indexes"] = indexes

    @cached_property
    def indexes(self) -> np.ndarray:
        return resample_indexes(self.n, self.iters, self.seed)

    @cached_property
    def counts(self) -> np.ndarray:
        return resample_counts(self.indexes, self.n)

    @cached_property
    def counts32(self) -> np.ndarray:
        return self.counts.astype(np.float32)

    @cached_property
    def counts64(self) -> np.ndarray:
        return self.counts.astype(np.float64)


_KEPT_DRAWS: Latest[tuple[int, int, int], Draw] = Latest(4)


class Resamples:
    """The resamples of ``n`` documents (rows of ``indexes``), shared by every bootstrap over
    ``n`` documents with the same seed: drawn once, and a ratio's replicate sums taken as one
    product of the draw counts with its parts, many ratios at once (``prefetch``).

    Products are exact, so they are the very floats of summing the drawn parts one by one: parts
    that are whole numbers (every accuracy and consistency count) are multiplied in float32
    while every sum stays below 2**24, else in float64 below 2**53; other parts, and a ratio
    asked alone before any product, are gathered and summed in the order drawn."""

    BATCH = 256  # parts per matrix product: iters × BATCH floats of sums at a time

    def __init__(
        self, n: int, iters: int, seed: int = DEFAULT_SEED, draw: Draw | None = None
    ) -> None:
        self.n, self.iters, self.seed = n, iters, seed
        self.draw = draw if draw is not None else Draw(n, iters, seed)
        self._parts: dict[tuple[int, Ratio], tuple[Sequence[Any], np.ndarray, np.ndarray]] = {}
        self._sums: dict[tuple[int, Ratio], np.ndarray] = {}

    @classmethod
    def of(cls, indexes: np.ndarray) -> Resamples:
        """Resamples given by their indexes (another draw than ``resample_indexes``': seed -1)."""
        n, iters = indexes.shape[1], len(indexes)
        return cls(n, iters, seed=-1, draw=Draw(n, iters, -1, indexes))

    @classmethod
    def kept(cls, n: int, iters: int, seed: int = DEFAULT_SEED) -> Resamples:
        """Resamples over the process's kept draw of (``n``, ``iters``, ``seed``): a sweep's worker
        draws and counts its leaderboard figures' resamples once, not once a model (the last
        few draws are kept; the parts and sums stay each object's own)."""
        return cls(n, iters, seed, _KEPT_DRAWS.use((n, iters, seed), Draw(n, iters, seed)))

    @property
    def indexes(self) -> np.ndarray:
        return self.draw.indexes

    @property
    def counts(self) -> np.ndarray:
        return self.draw.counts

    def parts(self, values: Sequence[Any], ratio: Ratio) -> tuple[np.ndarray, np.ndarray]:
        """``ratio.arrays(values)``, once per list of documents (kept by identity)."""
        key = (id(values), ratio)
        if key not in self._parts:  # the list is kept, so its id is not reused meanwhile
            self._parts[key] = (values, *ratio.arrays(values))
        _, num, den = self._parts[key]
        return num, den

    def prefetch(self, wanted: Sequence[tuple[Sequence[Any], Callable[..., Any]]]) -> None:
        """The replicate sums of every ratio inside each (documents, metric), in few products."""
        exact: dict[int, dict[tuple[int, Ratio], np.ndarray]] = {32: {}, 64: {}}
        seen = set(self._sums)
        for values, metric in wanted:
            for ratio in _ratios(metric):
                key = (id(values), ratio)
                if key not in seen:
                    seen.add(key)
                    both, bits = self._stacked(values, ratio)
                    if bits:  # else gathered when asked (``sums``)
                        exact[bits][key] = both
        for bits, stacked in exact.items():
            found = list(stacked.items())
            for start in range(0, len(found), self.BATCH):
                chunk = found[start : start + self.BATCH]
                sums = self._product(np.column_stack([both for _, both in chunk]), bits)
                rows = sums.T.astype(float)  # each ratio's two sums contiguous, in float64 once
                rows.flags.writeable = False  # handed out as views
                for i, (key, _) in enumerate(chunk):
                    self._sums[key] = rows[2 * i : 2 * i + 2]

    def forget(self) -> None:
        """Drop the replicate sums kept so far (the resamples and the parts stay)."""
        self._sums.clear()

    def sums(self, values: Sequence[Any], ratio: Ratio) -> np.ndarray:
        """iters × 2: Σ numerator and Σ denominator of ``ratio`` over each resample."""
        key = (id(values), ratio)
        if key in self._sums:
            return self._sums[key].T
        both, bits = self._stacked(values, ratio)
        if bits and "counts" in vars(self.draw):  # counted already: one product
            return self._product(both, bits).astype(float)
        rows = self.indexes  # one ratio alone, or parts not whole: summed in the order drawn
        num, den = self.parts(values, ratio)
        return np.column_stack([num[rows].sum(axis=1), den[rows].sum(axis=1)])

    def _stacked(self, values: Sequence[Any], ratio: Ratio) -> tuple[np.ndarray, int]:
        """n × 2: the ratio's numerator and denominator parts, with ``_exact_bits`` of them."""
        both = np.column_stack(self.parts(values, ratio))
        return both, _exact_bits(both, self.n)

    def _product(self, parts: np.ndarray, bits: int) -> np.ndarray:
        """counts @ parts in float``bits`` (kept so: exact, and float32 halves the memory)."""
        if bits == 32:
            return self.draw.counts32 @ parts.astype(np.float32)
        return self.draw.counts64 @ parts


def _exact_bits(parts: np.ndarray, n: int) -> int:
    """32 or 64: the float width in which counts @ ``parts`` is exact (whole parts whose
    largest possible sum, n draws of the largest part, fits the mantissa); 0 when none is."""
    if not np.all(np.isfinite(parts)) or not np.all(parts == np.round(parts)):
        return 0
    largest = n * float(np.abs(parts).max(initial=0))
    return 32 if largest < 2**24 else 64 if largest < 2**53 else 0


def _ratios(metric: Callable[..., Any]) -> list[Ratio]:
    """The ratios whose replicate sums a metric's replicates take (none for other metrics)."""
    found = registry.form(metric)
    if getattr(metric, "replicates", None) is not None or found is None:
        return []
    if isinstance(found, ratios.Combination):
        return [r for part in found.parts for r in _ratios(part)]
    if isinstance(found, ratios.Difference):
        return [found.first, found.second]
    return [found]


def replicates(
    values: Sequence[Any], metric: Callable[..., Any], indexes: np.ndarray | Resamples
) -> np.ndarray:
    """The metric on every resample (rows of ``indexes``); vectorised for ratio forms and for
    aggregations with their own ``replicates``, which must give the same values as the loop."""
    resamples = indexes if isinstance(indexes, Resamples) else Resamples.of(indexes)
    vectorised = getattr(metric, "replicates", None)
    if vectorised is not None:
        return np.asarray(vectorised(values, resamples.indexes), dtype=float)
    found = registry.form(metric)
    if isinstance(found, ratios.Combination):
        return found.function(*(replicates(values, part, resamples) for part in found.parts))
    if isinstance(found, ratios.Difference):
        first = replicates(values, found.first, resamples)
        return first - replicates(values, found.second, resamples)
    if isinstance(found, ratios.Ratio):
        sums = resamples.sums(values, found)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(sums[:, 1] > 0, sums[:, 0] / sums[:, 1], np.nan)
    rows = resamples.indexes
    return np.array([float(metric([values[i] for i in row])) for row in rows], dtype=float)


ABOVE, BELOW = 1, -1  # the side of a one-sided p


def p_value(reps: np.ndarray, observed: float, null: float, side: int = 0) -> float:
    """(k + 1)/(R + 1) (eq. 3.98) of one estimate's finite replicates (``_p_values``)."""
    finite = np.asarray(reps, dtype=float)
    finite = finite[~np.isnan(finite)]
    if math.isnan(observed) or not len(finite):
        return float("nan")
    return float(_p_values(finite[None, :], np.array([observed]), np.array([null]))[side][0])


def _p_values(reps: np.ndarray, observed: np.ndarray, null: np.ndarray) -> dict[int, np.ndarray]:
    """Per side (0, ``ABOVE``, ``BELOW``) and row of ``reps`` (finite replicates), (k + 1)/(R +
    1). Two-sided (side 0): k = replicates at least |observed − null| from the observed.
    One-sided: k = replicates with side·(rep − observed) ≥ side·(observed − null), i.e. the
    distribution shifted to the null reaching the observed value or beyond on that side
    (``ABOVE``: H1 value > null; ``BELOW``: H1 value < null). NaN where the observed is."""
    centred = reps - observed[:, None]
    shift = (observed - null)[:, None]
    reach = {
        0: np.abs(centred) >= np.abs(shift) - 1e-12,
        ABOVE: centred >= shift - 1e-12,
        BELOW: -centred >= -shift - 1e-12,
    }
    missing = np.isnan(observed)
    return {
        side: np.where(missing, np.nan, (np.count_nonzero(found, axis=1) + 1) / (reps.shape[1] + 1))
        for side, found in reach.items()
    }


@dataclass(frozen=True)
class Override:
    """What replaces the bootstrap's p and interval (the module docstring): the p's (None: the
    bootstrap's), the interval (None: the bootstrap's), how they were computed, and the documents
    the estimate is over (None: those resampled)."""

    method: str
    p: tuple[float, float, float] | None = None  # two-sided, above, below
    interval: tuple[float, float] | None = None
    n: int | None = None


@dataclass(frozen=True)
class Replicated:
    """A bootstrap before its summary: the observed value, its replicates, the null (None: no
    p), the documents resampled (per condition) and what replaces the bootstrap's p and interval
    (``Override``; None: nothing)."""

    value: float
    reps: np.ndarray
    null: float | None
    n: int
    override: Override | None = None


def summarise(found: Sequence[Replicated], confidence: float = CONFIDENCE) -> list[Estimate]:
    """Each bootstrap's percentile interval, standard error (NaN replicates left out) and p
    against its null: rows without a NaN replicate at once, as one array (the same floats as
    one at a time: numpy takes both row by row), the others each on its finite replicates."""
    out: list[Estimate | None] = [None] * len(found)
    by_width: dict[int, list[int]] = {}
    for i, item in enumerate(found):
        by_width.setdefault(len(item.reps), []).append(i)
    for rows in by_width.values():
        block = np.stack([found[i].reps for i in rows]).astype(float, copy=False)
        gaps = np.isnan(block).any(axis=1)
        whole = [i for i, gap in zip(rows, gaps, strict=True) if not gap]
        summaries = _summary([found[i] for i in whole], block[~gaps], confidence)
        for i, estimate in zip(whole, summaries, strict=True):
            out[i] = estimate
        for i, row in zip(rows, block, strict=True):
            if out[i] is None:
                out[i] = _summary([found[i]], row[~np.isnan(row)][None, :], confidence)[0]
    return [e for e in out if e is not None]


def _summary(found: Sequence[Replicated], finite: np.ndarray, confidence: float) -> list[Estimate]:
    """``summarise`` of bootstraps whose finite replicates are the rows of ``finite``."""
    width = finite.shape[1]
    values = np.array([item.value for item in found], dtype=float)
    nulls = np.array([np.nan if item.null is None else item.null for item in found], dtype=float)
    if width:
        tail = (1 - confidence) / 2 * 100
        low, high = np.percentile(finite, [tail, 100 - tail], axis=1)
        stderr = np.std(finite, axis=1, ddof=1) if width > 1 else np.full(len(found), np.nan)
        p = _p_values(finite, values, nulls)
    else:
        low = high = stderr = np.full(len(found), np.nan)
        p = {side: np.full(len(found), np.nan) for side in (0, ABOVE, BELOW)}
    out = []
    for i, item in enumerate(found):
        ends = (float(low[i]), float(high[i]))
        ps = tuple(float(p[side][i]) for side in (0, ABOVE, BELOW))
        n, method, swap = item.n, BOOTSTRAP, item.override
        if swap is not None:
            ends = swap.interval if swap.interval is not None else ends
            ps = swap.p if swap.p is not None else ps
            n, method = swap.n if swap.n is not None else n, swap.method
        shape = (item.value, *ends, float(stderr[i]))
        if item.null is None:
            out.append(Estimate(*shape, None, None, n, len(item.reps), method=method))
            continue
        two, above, below = ps
        out.append(Estimate(*shape, two, item.null, n, len(item.reps), above, below, method))
    return out


def bootstrap(
    values: Sequence[Any],
    metric: Callable[..., Any],
    *,
    null: float | None = None,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
    resamples: Resamples | None = None,
) -> Estimate:
    """The metric on ``values`` with a percentile interval, and p against ``null`` (e.g. chance);
    ``resamples``: the shared ``Resamples(len(values), iters, seed)``, else drawn here."""
    found = bootstrap_replicates(values, metric, null=null, iters=iters, seed=seed,
                                 resamples=resamples)  # fmt: skip
    return summarise([found], confidence)[0]


def bootstrap_replicates(
    values: Sequence[Any],
    metric: Callable[..., Any],
    *,
    null: float | None = None,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    resamples: Resamples | None = None,
) -> Replicated:
    """``bootstrap`` before ``summarise``."""
    if not values:
        raise ValueError("bootstrap of an empty list of documents")
    shared = _shared(resamples, len(values), iters, seed)
    value = _value(values, metric, shared)
    reps = replicates(values, metric, shared)
    return Replicated(value, reps, null, len(values), checked(values, metric, null, value, reps))


def paired_difference(
    first: Sequence[Any],
    second: Sequence[Any],
    metric: Callable[..., Any],
    second_metric: Callable[..., Any] | None = None,
    *,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
    resamples: Resamples | None = None,
) -> Estimate:
    """metric(first) − metric(second) on the same documents (aligned lists), p against 0.

    The same resampled documents enter both conditions, which keeps the correlation between two
    models, two scoring methods or a dataset and its perturbation on the same schemas.
    """
    found = paired_replicates(first, second, metric, second_metric, iters=iters, seed=seed,
                              resamples=resamples)  # fmt: skip
    return summarise([found], confidence)[0]


def paired_replicates(
    first: Sequence[Any],
    second: Sequence[Any],
    metric: Callable[..., Any],
    second_metric: Callable[..., Any] | None = None,
    *,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    resamples: Resamples | None = None,
) -> Replicated:
    """``paired_difference`` before ``summarise``."""
    if len(first) != len(second):
        raise ValueError(f"paired lists differ in length: {len(first)} and {len(second)}")
    if not first:
        raise ValueError("paired difference of empty lists of documents")
    other = second_metric or metric
    shared = _shared(resamples, len(first), iters, seed)
    value = _value(first, metric, shared) - _value(second, other, shared)
    reps = replicates(first, metric, shared) - replicates(second, other, shared)
    return paired_replicated(first, second, metric, other, value, reps)


def paired_replicated(
    first: Sequence[Any],
    second: Sequence[Any],
    metric: Callable[..., Any],
    second_metric: Callable[..., Any],
    value: float,
    reps: np.ndarray,
) -> Replicated:
    """A paired difference's value and replicates (however drawn) with what replaces their p and
    interval (``paired_checked``): ``paired_replicates``' end, and the leaderboard's, which
    draws every model's replicates once."""
    found = paired_checked(first, second, metric, second_metric, value, reps)
    return Replicated(value, reps, 0.0, len(first), found)


def unpaired_difference(
    first: Sequence[Any],
    second: Sequence[Any],
    metric: Callable[..., Any],
    *,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    confidence: float = CONFIDENCE,
    resamples: tuple[Resamples, Resamples] | None = None,
) -> Estimate:
    """metric(first) − metric(second) on different schemas, each resampled on its own
    (``resamples``: ``unpaired_resamples`` of their sizes, else drawn here)."""
    found = unpaired_replicates(first, second, metric, iters=iters, seed=seed,
                                resamples=resamples)  # fmt: skip
    return summarise([found], confidence)[0]


def unpaired_replicates(
    first: Sequence[Any],
    second: Sequence[Any],
    metric: Callable[..., Any],
    *,
    iters: int = DEFAULT_ITERS,
    seed: int = DEFAULT_SEED,
    resamples: tuple[Resamples, Resamples] | None = None,
) -> Replicated:
    """``unpaired_difference`` before ``summarise``."""
    if not first or not second:
        raise ValueError("unpaired difference needs documents on both sides")
    value = float(metric(first)) - float(metric(second))
    if resamples is None:
        resamples = unpaired_resamples(len(first), len(second), iters, seed)
    a, b = resamples
    if (a.n, b.n, a.iters) != (len(first), len(second), iters):
        raise ValueError(
            f"resamples of {a.n} and {b.n} documents given for {len(first)} and {len(second)}"
        )
    reps = replicates(first, metric, a) - replicates(second, metric, b)
    n = min(len(first), len(second))
    found = None
    if _thin(n, reps):  # no test without the bootstrap here: no p, no interval
        found = Override(NONE, (math.nan,) * 3, (math.nan, math.nan))
    return Replicated(value, reps, 0.0, n, found)


# -- what replaces the bootstrap (the module docstring) -------------------------------------------
def _thin(n: int, reps: np.ndarray) -> bool:
    """Too few documents for the bootstrap, or replicates that do not vary (it collapsed)."""
    finite = np.asarray(reps, dtype=float)
    finite = finite[~np.isnan(finite)]
    if n < MIN_DOCUMENTS or not len(finite):
        return True
    spread = float(finite.max() - finite.min())
    return spread <= 1e-12 * max(1.0, float(np.abs(finite).max()))


def _schema_counts(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Each document's schema groups solved and schema groups (``ratios.schema_parts``)."""
    num, den = ratios.SCHEMA_ACCURACY.arrays(values)
    return np.rint(num).astype(int), np.rint(den).astype(int)


def schema_exact(values: Sequence[SchemaOutcome], null: float | None) -> Override | None:
    """A exactly (``counts_exact``), against ``null`` if given: at chance
    (``chance_schema_accuracy``), the number solved answering at random
    (``exact.chance_distribution``); another null, Binomial(schemas, null) where every document
    holds one schema group. None without a group, or (with a null) for a document too large to
    enumerate or another null where a document holds several groups."""
    solved, groups = _schema_counts(values)
    if null is None:
        return counts_exact(solved, groups, None)
    if math.isclose(null, chance_schema_accuracy(values), rel_tol=1e-12, abs_tol=1e-15):
        pmf = exact.chance_distribution(values)
    elif groups.max(initial=0) == 1:
        pmf = exact.binomial_pmf(int(groups.sum()), null)
    else:
        return None
    return counts_exact(solved, groups, pmf) if pmf is not None else None


def counts_exact(solved: np.ndarray, groups: np.ndarray, pmf: np.ndarray | None) -> Override | None:
    """A's exact p from each document's schema groups solved and held and the null distribution
    of their total (``pmf``; None: no p), with the Clopper–Pearson interval over the documents
    holding a group (x = A × their number: the exact one when each holds one; when one holds
    several, its share of them varies at most as a 0/1 outcome of the same mean would)."""
    counted = int(np.count_nonzero(groups))
    if not counted:
        return None
    total = int(np.sum(solved))
    ps = exact.two_sided(pmf, total) if pmf is not None else None
    interval = exact.clopper_pearson(total / float(np.sum(groups)) * counted, counted)
    return Override(EXACT, ps, interval, counted)


def schema_paired_exact(first: Sequence[Any], second: Sequence[Any]) -> Override | None:
    """A(first) − A(second) on the same documents exactly (``paired_counts_exact``)."""
    solved_a, groups_a = _schema_counts(first)
    solved_b, groups_b = _schema_counts(second)
    if not np.array_equal(groups_a, groups_b):
        return None  # no exchangeable pair of outcomes in a document
    return paired_counts_exact(solved_a, solved_b, groups_a)


def paired_counts_exact(
    solved_a: np.ndarray, solved_b: np.ndarray, groups: np.ndarray
) -> Override | None:
    """The sign-flip test of the documents' differences in schema groups solved (exact McNemar
    where each holds one group), with ``exact.paired_interval`` where each holds one (else the
    interval is left to the bootstrap); None without a group."""
    held = groups > 0
    if not held.any():
        return None
    difference = (np.asarray(solved_a) - np.asarray(solved_b))[held].astype(int)
    ps = exact.sign_flip(difference.tolist())
    counted = int(held.sum())
    if groups.max() > 1:
        return Override(EXACT, ps, None, counted)
    wins, losses = int(np.sum(difference > 0)), int(np.sum(difference < 0))
    return Override(EXACT, ps, exact.paired_interval(wins, losses, counted), counted)


def _document_values(values: Sequence[Any], metric: Callable[..., Any]) -> np.ndarray | None:
    """Each document's own value of a ratio (numerator / denominator; NaN where nothing is
    counted); None for any other form."""
    if not isinstance(metric, Ratio):
        return None
    num, den = metric.arrays(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)


def _counted(values: Sequence[Any], each: np.ndarray | None) -> int:
    """The documents an estimate is over: those a ratio counts (a value of their own), else all."""
    return len(values) if each is None else int(np.count_nonzero(~np.isnan(each)))


def _sign_test(
    each: np.ndarray, null: float | None, value: float, low: float, high: float
) -> Override:
    """``SIGN_TEST``: the exact sign test of the documents' values ``each`` (finite ones) against
    ``null``, and the Clopper–Pearson interval over them of ``value`` in [low, high] (NaN when a
    document's value lies outside, or without documents)."""
    kept = each[~np.isnan(each)]
    ps = None
    if null is not None:
        signs = np.sign(np.round(kept - null, 12)).astype(int)
        ps = exact.sign_flip(signs.tolist()) if len(kept) else (math.nan,) * 3
    bounded = len(kept) and np.all((kept >= low - 1e-12) & (kept <= high + 1e-12))
    interval = (math.nan, math.nan)
    if bounded and not math.isnan(value):
        width = high - low
        lo, hi = exact.clopper_pearson((value - low) / width * len(kept), len(kept))
        interval = (low + lo * width, low + hi * width)
    return Override(SIGN_TEST, ps, interval)


def checked(
    values: Sequence[Any],
    metric: Callable[..., Any],
    null: float | None,
    value: float,
    reps: np.ndarray,
) -> Override | None:
    """What replaces one estimate's bootstrap p and interval, if anything: A's exact interval
    and test against chance, else the sign test where the bootstrap is thin
    (``thin_checked``)."""
    found = schema_exact(values, null) if metric is ratios.SCHEMA_ACCURACY else None
    if found is not None:
        return found
    each = _document_values(values, metric)
    return thin_checked(_counted(values, each), reps, each, null, value)


def thin_checked(
    n: int,
    reps: np.ndarray,
    each: np.ndarray | None,
    null: float | None,
    value: float,
    low: float = 0.0,
    high: float = 1.0,
) -> Override | None:
    """None where the bootstrap of ``n`` documents holds (``_thin``); else the sign test of the
    documents' own values ``each`` (``_sign_test``), or, without them (a form that is not one
    ratio), no p and no interval (``NONE``)."""
    if not _thin(n, reps):
        return None
    if each is None:
        return Override(NONE, (math.nan,) * 3 if null is not None else None, (math.nan,) * 2)
    return _sign_test(each, null, value, low, high)


def paired_checked(
    first: Sequence[Any],
    second: Sequence[Any],
    metric: Callable[..., Any],
    second_metric: Callable[..., Any],
    value: float,
    reps: np.ndarray,
) -> Override | None:
    """What replaces a paired difference's bootstrap p and interval, if anything: A's exact
    McNemar, else (and for its interval where a document holds several groups) the sign test of
    the documents' differences where the bootstrap is thin."""
    found = None
    if metric is ratios.SCHEMA_ACCURACY and second_metric is ratios.SCHEMA_ACCURACY:
        found = schema_paired_exact(first, second)
    if found is not None and found.interval is not None:
        return found
    a, b = _document_values(first, metric), _document_values(second, second_metric)
    each = None if a is None or b is None else a - b
    fallback = thin_checked(_counted(first, each), reps, each, 0.0, value, -1.0, 1.0)
    if found is None or fallback is None:
        return found or fallback
    return Override(EXACT, found.p, fallback.interval, found.n)


# each estimate before its summary (``summarise`` takes many at once)
REPLICATES: dict[Callable[..., Estimate], Callable[..., Replicated]] = {
    bootstrap: bootstrap_replicates,
    paired_difference: paired_replicates,
    unpaired_difference: unpaired_replicates,
}


def _value(values: Sequence[Any], metric: Callable[..., Any], resamples: Resamples) -> float:
    """``metric(values)``; a ratio's from the parts its resamples keep (computed once)."""
    if isinstance(metric, Ratio):
        return Ratio.of_arrays(*resamples.parts(values, metric))
    return float(metric(values))


def unpaired_resamples(
    first: int, second: int, iters: int, seed: int = DEFAULT_SEED
) -> tuple[Resamples, Resamples]:
    """The two draws of an unpaired difference: ``first`` documents, then ``second`` from the
    same generator (so the first are the ``Resamples(first, iters, seed)`` of a bootstrap)."""
    rng = np.random.default_rng(seed)
    drawn = Draw(first, iters, seed, rng.integers(0, first, size=(iters, first)))
    later = rng.integers(0, second, size=(iters, second))
    return Resamples(first, iters, seed, drawn), Resamples.of(later)


def _shared(resamples: Resamples | None, n: int, iters: int, seed: int) -> Resamples:
    if resamples is None:
        return Resamples(n, iters, seed)
    if (resamples.n, resamples.iters, resamples.seed) != (n, iters, seed):
        raise ValueError(
            f"resamples of {resamples.n} documents ({resamples.iters}, seed {resamples.seed}) "
            f"given for {n} ({iters}, seed {seed})"
        )
    return resamples


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
