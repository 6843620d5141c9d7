"""Accuracy on Reid250 and every task made from it, against WSC266 and Reid250 (4.33, 4.38)."""

from __future__ import annotations

from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC, TaskKind
from wsc_tasks.report.estimates import outcomes
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import ACCURACIES, Context, Figure, Section
from wsc_tasks.report.tables import Delta, Interval, Table
from wsc_tasks.runs.folders import Run

ORDER = 60
REID250, WSC266 = "reid250", "wsc266"  # the root dataset of the section, and its comparison


def tasks_of_reid250(runs: list[Run]) -> list[str]:
    """The tasks on a dataset made from Reid250 (its inversion, dyads, kinds…), by name; those
    asked as questions have a section of their own."""
    return sorted(
        {
            n
            for run in runs
            for n, task in run.tasks.items()
            if task.root == REID250 and task.kind is not TaskKind.QUESTION
        }
    )


def build(context: Context) -> Section:
    section = Section(
        "Accuracy on Reid250 and its dyads, against WSC266 and Reid250 "
        "(thesis Tables 4.33, 4.38; Figures 4.9, 4.12)"
    )
    names = tasks_of_reid250(context.runs)
    table = Table(
        "reid250",
        "Accuracy on Reid250 tasks, p against chance; Δ against WSC266 (independent "
        "schemas) and against reid250 (paired when the schemas are the same)",
        [
            "model",
            "task",
            "a",
            "A",
            "Δa vs wsc266",
            "ΔA vs wsc266",
            "Δa vs reid250",
            "ΔA vs reid250",
        ],
    )
    estimates = context.estimates
    bars = []
    for run in context.runs:
        base, wsc = run.task_on(REID250), run.task_on(WSC266)
        for name in names:
            task = run.tasks.get(name)
            if task is None or outcomes(task, ACC) is None:
                continue
            cells: list[Interval | Delta | None] = [
                estimates.interval(outcomes(task, ACC), ACCURACIES["a"], True),
                estimates.interval(outcomes(task, SCHEMA_ACC), ACCURACIES["A"], True),
            ]
            for other in (wsc, base):
                for metric in (ACC, SCHEMA_ACC):
                    if other is None or other is task:
                        cells.append(None)
                    else:
                        cells.append(estimates.compare(task, other, metric))
            table.rows.append([run.label, name, *cells])
            for panel, cell in zip(("a", "A"), cells[:2], strict=True):
                if cell is not None:
                    bars.append(Bar(panel, name, run.label, cell.estimate))
    if not table.rows:
        section.skipped = "needs a reid250* task"
        return section
    section.tables.append(table)
    section.figures.append(
        Figure("reid250", bars, "Accuracy on Reid250 tasks", "Reid250 tasks (95% intervals)")
    )
    section.text = (
        "Dyads are treated as independent schemas (thesis §3.8.3); schema accuracy follows "
        "each task's grouping."
    )
    return section
