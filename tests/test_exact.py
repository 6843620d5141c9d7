"""Exact tests and intervals for schema accuracy, and what replaces a thin bootstrap: hand-computed
cases, and their levels and coverage simulated at 4, 10, 40 and 133 schemas (``levels``)."""

from __future__ import annotations

import math
from pathlib import Path

import levels
import numpy as np
import pytest
from scipy import stats as scipy_stats

from wsc_tasks.claims import decision_rule, wording
from wsc_tasks.metrics import exact, ratios, stats
from wsc_tasks.metrics.accuracy import outcome
from wsc_tasks.report import build as report
from wsc_tasks.report import writing
from wsc_tasks.runs import folders as runs

SOLVED, HALF, NONE_RIGHT = [1, 1], [1, 0], [0, 0]


def _docs(*counts_kinds: tuple[int, list[int]]) -> list:
    return [outcome(kind, [[0, 1]]) for count, kind in counts_kinds for _ in range(count)]


# -- by hand --------------------------------------------------------------------------------------
def test_none_of_four_at_chance_is_likely():
    # P(0 of 4) = 0.75⁴ = 0.3164; two-sided: twice the smaller tail
    two, above, below = exact.binomial_test(0, 4, 0.25)
    assert below == pytest.approx(0.75**4) and above == 1.0
    assert two == pytest.approx(2 * 0.75**4) == pytest.approx(0.6328125)
    assert exact.binomial_test(0, 10, 0.25)[0] == pytest.approx(2 * 0.75**10)  # 0.113
    # scipy's exact test (its two-sided p sums the outcomes less likely than the observed one)
    assert exact.binomial_test(0, 4, 0.25)[2] == pytest.approx(
        scipy_stats.binomtest(0, 4, 0.25, alternative="less").pvalue
    )


def test_exact_mcnemar_of_three_to_none_is_a_quarter():
    # 3 discordant schemas, all one way: 2 · 0.5³
    assert exact.mcnemar(3, 0) == pytest.approx(0.25)
    assert exact.mcnemar(0, 3) == pytest.approx(0.25)
    assert exact.mcnemar(2, 2) == 1.0 and exact.mcnemar(0, 0) == 1.0
    # 10 to 2: 2 · P(Bin(12, 1/2) ≤ 2) = 2 · (1 + 12 + 66)/4096
    assert exact.mcnemar(10, 2) == pytest.approx(2 * 79 / 4096)


def test_sign_flip_of_differences_of_two_by_hand():
    # ±2 ±2 ±1 ±1: Σ ≥ 4 in 3 of 16 sign patterns (2+2+1+1, 2+2+1−1, 2+2−1+1)
    two, above, below = exact.sign_flip([2, 2, -1, 1])
    assert above == pytest.approx(3 / 16) and two == pytest.approx(6 / 16)
    assert below == pytest.approx(15 / 16)


def test_the_chance_distribution_of_schemas_of_several_sizes():
    # a pair solved at random with probability 1/4, a triple with 1/8: Poisson-binomial
    pmf = exact.chance_distribution([outcome([0, 0], [[0, 1]]), outcome([0, 0, 0], [[0, 1, 2]])])
    assert pmf == pytest.approx([0.75 * 0.875, 0.25 * 0.875 + 0.75 * 0.125, 0.25 * 0.125])
    # WSC273's three-problem schema, two groups sharing problem 0: both solved iff all right
    # (1/8), one of them in 2 of 8 patterns
    found = exact.solved_at_random(outcome([0, 0, 0], [[0, 1], [0, 2]]))
    assert found == pytest.approx([5 / 8, 2 / 8, 1 / 8])
    pairs = exact.chance_distribution([outcome([0, 0], [[0, 1]])] * 133)
    assert pairs == pytest.approx(scipy_stats.binom.pmf(np.arange(134), 133, 0.25), rel=1e-9)


def test_clopper_pearson_by_hand_and_scipy():
    # x = 0: upper end 1 − (α/2)^(1/n); x = n: lower end (α/2)^(1/n)
    assert exact.clopper_pearson(0, 4) == pytest.approx((0.0, 1 - 0.025**0.25))
    assert exact.clopper_pearson(4, 4) == pytest.approx((0.025**0.25, 1.0))
    low, high = exact.clopper_pearson(39, 133)
    assert (low, high) == pytest.approx(
        (scipy_stats.beta.ppf(0.025, 39, 95), scipy_stats.beta.ppf(0.975, 40, 94))
    )
    assert all(math.isnan(x) for x in exact.clopper_pearson(0, 0))


def test_the_paired_interval_agrees_with_mcnemar_and_never_collapses():
    n = 30
    for wins in range(n + 1):
        for losses in range(n + 1 - wins):
            low, high = exact.paired_interval(wins, losses, n)
            value = (wins - losses) / n
            assert low <= value <= high
            significant = exact.mcnemar(wins, losses) < 0.05
            assert (low > 0 or high < 0) == significant, (wins, losses)
    # no discordant schema of 133: ±(1 − 0.025^(1/133)), not [0, 0]
    spread = 1 - 0.025 ** (1 / 133)
    assert exact.paired_interval(0, 0, 133) == pytest.approx((-spread, spread))


def test_the_power_threshold_by_hand():
    # 4 schemas: only 4 of 4 is found above chance (2 · 0.25⁴ < 0.05; 3 of 4 is not), and
    # A⁴ = 0.8 at A = 0.8^(1/4)
    assert exact.detectable(4, 0.25) == pytest.approx(0.8**0.25)
    assert math.isnan(exact.detectable(2, 0.25))  # 2 · 0.25² > 0.05: never above chance
    threshold = exact.detectable(133, 0.25)
    # at that A, the exact test's power is 80%
    critical = next(t for t in range(134) if exact.binomial_test(t, 133, 0.25)[1] <= 0.025)
    power = scipy_stats.binom.sf(critical - 1, 133, threshold)
    assert power == pytest.approx(0.8)


# -- the estimates every output prints ------------------------------------------------------------
def test_none_of_four_schemas_reads_not_distinguishable_from_chance():
    docs = _docs((4, HALF))
    found = stats.bootstrap(docs, ratios.SCHEMA_ACCURACY, null=0.25, iters=1000)
    assert found.method == stats.EXACT and found.n == 4
    assert found.p == pytest.approx(0.6328125)
    assert (found.low, found.high) == pytest.approx((0.0, 1 - 0.025**0.25))
    said = wording.against_chance("A", found)
    assert said == (
        "A = 0.000 [0.000, 0.602], not distinguishable from chance (0.250; p = .6); "
        "rules out A > 0.602"
    )
    ten = stats.bootstrap(_docs((10, NONE_RIGHT)), ratios.SCHEMA_ACCURACY, null=0.25, iters=1000)
    assert decision_rule.verdict(ten) == decision_rule.UNCLEAR and wording.against_chance(
        "A", ten
    ).startswith("A = 0.000 [0.000, 0.308], not distinguishable from chance (0.250; p = .1)")
    # ten models of ten schemas, none solved: Holm over them changes nothing
    family = decision_rule.tests([ten] * 10)
    assert all(t.verdict == decision_rule.UNCLEAR for t in family)


def test_schema_accuracy_has_its_exact_interval_with_or_without_a_null():
    docs = _docs((39, SOLVED), (94, HALF))
    alone = stats.bootstrap(docs, ratios.SCHEMA_ACCURACY, iters=500)
    tested = stats.bootstrap(docs, ratios.SCHEMA_ACCURACY, null=0.25, iters=500)
    assert alone.method == tested.method == stats.EXACT and alone.p is None
    assert (alone.low, alone.high) == (tested.low, tested.high) == exact.clopper_pearson(39, 133)


def test_a_paired_difference_of_three_schemas_is_mcnemars():
    first = _docs((3, SOLVED), (130, HALF))
    second = _docs((3, HALF), (130, HALF))
    found = stats.paired_difference(first, second, ratios.SCHEMA_ACCURACY, iters=1000)
    assert found.method == stats.EXACT and found.value == pytest.approx(3 / 133)
    assert found.p == pytest.approx(0.25) and found.low < 0 < found.high
    assert stats.format_p(found.p) in (".2", ".3")


def test_a_collapsed_bootstrap_says_no_p_below_its_documents():
    # every problem of 4 schemas right: every replicate of a is 1
    docs = _docs((4, SOLVED))
    found = stats.bootstrap(docs, ratios.PROBLEM_ACCURACY, null=0.5, iters=1000)
    assert found.method == stats.SIGN_TEST
    assert found.p == pytest.approx(2 * 0.5**4)  # the sign test: 4 of 4 schemas above 0.5
    assert found.low == pytest.approx(0.025**0.25) and found.high == 1.0
    # paired: 4 schemas all better by the same amount
    better = stats.paired_difference(docs, _docs((4, HALF)), ratios.PROBLEM_ACCURACY, iters=1000)
    assert better.method == stats.SIGN_TEST and better.p == pytest.approx(0.125)
    assert better.low < 0.5 == better.value <= better.high
    # unpaired on 4 schemas: no test without the bootstrap, so no p and no claim
    apart = stats.unpaired_difference(docs, _docs((5, HALF)), ratios.PROBLEM_ACCURACY, iters=999)
    assert apart.method == stats.NONE and math.isnan(apart.p)
    assert decision_rule.verdict(apart) == decision_rule.UNCLEAR
    # 133 schemas whose problem accuracy is each exactly 1/2: no spread, p from the sign test
    flat = stats.bootstrap(_docs((133, HALF)), ratios.PROBLEM_ACCURACY, null=0.5, iters=999)
    assert flat.method == stats.SIGN_TEST and flat.p == 1.0 and flat.low < 0.5 < flat.high


def test_enough_varied_documents_keep_the_bootstrap():
    rng = np.random.default_rng(3)
    docs = [outcome(rng.random(2) < 0.6, [[0, 1]]) for _ in range(133)]
    found = stats.bootstrap(docs, ratios.PROBLEM_ACCURACY, null=0.5, iters=999)
    assert found.method == stats.BOOTSTRAP


# -- simulated: levels and coverage ---------------------------------------------------------------
@pytest.fixture(scope="module")
def rows() -> list[levels.Row]:
    return levels.simulate()


KEPT = "schemas all right or all wrong: bootstrap"  # the bootstrap of a, kept (see below)


def test_every_test_keeps_its_level_at_any_number_of_schemas(rows):
    tests = [r for r in rows if not r.coverage]
    assert {r.n for r in tests} == set(levels.SIZES)
    for r in tests:
        if KEPT in r.what:
            continue
        assert r.rate <= levels.ALPHA + 2 * r.se, (r.n, r.what, r.rate)


def test_the_kept_bootstrap_of_clustered_schemas_is_near_its_level(rows):
    # a's percentile bootstrap where no exact test replaces it (30 schemas or more): when every
    # schema's two problems are both right or both wrong it runs slightly above 5% at 133
    # (docs/validation.md); one step of the count beyond the exact binomial's
    for r in rows:
        if KEPT in r.what:
            assert r.rate <= 0.07, (r.n, r.rate)


def test_every_interval_keeps_its_coverage(rows):
    intervals = [r for r in rows if r.coverage]
    assert {r.n for r in intervals} == set(levels.SIZES)
    for r in intervals:
        assert r.rate >= levels.CONFIDENCE - 2 * r.se, (r.n, r.what, r.rate)


def test_the_exact_tests_rate_summed_exactly_is_at_most_5_percent():
    for n in (*levels.SIZES, 1000):
        assert levels.exact_rate(n) <= levels.ALPHA


# -- a report of four schemas, end to end ---------------------------------------------------------
def _limited(run, task: str, keep: list[int], limit: float):
    """``run`` as if run with ``--limit``: ``task`` alone, on the documents ``keep``."""
    found = run.tasks[task]
    found.docs = [found.docs[i] for i in keep]
    found.values = {k: [v[i] for i in keep] for k, v in found.values.items()}
    found.scored = (len(keep), found.scored[1] if found.scored else 133)
    run.tasks = {task: found}
    run.limit = limit
    return run


@pytest.mark.parametrize("schemas", [4, 10])
def test_a_report_of_a_few_unsolved_schemas_reads_them_right(schemas):
    """The committed SmolLM2 run cut to ``schemas`` documents of wsc266 it solved none of, as a
    --limit run gives: the findings say 0 of them is not distinguishable from chance, with the
    exact p (2 · 0.75ⁿ: .6 and .1) and an interval that is not a point."""
    folder = Path(__file__).resolve().parents[1] / "results" / "smollm2-135m" / "lm_eval"
    run = runs.load_run(folder, "limited")
    solved = [ratios.schema_parts(v)[0] for v in run.tasks["wsc266"].values["schema_acc"]]
    keep = [i for i, s in enumerate(solved) if s == 0][:schemas]
    run = _limited(run, "wsc266", keep, float(schemas))
    built = report.build([run], 1000, 0, quiet=True)
    found = next(s for s in built if s.title.startswith("Findings"))
    text = writing.text(found)
    high = exact.clopper_pearson(0, schemas)[1]
    p = stats.format_p(2 * 0.75**schemas)
    said = f"A = 0.000 [0.000, {high:.3f}], not distinguishable from chance (0.250; p = {p})"
    assert said in text, text
    assert f"Run with --limit {schemas}" in text
    assert "below chance" not in text.split("Problem accuracy")[0]
