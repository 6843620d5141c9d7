"""Every share this package reports, as Σ numerator / Σ denominator over lm-eval documents.

The form of a share is its aggregation: lm-eval calls it on the per-document values, and because a
bootstrap replicate of it is two weighted sums, ``stats`` computes thousands of replicates at once
instead of calling it on each resampled list. This module holds the machinery (``Ratio``,
``Difference``, ``Combination``), the per-document parts of the accuracies (per-document
``SchemaOutcome``, thesis §3.7.1), the associativity scopes and the relative change (thesis §4.4);
the consistency metrics' parts are in ``consistency``. Each metric's form is in its
``registry`` record; the tests check every form against an independent list-level oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wsc_tasks.metrics import accuracy

Parts = Callable[[Any], tuple[float, float]]  # one document -> (numerator, denominator)


@dataclass(frozen=True)
class Ratio:
    """A share Σ numerator / Σ denominator over documents; NaN when the denominator is 0."""

    name: str
    parts: Parts
    of: str = "document"  # what the denominator counts, for "undefined: no <of>" messages

    def arrays(self, values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        """Each document's (numerator, denominator); a value object met again is not recomputed
        (a run's summary gives equal values as one object)."""
        seen: dict[int, tuple[float, float]] = {}
        parts = self.parts
        pairs = np.array(
            [seen[id(v)] if id(v) in seen else seen.setdefault(id(v), parts(v)) for v in values],
            dtype=float,
        ).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]

    def __call__(self, values: Sequence[Any]) -> float:
        return self.of_arrays(*self.arrays(values))

    @staticmethod
    def of_arrays(num: np.ndarray, den: np.ndarray) -> float:
        """The share from its ``arrays``."""
        total = den.sum()
        return float(num.sum() / total) if total else float("nan")


@dataclass(frozen=True)
class Difference:
    """first − second, two ratios over the same documents (e.g. after − before)."""

    name: str
    first: Ratio
    second: Ratio

    def __call__(self, values: Sequence[Any]) -> float:
        return self.first(values) - self.second(values)


@dataclass(frozen=True)
class Combination:
    """An elementwise numpy function of other forms' values (associativity's relative loss…);
    ``function`` must do the float operations of the aggregation it stands for, in its order."""

    name: str
    function: Callable[..., Any]
    parts: tuple[Any, ...]  # forms
    undefined: str = "the formula is undefined for these values"  # when NaN with defined parts

    def __call__(self, values: Sequence[Any]) -> float:
        return float(self.function(*(np.float64(part(values)) for part in self.parts)))


Form = Ratio | Difference | Combination


# -- one schema (SchemaOutcome) ----------------------------------------------------------------
def _group_hits(o: accuracy.SchemaOutcome) -> list[tuple[int, int]]:
    return [(sum(o["correct"][i] for i in g), len(g)) for g in o["groups"]]


def problem_parts(o: accuracy.SchemaOutcome) -> tuple[float, float]:
    return sum(o["correct"]), len(o["correct"])


def schema_parts(o: accuracy.SchemaOutcome) -> tuple[float, float]:
    groups = _group_hits(o)
    return sum(right == size for right, size in groups), len(groups)


def half_solved_parts(o: accuracy.SchemaOutcome) -> tuple[float, float]:
    groups = _group_hits(o)
    return sum(0 < right < size for right, size in groups), len(groups)


def anti_solved_parts(o: accuracy.SchemaOutcome) -> tuple[float, float]:
    groups = _group_hits(o)
    return sum(right == 0 for right, _ in groups), len(groups)


# a: each problem once; A, A', A'': each schema-metric group once (WSC273's three-problem schema
# counts twice, a problem without a twin not at all), so a = A + A'/2 (eq. 3.80)
PROBLEM_ACCURACY = Ratio("acc", problem_parts, "problem")
SCHEMA_ACCURACY = Ratio("schema_acc", schema_parts, "schema")
HALF_SOLVED = Ratio("half_solved", half_solved_parts, "schema")
ANTI_SOLVED = Ratio("anti_solved", anti_solved_parts, "schema")


# -- associativity: ratios over one subset of the pairs, and the relative change -----------------
def scoped(name: str, parts: Parts, side: str, scope: str | None, of: str = "schema") -> Ratio:
    """``parts`` of one side of the pairs in ``scope`` (one subset; None: all of them); ``of``:
    what its denominator counts."""

    def inside_parts(item: dict[str, Any]) -> tuple[float, float]:
        inside = scope is None or item["subset"] == scope
        return parts(item[side]) if inside else (0.0, 0.0)

    return Ratio(name, inside_parts, of)


def relative(change: Any, scale: Any) -> np.ndarray:
    """change / scale elementwise (arrays of replicates, or two numbers), NaN where scale is 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.not_equal(scale, 0), np.divide(change, scale), np.nan)


def relative_loss(r: Any, r_b: Any) -> np.ndarray:
    """(r − r_B)/r, eq. 4.1: the share of the accuracy r that the perturbation took away."""
    return relative(np.subtract(r, r_b), r)


def relative_gain(r: Any, r_b: Any) -> np.ndarray:
    """(r − r_B)/(1 − r_B), eq. 4.2: the accuracy above r_B as a share of what r_B left to gain."""
    return relative(np.subtract(r, r_b), np.subtract(1, r_b))


def why_undefined(form: Form, values: Sequence[Any]) -> str | None:
    """Why ``form`` has no value (NaN) on ``values``: "no <what a denominator counts>" for the
    first ratio with nothing to count, else a combination's own condition; None if defined."""
    if isinstance(form, Ratio):
        return None if form.arrays(values)[1].sum() else f"no {form.of}"
    if isinstance(form, Difference):
        return why_undefined(form.first, values) or why_undefined(form.second, values)
    for part in form.parts:
        found = why_undefined(part, values)
        if found:
            return found
    return form.undefined if np.isnan(form(values)) else None
