"""The findings' decision rule checked by simulation: how often it claims what is not there.

A simulated model answers the real datasets (their documents, problems and schema groups, from
the data catalog) at random, or with a known schema accuracy; its estimates are the report's
(schema accuracy and its paired changes by ``stats``' exact tests and intervals, problem accuracy
by the bootstrap: ``stats.resample_indexes`` with the report's seed, the same ratios, the same
p-values, computed for thousands of models at once); its claims are made by the findings' own
functions (``findings.headline_tests``, ``controls_above``, ``perturbation_tests``) on those
estimates. No lm-eval run, no model: estimates in, claims out, counted.

For each kind of claim the findings make, the false-claim rate of models with no effect (the share
of simulated models with at least one false claim of that kind) under the findings' rule
(``findings.RULE``) and under the rule they had before (``BEFORE``: each test on its own, one-sided
at 0.05 against chance, two-sided for a change), and the power against a known effect (a true
schema accuracy A = 0.40 on the ranking task). The report's decision section and glossary quote
the table; ``tests/test_calibration.py`` asserts it; the repository's ``python -m benchmarks
findings`` prints it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from wsc_tasks.claims import findings
from wsc_tasks.claims.findings import Rule
from wsc_tasks.data import catalog
from wsc_tasks.metrics import exact, stats
from wsc_tasks.metrics.accuracy import SchemaOutcome
from wsc_tasks.metrics.accuracy import outcome as accuracy_outcome
from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC
from wsc_tasks.metrics.stats import Estimate

SIMS = 2000  # simulated models per claim kind
ITERS = 1000  # bootstrap replicates per estimate (the report's seed; its R is 10,000)
BOARD = 10  # models on a simulated leaderboard
EFFECT = 0.40  # the true schema accuracy of the power rows
SEED = 0
# the rules the findings had before, per kind of claim (the perturbations' was two-sided)
BEFORE = {
    "headline": findings.UNCORRECTED,
    "controls": findings.UNCORRECTED,
    "perturbations": Rule(two_sided=True, holm=False, interval=False),
    "leaderboard": findings.UNCORRECTED,
}


@dataclass(frozen=True)
class Structure:
    """A dataset as the bootstrap sees it: ``doc`` gives each problem's document (problems of a
    document contiguous), ``groups`` each schema group's problems (by size), ``group_doc`` each
    group's document."""

    name: str
    documents: int
    doc: np.ndarray
    groups: tuple[np.ndarray, ...]  # one (groups × size) index array per group size
    group_doc: tuple[np.ndarray, ...]

    @property
    def problems(self) -> int:
        return len(self.doc)


def structure(name: str, schemas: Sequence[catalog.Schema] | None = None) -> Structure:
    """The documents, problems and groups of a catalog dataset (or of ``schemas``)."""
    found = list(schemas) if schemas is not None else catalog.load(name)
    doc: list[int] = []
    by_size: dict[int, tuple[list[list[int]], list[int]]] = {}
    at = 0
    for i, schema in enumerate(found):
        doc += [i] * len(schema.problems)
        for group in schema.groups:
            members, docs = by_size.setdefault(len(group), ([], []))
            members.append([at + g for g in group])
            docs.append(i)
        at += len(schema.problems)
    sizes = sorted(by_size)
    return Structure(
        name,
        len(found),
        np.asarray(doc),
        tuple(np.asarray(by_size[k][0]).reshape(-1, k) for k in sizes),
        tuple(np.asarray(by_size[k][1]) for k in sizes),
    )


def answer(
    shape: Structure, sims: int, rng: np.random.Generator, solved: float | None
) -> np.ndarray:
    """``sims`` × problems right answers: at random (each problem right with probability 1/2), or
    (``solved``) every two-problem group solved with that probability, else one or none of its
    problems right in the proportions of chance (2 : 1)."""
    right = rng.random((sims, shape.problems)) < 0.5
    if solved is None:
        return right
    for members in shape.groups:
        if members.shape[1] != 2:
            continue
        draw = rng.random((sims, len(members)))
        both = draw < solved
        one = (draw >= solved) & (draw < solved + 2 * (1 - solved) / 3)
        first = rng.random((sims, len(members))) < 0.5
        right[:, members[:, 0]] = both | (one & first)
        right[:, members[:, 1]] = both | (one & ~first)
    return right


def parts(shape: Structure, right: np.ndarray, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Per simulated model and document, the numerator and denominator of a (``acc``) or A
    (``schema_acc``): ``ratios``' problem and schema parts."""
    if metric not in (ACC, SCHEMA_ACC):
        raise KeyError(f"calibration simulates {ACC} and {SCHEMA_ACC}, not {metric!r}")
    sims = len(right)
    if metric == ACC:
        num = np.zeros((sims, shape.documents))
        np.add.at(num.T, shape.doc, right.T.astype(float))
        return num, np.bincount(shape.doc, minlength=shape.documents).astype(float)
    num = np.zeros((sims, shape.documents))
    den = np.zeros(shape.documents)
    for members, docs in zip(shape.groups, shape.group_doc, strict=True):
        solved = right[:, members].all(axis=2).astype(float)
        np.add.at(num.T, docs, solved.T)
        np.add.at(den, docs, 1.0)
    return num, den


def estimates(
    num: np.ndarray, den: np.ndarray, null: float | None, seed: int = stats.DEFAULT_SEED,
    iters: int = ITERS, pmf: np.ndarray | None = None,
) -> list[Estimate]:  # fmt: skip
    """``stats.bootstrap`` of a ratio (Σ num / Σ den over documents) for every row of ``num`` at
    once: the same resampled indexes, what replaces their p and interval (schema accuracy's exact
    test, ``stats.counts_exact``, given the null distribution ``pmf`` of its total; else the
    sign test where the bootstrap is thin, ``stats.thin_checked``) and ``stats.summarise``.
    ``den`` is one row for all models."""
    documents = num.shape[1]
    counts = stats.resample_counts(stats.resample_indexes(documents, iters, seed), documents)
    counts = counts.astype(float)
    totals = counts @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        reps = (num @ counts.T) / totals
        each = np.where(den > 0, num / np.where(den > 0, den, 1), np.nan)
    values = num.sum(axis=1) / den.sum()
    found = []
    for v, row, own, solved in zip(values, reps, each, num, strict=True):
        if pmf is not None:
            swap = stats.counts_exact(solved, den, pmf)
        else:
            swap = stats.thin_checked(int(np.count_nonzero(den > 0)), row, own, null, float(v))
        found.append(stats.Replicated(float(v), row, null, documents, swap))
    return stats.summarise(found)


def chance_pmf(shape: Structure) -> np.ndarray | None:
    """The distribution of the number of schema groups solved answering ``shape`` at random
    (``exact.chance_distribution`` of its documents)."""
    outcomes: list[SchemaOutcome] = []
    starts = np.flatnonzero(np.r_[True, shape.doc[1:] != shape.doc[:-1]])
    sizes = np.bincount(shape.doc, minlength=shape.documents)
    groups: list[list[list[int]]] = [[] for _ in range(shape.documents)]
    for members, docs in zip(shape.groups, shape.group_doc, strict=True):
        for group, doc in zip(members, docs, strict=True):
            groups[doc].append([int(i - starts[doc]) for i in group])
    for doc in range(shape.documents):
        outcomes.append(accuracy_outcome([False] * int(sizes[doc]), groups[doc]))
    return exact.chance_distribution(outcomes)


def accuracy(shape: Structure, right: np.ndarray, metric: str, iters: int) -> list[Estimate]:
    """a or A of every simulated model on ``shape``, against its chance level."""
    num, den = parts(shape, right, metric)
    if metric == ACC:
        return estimates(num, den, 0.5, iters=iters)
    sizes = [members.shape[1] for members in shape.groups]
    counts = [len(members) for members in shape.groups]
    chance = float(sum(n * 0.5**k for n, k in zip(counts, sizes, strict=True)) / sum(counts))
    return estimates(num, den, chance, iters=iters, pmf=chance_pmf(shape))


def change(before: Structure, after: Structure, sims: int, rng: np.random.Generator,
           iters: int) -> list[Estimate]:  # fmt: skip
    """ΔA (after − before, paired by document) of models at random on both: no change."""
    b_num, b_den = parts(before, answer(before, sims, rng, None), SCHEMA_ACC)
    a_num, a_den = parts(after, answer(after, sims, rng, None), SCHEMA_ACC)
    # paired: the same resampled schemas for both; A = Σ num / Σ den on each side
    documents = before.documents
    counts = stats.resample_counts(stats.resample_indexes(documents, iters), documents)
    counts = counts.astype(float)
    reps = (a_num @ counts.T) / (counts @ a_den) - (b_num @ counts.T) / (counts @ b_den)
    values = a_num.sum(axis=1) / a_den.sum() - b_num.sum(axis=1) / b_den.sum()
    if not np.array_equal(a_den, b_den) or a_den.max() > 1:
        raise ValueError(f"{after.name}: perturbed schemas must hold one group each, as before")
    found = [
        stats.Replicated(float(v), row, 0.0, documents, stats.paired_counts_exact(x, y, a_den))
        for v, row, x, y in zip(values, reps, a_num, b_num, strict=True)
    ]  # exact McNemar, as ``stats.paired_difference`` of schema accuracy
    return stats.summarise(found)


# -- the claims ----------------------------------------------------------------------------------
CONTROL_OF = "a"  # controls are read on problem accuracy


@cache
def _shapes() -> dict[str, Structure]:
    names = [catalog.RANKING, *catalog.datasets(catalog.CONTROL)]
    names += [of for n in catalog.datasets(catalog.CONTROL) if (of := catalog.role_of(n).of)]
    return {n: structure(n) for n in dict.fromkeys(names)}


@cache
def _pairs() -> dict[str, tuple[Structure, Structure]]:
    out = {}
    for n in catalog.datasets(catalog.PERTURBATION, of=catalog.RANKING):
        pairs = catalog.load_pairs(n)
        out[n] = (structure(n, [p[0] for p in pairs]), structure(n, [p[1] for p in pairs]))
    return out


@dataclass(frozen=True)
class Row:
    """One kind of claim: its false-claim rate before and now, and the power where measured."""

    claim: str
    family: int  # tests per simulated model (or leaderboard)
    before: float
    now: float
    power: float | None = None  # now, against a true A of ``EFFECT`` on the ranking task
    power_before: float | None = None


def _headline_models(estimates_a: list[Estimate]) -> list[findings.Model]:
    return [
        findings.Model(f"m{i}", ranking=findings.Accuracy(catalog.RANKING, None, e))
        for i, e in enumerate(estimates_a)
    ]


def _above(models: list[findings.Model], rule: Rule) -> list[bool]:
    found = findings.headline_tests(models, rule)
    return [found[m.label].verdict == findings.ABOVE for m in models]


def simulate(sims: int = SIMS, iters: int = ITERS, board: int = BOARD,
             seed: int = SEED) -> list[Row]:  # fmt: skip
    """The calibration table: every kind of claim, false-claim rates before and now, power."""
    rng = np.random.default_rng(seed)
    shapes = _shapes()
    ranking = shapes[catalog.RANKING]
    rows = []

    # the headline: A on the ranking task, one model alone
    null = _headline_models(accuracy(ranking, answer(ranking, sims, rng, None), SCHEMA_ACC, iters))
    real = _headline_models(
        accuracy(ranking, answer(ranking, sims, rng, EFFECT), SCHEMA_ACC, iters)
    )
    rate = {}
    for key, rule in (("before", BEFORE["headline"]), ("now", findings.RULE)):
        rate[key] = (
            float(np.mean([_above([m], rule)[0] for m in null])),
            float(np.mean([_above([m], rule)[0] for m in real])),
        )
    rows.append(Row(f"headline: A on {catalog.RANKING} above chance", 1, rate["before"][0],
                    rate["now"][0], rate["now"][1], rate["before"][1]))  # fmt: skip

    # the controls: any of a model's control baselines above chance
    names = catalog.datasets(catalog.CONTROL)
    per = {n: accuracy(shapes[n], answer(shapes[n], sims, rng, None), ACC, iters) for n in names}
    models = []
    for i in range(sims):
        controls = [
            findings.Control(n, catalog.role_of(n).change, catalog.role_of(n).of or n, per[n][i])
            for n in names
        ]
        models.append(findings.Model(f"m{i}", controls=tuple(controls)))
    rates = [float(np.mean([bool(findings.controls_above(m, r)) for m in models]))
             for r in (BEFORE["controls"], findings.RULE)]  # fmt: skip
    rows.append(Row("any control baseline above chance", len(names), *rates))

    # the perturbations: any drop in A
    pairs = _pairs()
    deltas = {n: change(b, a, sims, rng, iters) for n, (b, a) in pairs.items()}
    models = [
        findings.Model(
            f"m{i}",
            perturbations=tuple(findings.Perturbation(n, n, None, deltas[n][i]) for n in pairs),
        )
        for i in range(sims)
    ]

    def dropped(model: findings.Model, rule: Rule) -> bool:
        return any(t.verdict == findings.BELOW for _, t in findings.perturbation_tests(model, rule))

    rates = [float(np.mean([dropped(m, r) for m in models]))
             for r in (BEFORE["perturbations"], findings.RULE)]  # fmt: skip
    rows.append(Row(f"any perturbation of {catalog.RANKING}: A lower", len(pairs), *rates))

    # the leaderboard: any of ``board`` models above chance; power: one model at A = EFFECT among
    # board − 1 at random
    boards = max(sims // 2, 1)
    null = _headline_models(
        accuracy(ranking, answer(ranking, boards * board, rng, None), SCHEMA_ACC, iters)
    )
    real = _headline_models(accuracy(ranking, answer(ranking, boards, rng, EFFECT), SCHEMA_ACC,
                                     iters))  # fmt: skip
    found: dict[str, tuple[float, float]] = {}
    for key, rule in (("before", BEFORE["leaderboard"]), ("now", findings.RULE)):
        false, hit = [], []
        for b in range(boards):
            chosen = null[b * board : (b + 1) * board]
            false.append(any(_above(chosen, rule)))
            mixed = [real[b], *chosen[1:]]
            hit.append(_above(mixed, rule)[0])
        found[key] = (float(np.mean(false)), float(np.mean(hit)))
    rows.append(Row(f"leaderboard of {board}: any model above chance", board, found["before"][0],
                    found["now"][0], found["now"][1], found["before"][1]))  # fmt: skip
    return rows


@cache
def table(sims: int = SIMS, iters: int = ITERS) -> tuple[Row, ...]:
    """``simulate`` once per process (the report's decision section and glossary quote it)."""
    return tuple(simulate(sims, iters))


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def lines(rows: Sequence[Row], sims: int = SIMS) -> list[str]:
    """The table as Markdown: claim, tests, false-claim rate before and now, power."""
    out = [
        f"| claim (models with no effect; {sims:,} simulated each) | tests | false claims, before "
        f"| false claims, now | power at A = {EFFECT:.2f}, before | now |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        out.append(
            f"| {r.claim} | {r.family} | {percent(r.before)} | {percent(r.now)} | "
            f"{percent(r.power_before)} | {percent(r.power)} |"
        )
    return out


def sentence(rows: Sequence[Row]) -> str:
    """The table in one sentence, for the glossary."""
    parts = [f"{r.claim} {percent(r.now)} (before: {percent(r.before)})" for r in rows]
    power = [f"{r.claim.split(':')[0]} {percent(r.power)}" for r in rows if r.power is not None]
    return (
        f"False claims of models with no effect, simulated on the datasets' schemas "
        f"({SIMS:,} models per claim, R = {ITERS:,}): {'; '.join(parts)}. Power against a true "
        f"A = {EFFECT:.2f} on {catalog.RANKING}: {'; '.join(power)}."
    )
