"""Associative and non-associative schemas before and after no-cands (Tables 4.25–4.28)."""

from __future__ import annotations

from typing import Any

from wsc_tasks.metrics import associativity, ratios
from wsc_tasks.metrics.registry import ACC, TaskKind
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import ACCURACIES, Context, Figure, Section
from wsc_tasks.report.tables import Table
from wsc_tasks.runs.folders import Run, try_pair_documents

ORDER = 50
ASSOCIATIVE, NONASSOCIATIVE = associativity.SUBSETS
ORDERED = (NONASSOCIATIVE, ASSOCIATIVE)  # as the tables list them


def build(context: Context) -> Section:
    section = Section(
        "Associative and non-associative schemas, with and without the candidates "
        "(thesis Tables 4.25–4.28; Figure 4.7)"
    )
    tables = {
        "subsets": Table(
            "associativity_subsets",
            "Accuracy on the associative and non-associative subsets of WSC266, before and "
            "after the no-candidates perturbation; p against chance; assoc. − non-assoc. "
            "(independent schemas)",
            ["model", "problems", "metric", "non-assoc.", "assoc.", "assoc. − non-assoc."],
        ),
        "effect": Table(
            "associativity_effect",
            "Effect of the no-candidates perturbation (paired), per subset",
            ["model", "metric", "subset", "original", "no-cands", "no-cands − original"],
        ),
        "relative": Table(
            "associativity_relative",
            "Relative loss (r − r_B)/r and gain (r − r_B)/(1 − r_B) (eqs. 4.1, 4.2)",
            ["model", "metric", "subset", "r − r_B", "(r − r_B)/r", "(r − r_B)/(1 − r_B)"],
        ),
        "adjusted": Table(
            "associativity_adjusted",
            "WSC266 accuracy adjusted for association (Table 4.28)",
            ["model", "metric", "r", "r − r_B", "(r − r_B)/(1 − r_B)"],
        ),
    }
    estimates = context.estimates
    bars = []
    for run in context.runs:
        items = pairs(run)
        if not items:
            continue
        subsets = {name: [i for i in items if i["subset"] == name] for name in ORDERED}
        for side, side_name in (("before", "original"), ("after", "no-cands")):
            for metric, form in ACCURACIES.items():
                non = [i[side] for i in subsets[NONASSOCIATIVE]]
                assoc = [i[side] for i in subsets[ASSOCIATIVE]]
                cells = [estimates.interval(non, form, True), estimates.interval(assoc, form, True)]
                tables["subsets"].rows.append(
                    [run.label, side_name, metric, *cells, estimates.unpaired(assoc, non, form)]
                )
                for label, cell in zip(("non-assoc.", "assoc."), cells, strict=True):
                    if cell is not None:
                        bars.append(Bar(metric, f"{label} {side_name}", run.label, cell.estimate))
        for metric, form in ACCURACIES.items():
            for subset in (*ORDERED, "all"):
                chosen = items if subset == "all" else subsets[subset]
                before = [i["before"] for i in chosen]
                after = [i["after"] for i in chosen]
                if not before:
                    continue
                r, r_b = form(before), form(after)
                loss = estimates.paired(before, after, form)
                gain = float(ratios.relative_gain(r, r_b))
                if subset == "all":
                    tables["adjusted"].rows.append([run.label, metric, r, loss, gain])
                    continue
                tables["effect"].rows.append(
                    [
                        run.label,
                        metric,
                        subset,
                        estimates.interval(before, form),
                        estimates.interval(after, form),
                        estimates.paired(after, before, form),
                    ]
                )
                relative_loss = float(ratios.relative_loss(r, r_b))
                tables["relative"].rows.append(
                    [run.label, metric, subset, loss, relative_loss, gain]
                )
    section.tables = [t for t in tables.values() if t.rows]
    if not section.tables:
        section.skipped = (
            "needs wsc266_associativity, or wsc266_associative and wsc266_nonassociative "
            "with their *_nocands tasks"
        )
        return section
    section.figures.append(
        Figure(
            "associativity",
            bars,
            "Associative and non-associative subsets of WSC266",
            "Associativity (95% intervals)",
        )
    )
    return section


def pairs(run: Run) -> list[dict[str, Any]]:
    """(before, after, subset) per WSC266 schema: the associativity task's, or built from the
    subset tasks and their no-cands tasks (``associativity.DATASETS``)."""
    task = next((t for t in run.tasks.values() if t.kind is TaskKind.ASSOCIATIVITY), None)
    if task is not None and task.values:
        items = next(iter(task.values.values()))
        if items and isinstance(items[0], dict) and "subset" in items[0]:
            return items
    out = []
    for subset in associativity.SUBSETS:
        original_dataset, nocands_dataset = associativity.DATASETS[subset]
        original, nocands = run.task_on(original_dataset), run.task_on(nocands_dataset)
        if original is None or nocands is None or ACC not in original.forms:
            return []
        if ACC not in nocands.forms:
            return []
        matched = try_pair_documents(original, nocands, ACC, True)
        if matched is None:
            return []
        out += [{"before": b, "after": a, "subset": subset} for b, a in zip(*matched, strict=True)]
    return out
