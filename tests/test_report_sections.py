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
    "Accuracy of every task",
    "Accuracy by scoring method (thesis Tables 4.3, 4.7, 4.11; Figure 4.1)",
    "Accuracy on perturbations of WSC266 (thesis Table 4.16, Figure 4.5)",
    "Consistency (thesis Tables 4.6, 4.20, 4.24; Figure 4.6)",
    "Associativity (thesis Tables 4.25–4.28; Figure 4.7)",
    "Reid250 and its dyads (thesis Tables 4.33, 4.38; Figures 4.9, 4.12)",
    "Model comparisons (thesis Tables 4.15, 4.32; Figures 4.4, 4.9)",
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
    assert [t for t in titles if t in TITLES] == TITLES  # the thesis's, in its order


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
