"""The sections of ``wsc-tasks report``: one module each, found here and put in ``ORDER``.

A section module has ``ORDER`` (its place in the report: the lowest first) and ``build(context)``,
which returns a ``Section``: its title, text, tables and figures, or why it was skipped. A section
finds its tasks in ``context.runs`` (by their catalog dataset and kind, ``Run.task_on``) and asks
``context.estimates`` for every interval and difference; the bootstraps run after all sections
are built, and ``writing`` draws the figures and writes the tables. Adding a section is one new
module here (and its test); a text that quotes estimates can be a function of no arguments,
called once they are computed.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

from wsc_tasks.metrics import ratios
from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC
from wsc_tasks.report.estimates import Estimates, outcomes
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.tables import Interval, Table
from wsc_tasks.runs.folders import Run, TaskRun

# the two accuracy panels of the figures (a, A), with their forms and chance lines
ACCURACIES = {"a": ratios.PROBLEM_ACCURACY, "A": ratios.SCHEMA_ACCURACY}
CHANCE = {"a": 0.5, "A": 0.25}


@dataclass
class Figure:
    """``figures/<stem>.png|svg``: a forest plot of ``bars``, listed under ``caption``."""

    stem: str
    bars: list[Bar]
    title: str
    caption: str
    chance: dict[str, float] | None = field(default_factory=lambda: dict(CHANCE))
    xlabel: str = "accuracy"


@dataclass
class Section:
    title: str
    text: str | Callable[[], str] = ""  # a function: text quoting estimates, called after them
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    skipped: str = ""  # why the section has nothing to show (the tasks it needs)
    # nothing of its kind in the runs (a section of optional tasks: the questions): with
    # ``skipped`` set, left out of the files altogether rather than said skipped
    absent: bool = False
    notes: list[str] = field(default_factory=list)  # what a reader must know, shown even if skipped
    # the HTML page's first screen, before its method paragraph and contents: Markdown (a function:
    # called after the estimates) whose ``- `` items are each model's conclusion, and the text
    # shown after it in place of ``text`` (the same findings, without what the lead says)
    lead: Callable[[], tuple[str, str]] | None = None


@dataclass
class Context:
    """What every section builds from: the loaded runs and the report's bootstraps."""

    runs: list[Run]
    estimates: Estimates

    def tasks(self, dataset: str) -> list[tuple[Run, TaskRun]]:
        """Every run's schema task on ``dataset``, with its run, for the runs that have one."""
        found = [(run, run.task_on(dataset)) for run in self.runs]
        return [(run, task) for run, task in found if task is not None]

    def accuracy(self, task: TaskRun) -> tuple[Interval, Interval | None] | None:
        """A task's a and A with p against chance (one bootstrap each, however many sections
        ask); None when its samples give no problem accuracy."""
        a = outcomes(task, ACC)
        if a is None:
            return None
        found = self.estimates.interval(a, ACCURACIES["a"], True)
        assert found is not None
        return found, self.estimates.interval(outcomes(task, SCHEMA_ACC), ACCURACIES["A"], True)


Builder = Callable[[Context], Section]


def builders() -> list[Builder]:
    """The ``build`` of every section module of this package, in ``ORDER``."""
    found = []
    for module in pkgutil.iter_modules(__path__):
        section = importlib.import_module(f"{__name__}.{module.name}")
        found.append((section.ORDER, module.name, section.build))
    orders = [order for order, _, _ in found]
    if len(set(orders)) != len(orders):
        taken = sorted((order, name) for order, name, _ in found)
        raise ValueError(f"two report sections share an ORDER: {taken}; give each its own place")
    return [build for _, _, build in sorted(found)]
