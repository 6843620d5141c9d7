"""Confidence sets for ranks (``metrics.ranks``): a case done by hand from the paper's formulas,
the fast computation against a plain one over ordered pairs, and coverage on simulated boards."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from benchmarks import rank_coverage
from wsc_tasks.metrics import ranks

SQRT2 = math.sqrt(2)
phi, Phi = stats.norm.pdf, stats.norm.cdf


def _critical(density) -> float:
    """c with P(max statistic ≤ c) = 0.95, P an integral over the one free variable."""

    def probability(c: float) -> float:
        return integrate.quad(lambda y: density(y, c * SQRT2), -np.inf, np.inf)[0]

    return optimize.brentq(lambda c: probability(c) - 0.95, 0.5, 5.0)


# Three models, independent estimates of variance 1, so σ(j, k) = √2 and W(j, k) =
# (Z_j − Z_k)/√2. Every family's 95% critical value, from the normal law (w = c√2):
# - all pairs, two-sided: the range of three normals, P = 3∫φ(y)[Φ(y + w) − Φ(y)]² dy
#   (= Tukey's q(0.95; 3, ∞)/√2 = 2.3437);
# - after H(1,2) and H(1,3) rejected: Z_2 − Z_1 ≤ w, Z_3 − Z_1 ≤ w, |Z_2 − Z_3| ≤ w, with the
#   largest of Z_2, Z_3 at y: P = ∫2φ(y)[Φ(y) − Φ(y − w)][1 − Φ(y − w)] dy (2.1957);
# - one model's pairs, two-sided: P = ∫φ(y)[Φ(y + w) − Φ(y − w)]² dy (2.2121);
# - the lowest model's pairs after H(1,3) rejected: Z_3 − Z_1 ≤ w, |Z_2 − Z_3| ≤ w:
#   P = ∫φ(y)[1 − Φ(y − w)][Φ(y + w) − Φ(y − w)] dy (2.1057);
# - one-sided, "which are above model 3": max(Z_1 − Z_3, Z_2 − Z_3) ≤ w: ∫φ(y)Φ(y + w)² dy
#   (1.9163); one pair left: Φ⁻¹(0.95) = 1.6449.
C_ALL = _critical(lambda y, w: 3 * phi(y) * (Phi(y + w) - Phi(y)) ** 2)
C_STEP = _critical(lambda y, w: 2 * phi(y) * (Phi(y) - Phi(y - w)) * (1 - Phi(y - w)))
C_ONE = _critical(lambda y, w: phi(y) * (Phi(y + w) - Phi(y - w)) ** 2)
C_ONE_STEP = _critical(lambda y, w: phi(y) * (1 - Phi(y - w)) * (Phi(y + w) - Phi(y - w)))
C_ABOVE = _critical(lambda y, w: phi(y) * Phi(y + w) ** 2)
C_LAST = stats.norm.ppf(0.95)


def _normal_replicates(theta: np.ndarray, draws: int = 200_000) -> np.ndarray:
    return theta + np.random.default_rng(0).standard_normal((draws, len(theta)))


def test_the_critical_values_are_the_papers():
    assert C_ALL == pytest.approx(stats.studentized_range.ppf(0.95, 3, np.inf) / SQRT2)
    assert (C_ALL, C_STEP, C_ONE, C_ONE_STEP, C_ABOVE) == pytest.approx(
        (2.3437, 2.1957, 2.2121, 2.1057, 1.9163), abs=1e-4
    )


def test_three_models_by_hand():
    """t(2,3) = 2.27 lies between the two steps' critical values (2.196 < 2.27 < 2.344): the
    single step leaves models 2 and 3 in [2, 3]; the stepdown (H(1,2), H(1,3) rejected first,
    then ĉ = 2.196) separates them. Model 2's own family (ĉ = 2.212) separates them at once."""
    theta = np.array([8.0, 2.27 * SQRT2, 0.0])
    found = ranks.rank_sets(theta, _normal_replicates(theta))
    assert found.critical[0] == pytest.approx(C_ALL, abs=0.02)
    assert found.critical[1] == pytest.approx(C_STEP, abs=0.02)
    assert found.simultaneous.tolist() == [[1, 1], [2, 2], [3, 3]]
    assert found.marginal.tolist() == [[1, 1], [2, 2], [3, 3]]
    assert found.rank.tolist() == [1, 2, 3]
    assert found.best(1).tolist() == [0]
    assert ranks.above(theta, _normal_replicates(theta), 2).tolist() == [0, 1]


def test_the_stepdown_matters_by_hand():
    """t(2,3) = 2.15: below every two-sided critical value but the one-sided ones: model 3's
    marginal set stays [2, 3] (2.15 > 2.106 after its first step, 2.15 < 2.212 at the first:
    the stepdown separates it from model 2 too); with t(2,3) = 1.8 only the one-sided family
    ("above model 3", ĉ 1.916 then 1.645) finds model 2 above it."""
    theta = np.array([8.0, 2.15 * SQRT2, 0.0])
    found = ranks.rank_sets(theta, _normal_replicates(theta))
    assert found.simultaneous.tolist() == [[1, 1], [2, 3], [2, 3]]
    assert found.marginal.tolist() == [[1, 1], [2, 2], [3, 3]]
    theta = np.array([8.0, 1.8 * SQRT2, 0.0])
    replicates = _normal_replicates(theta)
    found = ranks.rank_sets(theta, replicates)
    assert found.marginal.tolist() == [[1, 1], [2, 3], [2, 3]]
    assert ranks.above(theta, replicates, 2).tolist() == [0, 1]
    assert ranks.above(theta, replicates, 1).tolist() == [0]
    assert ranks.above(theta, replicates, 0).tolist() == []


def _plain(theta: np.ndarray, reps: np.ndarray, family: list[tuple[int, int]]) -> set:
    """Algorithm 3.1 over ordered pairs as written: every hypothesis H(j, k) of ``family``
    tested with the max over those still open, until no new rejection."""
    dev = reps - theta
    open_, rejected = set(), set()
    scale = {}
    for j, k in family:
        s = np.std(dev[:, j] - dev[:, k], ddof=1)
        if s > 1e-9:
            scale[j, k] = s
            open_.add((j, k))
    while open_:
        stat = np.max([(dev[:, j] - dev[:, k]) / scale[j, k] for j, k in open_], axis=0)
        c = np.quantile(np.maximum(stat, 0), 0.95)
        new = {(j, k) for j, k in open_ if (theta[j] - theta[k]) / scale[j, k] > c}
        if not new:
            break
        open_ -= new
        rejected |= new
    return rejected


def _sets(p: int, rejected: set, of: list[int]) -> list[list[int]]:
    return [
        [
            1 + sum((k, j) in rejected for k in range(p)),
            p - sum((j, k) in rejected for k in range(p)),
        ]
        for j in of
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_fast_sets_are_the_plain_algorithms(seed):
    """Models tied, near and far, dependent through shared schemas, two of them identical."""
    truth = np.array([0.8, 0.6, 0.6, 0.55, 0.5, 0.4, 0.4, 0.3])
    theta, reps, _ = rank_coverage.board(truth, 2000, np.random.default_rng(seed))
    theta[-1], reps[:, -1] = theta[-2], reps[:, -2]  # right on the very same schemas
    p = len(theta)
    found = ranks.rank_sets(theta, reps)
    pairs = [(j, k) for j in range(p) for k in range(p) if j != k]
    assert found.simultaneous.tolist() == _sets(p, _plain(theta, reps, pairs), list(range(p)))
    for j in range(p):
        own = [(a, b) for a, b in pairs if j in (a, b)]
        assert found.marginal[j].tolist() == _sets(p, _plain(theta, reps, own), [j])[0]
        one_sided = [(k, j) for k in range(p) if k != j]
        expected = sorted(k for k, _ in _plain(theta, reps, one_sided))
        assert ranks.above(theta, reps, j).tolist() == expected
    assert found.rank.tolist() == [1 + int((theta > t).sum()) for t in theta]


def test_point_ranks_share_ties():
    assert ranks.point_ranks(np.array([0.3, 0.5, 0.5, 0.1])).tolist() == [3, 1, 1, 4]


def test_coverage_on_simulated_boards():
    """Boards of 50 models with a clear leader and tied pairs: the simultaneous sets cover every
    true rank, and the 1-best and 10-best sets hold the true best, in at least 95% of boards
    (within two Monte Carlo standard errors; ``python -m benchmarks ranks`` runs more, larger)."""
    found = rank_coverage.simulate(50, 60, iters=500, seed=7)
    for share in (found.simultaneous, *found.best.values()):
        assert share + 2 * found.error(max(share, 0.95)) >= 0.95
    assert found.marginal + 2 * found.error(0.95, found.boards * found.models) >= 0.95
    assert found.width_marginal <= found.width_simultaneous < 50  # informative, and ordered
    assert found.best_size[1] < 10


def test_coverage_where_every_model_ties():
    """All true A equal: a set misses as soon as any pair is separated, so the simultaneous
    coverage is the familywise error the stepdown holds at 5%: at least 95% (within two Monte
    Carlo standard errors), and the sets still move (some boards do separate a pair)."""
    found = rank_coverage.simulate(20, 150, iters=400, seed=3, kind="tied")
    assert found.simultaneous + 2 * found.error(0.95) >= 0.95
    assert found.width_simultaneous < 20
    assert found.best[1] == found.simultaneous


def _given(low: list[int], high: list[int]) -> ranks.RankSets:
    p = len(low)
    bounds = np.column_stack([low, high])
    return ranks.RankSets(
        np.arange(p, 0, -1.0), np.arange(1, p + 1), bounds, bounds, (2.0,), 0.95, 1000
    )


def test_the_best_model_sentences():
    from wsc_tasks import markup
    from wsc_tasks.claims import findings

    labels = [f"m{i}" for i in range(12)]
    said = findings.best_models(labels, _given([1, 1, 2, 4, *[5] * 8], [2, 3, 3, *[12] * 9]))
    text = [markup.plain(s) for s in said]
    assert text == [
        "The best model in A is one of these 2 (95%, simultaneous over the 12 ranked models; "
        "Mogstad, Romano, Shaikh & Wilhelm 2024): m0 and m1.",
        "The 3 best models in A are among these 3 (95%, simultaneous over the 12 ranked "
        "models; Mogstad, Romano, Shaikh & Wilhelm 2024): m0, m1 and m2.",
    ]
    only = findings.best_models(labels[:2], _given([1, 2], [1, 2]))
    assert markup.plain(only[0]).startswith("The best model in A is m0 (95%")
    anyone = findings.best_models(labels[:2], _given([1, 1], [2, 2]))
    assert markup.plain(anyone[0]).startswith("Any of the 2 ranked models may be the best model")
    assert findings.best_models(labels[:1], _given([1], [1])) == []
    above = markup.plain(findings.ranked_above("m5", ["m0", "m1"], 12))
    assert above == (
        "Ranked above m5 in A with confidence (95%, one-sided over the 11 other ranked models; "
        "Mogstad, Romano, Shaikh & Wilhelm 2024): 2 models, m0 and m1."
    )


def test_each_pairs_t_on_the_normal_scale():
    """A pair's df: the schemas its two models differ on, less one; its t read as the normal
    quantile of its Student t probability."""
    values = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 0], [1, 1, 0], [0, 0, 0]], dtype=float)
    # models 0 and 1 differ on 2 schemas, each of them and model 2 on 3
    assert ranks.pair_df(values).tolist() == [[1, 1, 2], [1, 1, 2], [2, 2, 1]]
    assert float(ranks.quantile(np.linspace(0.0, 4.0, 1001), 0.95)) == pytest.approx(3.8)
    z = ranks.normal_scale(np.array([2.0, 5.0, -1.0]), np.array([5.0, 40.0, 10.0]))
    expected = stats.norm.ppf(stats.t.cdf([2.0, 5.0, -1.0], [5.0, 40.0, 10.0]))
    assert z == pytest.approx(expected) and z[1] < 5.0
    assert ranks.normal_scale(np.array([9.0]), 132.0)[0] == pytest.approx(
        -stats.norm.ppf(stats.t.sf(9.0, 132)), rel=1e-9
    )
