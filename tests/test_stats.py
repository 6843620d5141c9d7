"""Statistics: closed forms, scipy, bootstrap calibration, lm-eval's stderr, the chance model."""

from __future__ import annotations

import json
import math

import numpy as np
import oracles
import pytest
from scipy import stats as scipy_stats

from wsc_tasks import lm_eval_fixes as patches
from wsc_tasks.metrics import accuracy, consistency, ratios, registry, stats
from wsc_tasks.models.chance import ChanceLM, random_score
from wsc_tasks.tasks import stderr


def _outcomes(rng: np.random.Generator, n: int, p: float = 0.5) -> list[accuracy.SchemaOutcome]:
    return [accuracy.outcome(rng.random(2) < p, [[0, 1]]) for _ in range(n)]


# -- closed forms ----------------------------------------------------------------------------------
def test_wald_interval_is_the_closed_form():
    low, high = stats.wald_interval(0.744, 266)
    half = 1.959964 * math.sqrt(0.744 * 0.256 / 266)
    assert (low, high) == pytest.approx((0.744 - half, 0.744 + half), abs=1e-6)


@pytest.mark.parametrize("successes,n,chance", [(198, 266, 0.5), (66, 133, 0.25), (130, 266, 0.5)])
def test_chi_square_is_eq_3_95_and_scipy(successes, n, chance):
    m1, m2 = chance * n, (1 - chance) * n
    n1, n2 = successes, n - successes
    t = (n1 - m1) ** 2 / m1 + (n2 - m2) ** 2 / m2  # eq. 3.95
    statistic, p = stats.chi_square_test(successes, n, chance)
    reference = scipy_stats.chisquare([n1, n2], [m1, m2])
    assert statistic == pytest.approx(t, rel=1e-12) == pytest.approx(reference.statistic)
    assert (
        p == pytest.approx(scipy_stats.chi2.sf(t, 1), rel=1e-9) == pytest.approx(reference.pvalue)
    )


def test_critical_value_3_84_is_p_05():
    # 3.84 is the 5% critical value of χ²(1) (thesis §3.8.1): 116 of 200 against 0.5 gives t = 5.12
    assert stats.chi_square_test(116, 200)[0] == pytest.approx(5.12)
    assert stats.chi_square_test(116, 200)[1] < 0.05 < stats.chi_square_test(113, 200)[1]


@pytest.mark.parametrize(
    "p,text",
    [(0.414, ".4"), (0.0414, ".04"), (0.0096, ".01"), (0.006, ".006"), (0.0004, "< .001"),
     (0.9, ".9"), (0.96, "> .9"), (1.0, "> .9"), (None, "–")],
)  # fmt: skip
def test_p_has_one_significant_digit(p, text):
    assert stats.format_p(p) == text


def test_monte_carlo_p_is_k_plus_1_over_r_plus_1():
    reps = np.array([0.5, 0.6, 0.7, 0.8])
    # observed 0.6, null 0.5: replicates at least 0.1 from 0.6: 0.5, 0.7, 0.8 -> k = 3
    assert stats.p_value(reps, 0.6, 0.5) == pytest.approx(4 / 5)
    assert stats.p_value(reps, 0.6, 0.6) == 1.0  # observed = null: every replicate counts


def test_one_sided_p_counts_one_side_of_the_shifted_replicates():
    reps = np.array([0.5, 0.6, 0.7, 0.8])
    # above 0.5: replicates with rep − 0.6 ≥ 0.1: 0.7, 0.8 -> k = 2
    assert stats.p_value(reps, 0.6, 0.5, stats.ABOVE) == pytest.approx(3 / 5)
    # below 0.5: replicates with 0.6 − rep ≥ −0.1: 0.5, 0.6, 0.7 -> k = 3
    assert stats.p_value(reps, 0.6, 0.5, stats.BELOW) == pytest.approx(4 / 5)
    # observed 0.2 below null 0.5: the upper side counts every replicate
    assert stats.p_value(reps - 0.4, 0.2, 0.5, stats.ABOVE) == 1.0


def test_an_estimate_carries_both_one_sided_p():
    far_above = [accuracy.outcome([True, True], [[0, 1]])] * 30 + [
        accuracy.outcome([False, True], [[0, 1]])
    ] * 10  # A = 0.75, a = 0.875
    found = stats.bootstrap(far_above, ratios.PROBLEM_ACCURACY, null=0.5, iters=2000, seed=1)
    assert found.p_above == pytest.approx(1 / 2001) and found.p_below == 1.0
    assert found.p == pytest.approx(1 / 2001)
    # A's are the exact test's: P(Bin(40, 1/4) ≥ 30), P(≤ 30) and twice the smaller
    found = stats.bootstrap(far_above, ratios.SCHEMA_ACCURACY, null=0.25, iters=2000, seed=1)
    above = scipy_stats.binom.sf(29, 40, 0.25)
    assert found.p_above == pytest.approx(above)
    assert found.p_below == pytest.approx(scipy_stats.binom.cdf(30, 40, 0.25))
    assert found.p == pytest.approx(2 * above)
    plain = stats.bootstrap(far_above, ratios.SCHEMA_ACCURACY, iters=50)
    assert plain.p is plain.p_above is plain.p_below is None


# -- ratio forms equal the aggregations lm-eval runs ----------------------------------------------
def _pair_items(rng: np.random.Generator, n: int) -> list[dict]:
    return [
        consistency.pair_outcome(
            accuracy.outcome(rng.random(2) < 0.6, [[0, 1]]),
            accuracy.outcome(rng.random(2) < 0.5, [[0, 1]]),
        )
        for _ in range(n)
    ]


def test_ratio_forms_equal_the_oracles():
    rng = np.random.default_rng(3)
    docs = _outcomes(rng, 57, 0.6) + [accuracy.outcome([1], [])]  # a problem without a twin
    for name, oracle in oracles.ACCURACY.items():
        form = registry.form(registry.aggregation(name))
        assert form is not None, name
        assert form(docs) == pytest.approx(oracle(docs), abs=1e-12)
    items = _pair_items(rng, 41)
    for record in registry.select(value=registry.PAIR, kind="consistency"):
        form = registry.form(registry.aggregation(record.name))
        assert form is not None, record.name
        expected = oracles.consistency_metric(record.name, items)
        assert form(items) == pytest.approx(expected, abs=1e-12), record.name
        key = registry.Key(record.name, pair=("full", "partial"))
        assert registry.by_name(key.name, items[0]) is record.form
    sides = {
        "acc_original": oracles.problem_accuracy([i["before"] for i in items]),
        "acc_perturbed": oracles.problem_accuracy([i["after"] for i in items]),
        "schema_acc_original": oracles.schema_accuracy([i["before"] for i in items]),
        "schema_acc_perturbed": oracles.schema_accuracy([i["after"] for i in items]),
    }
    sides["acc_diff"] = sides["acc_perturbed"] - sides["acc_original"]
    sides["schema_acc_diff"] = sides["schema_acc_perturbed"] - sides["schema_acc_original"]
    for record in registry.select(value=registry.PAIR, kind="accuracy"):
        form = registry.form(registry.aggregation(record.name))
        assert form is not None, record.name
        assert form(items) == pytest.approx(sides[record.name], abs=1e-12), record.name
        assert registry.by_name(record.name, items[0]) is record.form


def test_vectorised_replicates_equal_applying_the_function():
    rng = np.random.default_rng(4)
    docs = _outcomes(rng, 30)
    indexes = stats.resample_indexes(len(docs), 50, seed=9)
    fast = stats.replicates(docs, ratios.SCHEMA_ACCURACY, indexes)
    slow = stats.replicates(docs, lambda v: oracles.schema_accuracy(v), indexes)
    assert np.allclose(fast, slow)
    items = _pair_items(rng, 30)
    diff = registry.aggregation("acc_diff")
    assert np.allclose(
        stats.replicates(items, diff, indexes), stats.replicates(items, lambda v: diff(v), indexes)
    )


# -- bootstrap calibration -------------------------------------------------------------------------
def test_percentile_interval_covers_the_mean_at_the_nominal_rate():
    rng = np.random.default_rng(0)
    true, n, trials = 0.6, 150, 300
    covered = 0
    for seed in range(trials):
        sample = [accuracy.outcome([x], []) for x in rng.random(n) < true]
        e = stats.bootstrap(sample, ratios.PROBLEM_ACCURACY, iters=1000, seed=seed)
        covered += e.low <= true <= e.high
    assert 0.91 <= covered / trials <= 0.98


def test_identical_conditions_give_p_one():
    docs = _outcomes(np.random.default_rng(1), 133)
    e = stats.paired_difference(docs, docs, ratios.SCHEMA_ACCURACY, iters=999)
    # exact McNemar with no discordant schema; its interval still says what 133 schemas rule out
    assert e.value == 0 and e.p == 1.0 and e.low == -e.high and 0 < e.high < 0.03
    e = stats.paired_difference(docs, docs, ratios.PROBLEM_ACCURACY, iters=999)
    assert e.value == 0 and e.p == 1.0 and e.method == stats.SIGN_TEST  # replicates all 0


def test_two_chance_models_differ_significantly_about_5_percent_of_the_time():
    rng = np.random.default_rng(2)
    trials, hits = 200, {"acc": 0, "schema_acc": 0}
    for seed in range(trials):
        first, second = _outcomes(rng, 133), _outcomes(rng, 133)
        for name in hits:
            form = registry.METRICS[name].form
            p = stats.paired_difference(first, second, form, iters=999, seed=seed).p
            hits[name] += p < 0.05
    for name, count in hits.items():
        assert count / trials <= 0.09, name


def test_chance_sample_is_near_chance_within_its_interval():
    # exactly at chance (each answer pattern of a two-problem schema 125 times), so the assertions
    # below do not depend on which sample a random stream happens to draw
    patterns = [(True, True), (True, False), (False, True), (False, False)]
    docs = [accuracy.outcome(list(patterns[i % 4]), [[0, 1]]) for i in range(500)]
    a = stats.bootstrap(docs, ratios.PROBLEM_ACCURACY, null=0.5, iters=2000)
    big_a = stats.bootstrap(docs, ratios.SCHEMA_ACCURACY, null=0.25, iters=2000)
    assert a.low <= 0.5 <= a.high and big_a.low <= 0.25 <= big_a.high
    assert a.p > 0.05 and big_a.p > 0.05
    assert stats.chance_schema_accuracy(docs) == 0.25


def test_unpaired_difference_and_alignment():
    rng = np.random.default_rng(6)
    good, bad = _outcomes(rng, 100, 0.9), _outcomes(rng, 80, 0.5)
    e = stats.unpaired_difference(good, bad, ratios.SCHEMA_ACCURACY, iters=999)
    assert e.value > 0.4 and e.p < 0.01 and e.low > 0
    first, second = stats.align({"b": 2, "a": 1, "c": 3}, {"c": 30, "a": 10, "d": 40})
    assert (first, second) == ([1, 3], [10, 30])


# -- lm-eval's stderr column ----------------------------------------------------------------------
def test_schema_stderr_is_independent_of_how_ranks_split_documents():
    docs = _outcomes(np.random.default_rng(7), 133)
    one = stderr.schema_stderr(ratios.SCHEMA_ACCURACY, docs, 1000)
    # lm-eval concatenates rank 0's documents, then rank 1's (documents dealt round-robin)
    two = docs[0::2] + docs[1::2]
    three = docs[0::3] + docs[1::3] + docs[2::3]
    assert stderr.schema_stderr(ratios.SCHEMA_ACCURACY, two, 1000) == one
    assert stderr.schema_stderr(ratios.SCHEMA_ACCURACY, three, 1000) == one
    # about the binomial error of 133 schemas at 0.25, but not equal to it
    assert one == pytest.approx(math.sqrt(0.25 * 0.75 / 133), rel=0.3)


def test_the_stderr_metric_is_the_schema_bootstrap_of_its_metric():
    """``<metric>_stderr``'s aggregation (``stderr.stderr_of``): the schema bootstrap of the
    metric over the same per-document values; N/A (lm-eval's word) for fewer than two documents
    or when no replicate has a value."""
    items = _pair_items(np.random.default_rng(8), 20)
    consistency = registry.aggregation("consistency")
    value = stderr.stderr_of(consistency)(items)
    assert value == stderr.schema_stderr(consistency, items, stderr.MAX_ITERS)
    assert 0 < value < 0.2
    assert stderr.stderr_of(consistency)(items[:1]) == "N/A"
    undefined = registry.bind("best_threshold", lambda items: float("nan"))
    assert stderr.stderr_of(undefined)([{"x": 1}, {"x": 2}, {"x": 3}]) == "N/A"


# -- the chance model ------------------------------------------------------------------------------
class _Request:
    def __init__(self, *args: str) -> None:
        self.args = args


def test_chance_scores_depend_on_seed_and_request_only():
    model = ChanceLM(seed=1)
    requests = [_Request("context", f" continuation {i}") for i in range(50)]
    scores = [s for s, _ in model.loglikelihood(requests)]
    shuffled = list(reversed(requests))
    assert [s for s, _ in model.loglikelihood(shuffled)] == list(reversed(scores))
    assert scores != [s for s, _ in ChanceLM(seed=2).loglikelihood(requests)]
    assert all(s < 0 for s in scores) and len(set(scores)) == 50
    wins = sum(random_score(1, ("a", str(i))) > random_score(1, ("b", str(i))) for i in range(2000))
    assert 900 < wins < 1100
    with pytest.raises(ValueError, match="unknown model argument"):
        ChanceLM(seed=1, temperature=0)


def test_chance_model_end_to_end(tmp_path, data_dir, task_manager):
    """A real lm-eval run: acc ≈ 0.5 and schema_acc ≈ 0.25 within the schema-level stderr."""
    import lm_eval

    patches.apply()
    manager = task_manager()
    out = lm_eval.simple_evaluate(
        model="wsc-chance",
        model_args="seed=1",
        tasks=["wsc266", "winogrande_twins"],
        task_manager=manager,
        bootstrap_iters=1000,
    )
    for task in ("wsc266", "winogrande_twins"):
        row = out["results"][task]
        assert isinstance(row["acc_stderr,none"], float), row
        assert abs(row["acc,none"] - 0.5) < 3 * row["acc_stderr,none"]
        assert abs(row["schema_acc,none"] - 0.25) < 3 * row["schema_acc_stderr,none"]
        assert "n_schemas,none" not in row  # a count: in the samples and notes, not the table
    json.dumps(out["results"])  # the numbers serialise
