"""The report's sections: found as modules in order, built once, their bootstraps run after.

Built from the committed chance-model outputs (results/chance/lm_eval), so no model runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from wsc_tasks.metrics import stats
from wsc_tasks.metrics.registry import TaskKind
from wsc_tasks.reporting import rendering, report, sections
from wsc_tasks.reporting.estimates import Estimates, Pending
from wsc_tasks.reporting.runs import load_run
from wsc_tasks.reporting.sections import Context, Section
from wsc_tasks.reporting.tables import Delta, Interval

RESULTS = Path(__file__).resolve().parents[1] / "results"
TITLES = [
    "Findings: what the numbers say, per model",
    "Models run: lm-eval model, arguments and tasks",
    "Accuracy of every task, by role",
    "Accuracy by scoring method (thesis Tables 4.3, 4.7, 4.11; Figure 4.1)",
    "Accuracy on perturbations of WSC266 against the schemas each was made from "
    "(thesis Table 4.16, Figure 4.5)",
    "Consistency under perturbation and between scoring methods "
    "(thesis Tables 4.6, 4.20, 4.24; Figure 4.6)",
    "Associative and non-associative schemas, with and without the candidates "
    "(thesis Tables 4.25–4.28; Figure 4.7)",
    "Accuracy on Reid250 and its dyads, against WSC266 and Reid250 "
    "(thesis Tables 4.33, 4.38; Figures 4.9, 4.12)",
    "Differences between models on the same schemas (thesis Tables 4.15, 4.32; Figures 4.4, 4.9)",
    "Has the model seen the test? The contamination check (Oren et al. 2024)",
    "Decision rule of the findings: false-claim rates and power, simulated",
    "Glossary: every symbol of this report",
]


@pytest.fixture(scope="module")
def chance():
    return load_run(RESULTS / "chance" / "lm_eval", "chance")


def _cells(section: Section) -> list[Interval | Delta]:
    found = [c for t in section.tables for row in t.rows for c in row]
    return [c for c in found if isinstance(c, Interval | Delta)]


def test_the_sections_are_the_modules_in_order(chance):
    modules = sorted(p.stem for p in Path(sections.__file__).parent.glob("[!_]*.py"))
    assert len(sections.builders()) == len(modules)  # every module is a section
    context = Context([chance], Estimates(20, 0))
    titles = [build(context).title for build in sections.builders()]
    assert titles == TITLES  # the findings first, the thesis's in its order, the glossary last
    for title in titles[3:-2]:  # what the section shows, then the thesis (or paper) it follows
        assert max(title.find("(thesis"), title.find("(Oren et al.")) > 20, title


def test_every_bootstrap_is_asked_once_and_computed_after_every_section(chance):
    context = Context([chance], Estimates(20, 0))
    built = [build(context) for build in sections.builders()]
    asked = list(context.estimates.pending)
    cells = [c for s in built for c in _cells(s)]
    bars = [b for s in built for f in s.figures for b in f.bars]
    shown = {id(c.estimate) for c in cells} | {id(b.estimate) for b in bars}
    assert len(asked) == len({id(p) for p in asked}) > 100  # each asked once
    assert {id(p) for p in asked} == shown  # and each shown in a table or a figure
    with pytest.raises(RuntimeError, match="before the report's bootstraps were computed"):
        _ = asked[0].value
    context.estimates.compute(quiet=True)
    assert context.estimates.pending == []
    cell = cells[0]
    assert isinstance(cell.estimate, Pending) and isinstance(cell.estimate, stats.Estimate)
    assert cell.estimate.iters == 20 and cell.estimate.low <= cell.estimate.value


def test_the_report_builds_its_sections_once(chance, monkeypatch):
    calls = []
    real = sections.builders()

    def counted(build):
        def wrapper(context):
            calls.append(build.__module__)
            return build(context)

        return wrapper

    monkeypatch.setattr(sections, "builders", lambda: [counted(b) for b in real])
    built = report.build([chance], 20, 0, quiet=True)
    assert len(calls) == len(real) == len(built) >= len(TITLES)


def test_a_sections_text_may_quote_its_estimates(chance):
    estimates = Estimates(20, 0)
    task = chance.task_on("wsc266", TaskKind.SCHEMA)
    assert task is not None
    cell = estimates.interval(task.values["acc"], task.forms["acc"], p=True)
    assert cell is not None
    section = Section("Findings", text=lambda: f"a = {cell.estimate.value:.3f}")
    estimates.compute(quiet=True)
    assert rendering.text(section) == f"a = {task.reported('acc'):.3f}"


def test_a_bootstrap_asked_twice_is_run_once(chance):
    estimates = Estimates(20, 0)
    task = chance.task_on("wsc266", TaskKind.SCHEMA)
    first = estimates.interval(task.values["acc"], task.forms["acc"], p=True)
    again = estimates.interval(task.values["acc"], task.forms["acc"], p=True)
    other = estimates.interval(task.values["acc"], task.forms["acc"])  # no p: another bootstrap
    assert first.estimate is again.estimate and other.estimate is not first.estimate
    copied = list(task.values["acc"])  # the same documents in another list: the same bootstrap
    assert estimates.interval(copied, task.forms["acc"], p=True).estimate is first.estimate
    assert len(estimates.pending) == 2


@pytest.fixture(scope="module")
def smollm2():
    return load_run(RESULTS / "smollm2-135m" / "lm_eval", "smollm2-135m")


def test_the_findings_quote_the_tables_estimates_and_come_first(smollm2, chance):
    context = Context([smollm2, chance], Estimates(30, 0))
    built = [build(context) for build in sections.builders()]
    cells = {id(c.estimate) for s in built for c in _cells(s)}
    bars = {id(b.estimate) for s in built for f in s.figures for b in f.bars}
    assert {id(p) for p in context.estimates.pending} == cells | bars  # nothing only in a sentence
    first = built[0]
    assert first.title == TITLES[0] and callable(first.text)
    context.estimates.compute(quiet=True)
    said = rendering.text(first)
    for sentence in (
        "No model is above chance in schema accuracy A on `wsc266` (two-sided p < 0.05): "
        "smollm2-135m (rules out A > 0.",
        "Chance models, the calibration check: chance.",
        "Power: the smallest A on `wsc266` a model alone would be found above chance at with "
        "80% power",
        "- Schema accuracy on `wsc266` (the ranking task): A = 0.293 [",
        "- Control baselines (Holm over the 6 controls): without the candidates, ",
        "`wsc266_associative_nocands` (a = 0.771 [",  # with R = 30, p ≥ 1/31: Holm's .2
        "- Under the 4 perturbations of `wsc266` run: A (paired, perturbed − original schemas) ",
        "- Reid250, adversarial schemas (`reid250`): a = 0.508 [",
        "- Winogrande (`winogrande_dev`): a = 0.504 [",
        "- Its 95% intervals exclude chance on ",
    ):
        assert sentence in said, sentence
    assert said.index("**smollm2-135m** (`hf`)") < said.index("**chance** (`wsc-chance`)")


def test_a_symbol_in_a_column_header_has_its_meaning():
    from wsc_tasks.reporting.symbols import GLOSSARY, describe

    assert describe("A") == "share of schemas with every problem right" == GLOSSARY["A"]
    assert describe("C̃").startswith("share of schemas solved both before and after")
    assert describe("p (A)").startswith("p-value of A: two-sided")
    assert describe("ΔA") == "difference in A: share of schemas with every problem right"
    assert describe("a (equal length)") == (
        "share of problems answered correctly, on the problems whose two answers have the same "
        "number of tokens"
    )
    assert describe("A wsc273_nocands") == (
        "share of schemas with every problem right (wsc273_nocands)"
    )
    assert describe("(r − r_B)/(1 − r_B)") == "relative gain over the no-cands baseline (eq. 4.2)"
    assert describe("model") is None and describe("task") is None
    for symbol in ("a", "A", "A′", "A″", "c", "c_a", "c_p", "ĉ_p", "C̃", "C", "C*", "C_a", "C_p",
                   "Ĉ_p", "r", "r_B", "p", "Δ"):  # fmt: skip
        assert GLOSSARY[symbol], symbol


def test_a_p_against_chance_says_on_which_side_the_value_lies():
    from wsc_tasks.reporting.tables import Table, display, signed_p

    below = stats.Estimate(0.1, 0.0, 0.2, 0.05, 0.007, 0.25, 40, 100, 0.99, 0.004)
    above = stats.Estimate(0.72, 0.6, 0.8, 0.05, 0.0004, 0.25, 40, 100, 0.0002, 1.0)
    assert signed_p(below) == ".007 (below)" and signed_p(above) == "< .001 (above)"
    table = Table("t", "t", ["model", "A"], [["x", Interval(below, True)], ["y", Interval(above)]])
    assert display(table) == (
        ["model", "A", "p (A)"],
        [["x", "0.100 [0.000, 0.200]", ".007 (below)"], ["y", "0.720 [0.600, 0.800]", "–"]],
    )
