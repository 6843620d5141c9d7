"""The levels of the package's tests and the coverage of its intervals, simulated at 4, 10, 40 and
133 schemas (``tests/test_exact.py`` asserts them; ``python tests/levels.py`` prints the table).

Simulated models answer two-problem schemas at random (each problem right with probability 1/2,
so A = 0.25 and a = 0.5 are true), or with a schema's two problems both right or both wrong (a =
0.5, the most clustered: where the bootstrap of a ran furthest above its level); two models on
the same schemas, each at random, differ by chance only. Each estimate is the package's: A's and
ΔA's from ``stats``' exact functions (their p depends only on the counts, so each distinct count
is computed once), a's and Δa's from the report's bootstrap with what replaces it where it is
thin (``calibration.estimates`` and the same for a paired difference). A false positive is a
two-sided p below 0.05; its Monte Carlo standard error is √(0.05 · 0.95 / sims).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from wsc_tasks.claims import calibration
from wsc_tasks.metrics import exact, stats
from wsc_tasks.metrics.accuracy import SchemaOutcome, outcome

SIZES = (4, 10, 40, 133)
SIMS = 4000  # simulated models (or pairs of models) per row
ITERS = 1000  # bootstrap replicates of a and Δa (the report's seed)
ALPHA = 0.05
CONFIDENCE = 0.95
SEED = 0


@dataclass(frozen=True)
class Row:
    n: int  # schemas
    what: str  # the test (rate: false positives) or the interval (rate: coverage)
    rate: float
    sims: int
    nominal: float  # 0.05 for a test, 0.95 for an interval

    @property
    def se(self) -> float:
        """The Monte Carlo standard error of a rate at its nominal value."""
        return math.sqrt(self.nominal * (1 - self.nominal) / self.sims)

    @property
    def coverage(self) -> bool:
        return self.nominal > 0.5


SOLVED, HALF, NONE_RIGHT = [1, 1], [1, 0], [0, 0]


def _docs(counts: tuple[int, ...], kinds: tuple[list[int], ...]) -> list[SchemaOutcome]:
    """Two-problem schemas, ``counts[i]`` of them answered ``kinds[i]``."""
    return [outcome(kind, [[0, 1]]) for c, kind in zip(counts, kinds, strict=True)
            for _ in range(c)]  # fmt: skip


def _by_count(keys: np.ndarray, compute: Callable[[tuple[int, ...]], stats.Override]) -> list:
    """``compute`` once per distinct row of ``keys`` (an exact estimate depends on its counts
    only), then looked up for every row."""
    rows = [tuple(int(x) for x in row) for row in keys]
    found = {key: compute(key) for key in set(rows)}
    return [found[row] for row in rows]


def schema_accuracy(n: int, rng: np.random.Generator, sims: int = SIMS) -> list[Row]:
    """A against chance (exact test) and its Clopper–Pearson interval: false positives of
    models at random; coverage at the true A = 0.25 of those and at A = 0.6."""
    right = rng.random((sims, n, 2)) < 0.5
    solved = right.all(axis=2).sum(axis=1)

    def at(key: tuple[int, ...]) -> stats.Override:
        found = stats.schema_exact(_docs((key[0], n - key[0]), (SOLVED, HALF)), 0.25)
        assert found is not None
        return found

    tested = _by_count(solved[:, None], at)
    false = np.mean([t.p[0] < ALPHA for t in tested])
    covered = np.mean([t.interval[0] <= 0.25 <= t.interval[1] for t in tested])
    true = 0.6
    other = _by_count((rng.random((sims, n)) < true).sum(axis=1)[:, None], at)
    covered_other = np.mean([t.interval[0] <= true <= t.interval[1] for t in other])
    return [
        Row(n, "A against chance: exact binomial test", float(false), sims, ALPHA),
        Row(n, "A: Clopper–Pearson interval, true A = 0.25", float(covered), sims, CONFIDENCE),
        Row(n, "A: Clopper–Pearson interval, true A = 0.60", float(covered_other), sims,
            CONFIDENCE),
    ]  # fmt: skip


def schema_difference(n: int, rng: np.random.Generator, sims: int = SIMS) -> list[Row]:
    """ΔA of two models on the same schemas (exact McNemar and its interval): false positives of
    two models at random; coverage there (ΔA = 0) and where the first solves 15% of the schemas
    the second does not and the second 5% the first does not (ΔA = 0.10)."""
    first = (rng.random((sims, n, 2)) < 0.5).all(axis=2)
    second = (rng.random((sims, n, 2)) < 0.5).all(axis=2)

    def at(key: tuple[int, ...]) -> stats.Override:
        wins, losses = key  # the schemas both solve or both miss do not count (McNemar)
        rest = n - wins - losses
        a = _docs((wins, losses, rest), (SOLVED, HALF, HALF))
        b = _docs((wins, losses, rest), (HALF, SOLVED, HALF))
        found = stats.schema_paired_exact(a, b)
        assert found is not None and found.p is not None and found.interval is not None
        return found

    keys = np.column_stack([(first & ~second).sum(1), (~first & second).sum(1)])
    tested = _by_count(keys, at)
    false = np.mean([t.p[0] < ALPHA for t in tested])
    covered = np.mean([t.interval[0] <= 0 <= t.interval[1] for t in tested])
    cells = rng.choice(4, size=(sims, n), p=[0.15, 0.05, 0.3, 0.5])  # wins, losses, both, none
    keys = np.column_stack([(cells == k).sum(1) for k in range(2)])
    shifted = _by_count(keys, at)
    covered_shift = np.mean([t.interval[0] <= 0.1 <= t.interval[1] for t in shifted])
    return [
        Row(n, "ΔA paired: exact McNemar", float(false), sims, ALPHA),
        Row(n, "ΔA: paired interval, true ΔA = 0", float(covered), sims, CONFIDENCE),
        Row(n, "ΔA: paired interval, true ΔA = 0.10", float(covered_shift), sims, CONFIDENCE),
    ]


def _problems(right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each simulated model's problems right per schema, and each schema's problems (2)."""
    return right.sum(axis=2).astype(float), np.full(right.shape[1], 2.0)


def problem_accuracy(n: int, rng: np.random.Generator, sims: int = SIMS) -> list[Row]:
    """a against 0.5 by the report's bootstrap (the sign test where it is thin): models at
    random, and models whose schemas are all right or all wrong; the interval's coverage of
    a = 0.5 at random."""
    rows = []
    clustered = np.repeat(rng.random((sims, n, 1)) < 0.5, 2, axis=2)
    for name, right in (("at random", rng.random((sims, n, 2)) < 0.5),
                        ("schemas all right or all wrong", clustered)):  # fmt: skip
        num, den = _problems(right)
        found = calibration.estimates(num, den, 0.5, iters=ITERS)
        false = np.mean([e.p < ALPHA for e in found])
        rows.append(Row(n, f"a against chance, {name}: {_how(n)}", float(false), sims, ALPHA))
        if name == "at random":
            covered = np.mean([e.low <= 0.5 <= e.high for e in found])
            rows.append(Row(n, f"a: {_interval(n)}, true a = 0.5", float(covered), sims,
                            CONFIDENCE))  # fmt: skip
    return rows


def problem_difference(n: int, rng: np.random.Generator, sims: int = SIMS) -> list[Row]:
    """Δa of two models at random on the same schemas, paired: the report's paired bootstrap
    (``stats.paired_replicates``' arithmetic on the same resamples) and its sign test where
    thin."""
    first, den = _problems(rng.random((sims, n, 2)) < 0.5)
    second, _ = _problems(rng.random((sims, n, 2)) < 0.5)
    counts = stats.resample_counts(stats.resample_indexes(n, ITERS), n).astype(float)
    totals = counts @ den
    reps = (first @ counts.T) / totals - (second @ counts.T) / totals
    values = first.sum(1) / den.sum() - second.sum(1) / den.sum()
    each = (first - second) / den
    found = stats.summarise([
        stats.Replicated(float(v), row, 0.0, n,
                         stats.thin_checked(n, row, own, 0.0, float(v), -1.0, 1.0))
        for v, row, own in zip(values, reps, each, strict=True)
    ])  # fmt: skip
    false = np.mean([e.p < ALPHA for e in found])
    return [Row(n, f"Δa paired: {_how(n)}", float(false), sims, ALPHA)]


def _how(n: int) -> str:
    if n < stats.MIN_DOCUMENTS:
        return "sign test (fewer than 30 schemas)"
    return f"bootstrap, R = {ITERS:,}"


def _interval(n: int) -> str:
    if n < stats.MIN_DOCUMENTS:
        return "Clopper–Pearson over the schemas"
    return "percentile interval"


def simulate(sizes: tuple[int, ...] = SIZES, sims: int = SIMS, seed: int = SEED) -> list[Row]:
    rng = np.random.default_rng(seed)
    rows: list[Row] = []
    for n in sizes:
        rows += schema_accuracy(n, rng, sims)
        rows += schema_difference(n, rng, sims)
        rows += problem_accuracy(n, rng, sims)
        rows += problem_difference(n, rng, sims)
    return rows


def table(rows: list[Row]) -> str:
    lines = [
        "| schemas | test or interval | false positives (test) or coverage (interval) | "
        "Monte Carlo SE | simulated |",
        "|---:|---|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(f"| {r.n} | {r.what} | {r.rate:.2%} | {r.se:.2%} | {r.sims:,} |")
    return "\n".join(lines)


def exact_rate(n: int, chance: float = 0.25) -> float:
    """The exact test's false-positive rate at chance, by summing the null distribution over
    the counts it rejects (no simulation)."""
    pmf = exact.binomial_pmf(n, chance)
    return float(sum(q for t, q in enumerate(pmf) if exact.two_sided(pmf, t)[0] < ALPHA))


if __name__ == "__main__":
    import time

    start = time.perf_counter()
    found = simulate()
    print(table(found))
    exact_rates = ", ".join(f"{n}: {exact_rate(n):.2%}" for n in SIZES)
    print(f"\nA's exact test, its false-positive rate summed exactly: {exact_rates}")
    print(f"{time.perf_counter() - start:.1f} s")
