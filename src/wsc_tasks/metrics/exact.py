"""Exact tests and intervals for schema accuracy A, whose per-schema outcome is binary.

A schema is solved or not, so the number of schemas a model solves needs no bootstrap: its
distribution under chance is known exactly, and a bootstrap of a handful of 0/1 outcomes
collapses (every replicate of 0 solved of 4 is 0: "A = 0.000 [0.000, 0.000], p < .001", where
the probability of 0 of 4 at chance is 0.75⁴ = 0.32). Pure functions of counts and outcomes:

- **A against chance**: answering at random, each problem is right with probability 1/2, so a
  schema group of k problems is solved with probability 2⁻ᵏ and a document's number of solved
  groups has a distribution found by going through its 2ᵐ answer patterns (``solved_at_random``);
  the documents are independent, so the number solved at chance is the convolution of theirs
  (``chance_distribution``): Poisson-binomial when the sizes differ, Binomial(n, 0.25) for n
  pairs. The p is the central two-sided one, twice the smaller tail (``two_sided``), so it is
  below α exactly when the Clopper–Pearson interval (``clopper_pearson``) excludes chance.
- **A paired difference** of two models (or a dataset and its perturbation) on the same
  schemas: only the schemas on which the two differ carry information; under the null (the two
  conditions exchangeable on each schema) each difference is equally likely either sign. For
  binary outcomes that is exact McNemar: b of the m discordant schemas going the first's way is
  Binomial(m, 1/2); ``sign_flip`` is its form for any integer differences. Its interval
  (``paired_interval``) writes the difference as ψ(2π − 1), ψ the share of discordant schemas
  and π the share of them the first condition wins, each with its Clopper–Pearson interval: it
  excludes 0 exactly when McNemar's p is below α, and never collapses to a point (no discordant
  schema among 133 gives ±0.027).
- **Power**: the smallest true A at which the exact test of n schemas finds a model above
  chance with a given probability (``detectable``).

The tests keep their level at any n (``tests/test_exact.py`` simulates 4, 10, 40 and 133
schemas); Clopper–Pearson's coverage is at least its nominal level at every n and true A.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from wsc_tasks.metrics.accuracy import SchemaOutcome

CONFIDENCE = 0.95
MAX_PROBLEMS = 16  # a document's answer patterns enumerated at most (2^16)


# -- distributions --------------------------------------------------------------------------------
@lru_cache(maxsize=256)
def _solved_pmf(problems: int, groups: tuple[tuple[int, ...], ...]) -> tuple[float, ...]:
    patterns = (np.arange(2**problems)[:, None] >> np.arange(problems)) & 1  # 2^m × m
    solved = np.zeros(len(patterns), dtype=int)
    for group in groups:
        solved += patterns[:, list(group)].all(axis=1)
    return tuple(np.bincount(solved, minlength=len(groups) + 1) / len(patterns))


def solved_at_random(outcome: SchemaOutcome) -> np.ndarray | None:
    """P(j of the document's schema groups solved), j = 0…groups, each of its problems right with
    probability 1/2 independently; None for a document of more than ``MAX_PROBLEMS``."""
    problems = len(outcome["correct"])
    if problems > MAX_PROBLEMS:
        return None
    return np.array(_solved_pmf(problems, tuple(tuple(g) for g in outcome["groups"])))


def convolve(pmfs: Iterable[np.ndarray]) -> np.ndarray:
    """The distribution of a sum of independent counts (each given by its pmf over 0, 1, …):
    equal pmfs raised to their number by repeated squaring, then the distinct ones convolved."""
    counted: dict[tuple[float, ...], int] = {}
    for pmf in pmfs:
        key = tuple(np.asarray(pmf, dtype=float))
        counted[key] = counted.get(key, 0) + 1
    total = np.ones(1)
    for key, times in counted.items():
        total = np.convolve(total, _power(np.array(key), times))
    return total


def _power(pmf: np.ndarray, times: int) -> np.ndarray:
    if len(pmf) == 2:  # a binomial: its pmf directly (exact, and no rounding error built up)
        return binomial_pmf(times, float(pmf[1]))
    out, base = np.ones(1), pmf
    while times:
        if times & 1:
            out = np.convolve(out, base)
        times >>= 1
        if times:
            base = np.convolve(base, base)
    return out


def binomial_pmf(n: int, p: float) -> np.ndarray:
    """P(X = 0…n), X ~ Binomial(n, p), in logs: log C(n, k) as a running sum of
    log((n − k + 1)/k)."""
    k = np.arange(n + 1)
    if p <= 0 or p >= 1:
        return (k == (n if p >= 1 else 0)).astype(float)
    steps = np.log(np.arange(n, 0, -1, dtype=float)) - np.log(np.arange(1, n + 1, dtype=float))
    log = np.concatenate([[0.0], np.cumsum(steps)])
    return np.exp(log + k * math.log(p) + (n - k) * math.log1p(-p))


def chance_distribution(outcomes: Sequence[SchemaOutcome]) -> np.ndarray | None:
    """P(j schema groups solved in all), j = 0…groups, answering every problem at random; None
    when a document is too large to enumerate."""
    pmfs = [solved_at_random(o) for o in outcomes]
    if any(p is None for p in pmfs):
        return None
    return convolve(p for p in pmfs if p is not None)


# -- p-values -------------------------------------------------------------------------------------
def tails(pmf: np.ndarray, observed: int) -> tuple[float, float]:
    """(P(X ≥ observed), P(X ≤ observed)) of a count with this pmf, each at most 1."""
    upper = float(min(1.0, pmf[observed:].sum()))
    lower = float(min(1.0, pmf[: observed + 1].sum()))
    return upper, lower


def two_sided(pmf: np.ndarray, observed: int) -> tuple[float, float, float]:
    """(two-sided p, p above, p below) of an observed count: the central two-sided p, twice the
    smaller tail (at most 1), and the two one-sided p (H1: above; H1: below)."""
    above, below = tails(pmf, observed)
    two = min(1.0, 2 * min(above, below))
    return _clean(two), _clean(above), _clean(below)


def _clean(p: float) -> float:
    """A p to 12 significant digits: sums of pmfs carry rounding of about 1e-15 (0.25 would
    read 0.25000000000000006), far below any digit shown."""
    return float(f"{p:.12g}")


def binomial_test(successes: int, n: int, p: float) -> tuple[float, float, float]:
    """``two_sided`` of ``successes`` of ``n`` against Binomial(n, p)."""
    return two_sided(binomial_pmf(n, p), successes)


def sign_flip(differences: Sequence[int]) -> tuple[float, float, float]:
    """(two-sided p, p above, p below) of Σ differences, each of them equally likely either sign
    (the two conditions of a document exchangeable): the exact distribution of Σ ±|d|. With
    differences in {−1, 0, 1} it is exact McNemar, Binomial(discordant, 1/2)."""
    values = np.abs(np.asarray(differences, dtype=int))
    observed = int(np.sum(differences))
    pmf = np.ones(1)
    for v in np.unique(values[values > 0]):
        m = int(np.count_nonzero(values == v))
        spread = np.zeros(2 * m * v + 1)  # Σ of m terms ±v: v·(2j − m), j ~ Binomial(m, 1/2)
        spread[:: 2 * v] = binomial_pmf(m, 0.5)
        pmf = np.convolve(pmf, spread)
    shift = (len(pmf) - 1) // 2  # the support is −shift…shift
    return two_sided(pmf, observed + shift)


def mcnemar(first_only: int, second_only: int) -> float:
    """Exact McNemar two-sided p: ``first_only`` schemas solved only in the first condition,
    ``second_only`` only in the second."""
    return sign_flip([1] * first_only + [-1] * second_only)[0]


# -- intervals ------------------------------------------------------------------------------------
def clopper_pearson(
    successes: float, n: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """The exact (Clopper–Pearson) interval of a binomial proportion: its coverage is at least
    ``confidence`` at every n and true value. ``successes`` may be fractional (a mean of values
    in [0, 1] times n: the beta-quantile form read as it is); NaN without any n."""
    if not n > 0 or math.isnan(successes):
        return math.nan, math.nan
    from scipy.special import betaincinv  # the beta quantile; here: scipy is slow to import

    tail = (1 - confidence) / 2
    x = min(max(float(successes), 0.0), float(n))
    low = float(betaincinv(x, n - x + 1, tail)) if x > 0 else 0.0
    high = float(betaincinv(x + 1, n - x, 1 - tail)) if x < n else 1.0
    return low, high


def paired_interval(
    first_only: float, second_only: float, n: float, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """An interval for the paired difference (first_only − second_only)/n: ψ(2π − 1) over the
    Clopper–Pearson boxes of ψ (discordant share of the n schemas) and π (share of the discordant
    the first wins), each at ``confidence``. Its lower end is above 0 exactly when π's interval
    is above 1/2, i.e. when exact McNemar's p is below 1 − ``confidence``."""
    if not n > 0:
        return math.nan, math.nan
    discordant = first_only + second_only
    psi_low, psi_high = clopper_pearson(discordant, n, confidence)
    if discordant > 0:
        pi_low, pi_high = clopper_pearson(first_only, discordant, confidence)
    else:
        pi_low, pi_high = 0.0, 1.0
    low_sign, high_sign = 2 * pi_low - 1, 2 * pi_high - 1
    low = (psi_high if low_sign < 0 else psi_low) * low_sign
    high = (psi_high if high_sign > 0 else psi_low) * high_sign
    return float(low), float(high)


# -- power ----------------------------------------------------------------------------------------
def detectable(n: int, chance: float, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true A at which the exact two-sided test at ``alpha`` of n schemas (chance
    ``chance`` each) finds a model above chance with probability ``power``; NaN when even
    A = 1 would not be (too few schemas)."""
    null = binomial_pmf(n, chance)
    upper = np.cumsum(null[::-1])[::-1]  # P(X ≥ t), t = 0…n
    reach = np.flatnonzero(upper <= alpha / 2)
    if not len(reach):
        return math.nan
    critical = int(reach[0])  # the fewest solved schemas the test calls above chance
    from scipy.special import betaincinv  # the beta quantile; here: scipy is slow to import

    # P(Binomial(n, A) ≥ t) = I_A(t, n − t + 1), increasing in A
    return float(betaincinv(critical, n - critical + 1, power))
