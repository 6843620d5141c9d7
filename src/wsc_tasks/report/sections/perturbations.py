"""Accuracy on the perturbations of WSC266 against the schemas they were made from (Table 4.16)."""

from __future__ import annotations

from typing import Any

from wsc_tasks.data import catalog
from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC, TaskKind
from wsc_tasks.report.estimates import form, outcomes
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import ACCURACIES, Context, Figure, Section
from wsc_tasks.report.tables import Table
from wsc_tasks.runs.folders import Run, TaskRun, try_pair_documents

ORDER = 30
ORIGINAL = "wsc266"
# from the catalog's roles: a new perturbation of WSC266 is a new row, labelled by its change
PERTURBATIONS = tuple(catalog.datasets(catalog.PERTURBATION, of=ORIGINAL))
LABELS = {name: catalog.role_of(name).change for name in PERTURBATIONS}
WHOLE = "original (all)"  # the figure's row of every WSC266 schema
SCHEMA_TRANSFORMATIONS = {  # matched by schema, not problem by problem
    name
    for name in catalog.datasets(catalog.PERTURBATION)
    if not catalog.role_of(name).problem_level
}


def build(context: Context) -> Section:
    section = Section(
        "Accuracy on perturbations of WSC266 against the schemas each was made from "
        "(thesis Table 4.16, Figure 4.5)"
    )
    table = Table(
        "perturbations",
        "Accuracy on each perturbation of WSC266 and on the original schemas it was made from "
        "(the same schemas); Δ = perturbation − original (paired), with p",
        ["model", "perturbation", "schemas", "a original", "a", "Δa", "A original", "A", "ΔA"],
    )
    estimates = context.estimates
    bars = []
    for run in context.runs:
        original = run.task_on(ORIGINAL)
        rows = []
        for name in PERTURBATIONS:
            found = pair(run, original, name)
            perturbed = run.task_on(name)
            if found is None and original is not None and perturbed is not None:
                if original.partial or perturbed.partial:
                    section.notes.append(
                        f"{run.label}: none of the {name} schemas evaluated was made from the "
                        f"{original.task} schemas evaluated (a run of the first documents of "
                        "each, --limit), so it has no row in the perturbation table"
                    )
            if found is None:
                continue
            cells: list[Any] = []
            for metric, (before, after) in found.items():
                chosen = ACCURACIES[metric]
                cells.append(estimates.interval(before, chosen))
                cells.append(estimates.interval(after, chosen))
                cells.append(estimates.paired(after, before, chosen))
            rows.append([run.label, LABELS[name], len(found["a"][0]), *cells])
            for panel, cell in (("a", cells[1]), ("A", cells[4])):
                bars.append(Bar(panel, LABELS[name], run.label, cell.estimate))
        if rows and original is not None and outcomes(original, ACC):
            head = [estimates.interval(outcomes(original, m), form(m)) for m in (ACC, SCHEMA_ACC)]
            for panel, cell in zip(("a", "A"), head, strict=True):
                if cell is not None:
                    bars.append(Bar(panel, WHOLE, run.label, cell.estimate))
        table.rows += rows
    if not table.rows:
        section.skipped = (
            "needs wsc266 with a perturbation task (wsc266_switched, …) or a "
            "*_consistency task of one"
        )
        return section
    section.tables.append(table)
    bars_order = [WHOLE, *LABELS.values()]
    bars.sort(key=lambda b: bars_order.index(b.x))
    section.figures.append(
        Figure(
            "perturbations",
            bars,
            "Accuracy on perturbations of WSC266",
            "Accuracy on perturbations of WSC266 (95% intervals)",
        )
    )
    section.text = (
        "Each perturbation was made from some or all of the WSC266 schemas (`schemas`: how "
        "many); `a original` and `A original` are the accuracy on exactly those schemas, so "
        "each Δ compares like with like."
    )
    return section


def pair(
    run: Run, original: TaskRun | None, name: str, kind: TaskKind = TaskKind.SCHEMA
) -> dict[str, tuple[list, list]] | None:
    """{panel: (original-side values, perturbed-side values)} on matched schemas: from the
    consistency task of the perturbation, else by matching its task (of ``kind``: asked as
    questions, no consistency task) with the original's."""
    consistency = run.task_on(name, TaskKind.CONSISTENCY) if kind is TaskKind.SCHEMA else None
    if consistency is not None and consistency.values:
        items = next(iter(consistency.values.values()))
        if items and isinstance(items[0], dict) and "before" in items[0]:
            return {
                "a": ([i["before"] for i in items], [i["after"] for i in items]),
                "A": ([i["before"] for i in items], [i["after"] for i in items]),
            }
    perturbed = run.task_on(name, kind)
    if original is None or perturbed is None or ACC not in perturbed.forms:
        return None
    if ACC not in original.forms:
        return None
    matched = try_pair_documents(original, perturbed, ACC, name not in SCHEMA_TRANSFORMATIONS)
    if matched is None:
        return None
    return {"a": matched, "A": matched}
