"""Consistency of each consistency task, and between scoring methods (Tables 4.6, 4.20, 4.24)."""

from __future__ import annotations

from wsc_tasks.metrics import registry
from wsc_tasks.metrics.registry import Key, TaskKind
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import Context, Figure, Section
from wsc_tasks.report.sections.methods import DATASETS as METHOD_DATASETS
from wsc_tasks.report.tables import Interval, Table
from wsc_tasks.runs.folders import TaskRun

ORDER = 40
_RECORDS = registry.select(value=registry.PAIR, kind="consistency")
PROBLEM = tuple(m.name for m in _RECORDS if m.level == "problem")
SCHEMA = tuple(m.name for m in _RECORDS if m.level == "schema")
SYMBOLS = {m.name: m.symbol for m in _RECORDS}
# what a schema transformation (no problem matched to a problem) reports
SCHEMA_ONLY = tuple(m.symbol for m in _RECORDS if m.level == "schema" and not m.problem_matched)
SHOWN = ("schema_consistency", "consistent_schema_acc")  # the figure's panels
PAIRED = SHOWN[0]  # reported for every method pair a task ran, so it finds the pairs


def build(context: Context) -> Section:
    section = Section(
        "Consistency under perturbation and between scoring methods "
        "(thesis Tables 4.6, 4.20, 4.24; Figure 4.6)"
    )
    problem = Table(
        "consistency_problems",
        "Problem consistency metrics (problem transformations)",
        ["model", "task", *[SYMBOLS[m] for m in PROBLEM]],
    )
    schema = Table(
        "consistency_schemas",
        "Schema consistency metrics",
        ["model", "task", *[SYMBOLS[m] for m in SCHEMA]],
    )
    bars = []
    for run in context.runs:
        for task in run.tasks.values():
            for pair, label in changes(task):
                p_cells, s_cells = (
                    [_cell(context, task, Key(m, pair=pair).name) for m in records]
                    for records in (PROBLEM, SCHEMA)
                )
                if any(p_cells):
                    problem.rows.append([run.label, label, *p_cells])
                if any(s_cells):
                    schema.rows.append([run.label, label, *s_cells])
                for metric in SHOWN:
                    cell = s_cells[SCHEMA.index(metric)]
                    if cell is not None:
                        group = "perturbations" if pair is None else "scoring-method changes"
                        bars.append(Bar(SYMBOLS[metric], label, run.label, cell.estimate, group))
    section.tables = [t for t in (problem, schema) if t.rows]
    if not section.tables:
        section.skipped = "needs a *_consistency task, or several scoring methods"
        return section
    section.figures.append(
        Figure(
            "consistency",
            bars,
            "Schema consistency C and consistent schema accuracy C_a",
            "Consistency (95% intervals)",
            chance=None,
            xlabel="share",
        )
    )
    section.text = (
        "Rows named `a → b` are the scoring-method change from method a to method b on the "
        "same task (thesis Table 4.6); the others are the consistency tasks: a schema "
        "against its perturbation (Table 4.20). A schema transformation (inversion) has only "
        f"the schema metrics {', '.join(SCHEMA_ONLY)}."
    )
    return section


def _cell(context: Context, task: TaskRun, name: str) -> Interval | None:
    values = task.values.get(name)
    if not values or name not in task.forms:
        return None
    return context.estimates.interval(values, task.forms[name])


def changes(task: TaskRun) -> list[tuple[tuple[str, str] | None, str]]:
    """(method pair, row label) of each change the task measures consistency under: None for a
    consistency task, a method pair for a method task run with several methods."""
    if task.kind is TaskKind.CONSISTENCY:
        measured = any(m.name in task.forms for m in _RECORDS)
        return [(None, task.task)] if measured else []
    if task.kind is not TaskKind.SCHEMA or task.dataset not in METHOD_DATASETS:
        return []
    found = {
        name: pair
        for name, key in registry.parse_all(task.forms).items()
        if key.record == PAIRED and (pair := key.pair) is not None
    }
    return [(pair, f"{task.task}: {pair[0]} → {pair[1]}") for _, pair in sorted(found.items())]
