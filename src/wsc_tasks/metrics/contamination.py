"""The sharded exchangeability test of Oren et al. (ICLR 2024, "Proving test set contamination in
black box language models", §3.2–3.3), as pure functions of per-shard log-likelihoods.

If a model never saw a dataset, every order of its (exchangeable) examples is equally likely to
it; a model that read the file in its published order finds that order more likely than shuffles.
Per shard i (a contiguous run of schemas, ``wsc_tasks.data.canonical``) the model gives the log-
likelihood of the published order, c_i, and of m seeded shuffles, s_i1 … s_im; the shard's
difference, per token of the shard (n_i), is

    d_i = (c_i − mean_j s_ij) / n_i.

Under the null hypothesis (no contamination, exchangeable schemas) the published order is one draw
of the shard's order distribution, so E[d_i] = 0, and the shards' d_i are independent (disjoint
examples, independent shuffles). The test statistic is their mean; its p-value is one-sided (only
a *more* likely published order is evidence) from Student's t with k − 1 degrees of freedom over
the k shards — the paper's sharded test, whose validity rests on the central limit theorem across
shards. Why a t-test and not the permutation distribution: a shard's exact rank p-value among m
shuffles cannot go below 1/(m + 1) and needs m in the hundreds for a small p (the paper's
unsharded test uses thousands of shuffles of the whole file); the sharded t-test reaches small
p-values with few shuffles per shard, and the shuffles' mean only reduces the variance of d_i. Its
false-positive rate with few shards (d_i skewed, t only approximate) is measured in
``tests/test_contamination.py`` on simulated and on untouched random models.

The **effect** is the same mean, d̄: how many nats per token the published order gains over the
mean shuffle (0 for an uncontaminated model), with its two-sided t interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

CONFIDENCE = 0.95


class ShardOutcome(TypedDict):
    """The per-document value of the contamination task: one shard's log-likelihoods."""

    canonical: float  # log-likelihood of the published order
    shuffled: list[float]  # log-likelihoods of its shuffles
    n: int  # tokens of the shard (UTF-8 bytes when the run has no tokenizer)


def difference(item: ShardOutcome) -> float:
    """d_i: the published order's log-likelihood minus the shuffles' mean, per token."""
    shuffled = item["shuffled"]
    if not shuffled:
        raise ValueError("a shard outcome without shuffles has no difference")
    if item["n"] <= 0:
        raise ValueError(f"a shard of {item['n']} tokens has no per-token difference")
    return (item["canonical"] - sum(shuffled) / len(shuffled)) / item["n"]


@dataclass(frozen=True)
class TestResult:
    """The sharded test on k shards (see the module docstring)."""

    effect: float  # d̄, nats per token
    low: float  # its two-sided t interval
    high: float
    t: float
    p: float  # one-sided: published order more likely than shuffles
    shards: int


def sharded_test(differences: Sequence[float], confidence: float = CONFIDENCE) -> TestResult:
    """One-sided t-test of mean(``differences``) > 0 and the interval of that mean; NaN for
    fewer than 2 shards. A zero spread gives t = ±inf (p 0 or 1) for a nonzero mean and p = 1
    for a zero one (every order equally likely: no evidence)."""
    k = len(differences)
    nan = float("nan")
    if k < 2:
        return TestResult(nan, nan, nan, nan, nan, k)
    mean = math.fsum(differences) / k
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in differences) / (k - 1))
    se = sd / math.sqrt(k)
    if se == 0:
        t = 0.0 if mean == 0 else math.copysign(math.inf, mean)
        p = 0.0 if mean > 0 else 1.0
        return TestResult(mean, mean, mean, t, p, k)
    from scipy import stats as scipy_stats  # here: scipy costs ~1 s to import, rarely needed

    t = mean / se
    p = float(scipy_stats.t.sf(t, k - 1))
    half = float(scipy_stats.t.ppf(0.5 + confidence / 2, k - 1)) * se
    return TestResult(mean, mean - half, mean + half, t, p, k)


def test_items(items: Sequence[ShardOutcome]) -> TestResult:
    """The sharded test of a task's per-shard values."""
    return sharded_test([difference(i) for i in items])


# -- lm-eval's aggregations (bound to their records in ``metrics.registry``) ------------------
def p_value(items: Sequence[Any]) -> float:
    return test_items(items).p


def effect(items: Sequence[Any]) -> float:
    return test_items(items).effect


def effect_low(items: Sequence[Any]) -> float:
    return test_items(items).low


def effect_high(items: Sequence[Any]) -> float:
    return test_items(items).high


def n_shards(items: Sequence[Any]) -> int:
    return len(items)


def n_positions(items: Sequence[Any]) -> int:
    """Token positions the check sent through the model: each shard once per order."""
    return sum(i["n"] * (1 + len(i["shuffled"])) for i in items)
