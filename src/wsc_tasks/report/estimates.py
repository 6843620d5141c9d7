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
from wsc_tasks.metrics.accuracy import SchemaOutcome
from wsc_tasks.metrics.registry import Key
from wsc_tasks.progress import progress
from wsc_tasks.report.tables import Delta, Interval
from wsc_tasks.runs.folders import TaskRun

SHARED = (stats.bootstrap, stats.paired_difference)  # over one list of documents' resamples


class Pending(stats.Estimate):
    """A bootstrap estimate filled in by ``Estimates.compute``; until then reading it fails."""

    def __init__(self, function: Callable[..., stats.Estimate], *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "_call", (function, args, kwargs))  # no fields until computed

    @property
    def documents(self) -> tuple[int, ...]:
        """The sizes of the lists its resamples draw: one (a bootstrap, a paired difference) or
        two (an unpaired difference); bootstraps of the same sizes share their resamples."""
        function, args, _ = self._call
        return (len(args[0]),) if function in SHARED else (len(args[0]), len(args[1]))

    def wanted(self) -> list[list[tuple[Sequence[Any], Callable]]]:
        """Per list of resamples it draws, the (documents, metric) whose replicates it takes
        on them, for ``stats.Resamples.prefetch``."""
        function, args, _ = self._call
        if function is stats.paired_difference:
            first, second, metric, *other = args
            return [[(first, metric), (second, other[0] if other else metric)]]
        if function is stats.unpaired_difference:
            first, second, metric = args
            return [[(first, metric)], [(second, metric)]]
        return [[(args[0], args[1])]]

    def replicate(self, iters: int, seed: int, resamples: Any) -> stats.Replicated:
        """Its replicates, on ``resamples`` (those of ``documents``: one ``stats.Resamples`` or,
        unpaired, a pair of them), to be summarised with others (``fill``)."""
        function, args, kwargs = self._call
        return stats.REPLICATES[function](
            *args, iters=iters, seed=seed, resamples=resamples, **kwargs
        )

    def fill(self, found: stats.Estimate) -> None:
        for item in fields(stats.Estimate):
            object.__setattr__(self, item.name, getattr(found, item.name))

    def __getattr__(self, name: str) -> Any:  # only for attributes not set yet
        raise RuntimeError(f"estimate {name} read before the report's bootstraps were computed")


CHUNK = 256  # bootstraps whose replicate sums are held at once (iters × 2 floats per ratio)


class Estimates:
    """Every bootstrap one report asks for (see the module docstring)."""

    def __init__(self, iters: int, seed: int) -> None:
        self.iters, self.seed = iters, seed
        self.pending: list[Pending] = []
        self._asked: dict[tuple, tuple[Pending, tuple]] = {}
        # per task (kept alive with it, so its id is not reused): its sorted schema ids and
        # its documents' order by them (``_ids``), and its values in that order per (metric,
        # equal-length only)
        self._uids: dict[int, tuple[TaskRun, tuple[Any, ...] | None, list[int]]] = {}
        self._aligned: dict[tuple[int, str, bool], tuple[TaskRun, list]] = {}
        self._identities: dict[int, tuple[Sequence[Any], tuple[int, ...]]] = {}

    def _ask(self, function: Callable[..., stats.Estimate], *args: Any, **kwargs: Any) -> Pending:
        key = (function, *map(self._identity, args), *sorted(kwargs.items(), key=lambda i: i[0]))
        if key in self._asked:  # the same documents: one bootstrap (args kept alive, ids stay)
            return self._asked[key][0]
        found = Pending(function, *args, **kwargs)
        self.pending.append(found)
        self._asked[key] = (found, args)
        return found

    def _identity(self, value: Any) -> Any:
        """What makes two bootstraps the same: the documents themselves (by object), a form, a
        null. A list's is kept with the list (alive, so its id is not reused): the report asks
        for the same few lists of thousands of documents tens of thousands of times."""
        if not isinstance(value, list | tuple):
            return id(value) if callable(value) else value
        if id(value) not in self._identities:
            self._identities[id(value)] = (value, tuple(id(item) for item in value))
        return self._identities[id(value)][1]

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
        schemas = self._schemas(first)
        if schemas is not None and schemas == self._schemas(second):
            return self.paired(
                self._by_schema(first, metric, equal, a),
                self._by_schema(second, metric, equal, b),
                form,
            )
        return self.unpaired(a, b, form)

    def _schemas(self, task: TaskRun) -> tuple[Any, ...] | None:
        """A task's schema ids, sorted; None when one is there twice (no pairing by them)."""
        return self._ids(task)[1]

    def _ids(self, task: TaskRun) -> tuple[TaskRun, tuple[Any, ...] | None, list[int]]:
        """(the task, its sorted schema ids or None, its documents in ``stats.align``'s order)."""
        if id(task) not in self._uids:
            uids = [d.get("schema_uid") for d in task.docs]
            unique = len(set(uids)) == len(uids)
            order = sorted(range(len(uids)), key=lambda i: repr(uids[i]))
            self._uids[id(task)] = (task, tuple(sorted(uids, key=str)) if unique else None, order)
        return self._uids[id(task)]

    def _by_schema(self, task: TaskRun, metric: str, equal: bool, values: list) -> list:
        """``values`` in ``stats.align``'s order of its (unique) schema ids: one list per task and
        metric, so its bootstraps and parts are shared by every model it is compared with."""
        key = (id(task), metric, equal)
        if key not in self._aligned:
            self._aligned[key] = (task, [values[i] for i in self._ids(task)[2]])
        return self._aligned[key][1]

    def compute(self, quiet: bool = False) -> None:
        """Run every bootstrap asked for so far, with a progress bar (off when ``quiet``).

        Those over the same number of documents share one ``stats.Resamples`` (every bootstrap
        of a report has the same seed, so they drew the same resamples anyway), its replicate
        sums taken ``CHUNK`` bootstraps at a time; one number of documents' resamples are
        dropped before the next are drawn, so memory holds one set at a time."""
        by_size: dict[tuple[int, ...], list[Pending]] = {}
        for found in self.pending:
            by_size.setdefault(found.documents, []).append(found)
        with progress(len(self.pending), "report: bootstraps", "bootstrap", quiet) as bar:
            for sizes, group in by_size.items():
                if len(sizes) == 1:
                    resamples: Any = stats.Resamples(sizes[0], self.iters, self.seed)
                    draws = [resamples]
                else:
                    resamples = stats.unpaired_resamples(sizes[0], sizes[1], self.iters, self.seed)
                    draws = list(resamples)
                for start in range(0, len(group), CHUNK):
                    chunk = group[start : start + CHUNK]
                    for i, draw in enumerate(draws):
                        draw.forget()
                        draw.prefetch([w for found in chunk for w in found.wanted()[i]])
                    drawn = [found.replicate(self.iters, self.seed, resamples) for found in chunk]
                    for found, estimate in zip(chunk, stats.summarise(drawn), strict=True):
                        found.fill(estimate)
                    bar.update(len(chunk))
        self.pending = []


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
    return task.equal_length(metric) if equal else values


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
