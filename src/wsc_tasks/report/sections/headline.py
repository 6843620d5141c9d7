"""Headline accuracy of every task of every model, with p against chance, grouped by role.

The ranking task leads; then the other tasks by their dataset's catalog role (full datasets,
adversarial ones, subsets, perturbations, control baselines, other formulations), in catalog order,
each task's models together so they read side by side.
"""

from __future__ import annotations

from wsc_tasks.data import catalog
from wsc_tasks.metrics.registry import ACC, TaskKind
from wsc_tasks.report.estimates import outcomes
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import Context, Figure, Section
from wsc_tasks.report.tables import Table
from wsc_tasks.runs.folders import TaskRun

ORDER = 10
RANKING = "ranking task"  # the role column of the ranking task's rows
OTHER = "other"  # a dataset the catalog does not know


def role(task: TaskRun) -> str:
    """The role column: the ranking task, the catalog role of its dataset, or ``OTHER``."""
    if task.dataset == catalog.RANKING:
        return RANKING
    try:
        return catalog.role_of(task.dataset).kind if task.dataset else OTHER
    except KeyError:
        return OTHER


def order(task: TaskRun) -> tuple[int, int, str]:
    """Ranking task first, then role by role, in catalog order, then by name."""
    roles = [RANKING, *catalog.ROLE_KINDS, OTHER]
    names = list(catalog.SPECS)
    place = names.index(task.dataset) if task.dataset in names else len(names)
    return roles.index(role(task)), place, task.task


def build(context: Context) -> Section:
    table = Table(
        "overview",
        "Headline accuracy of every task, with p against chance",
        ["model", "task", "role", "documents", "a", "A"],
    )
    bars = []
    found = {  # the tasks asked as questions have a section of their own (``questions``)
        name: task
        for run in context.runs
        for name, task in run.tasks.items()
        if task.kind is not TaskKind.QUESTION
    }
    for name in sorted(found, key=lambda n: order(found[n])):
        for run in context.runs:
            task = run.tasks.get(name)
            cells = context.accuracy(task) if task is not None else None
            if task is None or cells is None:
                continue
            documents = len(outcomes(task, ACC) or [])
            table.rows.append([run.label, name, role(task), documents, *cells])
            for panel, cell in zip(("a", "A"), cells, strict=True):
                if cell is not None:
                    bars.append(Bar(panel, name, run.label, cell.estimate, role(task)))
    section = Section("Accuracy of every task, by role", tables=[table] if table.rows else [])
    if not table.rows:
        section.skipped = "needs a task with its samples file (lm-eval's --log_samples)"
        return section
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
        "task's headline scoring method. p: two-sided, against chance (a = 0.5; A = the mean of "
        "2^-size over schemas, 0.25 for pairs), with the side of chance the value lies on. Rows: "
        f"the ranking task (`{catalog.RANKING}`) first, then each task's dataset by its role "
        "(full, adversarial, subset, perturbation, control, formulation)."
    )
    return section
