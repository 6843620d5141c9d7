"""What was run: each model's label, lm-eval model, arguments and number of tasks; where a run was
not made by this package, who scored it (``runs.foreign``: harness, method, num_fewshot)."""

from __future__ import annotations

from wsc_tasks.paths import CHANCE_MODEL
from wsc_tasks.report.sections import Context, Section
from wsc_tasks.report.tables import Table
from wsc_tasks.runs.folders import Run

ORDER = 5


def build(context: Context) -> Section:
    table = Table(
        "runs",
        "The models of this report, as lm-eval ran them",
        ["model", "kind", "lm-eval model", "model_args", "tasks"],
    )
    foreign = any(run.foreign() for run in context.runs)
    if foreign:  # who scored each model's problems, beside it: a foreign run's method and shots
        table.columns.insert(2, "scored by")
    for run in context.runs:
        kind = "chance model" if run.model == CHANCE_MODEL else "model"
        scored = [scored_by(run)] if foreign else []
        table.rows.append([run.label, kind, *scored, run.model, run.model_args, len(run.tasks)])
    return Section("Models run: lm-eval model, arguments and tasks", tables=[table])


def scored_by(run: Run) -> str:
    """A foreign run's harness, task, scoring method and num_fewshot (``Origin.describe``), or
    this package's tasks."""
    own = ["this package's tasks"] if any(t.origin is None for t in run.tasks.values()) else []
    return "; ".join([*(o.describe() for o in run.foreign()), *own])
