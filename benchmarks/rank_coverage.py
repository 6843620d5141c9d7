"""``python -m benchmarks ranks``: the confidence sets for ranks (``metrics.ranks``) on simulated
boards of known true schema accuracy A: how often they cover the true ranks, and how wide they are.

A board is p models answering the n schemas of ``wsc266`` (133): model j gets schema s right
with probability Φ(α_j + β z_s), z_s ~ N(0, 1) the schema's difficulty shared by every model
(β = 1: what makes the models' estimates dependent, as on a real board, where every model
answers the same schemas), so its true A (over the population of schemas the bootstrap over
schemas stands for) is Φ(α_j / √(1 + β²)). Two kinds of board: *spread*, a clear leader at 0.85
and the rest in tied pairs from 0.70 down to 0.30; *tied*, every model at A = 0.5, where every
true rank is 1 and a set misses it whenever any model is shown above another: the least
favourable case of the simultaneous sets, whose coverage there is the familywise error the
stepdown controls (about 98%, where the spread board's is 100%). Each board is estimated as the
leaderboard estimates one: the schema bootstrap's joint replicates (the same resamples for every
model), then the sets.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wsc_tasks.metrics import ranks, stats

SCHEMAS = 133  # wsc266's schemas
SHARED = 1.0  # β: the weight of the schema's difficulty shared by every model
LEADER = 0.85
SPREAD = (0.70, 0.30)
BEST = (1, 10)  # τ of the τ-best sets checked (10 on boards of more than 20 models)


TRUTHS = ("spread", "tied")


def true_accuracy(models: int, truth: str = "spread") -> np.ndarray:
    """The true A of a simulated board: a clear leader, then tied pairs evenly spread; or all
    tied."""
    if truth == "tied":
        return np.full(models, 0.5)
    rest = np.repeat(np.linspace(*SPREAD, math.ceil((models - 1) / 2)), 2)[: models - 1]
    return np.r_[LEADER, rest]


def board(
    truth: np.ndarray, iters: int, rng: np.random.Generator, schemas: int = SCHEMAS
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One simulated board: the estimates of A, their R × p joint bootstrap replicates and the
    n × p schema outcomes."""
    from scipy.stats import norm  # here: scipy costs ~1 s to import

    alpha = norm.ppf(truth) * math.sqrt(1 + SHARED**2)
    difficulty = rng.standard_normal(schemas)
    chance = norm.cdf(alpha[None, :] + SHARED * difficulty[:, None])
    right = (rng.random(chance.shape) < chance).astype(np.float32)  # n × p
    counts = stats.resample_counts(rng.integers(0, schemas, (iters, schemas)), schemas)
    replicates = (counts.astype(np.float32) @ right) / schemas
    return right.mean(axis=0, dtype=np.float64), replicates.astype(np.float64), right


@dataclass(frozen=True)
class Coverage:
    truth: str
    models: int
    boards: int
    simultaneous: float  # share of boards whose simultaneous sets cover every true rank
    marginal: float  # share of (board, model) whose marginal set covers its rank
    marginal_worst: float  # the lowest of the models' marginal coverage
    best: dict[int, float]  # τ -> share of boards whose τ-best set holds every true τ-best
    width_simultaneous: float  # mean size of a simultaneous set
    width_marginal: float
    best_size: dict[int, float]  # τ -> mean size of the τ-best set
    seconds: float  # mean time of ``rank_sets`` per board

    def error(self, share: float, count: int | None = None) -> float:
        """The Monte Carlo standard error of a share over the boards."""
        return math.sqrt(share * (1 - share) / (count or self.boards))

    def shown(self, share: float, count: int | None = None) -> str:
        """``0.981 ± 0.004`` (± its Monte Carlo standard error); a share of 1, whose standard
        error is 0, with its one-sided 95% lower bound (0.05^(1/n): no miss in n)."""
        n = count or self.boards
        if share == 1.0:
            return f"1.000 (≥ {0.05 ** (1 / n):.3f})"
        return f"{share:.3f} ± {self.error(share, n):.3f}"


def simulate(
    models: int, boards: int, iters: int = 1000, seed: int = 0, kind: str = "spread"
) -> Coverage:
    truth = true_accuracy(models, kind)
    true_rank = ranks.point_ranks(truth)
    rng = np.random.default_rng(seed)
    taus = [tau for tau in BEST if tau == 1 or models > 20]
    simultaneous = 0
    marginal = np.zeros(models)
    best = dict.fromkeys(taus, 0)
    widths = np.zeros(2)
    sizes = dict.fromkeys(taus, 0.0)
    spent = 0.0
    for _ in range(boards):
        estimates, replicates, right = board(truth, iters, rng)
        start = time.perf_counter()
        found = ranks.rank_sets(estimates, replicates, df=ranks.pair_df(right))
        spent += time.perf_counter() - start
        sim, marg = found.simultaneous, found.marginal
        simultaneous += bool(np.all((sim[:, 0] <= true_rank) & (true_rank <= sim[:, 1])))
        marginal += (marg[:, 0] <= true_rank) & (true_rank <= marg[:, 1])
        widths += [(sim[:, 1] - sim[:, 0] + 1).mean(), (marg[:, 1] - marg[:, 0] + 1).mean()]
        for tau in taus:
            chosen = found.best(tau)
            best[tau] += bool(np.isin(np.flatnonzero(true_rank <= tau), chosen).all())
            sizes[tau] += len(chosen)
    return Coverage(
        kind,
        models,
        boards,
        simultaneous / boards,
        float(marginal.mean() / boards),
        float(marginal.min() / boards),
        {tau: count / boards for tau, count in best.items()},
        float(widths[0] / boards),
        float(widths[1] / boards),
        {tau: size / boards for tau, size in sizes.items()},
        spent / boards,
    )


def lines(found: Sequence[Coverage]) -> list[str]:
    """A Markdown table: coverage (± its Monte Carlo standard error) and widths per board size."""
    out = [
        "| board | models | boards | simultaneous coverage | marginal coverage (worst model) "
        "| τ-best coverage | mean set size: simultaneous, marginal | τ-best size | s per board |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for row in found:
        pooled = row.boards * row.models
        best = ", ".join(f"τ={tau}: {row.shown(share)}" for tau, share in row.best.items())
        size = ", ".join(f"τ={tau}: {s:.1f}" for tau, s in row.best_size.items())
        out.append(
            f"| {row.truth} | {row.models} | {row.boards} | {row.shown(row.simultaneous)} | "
            f"{row.shown(row.marginal, pooled)} ({row.marginal_worst:.3f}) | {best} | "
            f"{row.width_simultaneous:.1f}, {row.width_marginal:.1f} | {size} | "
            f"{row.seconds:.2f} |"
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks ranks",
        description="Coverage and width of the confidence sets for ranks on simulated boards.",
    )
    parser.add_argument("--models", default="50,1000", help="board sizes (default 50,1000)")
    parser.add_argument("--boards", default="1000,200", help="boards per size (default 1000,200)")
    parser.add_argument("--iters", type=int, default=1000, help="bootstrap replicates (1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--truths", default=",".join(TRUTHS), help=f"kinds of board (default {','.join(TRUTHS)})"
    )
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.models.split(",")]
    counts = [int(s) for s in args.boards.split(",")]
    counts += [counts[-1]] * (len(sizes) - len(counts))
    found = []
    for kind in args.truths.split(","):
        if kind not in TRUTHS:
            parser.error(f"--truths: {kind!r} is not one of {', '.join(TRUTHS)}")
        for models, boards in zip(sizes, counts, strict=False):
            found.append(simulate(models, boards, args.iters, args.seed, kind))
            print("\n".join(lines(found[-1:])[-1:]), flush=True)
    print("\n".join(lines(found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
