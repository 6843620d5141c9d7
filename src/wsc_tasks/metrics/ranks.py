"""Confidence sets for ranks (Mogstad, Romano, Shaikh & Wilhelm 2024, *Review of Economic
Studies* 91(1), "Inference for ranks ...").

A model's rank is 1 + the number of models whose true value is strictly larger. Its confidence set
is [1 + |N⁻|, p − |N⁺|], where N⁻ are the models shown above it and N⁺ those shown below it by
tests of the ordered-pair hypotheses H(j, k): θ_j ≤ θ_k, rejected when the studentised difference
t(j, k) = (θ̂_j − θ̂_k)/σ̂(j, k) exceeds the 1 − α quantile ĉ(I) of the bootstrap distribution of
max over (j, k) ∈ I of ((θ*_j − θ̂_j) − (θ*_k − θ̂_k))/σ̂(j, k); the stepdown (their Algorithm
3.1, Romano & Wolf 2005) drops the rejected hypotheses from I and tests the rest again until no
new one is rejected. Which hypotheses form I decides what the sets control:

- *simultaneous*: every ordered pair; the sets of all models cover all true ranks at once with
  probability ≥ 1 − α (asymptotically);
- *marginal* for model j: the pairs that involve j; its set alone covers its rank;
- the *τ-best*: the models whose simultaneous lower end is at most τ (their §4.3, csranks'
  ``cstaubest``: with every model's lower end the one-sided and two-sided families coincide);
- *above j*: the pairs (k, j) alone, one-sided: the models shown ranked above j.

The estimates here are every model's schema accuracy on the same schemas, and the bootstrap is
the package's paired bootstrap over schemas: the joint replicates give both σ̂ (their covariance)
and the distribution of the max directly, dependence included, with no normal approximation of
the joint law (csranks draws from N(0, Σ̂) instead).

Speed: p models make p(p − 1)/2 pairs (about 500,000 at p = 1,000). With the models in
descending order of θ̂, a rejected hypothesis is always an "up" one (θ̂_j ≥ θ̂_k, else t ≤ 0 ≤ ĉ),
so every "down" statistic stays in I at every step: one pass over all pairs takes, per replicate
and per model, the maxima of the up and of the down statistics; later steps go over the pairs
not yet rejected only. Statistics are float32, the maxima floored at 0 (the quantile of
max(M, 0) is max(quantile of M, 0): the same set whenever ĉ > 0, as it is with any pair in I).
Pairs whose replicate differences never vary (σ̂ = 0: two models right on the same schemas) have
a statistic of 0 and are never rejected.

Small samples (``df``): the bootstrap's max is of differences over the fixed σ̂ (a normal
scale), while the statistic it is compared with divides by an estimated σ̂: a paired difference
of two models is a mean over the schemas they differ on, and its studentised value has Student's
t tails with (that number of schemas − 1) degrees of freedom (``pair_df``), far heavier than the
normal's where a board of many models reads the critical value. Each t(j, k) is therefore read
on the normal scale, z = Φ⁻¹(F_t(t; df(j, k))), before it meets ĉ (as Tukey's studentized range
is read with its degrees of freedom). On simulated boards where every model ties (the least
favourable case), the simultaneous sets covered 92.4% ± 0.8% of 1,000 boards of 50 models
without it; with one df of n − 1 for every pair (n schemas) 94.3% ± 0.7%, and 91.0% ± 1.7% of
300 boards of 1,000 models; with each pair's own df 97.8% ± 0.5% and 98.0% ± 1.4% (100 boards
of 1,000; ``python -m benchmarks ranks``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
MIN_ITERS = 1000  # replicates the sets use at least (csranks' default R), when there are as many
PAIR_BUDGET = 500_000_000  # pairs × replicates of one pass: 1,000 models at R = 1,000


@dataclass(frozen=True)
class RankSets:
    """Ranks of p models (rank 1 the largest value) with their 1 − α confidence sets, in the
    order the estimates were given; the ends are inclusive."""

    estimates: np.ndarray  # θ̂
    rank: np.ndarray  # 1 + the number of models estimated strictly above
    simultaneous: np.ndarray  # p × 2: lower and upper end, all models at once
    marginal: np.ndarray  # p × 2: each model alone
    critical: tuple[float, ...]  # ĉ of each step of the simultaneous stepdown
    confidence: float
    iters: int  # bootstrap replicates used

    def best(self, tau: int = 1) -> np.ndarray:
        """Indexes of the τ-best confidence set: the models that may be among the τ best."""
        return np.flatnonzero(self.simultaneous[:, 0] <= tau)


def iters_for(models: int, iters: int) -> int:
    """The replicates the sets use: all ``iters`` while pairs × replicates stay within
    ``PAIR_BUDGET`` (every board of up to 316 models at R = 10,000), else as many as fit, at
    least ``MIN_ITERS`` (the first ones: the replicates are independent draws)."""
    pairs = max(models * (models - 1) // 2, 1)
    return min(iters, max(MIN_ITERS, PAIR_BUDGET // pairs))


def point_ranks(estimates: np.ndarray) -> np.ndarray:
    """1 + the number of values strictly larger (ties share the better rank)."""
    values = np.asarray(estimates, dtype=float)
    ordered = np.sort(values)
    return len(values) - np.searchsorted(ordered, values, side="right") + 1


def difference_scales(deviations: np.ndarray) -> np.ndarray:
    """p × p: σ̂(j, k), the bootstrap standard deviation of θ*_j − θ*_k, from R × p deviations
    θ* − θ̂ (Var_j + Var_k − 2 Cov_jk, with the replicates' own mean)."""
    centred = deviations - deviations.mean(axis=0)
    cov = centred.T @ centred / max(len(deviations) - 1, 1)
    var = np.diag(cov)
    squared = var[:, None] + var[None, :] - 2 * cov
    # a difference that never varies is exactly 0; its rounding error must not make a scale
    squared[squared <= 1e-12 * max(float(var.max(initial=0)), 1e-300)] = 0.0
    return np.sqrt(squared)


def quantile(maxima: np.ndarray, confidence: float) -> np.ndarray:
    """ĉ: the ``confidence`` quantile of the replicates' maxima (linear, as R's type 7) along
    their last axis."""
    return np.asarray(np.quantile(maxima, confidence, axis=-1), dtype=float)


def pair_df(values: np.ndarray) -> np.ndarray:
    """p × p degrees of freedom of each pair's studentised difference, from n × p per-schema
    values: the number of schemas on which the two models' values differ, less one (at least
    1). Counted as n − agreements, one matrix product per distinct value."""
    values = np.asarray(values)
    n = len(values)
    agree = np.zeros((values.shape[1], values.shape[1]))
    for value in np.unique(values):
        same = (values == value).astype(np.float32)
        agree += same.T @ same
    return np.maximum(n - np.rint(agree) - 1, 1)


def normal_scale(t: np.ndarray, df: np.ndarray | float | None) -> np.ndarray:
    """t read on the normal scale: Φ⁻¹(F_t(t; df)), by the lower tail for precision far out;
    t as it is without ``df``."""
    if df is None:
        return t
    from scipy.special import ndtri, stdtr

    return np.asarray(-ndtri(stdtr(df, -t)), dtype=float)


def rank_sets(
    estimates: np.ndarray,
    replicates: np.ndarray,
    confidence: float = CONFIDENCE,
    df: np.ndarray | float | None = None,
) -> RankSets:
    """Simultaneous and marginal confidence sets for the ranks of p models from R × p joint
    bootstrap ``replicates`` of their ``estimates``, each with the stepdown; ``df``: each pair's
    degrees of freedom (p × p, ``pair_df``, or one for all), None for the normal's."""
    theta = np.asarray(estimates, dtype=float)
    reps = np.asarray(replicates, dtype=float)
    p = len(theta)
    if reps.ndim != 2 or reps.shape[1] != p:
        raise ValueError(f"replicates must be R × {p}, not {reps.shape}")
    order = np.argsort(-theta, kind="stable")  # descending: pair (j < k) has θ̂_j ≥ θ̂_k
    sorted_theta = theta[order]
    deviations = reps[:, order] - sorted_theta
    scale = difference_scales(deviations)
    inverse = np.divide(1.0, scale, out=np.zeros_like(scale), where=scale > 0)
    dev = np.ascontiguousarray(deviations.T, dtype=np.float32)  # p × R, a model's row contiguous
    inv32 = inverse.astype(np.float32)
    up_row, up_col, down = _all_pairs(dev, inv32)
    # t(j, k) for j < k, ≥ 0
    t = (sorted_theta[:, None] - sorted_theta[None, :]) * inverse
    t = normal_scale(t, df[np.ix_(order, order)] if isinstance(df, np.ndarray) else df)
    upper = np.triu(np.ones((p, p), dtype=bool), 1)
    live = upper & (scale > 0)
    # simultaneous: one max over every pair
    down_all = down.max(axis=0)
    maxima = np.maximum(down_all, np.maximum(up_row.max(axis=0), up_col.max(axis=0)))
    c = float(quantile(maxima, confidence))
    critical = [c]
    # marginal: model j's own pairs
    own = np.maximum(down, np.maximum(up_row, up_col))  # p × R
    c_own = quantile(own, confidence)
    # up hypotheses not yet rejected, each in the simultaneous family and in the marginal
    # families of its two models (upper j, lower k)
    simul_open = live & ~(t > c)
    first_open = live & ~(t > c_own[:, None])
    second_open = live & ~(t > c_own[None, :])
    candidates = np.argwhere(simul_open | first_open | second_open)  # row-major: sorted by j
    changed = True
    while changed and len(candidates):
        a, b = candidates[:, 0], candidates[:, 1]
        s_open, f_open, g_open = simul_open[a, b], first_open[a, b], second_open[a, b]
        top, by_model = _open_maxima(dev, inv32, a, b, s_open, f_open, g_open)
        changed = False
        if s_open.any():
            c_new = float(quantile(np.maximum(down_all, top), confidence))
            newly = simul_open & (t > c_new)
            if newly.any():
                simul_open &= ~newly
                critical.append(c_new)
                changed = True
        c_own = quantile(np.maximum(down, by_model), confidence)
        first_new = first_open & (t > c_own[:, None])
        second_new = second_open & (t > c_own[None, :])
        if first_new.any() or second_new.any():
            first_open &= ~first_new
            second_open &= ~second_new
            changed = True
        keep = simul_open[a, b] | first_open[a, b] | second_open[a, b]
        candidates = candidates[keep]
    simul_rejected = live & ~simul_open & upper
    shown_below = simul_rejected.sum(axis=1)  # N⁺ of j: models shown below it
    shown_above = simul_rejected.sum(axis=0)  # N⁻ of k
    simultaneous = np.column_stack([1 + shown_above, p - shown_below])
    marginal = np.column_stack(
        [1 + (live & ~second_open).sum(axis=0), p - (live & ~first_open).sum(axis=1)]
    )
    back = np.empty(p, dtype=int)
    back[order] = np.arange(p)
    return RankSets(
        estimates=theta,
        rank=point_ranks(theta),
        simultaneous=simultaneous[back],
        marginal=marginal[back],
        critical=tuple(critical),
        confidence=confidence,
        iters=len(reps),
    )


def above(
    estimates: np.ndarray,
    replicates: np.ndarray,
    model: int,
    confidence: float = CONFIDENCE,
    df: np.ndarray | float | None = None,
) -> np.ndarray:
    """Indexes of the models ranked above ``model`` with confidence ``confidence``: the one-sided
    marginal family H(k, j): θ_k ≤ θ_j over every other k, with the stepdown (csranks' lower
    marginal set, whose lower end is 1 + their number)."""
    theta = np.asarray(estimates, dtype=float)
    reps = np.asarray(replicates, dtype=float)
    deviations = reps - theta
    diff = deviations - deviations[:, [model]]  # R × p: (θ*_k − θ̂_k) − (θ*_j − θ̂_j)
    spread = diff - diff.mean(axis=0)
    scale = np.sqrt((spread**2).sum(axis=0) / max(len(reps) - 1, 1))
    scale[scale <= 1e-6 * max(float(scale.max(initial=0)), 1e-300)] = 0.0
    inverse = np.divide(1.0, scale, out=np.zeros_like(scale), where=scale > 0)
    stats = diff * inverse  # 0 for the model itself and for differences that never vary
    t = (theta - theta[model]) * inverse
    t = normal_scale(t, df[model] if isinstance(df, np.ndarray) else df)
    open_ = scale > 0
    while open_.any():
        c = float(quantile(np.maximum(stats[:, open_].max(axis=1), 0.0), confidence))
        newly = open_ & (t > c)
        if not newly.any():
            break
        open_ &= ~newly
    return np.flatnonzero((scale > 0) & ~open_)


def _all_pairs(dev: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per model and replicate: the largest up statistic with the model above (``up_row``), with
    it below (``up_col``), and the largest down statistic of any of its pairs (``down``), each
    floored at 0; one pass over the pairs j < k, a row of pairs at a time."""
    p, iters = dev.shape
    up_row = np.zeros((p, iters), dtype=np.float32)
    up_col = np.zeros((p, iters), dtype=np.float32)
    down = np.zeros((p, iters), dtype=np.float32)
    buffer = np.empty((max(p - 1, 1), iters), dtype=np.float32)
    for j in range(p - 1):
        width = p - j - 1
        x = buffer[:width]
        np.subtract(dev[j], dev[j + 1 :], out=x)
        x *= inverse[j, j + 1 :, None]
        np.maximum(up_row[j], x.max(axis=0), out=up_row[j])
        np.maximum(down[j], -x.min(axis=0), out=down[j])
        np.maximum(up_col[j + 1 :], x, out=up_col[j + 1 :])
        np.negative(x, out=x)
        np.maximum(down[j + 1 :], x, out=down[j + 1 :])
    return up_row, up_col, down


def _open_maxima(
    dev: np.ndarray,
    inverse: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    s_open: np.ndarray,
    f_open: np.ndarray,
    g_open: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The up statistics of the pairs (a, b) still open (a sorted): their max over the
    simultaneous family (R), and per model over its marginal family, where the pair is open as
    the model's pair with it above (``f_open``) or below (``g_open``) (p × R); floored at 0; a
    row of pairs (one upper model) at a time."""
    p, iters = dev.shape
    top = np.zeros(iters, dtype=np.float32)
    per_model = np.zeros((p, iters), dtype=np.float32)
    bounds = np.flatnonzero(np.r_[True, a[1:] != a[:-1], True])
    for start, end in zip(bounds[:-1], bounds[1:], strict=True):
        j, ks = a[start], b[start:end]
        x = dev[ks]
        np.subtract(dev[j], x, out=x)
        x *= inverse[j, ks][:, None]
        opened = s_open[start:end]
        if opened.all():
            np.maximum(top, x.max(axis=0), out=top)
        elif opened.any():
            np.maximum(top, x[opened].max(axis=0), out=top)
        opened = f_open[start:end]
        if opened.any():
            np.maximum(per_model[j], (x if opened.all() else x[opened]).max(axis=0),
                       out=per_model[j])  # fmt: skip
        opened = g_open[start:end]
        if opened.any():
            lower = ks[opened]
            per_model[lower] = np.maximum(per_model[lower], x[opened])
    return top, per_model
