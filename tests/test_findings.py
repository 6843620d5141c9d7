"""The findings' rules on hand-made estimates: each sentence, its numbers and its verdict."""

from __future__ import annotations

import math

import pytest

from wsc_tasks.metrics.stats import Estimate
from wsc_tasks.reporting import findings
from wsc_tasks.reporting.findings import Accuracy, Control, Model, Perturbation


def est(value, low, high, null=None, above=None, below=None, p=None) -> Estimate:
    """An estimate as the bootstrap gives it (the p's set by hand)."""
    return Estimate(value, low, high, 0.01, p, null, 100, 1000, above, below)


A_AT = est(0.293, 0.218, 0.376, 0.25, above=0.151, below=0.86)
A_ABOVE = est(0.45, 0.37, 0.53, 0.25, above=0.0004, below=1.0)
A_BELOW = est(0.072, 0.032, 0.12, 0.25, above=1.0, below=0.0009)
a_ABOVE = est(0.617, 0.571, 0.665, 0.5, above=0.0001, below=1.0)
a_AT = est(0.508, 0.476, 0.54, 0.5, above=0.33, below=0.68)
HALF = est(0.647, 0.564, 0.729)


def test_verdict_is_the_one_sided_p_of_each_side_at_05():
    assert findings.verdict(est(0.3, 0.2, 0.4, 0.25, above=0.049, below=0.95)) == findings.ABOVE
    assert findings.verdict(est(0.3, 0.2, 0.4, 0.25, above=0.05, below=0.95)) == findings.AT
    assert findings.verdict(est(0.2, 0.1, 0.3, 0.25, above=0.97, below=0.03)) == findings.BELOW
    assert findings.verdict(est(0.2, 0.1, 0.3)) == findings.AT  # no null: nothing to say


def test_the_p_quoted_is_the_one_sided_p_on_the_side_of_the_value():
    assert findings.one_sided("A", A_AT) == "p(A > 0.250) = .2"
    assert findings.one_sided("A", A_BELOW) == "p(A < 0.250) < .001"
    assert findings.one_sided("a", a_ABOVE) == "p(a > 0.500) < .001"
    assert findings.against_chance("A", A_AT) == (
        "A = 0.293 [0.218, 0.376], at chance (0.250; p(A > 0.250) = .2)"
    )


def test_headline_and_a_problem_accuracy_that_does_not_survive_the_schema_score():
    model = Model("m", ranking=Accuracy("wsc266", a_ABOVE, A_AT), half_solved=HALF)
    assert findings.headline(model) == (
        "Schema accuracy on `wsc266` (the ranking task): "
        "A = 0.293 [0.218, 0.376], at chance (0.250; p(A > 0.250) = .2)."
    )
    # 0.617 = 0.293 + 0.647/2 (to the thousandth: exact only with exact values)
    exact = Model(
        "m",
        ranking=Accuracy("wsc266", est(0.6165, 0.57, 0.66, 0.5, 0.0001, 1.0), A_AT),
        half_solved=est(0.647, 0.56, 0.73),
    )
    assert math.isclose(0.6165, 0.293 + 0.647 / 2)
    assert findings.survival(exact) == (
        "Problem accuracy a = 0.617 [0.570, 0.660], above chance (0.500; p(a > 0.500) < .001), "
        "but it does not survive the schema score: A is at chance. Half-solved schemas (some but "
        "not all problems right): A′ = 0.647 [0.560, 0.730]; of a = 0.617, 0.293 comes from "
        "solved schemas and 0.324 from half-solved ones (a = A + A′/2)."
    )
    # a ≠ A + A′/2 (a three-problem schema): no decomposition
    assert "comes from" not in findings.survival(model)


def test_survival_when_both_are_above_and_when_a_is_at_chance():
    both = Model("m", ranking=Accuracy("wsc266", a_ABOVE, A_ABOVE))
    assert findings.survival(both).endswith(
        "and it survives the schema score: A is above chance too."
    )
    none = Model("m", ranking=Accuracy("wsc266", a_AT, A_AT))
    assert findings.survival(none) == (
        "Problem accuracy a = 0.508 [0.476, 0.540], at chance (0.500; p(a > 0.500) = .3): no "
        "problem accuracy above chance for the schema score to keep."
    )


def test_controls_by_change_and_what_an_artifact_explains():
    controls = [
        Control("wsc266_associative_nocands", "without the candidates", "wsc266", a_ABOVE),
        Control("wsc273_nocands", "without the candidates", "wsc273_schemas", a_AT),
        Control("wsc273_partsent", "with only the clause", "wsc273_schemas", a_ABOVE),
    ]
    text, verdict = findings.controls(Model("m", controls=controls))
    assert text == (
        "Control baselines: without the candidates, above chance on `wsc266_associative_nocands` "
        "(a = 0.617 [0.571, 0.665]; p(a > 0.500) < .001); at chance on `wsc273_nocands` "
        "(a = 0.508 [0.476, 0.540]; p(a > 0.500) = .3); with only the clause, above chance on "
        "`wsc273_partsent` (a = 0.617 [0.571, 0.665]; p(a > 0.500) < .001)."
    )
    assert verdict.startswith("So an artifact can explain part of its score on `wsc266` and ")
    at = [Control("wsc273_nocands", "without the candidates", "wsc273_schemas", a_AT)]
    assert findings.controls(Model("m", controls=at))[1] == (
        "No control is above chance: no artifact tested explains its score."
    )
    assert findings.controls(Model("m")) == []


def test_perturbations_lowest_consistency_and_largest_drop():
    items = [
        Perturbation("p1", "switched", est(0.600, 0.49, 0.71), est(-0.10, -0.19, -0.01, p=0.03)),
        Perturbation("p2", "adjectival", est(0.586, 0.48, 0.69), est(0.01, -0.09, 0.12, p=0.9)),
        Perturbation("p3", "unbalanced", est(0.617, 0.53, 0.70), est(-0.02, -0.08, 0.05, p=0.5)),
    ]
    assert findings.perturbations(Model("m", perturbations=items)) == (
        "Under perturbation: least consistent on `p2`, adjectival (C = 0.586 [0.480, 0.690]: 41% "
        "of the schemas change how many of their problems are right) and on `p1`, switched "
        "(C = 0.600 [0.490, 0.710]: 40% of the schemas change how many of their problems are "
        "right); largest drop in A on `p1`, switched (ΔA = -0.100 [-0.190, -0.010], lower, "
        "two-sided p = .03)."
    )
    rising = [Perturbation("p2", "adjectival", None, est(0.01, -0.09, 0.12, p=0.9))]
    assert findings.perturbations(Model("m", perturbations=rising)) == (
        "Under perturbation: A drops under no perturbation: its smallest change is on `p2`, "
        "adjectival (ΔA = +0.010 [-0.090, +0.120], not significant, two-sided p = .9)."
    )
    assert findings.perturbations(Model("m")) is None


def test_reid250_and_winogrande_lines():
    found = Accuracy("reid250", a_AT, A_BELOW)
    assert findings.one_line("Reid250", found) == (
        "Reid250 (`reid250`): a = 0.508 [0.476, 0.540], at chance (0.500; p(a > 0.500) = .3); "
        "A = 0.072 [0.032, 0.120], below chance (0.250; p(A < 0.250) < .001)."
    )
    assert findings.one_line("Winogrande", None) is None


def test_a_chance_model_is_the_calibration_check():
    tasks = [Accuracy(f"t{i}", a_AT, A_AT) for i in range(18)]
    tasks += [Accuracy("t18", a_ABOVE, A_AT), Accuracy("t19", a_AT, None)]
    model = Model("chance", chance_model=True, ranking=Accuracy("wsc266", a_AT, A_AT), tasks=tasks)
    assert findings.sentences(model) == [
        "Chance model (random log-likelihoods): the calibration check, not a model to rank.",
        "On `wsc266`: A = 0.293 [0.218, 0.376], at chance (0.250; p(A > 0.250) = .2), as expected.",
        "Its 95% intervals exclude chance on 1 of 20 tasks for a (5%) and on 0 of 19 tasks for A "
        "(0%); about 5% is expected.",
    ]
    off = Model("chance", chance_model=True, ranking=Accuracy("wsc266", a_AT, A_BELOW))
    assert "expected about one run in ten" in findings.sentences(off)[1]


def test_every_sentence_of_a_model_in_order_with_a_limit():
    model = Model(
        "m",
        limit=30,
        ranking=Accuracy("wsc266", a_ABOVE, A_AT),
        reid250=Accuracy("reid250", a_AT, A_BELOW),
        winogrande=Accuracy("winogrande_dev", a_AT, A_BELOW),
    )
    said = findings.sentences(model)
    assert said[0] == (
        "Run with --limit 30: every figure is of the first documents of each task, not of the "
        "whole dataset."
    )
    assert [s.split(" ")[0] for s in said[1:]] == ["Schema", "Problem", "Reid250,", "Winogrande"]
    assert findings.sentences(Model("empty")) == []


@pytest.mark.parametrize(
    ("schemas", "expected"),
    [
        (
            [A_AT, A_BELOW],
            "No model is above chance in schema accuracy A on `wsc266` (one-sided p < 0.05): "
            "m0 and m1. Chance models, the calibration check: chance.",
        ),
        (
            [A_ABOVE, A_AT],
            "Above chance in schema accuracy A on `wsc266` (one-sided p < 0.05): m0 (A = 0.450 "
            "[0.370, 0.530]). Not above chance: m1. Chance models, the calibration check: chance.",
        ),
    ],
)
def test_the_line_over_all_models(schemas, expected):
    models = [Model(f"m{i}", ranking=Accuracy("wsc266", a_AT, e)) for i, e in enumerate(schemas)]
    models.append(Model("chance", chance_model=True, ranking=Accuracy("wsc266", a_AT, A_ABOVE)))
    assert findings.overview(models) == expected
