"""Each model of a sweep as the leaderboard sees it: its run read back, its figures, its rank.

One ``Entry`` per model folder: schema accuracy *A* and problem accuracy *a* of the ranking task
with 95% intervals and p against chance, the control baselines, the schema consistency under each
perturbation and the findings' view of it (``findings.Model``), each bootstrap run once with a
fixed seed (``Board``); ``rank`` orders the models, ``Board.paired`` compares two of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wsc_tasks.data import catalog
from wsc_tasks.metrics import ratios, stats
from wsc_tasks.metrics.registry import TaskKind
from wsc_tasks.paths import CHANCE_MODEL, SWEEP_DONE, SWEEP_ERROR
from wsc_tasks.reporting import findings
from wsc_tasks.reporting.estimates import chance
from wsc_tasks.reporting.runs import Run
from wsc_tasks.reporting.sections import contamination as contamination_check
from wsc_tasks.reporting.tables import Delta, Interval

DEFAULT_TASK = "wsc266"
# every control baseline of the catalog: those generated from whole datasets, then hand-made ones
CONTROLS = tuple(
    sorted(catalog.datasets(catalog.CONTROL), key=lambda name: not catalog.role_of(name).generated)
)
COST = "GPU-h"


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


def is_chance_model(run: Run) -> bool:
    return run.model == CHANCE_MODEL


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


# -- what each model's row says --------------------------------------------------------------------
@dataclass
class Entry:
    """One model of the sweep with what the leaderboard says of it."""

    run: Run
    folder: Path  # <out>/<name>
    done: dict[str, Any]  # its done.json
    A: Interval | None = None
    a: Interval | None = None
    controls: dict[str, Interval] = field(default_factory=dict)  # control task -> a
    originals: dict[str, Interval] = field(default_factory=dict)  # dataset a control is of -> a
    consistency: dict[str, Interval] = field(default_factory=dict)  # consistency task -> C
    model: findings.Model | None = None

    @property
    def label(self) -> str:
        return self.run.label


class Board:
    """The estimates of a sweep's leaderboard, each bootstrap run once."""

    def __init__(self, task: str, iters: int, seed: int) -> None:
        self.task, self.iters, self.seed = task, iters, seed

    def estimate(self, values: list, form: ratios.Ratio, against_chance: bool) -> Interval:
        null = chance(values, form) if against_chance else None
        found = stats.bootstrap(values, form, null=null, iters=self.iters, seed=self.seed)
        return Interval(found, against_chance)

    def paired(self, first: Run, second: Run) -> Delta | None:
        a, b = _keyed(first, self.task, "schema_acc"), _keyed(second, self.task, "schema_acc")
        if not a or not b:
            return None
        x, y = stats.align(a, b)
        if not x:
            return None
        form = ratios.SCHEMA_ACCURACY
        return Delta(stats.paired_difference(x, y, form, iters=self.iters, seed=self.seed))

    def entry(self, run: Run, folder: Path, done: dict[str, Any]) -> Entry:
        found = Entry(run, folder, done)
        big_a = _outcomes(run, self.task, "schema_acc")
        a = _outcomes(run, self.task, "acc")
        found.A = self.estimate(big_a, ratios.SCHEMA_ACCURACY, True) if big_a else None
        found.a = self.estimate(a, ratios.PROBLEM_ACCURACY, True) if a else None
        for control in CONTROLS:
            values = _outcomes(run, control, "acc")
            if values:
                found.controls[control] = self.estimate(values, ratios.PROBLEM_ACCURACY, True)
                of = catalog.role_of(control).of
                original = _outcomes(run, of, "acc") if of else None
                if of and original and of not in found.originals:
                    found.originals[of] = self.estimate(original, ratios.PROBLEM_ACCURACY, True)
        for name, task in run.tasks.items():
            if task.kind is TaskKind.CONSISTENCY and "schema_consistency" in task.forms:
                values = task.values["schema_consistency"]
                form = task.forms["schema_consistency"]
                found.consistency[name] = Interval(
                    stats.bootstrap(values, form, iters=self.iters, seed=self.seed)
                )
        found.model = self.findings_model(found)
        return found

    def findings_model(self, entry: Entry) -> findings.Model:
        controls = []
        for name, cell in entry.controls.items():
            role = catalog.role_of(name)
            change = catalog.CHANGES.get(role.change, role.change)
            original = entry.originals.get(role.of) if role.of else None
            controls.append(
                findings.Control(
                    name,
                    change,
                    role.of or name,
                    cell.estimate,
                    original.estimate if original else None,
                )
            )
        ranking = findings.Accuracy(
            self.task,
            entry.a.estimate if entry.a else None,
            entry.A.estimate if entry.A else None,
        )
        return findings.Model(
            entry.label,
            chance_model=is_chance_model(entry.run),
            limit=entry.run.limit,
            ranking=ranking if entry.A or entry.a else None,
            controls=tuple(controls),
            contamination=contamination_check.checks(entry.run),
        )


def gpu_hours(done: dict[str, Any]) -> float | None:
    """The GPU-hours a model's ``done.json`` records (None from a sweep that did not)."""
    value = (done.get("cost") or {}).get("gpu_hours")
    return float(value) if isinstance(value, int | float) else None


def model_folders(out: Path) -> list[str]:
    """The models of a sweep folder: its subfolders a model's run wrote to (its request, its
    ``done.json`` or its ``error.txt``)."""
    marks = ("spec.json", SWEEP_DONE, SWEEP_ERROR)
    return sorted({p.parent.name for mark in marks for p in out.glob(f"*/{mark}")})
