"""Accuracy of every scoring method on the thesis's method tasks, and the headline's lead."""

from __future__ import annotations

from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC, Key
from wsc_tasks.report.estimates import form, outcomes
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import Context, Figure, Section
from wsc_tasks.report.tables import Delta, Interval, Table
from wsc_tasks.scoring.methods import METHOD_DATASETS

ORDER = 20
DATASETS = METHOD_DATASETS  # thesis Tables 4.3, 4.7 and 4.11: where every method runs by default
# the columns of the tables: a and A, on all problems and on equal-length answers
COLUMNS = ((ACC, False), (ACC, True), (SCHEMA_ACC, False), (SCHEMA_ACC, True))


def build(context: Context) -> Section:
    section = Section("Accuracy by scoring method (thesis Tables 4.3, 4.7, 4.11; Figure 4.1)")
    estimates = context.estimates
    for name in DATASETS:
        found = [(r, t) for r, t in context.tasks(name) if len(t.methods()) > 1]
        if not found:
            continue
        table = Table(
            f"methods_{name}",
            f"Accuracy of scoring methods on {name}, any-length and equal-length answers",
            ["model", "method", "a", "a (equal length)", "A", "A (equal length)"],
        )
        diff = Table(
            f"method_differences_{name}",
            f"Headline method minus each other method on {name} (paired), with p",
            ["model", "headline − method", "Δa", "Δa (equal)", "ΔA", "ΔA (equal)"],
        )
        bars = []
        for run, task in found:
            methods = task.methods()
            for method in methods:
                cells: list[Interval | Delta | None] = []
                for metric, equal in COLUMNS:
                    values = outcomes(task, Key(metric, method=method).name, equal)
                    cells.append(estimates.interval(values, form(metric)))
                table.rows.append([run.label, method, *cells])
                for panel, cell in (("a", cells[0]), ("A", cells[2])):
                    if cell is not None:
                        bars.append(Bar(panel, method, run.label, cell.estimate))
            head = methods[0]
            for method in methods[1:]:
                cells = []
                for metric, equal in COLUMNS:
                    a = outcomes(task, Key(metric, method=head).name, equal)
                    b = outcomes(task, Key(metric, method=method).name, equal)
                    cells.append(estimates.paired(a, b, form(metric)) if a and b else None)
                diff.rows.append([run.label, f"{head} − {method}", *cells])
        section.tables += [table, diff]
        section.figures.append(
            Figure(
                f"methods_{name}",
                bars,
                f"Accuracy of scoring methods on {name}",
                f"Scoring methods on {name} (95% intervals)",
            )
        )
    if not section.tables:
        section.skipped = (
            f"needs one of {', '.join(DATASETS)} run with several methods, with its samples "
            "file (--log_samples)"
        )
    section.text = (
        "Equal length: only problems whose two answers have the same number of tokens "
        "(thesis §3.7.4); a schema counts if all its problems do."
    )
    return section
