"""Differences between models on the same schemas (thesis Tables 4.15, 4.32; Figures 4.4, 4.9)."""

from __future__ import annotations

from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC
from wsc_tasks.reporting.estimates import form, outcomes
from wsc_tasks.reporting.figures import Bar
from wsc_tasks.reporting.runs import Run, TaskRun
from wsc_tasks.reporting.sections import Context, Figure, Section
from wsc_tasks.reporting.sections.reid250 import tasks_of_reid250
from wsc_tasks.reporting.tables import Table

ORDER = 70
# the datasets of thesis Table 4.15; every task made from Reid250 follows (Table 4.32)
DATASETS = ("wsc266", "wsc273_schemas", "winogrande_twins")


def build(context: Context) -> Section:
    section = Section(
        "Differences between models on the same schemas "
        "(thesis Tables 4.15, 4.32; Figures 4.4, 4.9)"
    )
    if len(context.runs) < 2:
        section.skipped = "needs two or more models (give several folders)"
        return section
    compared: list[tuple[str, list[tuple[Run, TaskRun]]]] = [
        (name, found) for name in DATASETS if len(found := context.tasks(name)) > 1
    ]
    for name in tasks_of_reid250(context.runs):
        compared.append((name, [(r, r.tasks[name]) for r in context.runs if name in r.tasks]))
    table = Table(
        "models",
        "Differences between models on the same schemas (paired), with p",
        ["task", "models", "Δa", "Δa (equal)", "ΔA", "ΔA (equal)"],
    )
    estimates = context.estimates
    bars = []
    for name, found in compared:
        for i, (run_a, task_a) in enumerate(found):
            for metric, panel in ((ACC, "a"), (SCHEMA_ACC, "A")):
                cell = estimates.interval(outcomes(task_a, metric), form(metric))
                if cell is not None:
                    bars.append(Bar(panel, name, run_a.label, cell.estimate))
            for run_b, task_b in found[i + 1 :]:
                cells = [
                    estimates.compare(task_b, task_a, metric, equal)
                    for metric in (ACC, SCHEMA_ACC)
                    for equal in (False, True)
                ]
                table.rows.append([name, f"{run_b.label} − {run_a.label}", *cells])
    if not table.rows:
        section.skipped = f"needs a task run by two models ({', '.join(DATASETS)})"
        return section
    section.tables.append(table)
    section.figures.append(
        Figure(
            "models",
            bars,
            "Accuracy of each model on the tasks two or more models ran",
            "Accuracy of each model on the tasks compared above (95% intervals)",
        )
    )
    return section
