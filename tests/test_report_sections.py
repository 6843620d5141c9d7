"""The report's sections: found as modules in order, built once, their bootstraps run after.

Built from the committed chance-model outputs (results/chance/lm_eval), so no model runs.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from wsc_tasks import markup
from wsc_tasks.metrics import stats
from wsc_tasks.metrics.registry import TaskKind
from wsc_tasks.report import build as report
from wsc_tasks.report import figures, sections, writing
from wsc_tasks.report.estimates import Estimates, Pending
from wsc_tasks.report.sections import Context, Section
from wsc_tasks.report.tables import Delta, Interval
from wsc_tasks.runs.folders import load_run

RESULTS = Path(__file__).resolve().parents[1] / "results"


@pytest.fixture(scope="module")
def chance():
    return load_run(RESULTS / "chance" / "lm_eval", "chance")


def _cells(section: Section) -> list[Interval | Delta]:
    found = [c for t in section.tables for row in t.rows for c in row]
    return [c for c in found if isinstance(c, Interval | Delta)]


MODULES = sorted(p.stem for p in Path(sections.__file__).parent.glob("[!_]*.py"))


def _module(name: str):
    return importlib.import_module(f"{sections.__name__}.{name}")


# the contract every section module meets: adding one needs no edit of this file


def test_the_sections_are_the_modules_in_order(chance):
    orders = {name: _module(name).ORDER for name in MODULES}
    assert all(isinstance(order, int) for order in orders.values())
    assert len(set(orders.values())) == len(orders), orders  # one place each
    assert [b.__module__.rsplit(".", 1)[-1] for b in sections.builders()] == sorted(
        MODULES, key=orders.__getitem__
    )
    # the findings first, the inputs next, the glossary last; the thesis's sections between
    assert min(orders, key=orders.__getitem__) == "findings"
    assert max(orders, key=orders.__getitem__) == "glossary"


@pytest.mark.parametrize("name", MODULES)
def test_every_section_builds_titled_tables_and_figures(name, chance, smollm2):
    for runs in ([chance], [smollm2, chance]):
        section = _module(name).build(Context(runs, Estimates(20, 0)))
        assert isinstance(section, Section) and section.title
        if "(thesis" in section.title:  # what the section shows, then the thesis it follows
            assert section.title.index("(thesis") > 20, section.title
        if section.skipped:
            assert not section.tables and not section.figures
            continue
        assert section.text or section.tables or section.figures
        for table in section.tables:
            assert table.name and table.title and table.columns, table.name
            assert all(len(row) == len(table.columns) for row in table.rows), table.name
        for figure in section.figures:
            assert figure.stem and figure.title and figure.caption and figure.bars, figure.stem


def test_no_two_sections_write_the_same_file(smollm2, chance):
    context = Context([smollm2, chance], Estimates(20, 0))
    built = [build(context) for build in sections.builders()]
    tables = [t.name for s in built for t in s.tables]
    stems = [f.stem for s in built for f in s.figures]
    assert len(tables) == len(set(tables)) and len(stems) == len(set(stems))
    narrow = [f"{stem}{figures.NARROW}" for stem in stems]  # each figure's phone layout
    assert not set(narrow) & set(stems)
    assert len({s.title for s in built}) == len(built)


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
    assert len(calls) == len(real) == len(built) == len(MODULES)


def test_a_sections_text_may_quote_its_estimates(chance):
    estimates = Estimates(20, 0)
    task = chance.task_on("wsc266", TaskKind.SCHEMA)
    assert task is not None
    cell = estimates.interval(task.values["acc"], task.forms["acc"], p=True)
    assert cell is not None
    section = Section("Findings", text=lambda: f"a = {cell.estimate.value:.3f}")
    estimates.compute(quiet=True)
    assert writing.text(section) == f"a = {task.reported('acc'):.3f}"


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
    assert first.title.startswith("Findings") and callable(first.text)
    context.estimates.compute(quiet=True)
    said = markup.markdown(writing.text(first))  # its names marked: as report.md shows them
    for sentence in (
        "No model is shown above chance in schema accuracy A on `wsc266` (two-sided p < 0.05): "
        "smollm2-135m (rules out A > 0.",
        "Chance models, the calibration check: chance.",
        "Power, on `wsc266`: per model, the smallest true A at which it would be found above "
        "chance with 80% power (the exact test of its schemas",
        "- Schema accuracy on `wsc266` (the ranking task): A = 0.293 [",
        "- Control baselines (Holm over the 6 controls): without the candidates, ",
        "`wsc266_associative_nocands` (a = 0.771 [",  # 24 schemas: the sign test, not R = 30
        "- Under the 4 perturbations of `wsc266` run: A (paired, perturbed − original schemas) ",
        "- Reid250, adversarial schemas (`reid250`): a = 0.508 [",
        "- Winogrande (`winogrande_dev`): a = 0.504 [",
        "- Its 95% intervals exclude chance on ",
    ):
        assert sentence in said, sentence
    assert said.index("**smollm2-135m** (`hf`)") < said.index("**chance** (`wsc-chance`)")


def test_a_symbol_in_a_column_header_has_its_meaning():
    from wsc_tasks.report.symbols import GLOSSARY, describe

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
    from wsc_tasks.markup import plain
    from wsc_tasks.report.tables import Table, display, signed_p

    below = stats.Estimate(0.1, 0.0, 0.2, 0.05, 0.007, 0.25, 40, 100, 0.99, 0.004)
    above = stats.Estimate(0.72, 0.6, 0.8, 0.05, 0.0004, 0.25, 40, 100, 0.0002, 1.0)
    assert signed_p(below) == ".007 (below)" and signed_p(above) == "< .001 (above)"
    table = Table("t", "t", ["model", "A"], [["x", Interval(below, True)], ["y", Interval(above)]])
    headers, rows = display(table)  # a header and a text cell as user text: marked
    assert ([plain(h) for h in headers], [[plain(c) for c in row] for row in rows]) == (
        ["model", "A", "p (A)"],
        [["x", "0.100 [0.000, 0.200]", ".007 (below)"], ["y", "0.720 [0.600, 0.800]", "–"]],
    )


def test_many_models_are_compared_each_with_the_next_by_schema_accuracy(chance, smollm2):
    from dataclasses import replace

    from wsc_tasks.report.sections import models

    runs = [replace(run, label=f"{run.label}-{i}") for i in range(4) for run in (chance, smollm2)]
    assert len(runs) > models.ALL_PAIRS
    built = models.build(Context(runs, Estimates(20, 0)))
    (table,) = built.tables
    rows = [row[1] for row in table.rows if row[0] == "wsc266"]
    # smollm2's A on wsc266 is above chance's: its four copies first (ties in the order given)
    order = [f"smollm2-135m-{i}" for i in range(4)] + [f"chance-{i}" for i in range(4)]
    assert rows == [f"{a} − {b}" for a, b in zip(order, order[1:], strict=False)]
    assert any("compare each model with the next below it" in note for note in built.notes)
    few = models.build(Context(runs[:3], Estimates(20, 0)))
    assert len([r for r in few.tables[0].rows if r[0] == "wsc266"]) == 3  # every pair
    assert not few.notes
