"""Differences between models on the same schemas (thesis Tables 4.15, 4.32; Figures 4.4, 4.9)."""

from __future__ import annotations

import math

from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC
from wsc_tasks.report.estimates import form, outcomes
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import Context, Figure, Section
from wsc_tasks.report.sections.reid250 import tasks_of_reid250
from wsc_tasks.report.tables import Table
from wsc_tasks.runs.folders import Run, TaskRun

ORDER = 70
# up to this many models every pair is compared; beyond it, each model with the next below it
# by A on the task (N − 1 pairs, not N(N − 1)/2: a report of many models stays linear)
ALL_PAIRS = 6
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
        for run_a, task_a in found:
            for metric, panel in ((ACC, "a"), (SCHEMA_ACC, "A")):
                cell = estimates.interval(outcomes(task_a, metric), form(metric))
                if cell is not None:
                    bars.append(Bar(panel, name, run_a.label, cell.estimate))
        for (run_b, task_b), (run_a, task_a) in _pairs(found):
            cells = [
                estimates.compare(task_b, task_a, metric, equal)
                for metric in (ACC, SCHEMA_ACC)
                for equal in (False, True)
            ]
            table.rows.append([name, f"{run_b.label} − {run_a.label}", *cells])
    if any(len(found) > ALL_PAIRS for _, found in compared):
        section.notes.append(
            f"Tasks run by more than {ALL_PAIRS} models compare each model with the next below "
            "it by schema accuracy A on the task (ties in the order given), not every pair"
        )
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


def _pairs(found: list[tuple[Run, TaskRun]]) -> list[tuple[tuple[Run, TaskRun], ...]]:
    """The (b, a) pairs whose difference b − a the table shows: every later model with each
    earlier one, or, with more than ``ALL_PAIRS`` models, each model with the next below it by A
    (a where A is undefined)."""
    if len(found) <= ALL_PAIRS:
        return [(b, a) for i, a in enumerate(found) for b in found[i + 1 :]]

    def accuracy(item: tuple[Run, TaskRun]) -> float:
        for metric in (SCHEMA_ACC, ACC):
            values = outcomes(item[1], metric)
            value = form(metric)(values) if values else math.nan
            if not math.isnan(value):
                return value
        return -math.inf

    ranked = sorted(found, key=accuracy, reverse=True)  # stable: ties keep the order given
    return [(ranked[i], ranked[i + 1]) for i in range(len(ranked) - 1)]
