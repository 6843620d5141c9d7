"""The leaderboard of a sweep: models ranked by schema accuracy, with schema-bootstrap intervals.

Columns: schema accuracy *A* and problem accuracy *a* of the ranking task with 95% intervals and p
against chance; the p of the paired difference with the next model down (same schemas); schema
accuracy on the control baselines (no-cands, part-sent: near chance is what a model that reads the
sentence should get) and schema consistency on each perturbation, where those tasks were run. A
pairwise matrix gives the paired difference in *A* and its p for every two models. Failed models
are listed with their error. Everything is recomputed from the saved samples with a fixed seed.
What each model cost (GPU-hours, from its ``done.json``) closes the ranking, with the sweep's total.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

from wsc_tasks.data import catalog
from wsc_tasks.metrics import ratios, stats
from wsc_tasks.metrics.registry import TaskKind
from wsc_tasks.paths import SWEEP_DONE, SWEEP_ERROR
from wsc_tasks.reporting import html_report
from wsc_tasks.reporting.estimates import chance
from wsc_tasks.reporting.runs import Run, load_run
from wsc_tasks.reporting.tables import Delta, Interval, Table, markdown, markdown_grid, numeric

log = logging.getLogger(f"lm_eval.{__name__}")

DEFAULT_TASK = "wsc266"
# every control baseline of the catalog: those generated from whole datasets, then hand-made ones
CONTROLS = tuple(
    sorted(catalog.datasets(catalog.CONTROL), key=lambda name: not catalog.role_of(name).generated)
)


def _outcomes(run: Run, task: str, metric: str) -> list | None:
    found = run.tasks.get(task)
    if found is None or metric not in found.forms:
        return None
    return found.values[metric]


def _keyed(run: Run, task: str, metric: str) -> dict | None:
    values = _outcomes(run, task, metric)
    if values is None:
        return None
    uids = [d.get("schema_uid") for d in run.tasks[task].docs]
    return dict(zip(uids, values, strict=True))


def rank(runs: Sequence[Run], task: str) -> list[Run]:
    """Schema accuracy, then problem accuracy, descending; then name."""

    def key(run: Run) -> tuple[float, float, str]:
        big_a = _outcomes(run, task, "schema_acc")
        a = _outcomes(run, task, "acc")
        return (
            -ratios.SCHEMA_ACCURACY(big_a) if big_a else 1.0,
            -ratios.PROBLEM_ACCURACY(a) if a else 1.0,
            run.label,
        )

    return sorted(runs, key=key)


def tables(runs: Sequence[Run], task: str, iters: int, seed: int) -> tuple[Table, Table]:
    """(ranking, pairwise matrix) of the runs that have ``task``."""
    ranked = [r for r in rank(runs, task) if _outcomes(r, task, "schema_acc")]
    controls = [c for c in CONTROLS if any(_outcomes(r, c, "schema_acc") for r in ranked)]
    perturbed = {  # consistency task -> its pair dataset (the perturbation, or wsc266_nocands)
        n: t.dataset or n
        for r in ranked
        for n, t in r.tasks.items()
        if t.kind is TaskKind.CONSISTENCY and "schema_consistency" in t.forms
    }
    perturbations = sorted(perturbed)
    ranking = Table(
        "leaderboard",
        f"Models ranked by schema accuracy A on {task}",
        ["rank", "model", "A", "a", "A − next"]
        + [f"A {c}" for c in controls]
        + [f"C {perturbed[p]}" for p in perturbations],
    )
    matrix = Table(
        "leaderboard_pairwise",
        f"Paired difference in A on {task}, row − column, with p",
        ["model", *[r.label for r in ranked]],
    )

    def estimate(values: list, form: ratios.Ratio, null: bool) -> Interval:
        against = chance(values, form) if null else None
        return Interval(stats.bootstrap(values, form, null=against, iters=iters, seed=seed), null)

    def paired(first: Run, second: Run) -> Delta | None:
        a, b = _keyed(first, task, "schema_acc"), _keyed(second, task, "schema_acc")
        if not a or not b:
            return None
        x, y = stats.align(a, b)
        if not x:
            return None
        form = ratios.SCHEMA_ACCURACY
        return Delta(stats.paired_difference(x, y, form, iters=iters, seed=seed))

    for position, run in enumerate(ranked):
        row = [
            position + 1,
            run.label,
            estimate(_outcomes(run, task, "schema_acc"), ratios.SCHEMA_ACCURACY, True),
            estimate(_outcomes(run, task, "acc"), ratios.PROBLEM_ACCURACY, True),
            paired(run, ranked[position + 1]) if position + 1 < len(ranked) else None,
        ]
        for control in controls:
            values = _outcomes(run, control, "schema_acc")
            row.append(estimate(values, ratios.SCHEMA_ACCURACY, False) if values else None)
        for name in perturbations:
            found = run.tasks.get(name)
            values = found.values.get("schema_consistency") if found else None
            form = found.forms.get("schema_consistency") if found else None
            row.append(
                Interval(stats.bootstrap(values, form, iters=iters, seed=seed))
                if values and form
                else None
            )
        ranking.rows.append(row)
        matrix.rows.append(
            [run.label, *[None if other is run else paired(run, other) for other in ranked]]
        )
    return ranking, matrix


def gpu_hours(folder: Path) -> float | None:
    """The GPU-hours a sweep's ``done.json`` records (None from a sweep that did not)."""
    try:
        cost = json.loads((folder / SWEEP_DONE).read_text(encoding="utf-8")).get("cost") or {}
    except (OSError, ValueError):
        return None
    value = cost.get("gpu_hours")
    return float(value) if isinstance(value, int | float) else None


def _add_cost(ranking: Table, hours: dict[str, float | None]) -> str:
    """A GPU-h column for every ranked model; the sentence with the sweep's total."""
    ranking.columns.append("GPU-h")
    for row in ranking.rows:
        row.append(hours.get(str(row[1])))
    known = [h for h in hours.values() if h is not None]
    unknown = len(hours) - len(known)
    models = f"{len(known)} finished model" + ("" if len(known) == 1 else "s")
    total = f"**Cost:** {sum(known):.3f} GPU-hours in total over {models}"
    return total + (f" ({unknown} without a recorded cost)." if unknown else ".")


def write(names: Sequence[str], out: Path, task: str, iters: int, seed: int) -> list[Path]:
    """``<out>/leaderboard.md`` and ``.csv`` for the models of a sweep (their folder names)."""
    runs, problems = [], []
    hours: dict[str, float | None] = {}
    for name in names:
        folder = out / name
        if (folder / SWEEP_DONE).is_file():
            runs.append(load_run(folder / "lm_eval", name))
            hours[name] = gpu_hours(folder)
        elif (folder / SWEEP_ERROR).is_file():
            first = (folder / SWEEP_ERROR).read_text(encoding="utf-8").strip().splitlines()
            why = first[0] if first else "no message"
            problems.append((name, f"failed ({name}/{SWEEP_ERROR}): {why}"))
        else:
            problems.append((name, "not run (interrupted?)"))
    missing = [r.label for r in runs if _outcomes(r, task, "schema_acc") is None]
    problems += [(name, f"no samples of {task}") for name in missing]
    ranking, matrix = tables(runs, task, iters, seed)
    cost = _add_cost(ranking, hours)
    intro = (
        f"Ranking task `{task}`. A: schema accuracy, a: problem accuracy, each with a 95% "
        f"percentile interval of a bootstrap over schemas (R = {iters}, seed {seed}) and p against "
        "chance; `A − next`: paired difference with the next model down and its p. `A <task>`: "
        "schema accuracy on a control baseline; `C <perturbation>`: schema consistency."
    )
    lines = ["# Leaderboard", "", intro, "", markdown(ranking), cost]
    notes = [note for run in runs for note in run.notes()]
    lines[4:4] = [*(f"**Note:** {note}." for note in notes), ""] if notes else []
    if len(ranking.rows) > 1:
        lines += ["", markdown(matrix)]
    if problems:
        lines += ["", markdown_grid(["model", "status"], [[n, w] for n, w in problems])]
    md, csv = out / "leaderboard.md", out / "leaderboard.csv"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    frame = numeric(ranking)
    for name, why in problems:
        frame.loc[len(frame), ["model"]] = [name]
        frame.loc[len(frame) - 1, "status"] = why.splitlines()[0]
    if "rank" in frame:
        frame["rank"] = frame["rank"].astype("Int64")
    frame.to_csv(csv, index=False, lineterminator="\n")
    return [md, csv, _write_html(out, f"{intro} {cost}", ranking, matrix, problems)]


def _write_html(
    out: Path, intro: str, ranking: Table, matrix: Table, problems: list[tuple[str, str]]
) -> Path:
    """``leaderboard.html``: the same tables, sortable and filterable, in one page."""
    status = Table("status", "Models without a result", ["model", "status"])
    status.rows = [[name, why] for name, why in problems]
    shown = [ranking, *([matrix] if len(ranking.rows) > 1 else []), *([status] if problems else [])]
    body = ["<h1>Leaderboard</h1>", f"<p>{html_report.inline(intro)}</p>"]
    body += [html_report.table_html(table) for table in shown]
    path = out / "leaderboard.html"
    path.write_text(html_report.page("Leaderboard", "\n".join(body)), encoding="utf-8")
    return path
