"""What was run: each model's label, lm-eval model, arguments and number of tasks."""

from __future__ import annotations

from wsc_tasks.paths import CHANCE_MODEL
from wsc_tasks.reporting.sections import Context, Section
from wsc_tasks.reporting.tables import Table

ORDER = 5


def build(context: Context) -> Section:
    table = Table(
        "runs",
        "The models of this report, as lm-eval ran them",
        ["model", "kind", "lm-eval model", "model_args", "tasks"],
    )
    for run in context.runs:
        kind = "chance model" if run.model == CHANCE_MODEL else "model"
        table.rows.append([run.label, kind, run.model, run.model_args, len(run.tasks)])
    return Section("Models run: lm-eval model, arguments and tasks", tables=[table])
