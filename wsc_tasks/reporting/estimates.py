"""The report's bootstraps: asked for while the sections are built, computed all at once after.

A section asks for an interval, a paired or an unpaired difference and gets at once the table cell
that will show it, holding a ``Pending`` estimate. Once every section is built, ``compute`` runs
the bootstraps (their number is known by then, so the progress bar can tell the time left), and
each pending estimate reads as the ``stats.Estimate`` it stands for. Every bootstrap of a report
shares ``iters`` and ``seed``, so a rerun on the same folders gives the same numbers. A bootstrap
asked twice (the findings quote what the tables show) is run once: the same documents, form and
null give the same pending estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import fields
from typing import Any

from wsc_tasks.metrics import ratios, registry, stats
from wsc_tasks.metrics.accuracy import SchemaOutcome, restrict
from wsc_tasks.metrics.registry import EQUAL_LEN, Key
from wsc_tasks.reporting.progress import progress
from wsc_tasks.reporting.runs import TaskRun
from wsc_tasks.reporting.tables import Delta, Interval


class Pending(stats.Estimate):
    """A bootstrap estimate filled in by ``Estimates.compute``; until then reading it fails."""

    def __init__(self, run: Callable[[], stats.Estimate]) -> None:  # no fields until computed
        object.__setattr__(self, "_run", run)

    def compute(self) -> None:
        found = self._run()
        for item in fields(stats.Estimate):
            object.__setattr__(self, item.name, getattr(found, item.name))

    def __getattr__(self, name: str) -> Any:  # only for attributes not set yet
        raise RuntimeError(f"estimate {name} read before the report's bootstraps were computed")


class Estimates:
    """Every bootstrap one report asks for (see the module docstring)."""

    def __init__(self, iters: int, seed: int) -> None:
        self.iters, self.seed = iters, seed
        self.pending: list[Pending] = []
        self._asked: dict[tuple, tuple[Pending, tuple]] = {}

    def _ask(self, function: Callable[..., stats.Estimate], *args: Any, **kwargs: Any) -> Pending:
        key = (function, *map(_identity, args), *sorted(kwargs.items(), key=lambda i: i[0]))
        if key in self._asked:  # the same documents: one bootstrap (args kept alive, ids stay)
            return self._asked[key][0]

        def run() -> stats.Estimate:
            return function(*args, iters=self.iters, seed=self.seed, **kwargs)

        found = Pending(run)
        self.pending.append(found)
        self._asked[key] = (found, args)
        return found

    def estimate(self, values: Sequence[Any], form: Callable, null: float | None = None) -> Pending:
        return self._ask(stats.bootstrap, values, form, null=null)

    def interval(
        self, values: Sequence[Any] | None, form: Callable, p: bool = False
    ) -> Interval | None:
        """The value with its interval; with ``p``, p against chance (accuracies only)."""
        if not values:
            return None
        null = chance(values, form) if p else None
        return Interval(self.estimate(values, form, null), show_p=p)

    def paired(self, first: Sequence[Any], second: Sequence[Any], form: Callable) -> Delta | None:
        """form(first) − form(second) on the same documents (aligned lists), p against 0."""
        if not first:
            return None
        return Delta(self._ask(stats.paired_difference, first, second, form))

    def unpaired(self, first: Sequence[Any], second: Sequence[Any], form: Callable) -> Delta | None:
        """form(first) − form(second) on different documents, each resampled on its own."""
        if not first or not second:
            return None
        return Delta(self._ask(stats.unpaired_difference, first, second, form))

    def compare(
        self, first: TaskRun, second: TaskRun, metric: str, equal: bool = False
    ) -> Delta | None:
        """first − second: paired on the schemas both share when they share them all."""
        a, b = outcomes(first, metric, equal), outcomes(second, metric, equal)
        if a is None or b is None:
            return None
        form = first.forms[metric]
        uids_a = [d.get("schema_uid") for d in first.docs]
        uids_b = [d.get("schema_uid") for d in second.docs]
        if sorted(uids_a, key=str) == sorted(uids_b, key=str) and len(set(uids_a)) == len(uids_a):
            a_sorted, b_sorted = stats.align(
                dict(zip(uids_a, a, strict=True)), dict(zip(uids_b, b, strict=True))
            )
            return self.paired(a_sorted, b_sorted, form)
        return self.unpaired(a, b, form)

    def compute(self, quiet: bool = False) -> None:
        """Run every bootstrap asked for so far, with a progress bar (off when ``quiet``)."""
        with progress(len(self.pending), "report: bootstraps", "bootstrap", quiet) as bar:
            for found in self.pending:
                found.compute()
                bar.update()
        self.pending = []


def _identity(value: Any) -> Any:
    """What makes two bootstraps the same: the documents themselves (by object), a form, a null."""
    if isinstance(value, list | tuple):
        return tuple(id(item) for item in value)
    return id(value) if callable(value) else value


# -- what the sections estimate -------------------------------------------------------------------
def outcomes(task: TaskRun, metric: str, equal: bool = False) -> list[SchemaOutcome] | None:
    """Per-document outcomes of ``metric`` (restricted to equal-length answers if asked), when
    the samples reproduce lm-eval's figure (``task.forms``); None when they do not or the task
    has no such metric. A name no metric record of ours has (a misspelling) raises ``KeyError``
    rather than silently skipping what asked for it."""
    if Key.parse(metric) is None:
        raise KeyError(f"no metric named {metric!r}: write it as registry.Key(...).name")
    values = task.values.get(metric)
    if not values or metric not in task.forms:
        return None
    if not equal:
        return values
    flags = task.values.get(Key("share", subset=EQUAL_LEN).name)
    if not flags:
        return None
    return [restrict(v, f["correct"]) for v, f in zip(values, flags, strict=True)]


def form(record: str) -> ratios.Form:
    """The ratio form of a record (``acc``, ``schema_acc``)."""
    if record not in registry.METRICS:
        raise KeyError(f"no metric record {record!r}; known: {', '.join(registry.METRICS)}")
    found = registry.METRICS[record].form
    if found is None:
        raise ValueError(f"metric {record} has no ratio form to estimate")
    return found


def chance(values: Sequence[Any], form: Callable) -> float | None:
    """The accuracy of random answers: a = 0.5; A = the mean of 2^-size over schemas."""
    if form is ratios.PROBLEM_ACCURACY:
        return 0.5
    if form is ratios.SCHEMA_ACCURACY:
        return stats.chance_schema_accuracy(values)
    return None
