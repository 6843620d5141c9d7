"""Every share this package reports, as Σ numerator / Σ denominator over lm-eval documents.

A bootstrap replicate of such a share is two weighted sums, so ``stats`` computes thousands of
replicates at once instead of calling the aggregation on each resampled list. This module holds
the machinery (``Ratio``, ``Difference``, ``Combination``) and the per-document parts mirroring
the definitions of ``metrics`` (per-document ``SchemaOutcome``), ``consistency`` (per-document
``PairOutcome``: the schema before and after a transformation) and ``associativity`` (a pair
tagged with its subset; relative loss and gain are elementwise functions of two ratios); each
metric's form is in its ``registry`` record, and the tests check that each form equals the
aggregation lm-eval runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from wsc_tasks.metrics import accuracy, associativity

Parts = Callable[[Any], tuple[float, float]]  # one document -> (numerator, denominator)


@dataclass(frozen=True)
class Ratio:
    """A share Σ numerator / Σ denominator over documents; NaN when the denominator is 0."""

    name: str
    parts: Parts
    of: str = "document"  # what the denominator counts, for "undefined: no <of>" messages

    def arrays(self, values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
        pairs = np.array([self.parts(v) for v in values], dtype=float).reshape(-1, 2)
        return pairs[:, 0], pairs[:, 1]

    def __call__(self, values: Sequence[Any]) -> float:
        num, den = self.arrays(values)
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


PROBLEM_ACCURACY = Ratio("acc", problem_parts, "problem")
SCHEMA_ACCURACY = Ratio("schema_acc", schema_parts, "schema")


# -- a schema before and after a transformation (PairOutcome) ------------------------------------
def _problem_flags(item: dict[str, Any]) -> list[tuple[int, int]]:
    before, after = item["before"]["correct"], item["after"]["correct"]
    if len(before) != len(after):
        raise ValueError(
            f"problem metrics need a problem transformation: {len(before)} and {len(after)} "
            "problems cannot be matched problem by problem"
        )
    return list(zip(before, after, strict=True))


def _schema_flags(item: dict[str, Any]) -> list[tuple[list[int], list[int]]]:
    before, after = item["before"], item["after"]
    return [
        ([before["correct"][i] for i in gb], [after["correct"][i] for i in ga])
        for gb, ga in zip(before["groups"], after["groups"], strict=True)
    ]


def problem_pair_ratio(name: str, hit: Callable, base: Callable, of: str = "problem") -> Ratio:
    """Problems (before, after) with ``hit`` over those with ``base`` (``of`` says which), both
    called (before, after) with a problem's solved flags."""

    def parts(item: dict[str, Any]) -> tuple[float, float]:
        flags = _problem_flags(item)
        return sum(bool(hit(b, a)) for b, a in flags), sum(bool(base(b, a)) for b, a in flags)

    return Ratio(name, parts, of)


def schema_pair_ratio(name: str, hit: Callable, base: Callable, of: str = "schema") -> Ratio:
    """Schema groups with ``hit`` over those with ``base`` (``of`` says which), both called
    (before, after) with the group's solved flags."""

    def parts(item: dict[str, Any]) -> tuple[float, float]:
        flags = _schema_flags(item)
        return sum(bool(hit(b, a)) for b, a in flags), sum(bool(base(b, a)) for b, a in flags)

    return Ratio(name, parts, of)


# -- associativity (``associativity.aggregations``): ratios over one subset of the pairs ----------
def scoped(parts: Parts, side: str, scope: str) -> Ratio:
    """``parts`` of one side of the pairs in ``scope`` (all of WSC266, or one subset)."""

    def inside_parts(item: dict[str, Any]) -> tuple[float, float]:
        inside = scope == "wsc266" or item["subset"] == scope
        return parts(item[side]) if inside else (0.0, 0.0)

    return Ratio(f"{side}_{scope}", inside_parts, associativity.SCOPE_UNITS[scope])


def relative_loss(r: np.ndarray, r_b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r > 0, (r - r_b) / r, np.nan)


def relative_gain(r: np.ndarray, r_b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r_b < 1, (r - r_b) / (1 - r_b), np.nan)


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
