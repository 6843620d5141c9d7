"""One task of one run, as the reports read it: lm-eval's figures and the per-document values.

``folders`` reads this package's runs into them and ``foreign`` the runs made elsewhere (lm-eval's
built-in ``winogrande`` and ``wsc273``, the Open LLM Leaderboard's details), each keeping who
scored it (``origin``), so that neither reader imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Schema
from wsc_tasks.metrics import ratios, registry
from wsc_tasks.metrics.accuracy import restrict
from wsc_tasks.metrics.registry import ACC, EQUAL_LEN, Key, TaskKind
from wsc_tasks.runs.foreign.origin import Origin


@dataclass
class TaskRun:
    """One task of one run: lm-eval's figures and, with samples, the per-document values."""

    task: str
    row: dict[str, Any]
    docs: list[dict[str, Any]] = field(default_factory=list)
    values: dict[str, list[Any]] = field(default_factory=dict)
    forms: dict[str, ratios.Form] = field(default_factory=dict)
    samples: Path | None = None  # the samples file, read again for the report's examples
    lines: list[int] | None = None  # each document's line in it (``output_files.LINE``)
    dataset: str | None = None  # the catalog dataset it ran on (``metadata.dataset``)
    scored: tuple[int, int] | None = None  # documents scored, of the dataset's (lm-eval n-samples)
    problems: list[str] = field(default_factory=list)  # metrics its samples do not reproduce
    origin: Origin | None = None  # a foreign run's task: who scored it (``runs.foreign``)
    _equal: dict[str, list[Any] | None] = field(default_factory=dict, repr=False, compare=False)

    @property
    def partial(self) -> bool:
        """Scored on some of its dataset's documents only (``--limit``, ``--samples``)."""
        return self.scored is not None and self.scored[0] < self.scored[1]

    def reported(self, metric: str) -> float | None:
        value = self.row.get(registry.column(metric))
        return float(value) if isinstance(value, int | float) else None

    @cached_property
    def keys(self) -> list[Key]:
        """The keys of the metrics it logged per document (or, without samples, reported)."""
        if self.values:
            return list(registry.parse_all(self.values).values())
        return list(registry.reported(self.row))

    @cached_property
    def kind(self) -> TaskKind | None:
        """What its documents are: schemas, pairs of schemas, WinoWhy questions…"""
        return registry.task_kind(self.keys)

    @property
    def root(self) -> str | None:
        """The full or adversarial dataset its dataset is made from (``catalog.root``)."""
        try:
            return catalog.root(self.dataset) if self.dataset else None
        except KeyError:  # a dataset of a newer or older catalog
            return None

    def methods(self) -> list[str]:
        """Scoring methods with per-document outcomes, in lm-eval's order (headline first)."""
        return [
            method
            for method in registry.methods(self.keys)
            if self.forms.get(Key(ACC, method=method).name) is ratios.PROBLEM_ACCURACY
        ]

    def equal_length(self, metric: str) -> list[Any] | None:
        """The per-document values of ``metric`` restricted to the problems whose answers have
        equal lengths (thesis §3.7.4); None without the run's equal-length flags. One list per
        metric, so that two tables asking for it share its bootstraps."""
        if metric not in self._equal:
            flags = self.values.get(Key("share", subset=EQUAL_LEN).name)
            values = self.values.get(metric)
            seen: dict[tuple[int, int], Any] = {}  # a summary's equal values are one object
            self._equal[metric] = (
                [
                    seen[(id(v), id(f))]
                    if (id(v), id(f)) in seen
                    else seen.setdefault((id(v), id(f)), restrict(v, f["correct"]))
                    for v, f in zip(values, flags, strict=True)
                ]
                if flags and values
                else None
            )
        return self._equal[metric]

    def schemas(self, side: str | None = None) -> list[Schema]:
        return [Schema.from_doc(doc[side] if side else doc) for doc in self.docs]
