"""The contamination check: per model and published file, the sharded exchangeability test of
Oren et al. 2024 (``metrics.contamination``), its p-value and effect; the findings' sentences about
it follow the contamination rule of ``claims.findings``.

The figures are recomputed from the samples (each shard's log-likelihoods) when the run logged
them, else read from lm-eval's results row; both come from the same pure functions.
"""

from __future__ import annotations

import math

from wsc_tasks.claims import findings
from wsc_tasks.data import canonical
from wsc_tasks.metrics import contamination, multiple_testing, registry
from wsc_tasks.metrics.registry import TaskKind
from wsc_tasks.metrics.stats import Estimate, format_p
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import Context, Figure, Section
from wsc_tasks.report.tables import Table
from wsc_tasks.runs.folders import Run, TaskRun

ORDER = 75
COLUMNS = ["model", "dataset", "shards", "shuffles", "p one-sided", "p two-sided, Holm",
           "effect (nats/token)", "95% interval", "positions"]  # fmt: skip


def _row_value(task: TaskRun, name: str) -> float:
    value = task.reported(name)
    return math.nan if value is None else value


def check(task: TaskRun) -> findings.Contamination | None:
    """The check of one contamination task, from its samples or its results row."""
    items = task.values.get("contamination_p")
    dataset = task.dataset or task.task
    if items:
        found = contamination.test_items(items)
        return findings.Contamination(
            task.task, dataset, found.p, found.effect, found.low, found.high, found.shards
        )
    p = task.reported("contamination_p")
    if p is None:
        return None
    shards = task.reported("n_shards")
    return findings.Contamination(
        task.task, dataset, p, _row_value(task, "contamination_effect"),
        _row_value(task, "contamination_effect_low"),
        _row_value(task, "contamination_effect_high"), int(shards or 0),
    )  # fmt: skip


def tasks(run: Run) -> list[TaskRun]:
    """A run's contamination tasks, in the order of the published files."""
    found = [run.task_on(name, TaskKind.CONTAMINATION) for name in canonical.published()]
    return [t for t in found if t is not None]


def checks(run: Run) -> tuple[findings.Contamination, ...]:
    """Every contamination check of a run (what ``findings.Model.contamination`` holds)."""
    return tuple(c for c in (check(t) for t in tasks(run)) if c is not None)


def shuffles(task: TaskRun) -> int | None:
    items = task.values.get("contamination_p")
    return len(items[0]["shuffled"]) if items else None


def table(rows: list[tuple[str, TaskRun, findings.Contamination, float]]) -> Table:
    """The table of the section and the leaderboard: one row per model and file."""
    out = Table(
        "contamination",
        "Contamination check (Oren et al. 2024): is the published order of each file more likely "
        "than shuffles of its schemas? p of the sharded t-test: one-sided (the task's), and "
        "two-sided Holm-adjusted over a model's files (the findings' rule); effect: published "
        "minus mean shuffled log-likelihood per token",
        COLUMNS,
    )
    for label, task, found, adjusted in rows:
        positions = task.reported("n_positions")
        if positions is None and task.values.get("contamination_p"):
            positions = registry.bind("n_positions")(task.values["contamination_p"])
        out.rows.append([
            label, found.dataset, found.shards, shuffles(task), format_p(found.p),
            format_p(adjusted), f"{found.effect:+.5f}", f"[{found.low:+.5f}, {found.high:+.5f}]",
            None if positions is None else int(positions),
        ])  # fmt: skip
    return out


def rows(run: Run) -> list[tuple[str, TaskRun, findings.Contamination, float]]:
    """(label, task, check, Holm-adjusted p) of every contamination check of a run."""
    found = [(t, check(t)) for t in tasks(run)]
    kept = [(t, c) for t, c in found if c is not None]
    adjusted = multiple_testing.holm([c.two_sided for _, c in kept])
    return [(run.label, t, c, q) for (t, c), q in zip(kept, adjusted, strict=True)]


def figure(found: list[tuple[str, TaskRun, findings.Contamination, float]]) -> Figure:
    """Each model's effect on each file with its 95% interval, against 0 (no preference for the
    published order)."""
    bars = [
        Bar(
            "effect",
            check.dataset,
            label,
            Estimate(
                check.effect, check.low, check.high, math.nan, check.two_sided, 0.0, check.shards, 0
            ),
        )  # fmt: skip
        for label, _, check, _ in found
    ]
    return Figure(
        "contamination",
        bars,
        "Is the published order more likely than shuffles?",
        "The contamination check: canonical minus mean shuffled log-likelihood per token (nats), "
        "with its 95% interval; 0: no preference for the published order",
        chance={"effect": 0.0},
        xlabel="nats per token",
    )


def build(context: Context) -> Section:
    section = Section("Has the model seen the test? The contamination check (Oren et al. 2024)")
    found = [row for run in context.runs for row in rows(run)]
    if not found:
        section.skipped = (
            "needs a contamination task (`--tasks contamination_suite`, or one file's "
            "`<dataset>_contamination`)"
        )
        return section
    section.tables.append(table(found))
    section.figures.append(figure(found))
    section.text = (
        "If a model never saw a file, every order of its schemas is equally likely to it; a model "
        "trained on the published copy finds the published order more likely. Each file is cut "
        "into shards of consecutive schemas, each shard scored in its published order and in "
        "seeded shuffles (`loglikelihood_rolling`), and the shards' per-token differences are "
        "tested with a t-test (Oren et al., ICLR 2024). The sentences in the findings "
        "follow the contamination rule of `wsc_tasks/claims/findings.py`. A p above 0.05 is no "
        "evidence either way: the check detects a model that memorised the order, not one that "
        "saw the schemas in another order or form."
    )
    return section
