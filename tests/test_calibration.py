"""The findings' decision rule on simulated models: false claims at most 5% per kind of claim.

Thousands of models answer the real datasets' schemas at random (``claims.calibration``); the
findings' own functions make their claims from the bootstrap estimates. Under the rule the
findings had before (each test on its own, one-sided at 0.05), a model with no artifact had one
of its six control baselines called above chance about a quarter of the time; these tests fail
on that rule and pass on the Holm-adjusted one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from wsc_tasks.claims import calibration, findings
from wsc_tasks.data import catalog
from wsc_tasks.metrics import ratios, stats
from wsc_tasks.metrics.accuracy import outcome

NOMINAL = findings.ALPHA
# Monte Carlo tolerance: three standard errors of a rate of 5% over the simulated models
TOLERANCE = 3 * math.sqrt(NOMINAL * (1 - NOMINAL) / calibration.SIMS)


@pytest.fixture(scope="module")
def rows() -> dict[str, calibration.Row]:
    return {row.claim.split(":")[0].split(" of ")[0]: row for row in calibration.table()}


def test_the_simulated_estimates_are_the_reports_bootstrap():
    """The vectorised estimates equal ``stats.bootstrap`` on the same outcomes, p's included."""
    shape = calibration.structure(catalog.RANKING)
    rng = np.random.default_rng(3)
    right = calibration.answer(shape, 3, rng, None)
    for metric, form in (("acc", ratios.PROBLEM_ACCURACY), ("schema_acc", ratios.SCHEMA_ACCURACY)):
        found = calibration.accuracy(shape, right, metric, 500)
        for row, got in zip(right, found, strict=True):
            values, at = [], 0
            for schema in catalog.load(catalog.RANKING):
                size = len(schema.problems)
                values.append(outcome(row[at : at + size], schema.groups))
                at += size
            expected = stats.bootstrap(values, form, null=got.null, iters=500)
            assert got.value == pytest.approx(expected.value)
            assert (got.low, got.high) == pytest.approx((expected.low, expected.high))
            assert got.stderr == pytest.approx(expected.stderr)
            assert (got.p, got.p_above, got.p_below) == pytest.approx(
                (expected.p, expected.p_above, expected.p_below)
            )


def test_a_model_with_a_true_schema_accuracy_has_it():
    shape = calibration.structure(catalog.RANKING)
    right = calibration.answer(shape, 4000, np.random.default_rng(0), calibration.EFFECT)
    num, den = calibration.parts(shape, right, "schema_acc")
    assert num.sum() / den.sum() / 4000 == pytest.approx(calibration.EFFECT, abs=0.005)


def test_no_kind_of_claim_is_made_falsely_more_than_5_percent_of_the_time(rows):
    for claim, row in rows.items():
        assert row.now <= NOMINAL + TOLERANCE, (claim, row)


def test_the_uncorrected_rule_fails_it(rows):
    # six controls, each one-sided at 0.05: 1 − 0.95⁶ ≈ 26% (less for discrete small controls)
    assert rows["any control baseline above chance"].before > 0.2
    assert rows["leaderboard"].before > 0.2  # ten models: 1 − 0.965¹⁰
    # four perturbations, each exact McNemar alone: above 5%, if less than four times it (the
    # tests share the original schemas, and an exact test at 0.05 rejects less than 5%)
    assert rows["any perturbation"].before > NOMINAL


def test_power_against_a_true_schema_accuracy_of_040(rows):
    headline = rows["headline"]
    assert headline.power is not None and headline.power > 0.85
    board = rows["leaderboard"]
    assert board.power is not None and 0.6 < board.power <= headline.power
    text = calibration.sentence(calibration.table())
    assert f"headline {headline.power:.1%}" in text


def test_the_benchmark_prints_the_table(capsys):
    from benchmarks import findings_calibration

    assert findings_calibration.main(["--sims", "200", "--iters", "200"]) == 0
    out = capsys.readouterr().out
    assert "| any control baseline above chance | 6 |" in out
    assert "worst false-claim rate now" in out
