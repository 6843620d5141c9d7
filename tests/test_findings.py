"""The findings' rules on hand-made estimates: each sentence, its numbers, its verdict, and the
families whose error rate Holm's adjustment controls."""

from __future__ import annotations

import math

import pytest

from wsc_tasks import markup
from wsc_tasks.claims import findings as rules
from wsc_tasks.claims import wording
from wsc_tasks.claims.findings import Accuracy, Control, Model, Perturbation
from wsc_tasks.metrics import multiple_testing
from wsc_tasks.metrics.stats import Estimate


def _markdown(said):
    """A sentence (or the sentences of a list or tuple) as report.md shows it: each task name
    in a code span, each label escaped (the sentences mark them: ``markup``)."""
    if isinstance(said, str):
        return markup.markdown(said)
    if isinstance(said, list | tuple):
        return type(said)(_markdown(item) for item in said)
    return said


class _AsMarkdown:
    """``claims.findings`` whose functions return their sentences as Markdown."""

    def __getattr__(self, attribute):
        found = getattr(rules, attribute)
        if not callable(found) or isinstance(found, type):
            return found
        return lambda *args, **kwargs: _markdown(found(*args, **kwargs))


findings = _AsMarkdown()


def est(value, low, high, null=None, p=None, above=None, below=None, stderr=0.01) -> Estimate:
    """An estimate as the bootstrap gives it (the p's set by hand; p is two-sided)."""
    return Estimate(value, low, high, stderr, p, null, 100, 1000, above, below)


A_UNCLEAR = est(0.293, 0.218, 0.376, 0.25, p=0.3, above=0.15, below=0.86)
A_ABOVE = est(0.45, 0.37, 0.53, 0.25, p=0.0008, above=0.0004, below=1.0)
A_BELOW = est(0.072, 0.032, 0.12, 0.25, p=0.0018, above=1.0, below=0.0009)
a_ABOVE = est(0.617, 0.571, 0.665, 0.5, p=0.0002, above=0.0001, below=1.0)
a_UNCLEAR = est(0.508, 0.476, 0.54, 0.5, p=0.66, above=0.33, below=0.68)
HALF = est(0.647, 0.564, 0.729)


def test_holm_by_hand():
    # sorted .01 .02 .03 .04 with m = 4: 4·.01, 3·.02, 2·.03, 1·.04 → .04 .06 .06 .06 (monotone)
    assert multiple_testing.holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx(
        [0.06, 0.04, 0.06, 0.06]
    )
    assert multiple_testing.holm([0.5, None, 0.4]) == pytest.approx(
        [0.8, math.nan, 0.8], nan_ok=True
    )
    assert multiple_testing.holm([0.9, 0.8]) == [1.0, 1.0]
    assert multiple_testing.holm([]) == []


def test_detectable_effect_and_difference_test_by_hand():
    # (1.959964 + 0.841621) · se
    assert multiple_testing.detectable(0.0375) == pytest.approx(0.105059, abs=1e-6)
    assert multiple_testing.difference_p(0.5, 0.03, 0.5, 0.04) == pytest.approx(1.0)
    assert multiple_testing.difference_p(0.6, 0.03, 0.5, 0.04) == pytest.approx(
        0.0455, abs=1e-4
    )  # z = 2


def test_detectable_stored_z_is_scipys_to_the_last_bit():
    from scipy import stats as scipy_stats

    for (alpha, power), z in multiple_testing._DETECTABLE_Z.items():
        assert z == scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(power)
    assert multiple_testing.detectable(0.0375, 0.1) == pytest.approx((1.644854 + 0.841621) * 0.0375)


def test_verdict_needs_the_two_sided_p_and_the_interval_on_its_side():
    assert findings.verdict(est(0.3, 0.26, 0.34, 0.25, p=0.049)) == findings.ABOVE
    assert findings.verdict(est(0.3, 0.26, 0.34, 0.25, p=0.05)) == findings.UNCLEAR
    # p below 0.05 but the interval touches chance: no claim (the verdict follows the interval)
    assert findings.verdict(est(0.528, 0.500, 0.555, 0.5, p=0.049)) == findings.UNCLEAR
    assert findings.verdict(est(0.2, 0.1, 0.24, 0.25, p=0.03)) == findings.BELOW
    assert findings.verdict(est(0.2, 0.1, 0.3)) == findings.UNCLEAR  # no null: nothing to say
    # the rule before: each one-sided p alone
    old = est(0.528, 0.500, 0.555, 0.5, p=0.05, above=0.025, below=0.98)
    assert findings.verdict(old, findings.UNCORRECTED) == findings.ABOVE


def test_not_significant_is_not_distinguishable_with_what_the_interval_rules_out():
    assert findings.against_chance("A", A_UNCLEAR) == (
        "A = 0.293 [0.218, 0.376], not distinguishable from chance (0.250; p = .3); "
        "rules out A > 0.376"
    )
    assert findings.against_chance("A", A_BELOW) == (
        "A = 0.072 [0.032, 0.120], below chance (0.250; p = .002)"
    )
    assert "at chance" not in findings.against_chance("A", A_UNCLEAR).replace("from chance", "")


def test_headline_and_a_problem_accuracy_that_does_not_survive_the_schema_score():
    model = Model("m", ranking=Accuracy("wsc266", a_ABOVE, A_UNCLEAR), half_solved=HALF)
    assert findings.headline(model) == (
        "Schema accuracy on `wsc266` (the ranking task): A = 0.293 [0.218, 0.376], not "
        "distinguishable from chance (0.250; p = .3); rules out A > 0.376."
    )
    exact = Model(
        "m",
        ranking=Accuracy("wsc266", est(0.6165, 0.57, 0.66, 0.5, p=0.0002), A_UNCLEAR),
        half_solved=est(0.647, 0.56, 0.73),
    )
    assert math.isclose(0.6165, 0.293 + 0.647 / 2)
    assert findings.survival(exact) == (
        "Problem accuracy a = 0.617 [0.570, 0.660], above chance (0.500; p < .001), but the "
        "schema score A is not distinguishable from chance. Half-solved schemas (some but not all "
        "problems right): A′ = 0.647 [0.560, 0.730]; of a = 0.617, 0.293 comes from solved "
        "schemas and 0.324 from half-solved ones (a = A + A′/2)."
    )
    assert "comes from" not in findings.survival(model)
    # the leaderboard's sentence says the same, no stronger than its numbers (before: "but it
    # does not survive the schema score", as if A were shown no better than chance)
    said = findings.brief(exact)
    assert said.endswith(
        "; a = 0.617 [0.570, 0.660], above chance (0.500; p < .001), but the schema score A is "
        "not distinguishable from chance."
    )


def test_survival_when_both_are_above_and_when_a_is_not():
    both = Model("m", ranking=Accuracy("wsc266", a_ABOVE, A_ABOVE))
    assert findings.survival(both).endswith(
        "and it survives the schema score: A is above chance too."
    )
    none = Model("m", ranking=Accuracy("wsc266", a_UNCLEAR, A_UNCLEAR))
    assert findings.survival(none) == (
        "Problem accuracy a = 0.508 [0.476, 0.540], not distinguishable from chance (0.500; "
        "p = .7); rules out a > 0.540: no problem accuracy above chance for the schema score to "
        "keep."
    )


def control(task, of, a, original=None, change="without the candidates"):
    return Control(task, change, of, a, original)


def test_six_controls_are_one_family_adjusted_by_holm():
    # p = .03 alone is above chance; one of six, Holm-adjusted to .18, it is not
    borderline = est(0.646, 0.52, 0.79, 0.5, p=0.03)
    alone = Model("m", controls=[control("c0", "wsc266", borderline, a_ABOVE)])
    assert findings.explained_by_artifacts(alone) == ["wsc266"]
    six = [control("c0", "wsc266", borderline, a_ABOVE)]
    six += [control(f"c{i}", "wsc266", a_UNCLEAR, a_ABOVE) for i in range(1, 6)]
    model = Model("m", controls=six)
    assert findings.controls_above(model) == []
    assert findings.explained_by_artifacts(model) == []
    text, verdict = findings.controls(model)
    assert text.startswith(
        "Control baselines (Holm over the 6 controls): without the candidates, not "
        "distinguishable from chance on `c0` (a = 0.646 [0.520, 0.790]; p = .03, Holm-adjusted "
        "over the 6 controls .2; rules out a > 0.790)"
    )
    assert verdict == "No control is above chance: no artifact tested explains its score."
    # the rule before flagged it
    assert findings.controls_above(model, findings.UNCORRECTED) == []  # no one-sided p given
    old = [control("c0", "wsc266", est(0.646, 0.52, 0.79, 0.5, p=0.03, above=0.015))]
    assert findings.controls_above(Model("m", controls=old), findings.UNCORRECTED)


def test_an_artifact_explains_only_a_score_above_chance():
    controls = [
        control("wsc266_associative_nocands", "wsc266", a_ABOVE, a_ABOVE),
        control("winogrande_partsent", "winogrande_twins", a_ABOVE, a_UNCLEAR, "with the clause"),
        control("wsc273_nocands", "wsc273_schemas", a_UNCLEAR, a_ABOVE),
    ]
    model = Model("m", controls=controls)
    assert findings.explained_by_artifacts(model) == ["wsc266"]
    text, verdict = findings.controls(model)
    assert "above chance on `wsc266_associative_nocands` (a = 0.617 [0.571, 0.665]; p < .001, " in (
        text
    )
    assert verdict == (
        "So an artifact can explain part of its score on `wsc266`: it answers above chance "
        "without what a reader needs to resolve the pronoun. Its score on `winogrande_twins` "
        "(a = 0.508 [0.476, 0.540]) is not above chance: there is nothing there for an artifact "
        "to explain."
    )
    said = findings.brief(
        Model("m", ranking=Accuracy("wsc266", a_ABOVE, A_ABOVE), controls=controls)
    )
    assert "above chance on 2 of 3 control baselines (`wsc266_associative_nocands` and " in said
    assert said.endswith("an artifact can explain part of its score on `wsc266`.")
    assert findings.controls(Model("m")) == []


def test_perturbations_every_one_tested_and_no_superlative_without_a_difference():
    items = [
        Perturbation("p1", "switched", est(0.600, 0.49, 0.71, stderr=0.055),
                     est(-0.10, -0.19, -0.03, 0.0, p=0.004)),
        Perturbation("p2", "adjectival", est(0.586, 0.48, 0.69, stderr=0.053),
                     est(0.01, -0.09, 0.12, 0.0, p=0.9)),
        Perturbation("p3", "unbalanced", est(0.617, 0.53, 0.70, stderr=0.043),
                     est(-0.02, -0.08, 0.05, 0.0, p=0.5)),
    ]  # fmt: skip
    assert findings.perturbations(Model("m", perturbations=items), "wsc266") == (
        "Under the 3 perturbations of `wsc266` run: A (paired, perturbed − original schemas) lower "
        "on `p1`, switched (ΔA = -0.100 [-0.190, -0.030]; p = .004, Holm-adjusted over the 3 "
        "perturbations .01); no change distinguishable on `p2`, adjectival (ΔA = +0.010 "
        "[-0.090, +0.120]; p = .9, Holm-adjusted over the 3 perturbations > .9) and `p3`, "
        "unbalanced (ΔA = -0.020 [-0.080, +0.050]; p = .5, Holm-adjusted over the 3 "
        "perturbations > .9); lowest schema consistency (point estimate) `p2`, adjectival "
        "(C = 0.586 [0.480, 0.690]), not distinguishable from `p1`, switched "
        "(C = 0.600 [0.490, 0.710]) and `p3`, unbalanced (C = 0.617 [0.530, 0.700])."
    )
    clear = [
        Perturbation("p1", "switched", est(0.40, 0.33, 0.47, stderr=0.03)),
        Perturbation("p2", "adjectival", est(0.70, 0.64, 0.76, stderr=0.03)),
    ]
    assert "least consistent `p1`, switched (C = 0.400 [0.330, 0.470]): below every other" in (
        findings.perturbations(Model("m", perturbations=clear))
    )
    one = [Perturbation("p2", "adjectival", est(0.586, 0.48, 0.69))]
    assert findings.perturbations(Model("m", perturbations=one)) == (
        "Under the 1 perturbation run: schema consistency measured under one perturbation only: "
        "`p2`, adjectival (C = 0.586 [0.480, 0.690]), 41% of the schemas changing how many of "
        "their problems are right."
    )
    assert findings.perturbations(Model("m")) is None


def test_reid250_and_winogrande_lines():
    found = Accuracy("reid250", a_UNCLEAR, A_BELOW)
    assert findings.one_line("Reid250", found) == (
        "Reid250 (`reid250`): a = 0.508 [0.476, 0.540], not distinguishable from chance (0.500; "
        "p = .7); rules out a > 0.540; A = 0.072 [0.032, 0.120], below chance (0.250; p = .002)."
    )
    assert findings.one_line("Winogrande", None) is None


def test_a_chance_model_is_the_calibration_check():
    tasks = [Accuracy(f"t{i}", a_UNCLEAR, A_UNCLEAR) for i in range(18)]
    tasks += [Accuracy("t18", a_ABOVE, A_UNCLEAR), Accuracy("t19", a_UNCLEAR, None)]
    model = Model(
        "chance", chance_model=True, ranking=Accuracy("wsc266", a_UNCLEAR, A_UNCLEAR), tasks=tasks
    )
    assert findings.sentences(model) == [
        "Chance model (random log-likelihoods): the calibration check, not a model to rank.",
        "On `wsc266`: A = 0.293 [0.218, 0.376], not distinguishable from chance (0.250; p = .3); "
        "rules out A > 0.376, as expected.",
        "Its 95% intervals exclude chance on 1 of 20 tasks for a (5%) and on 0 of 19 tasks for A "
        "(0%); about 5% is expected.",
    ]
    off = Model("chance", chance_model=True, ranking=Accuracy("wsc266", a_UNCLEAR, A_BELOW))
    assert "expected one run in twenty at most" in findings.sentences(off)[1]


def test_every_sentence_of_a_model_in_order_with_a_limit():
    model = Model(
        "m",
        limit=30,
        ranking=Accuracy("wsc266", a_ABOVE, A_UNCLEAR),
        reid250=Accuracy("reid250", a_UNCLEAR, A_BELOW),
        winogrande=Accuracy("winogrande_dev", a_UNCLEAR, A_BELOW),
    )
    said = findings.sentences(model)
    assert said[0] == (
        "Run with --limit 30: every figure is of the first documents of each task, not of the "
        "whole dataset."
    )
    assert [s.split(" ")[0] for s in said[1:]] == ["Schema", "Problem", "Reid250,", "Winogrande"]
    assert findings.sentences(Model("empty")) == []


def test_the_models_above_chance_are_one_family():
    borderline = est(0.33, 0.26, 0.40, 0.25, p=0.03)
    models = [Model(f"m{i}", ranking=Accuracy("wsc266", a_UNCLEAR, e))
              for i, e in enumerate([A_ABOVE, borderline, A_UNCLEAR])]  # fmt: skip
    models.append(
        Model("chance", chance_model=True, ranking=Accuracy("wsc266", a_UNCLEAR, A_ABOVE))
    )
    tested = findings.headline_tests(models)
    assert [tested[m].family for m in ("m0", "m1", "m2", "chance")] == [3, 3, 3, 1]
    assert tested["m1"].adjusted == pytest.approx(0.06)  # 2 · .03: not above chance among three
    assert findings.overview(models, tested) == (
        "Above chance in schema accuracy A on `wsc266` (two-sided p < 0.05, Holm over the 3 "
        "models): m0 (A = 0.450 [0.370, 0.530]). Not distinguishable from chance or below it: m1 "
        "(rules out A > 0.400) and m2 (rules out A > 0.376). Chance models, the calibration "
        "check: chance."
    )
    # alone, the borderline model is above chance; its sentence quotes the family's adjustment
    assert findings.verdict(borderline) == findings.ABOVE
    assert findings.headline(models[1], tested["m1"]) == (
        "Schema accuracy on `wsc266` (the ranking task): A = 0.330 [0.260, 0.400], not "
        "distinguishable from chance (0.250; p = .03, Holm-adjusted over the 3 models .06); "
        "rules out A > 0.400."
    )
    # 100 schemas: the exact test calls 35 or more solved above chance (P ≤ 0.025 at 0.25), and
    # a model with A = 0.386 solves 35 or more with probability 0.8 (the same for every model)
    power = findings.detectable(models)
    assert power is not None and "m0 0.386 (+0.136, n = 100)" in power
    assert "80% power" in power and "m2 0.386" in power


def test_every_label_and_task_goes_through_one_helper(monkeypatch):
    monkeypatch.setattr(wording, "code", lambda text: f"<{text}>")
    monkeypatch.setattr(wording, "name", lambda text: f"«{text}»")
    models = [
        Model("m", ranking=Accuracy("wsc266", a_ABOVE, A_ABOVE),
              controls=[control("c", "wsc266", a_UNCLEAR, a_ABOVE)],
              perturbations=[Perturbation("p", "switched", est(0.6, 0.5, 0.7),
                                          est(-0.1, -0.2, 0.01, 0.0, p=0.07))],
              reid250=Accuracy("reid250", a_UNCLEAR, A_BELOW)),
        Model("chance", chance_model=True, ranking=Accuracy("wsc266", a_UNCLEAR, A_UNCLEAR)),
    ]  # fmt: skip
    said = " ".join(
        [findings.overview(models), findings.detectable(models) or ""]
        + [s for m in models for s in findings.sentences(m, of="wsc266")]
        + [findings.brief(m) for m in models]
    )
    assert "`" not in said
    for task in ("wsc266", "c", "p", "reid250"):
        assert f"<{task}>" in said
    assert "«m»" in said and "«chance»" in said


def test_a_large_boards_overview_names_the_first_models_and_counts_the_rest():
    """The overview of 40 models names 5 of each list and counts the others, with the range of
    the figure it quotes: the findings stay a few lines on a board of any size."""

    def ranked(i: int) -> Model:
        schema = est(0.30 + i / 1000, 0.2, 0.36 + i / 1000, 0.25)
        return Model(f"m{i:02d}", ranking=Accuracy("wsc266", a_UNCLEAR, schema))

    checks = [
        Model(f"c{i}", chance_model=True, ranking=Accuracy("wsc266", a_UNCLEAR, A_UNCLEAR))
        for i in range(7)
    ]
    models = [ranked(i) for i in range(40)] + checks
    said = markup.plain(rules.overview(models))
    assert "m04 (rules out A > 0.364) and 35 more models (their figures: the tables; " in said
    assert "upper ends of A 0.365 to 0.399)." in said and "m05" not in said
    assert "Chance models, the calibration check: c0, c1, c2, c3, c4 and 2 more models" in said
    power = markup.plain(rules.detectable(models) or "")
    assert "and 35 more models" in power and "m05" not in power
    assert rules.overview(models[:5]).count("rules out") == 5  # five or fewer: all named
