"""Headline accuracy of every task of every model, with p against chance."""

from __future__ import annotations

from wsc_tasks.reporting.estimates import outcomes
from wsc_tasks.reporting.figures import Bar
from wsc_tasks.reporting.sections import ACCURACIES, Context, Figure, Section
from wsc_tasks.reporting.tables import Table

ORDER = 10


def build(context: Context) -> Section:
    table = Table(
        "overview",
        "Headline accuracy of every task, with p against chance",
        ["model", "task", "documents", "a", "A"],
    )
    bars = []
    for run in context.runs:
        for name, task in run.tasks.items():
            a, big_a = outcomes(task, "acc"), outcomes(task, "schema_acc")
            if a is None:
                continue
            cells = [context.estimates.interval(a, ACCURACIES["a"], True)]
            cells.append(context.estimates.interval(big_a, ACCURACIES["A"], True))
            table.rows.append([run.label, name, len(a), *cells])
            for panel, cell in zip(("a", "A"), cells, strict=True):
                if cell is not None:
                    bars.append(Bar(panel, name, run.label, cell.estimate))
    section = Section("Accuracy of every task", tables=[table])
    if bars:
        section.figures.append(
            Figure(
                "overview",
                bars,
                "Headline accuracy by task",
                "Headline accuracy of every task (95% intervals)",
            )
        )
    section.text = (
        "a: problem accuracy, A: schema accuracy (every problem of a schema right), under each "
        "task's headline scoring method. p: against chance (a = 0.5; A = the mean of 2^-size "
        "over schemas, 0.25 for pairs)."
    )
    return section
