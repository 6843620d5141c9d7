"""Every share this package reports, as Σ numerator / Σ denominator over lm-eval documents.

A bootstrap replicate of such a share is two weighted sums, so ``stats`` computes thousands of
replicates at once instead of calling the aggregation on each resampled list. The parts mirror the
definitions of ``metrics`` (per-document ``SchemaOutcome``), ``consistency`` (per-document
``PairOutcome``: the schema before and after a transformation) and ``associativity`` (a pair
tagged with its subset; relative loss and gain are elementwise functions of two ratios); the tests
check that each form equals the aggregation lm-eval runs. ``form`` finds the form of an aggregation
function, ``by_name`` the form of a reported metric from its name and one per-document value.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import metrics

Parts = Callable[[Any], tuple[float, float]]  # one document -> (numerator, denominator)


@dataclass(frozen=True)
class Ratio:
    """A share Σ numerator / Σ denominator over documents; NaN when the denominator is 0."""

    name: str
    parts: Parts

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

    def __call__(self, values: Sequence[Any]) -> float:
        return float(self.function(*(np.float64(part(values)) for part in self.parts)))


Form = Ratio | Difference | Combination


# -- one schema (SchemaOutcome) ----------------------------------------------------------------
def _group_hits(o: metrics.SchemaOutcome) -> list[tuple[int, int]]:
    return [(sum(o["correct"][i] for i in g), len(g)) for g in o["groups"]]


def problem_parts(o: metrics.SchemaOutcome) -> tuple[float, float]:
    return sum(o["correct"]), len(o["correct"])


def schema_parts(o: metrics.SchemaOutcome) -> tuple[float, float]:
    groups = _group_hits(o)
    return sum(right == size for right, size in groups), len(groups)


def half_solved_parts(o: metrics.SchemaOutcome) -> tuple[float, float]:
    groups = _group_hits(o)
    return sum(0 < right < size for right, size in groups), len(groups)


def anti_solved_parts(o: metrics.SchemaOutcome) -> tuple[float, float]:
    groups = _group_hits(o)
    return sum(right == 0 for right, _ in groups), len(groups)


PROBLEM_ACCURACY = Ratio("acc", problem_parts)
SCHEMA_ACCURACY = Ratio("schema_acc", schema_parts)
OUTCOME_FORMS: dict[str, Ratio] = {
    "acc": PROBLEM_ACCURACY,
    "schema_acc": SCHEMA_ACCURACY,
    "half_solved": Ratio("half_solved", half_solved_parts),
    "anti_solved": Ratio("anti_solved", anti_solved_parts),
    "share": Ratio("share", problem_parts),
}
_FUNCTIONS: dict[Callable[..., Any], Ratio] = {
    metrics.problem_accuracy: OUTCOME_FORMS["acc"],
    metrics.schema_accuracy: OUTCOME_FORMS["schema_acc"],
    metrics.half_solved: OUTCOME_FORMS["half_solved"],
    metrics.anti_solved: OUTCOME_FORMS["anti_solved"],
    metrics.share: OUTCOME_FORMS["share"],
}


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


def _problem_ratio(name: str, hit: Callable, base: Callable) -> Ratio:
    def parts(item: dict[str, Any]) -> tuple[float, float]:
        flags = _problem_flags(item)
        return sum(bool(hit(a, b)) for a, b in flags), sum(bool(base(a, b)) for a, b in flags)

    return Ratio(name, parts)


def _schema_ratio(name: str, hit: Callable, base: Callable) -> Ratio:
    def parts(item: dict[str, Any]) -> tuple[float, float]:
        flags = _schema_flags(item)
        return sum(bool(hit(b, a)) for b, a in flags), sum(bool(base(b, a)) for b, a in flags)

    return Ratio(name, parts)


def _both(b: Any, a: Any) -> bool:
    return all(b) and all(a)


def _any(b: Any, a: Any) -> bool:
    return True


PAIR_FORMS: dict[str, Form] = {
    "consistency": _problem_ratio("consistency", lambda a, b: a == b, _any),
    "consistent_acc": _problem_ratio("consistent_acc", lambda a, b: a and b, _any),
    "preserved_acc": _problem_ratio("preserved_acc", lambda a, b: a and b, lambda a, b: a),
    "preserved_acc_rev": _problem_ratio("preserved_acc_rev", lambda a, b: a and b, lambda a, b: b),
    "schema_consistency_weak": _schema_ratio(
        "schema_consistency_weak", lambda b, a: all(b) == all(a), _any
    ),
    "schema_consistency": _schema_ratio("schema_consistency", lambda b, a: sum(b) == sum(a), _any),
    "schema_consistency_strict": _schema_ratio(
        "schema_consistency_strict", lambda b, a: list(b) == list(a), _any
    ),
    "consistent_schema_acc": _schema_ratio("consistent_schema_acc", _both, _any),
    "preserved_schema_acc": _schema_ratio("preserved_schema_acc", _both, lambda b, a: all(b)),
    "preserved_schema_acc_rev": _schema_ratio(
        "preserved_schema_acc_rev", _both, lambda b, a: all(a)
    ),
}
for _metric, _parts in (("acc", problem_parts), ("schema_acc", schema_parts)):
    _before = Ratio(f"{_metric}_original", lambda i, p=_parts: p(i["before"]))
    _after = Ratio(f"{_metric}_perturbed", lambda i, p=_parts: p(i["after"]))
    PAIR_FORMS[_before.name] = _before
    PAIR_FORMS[_after.name] = _after
    PAIR_FORMS[f"{_metric}_diff"] = Difference(f"{_metric}_diff", _after, _before)


# -- associativity (``associativity.aggregations``): ratios over one subset of the pairs ----------
def _scoped(parts: Parts, side: str, scope: str) -> Ratio:
    def scoped(item: dict[str, Any]) -> tuple[float, float]:
        inside = scope == "wsc266" or item["subset"] == scope
        return parts(item[side]) if inside else (0.0, 0.0)

    return Ratio(f"{side}_{scope}", scoped)


def _relative_loss(r: np.ndarray, r_b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r > 0, (r - r_b) / r, np.nan)


def _relative_gain(r: np.ndarray, r_b: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(r_b < 1, (r - r_b) / (1 - r_b), np.nan)


ASSOCIATIVITY_FORMS: dict[str, Form] = {}
for _metric, _parts in (("acc", problem_parts), ("schema_acc", schema_parts)):
    for _scope in ("wsc266", "associative", "nonassociative"):
        _r, _r_b = _scoped(_parts, "before", _scope), _scoped(_parts, "after", _scope)
        _name = f"{_metric}_{_scope}"
        ASSOCIATIVITY_FORMS[f"{_name}_original"] = _r
        ASSOCIATIVITY_FORMS[f"{_name}_nocands"] = _r_b
        ASSOCIATIVITY_FORMS[f"{_name}_adjusted"] = Difference(f"{_name}_adjusted", _r, _r_b)
        ASSOCIATIVITY_FORMS[f"{_name}_rel_loss"] = Combination(
            f"{_name}_rel_loss", _relative_loss, (_r, _r_b)
        )
        ASSOCIATIVITY_FORMS[f"{_name}_rel_gain"] = Combination(
            f"{_name}_rel_gain", _relative_gain, (_r, _r_b)
        )
    for _i, _side in enumerate(("original", "nocands")):
        ASSOCIATIVITY_FORMS[f"{_metric}_assoc_gap_{_side}"] = Difference(
            f"{_metric}_assoc_gap_{_side}",
            ASSOCIATIVITY_FORMS[f"{_metric}_associative_{_side}"],  # type: ignore[arg-type]
            ASSOCIATIVITY_FORMS[f"{_metric}_nonassociative_{_side}"],  # type: ignore[arg-type]
        )


def form(aggregation: Callable[..., Any]) -> Form | None:
    """The ratio form of an lm-eval aggregation of this package, or None if it has none.

    Functions of ``metrics`` are known by identity; the aggregations ``consistency`` builds per
    task are closures, known by module and name (the tests check each form against them).
    """
    if isinstance(aggregation, Ratio | Difference | Combination):
        return aggregation
    try:
        found = _FUNCTIONS.get(aggregation)
    except TypeError:  # unhashable
        found = None
    if found is not None:
        return found
    module = getattr(aggregation, "__module__", None)
    if module == "wsc_tasks.consistency":
        return PAIR_FORMS.get(getattr(aggregation, "__name__", ""))
    if module == "wsc_tasks.associativity":
        return ASSOCIATIVITY_FORMS.get(getattr(aggregation, "__name__", ""))
    return None


def by_name(name: str, value: Any) -> Form | None:
    """The form of metric ``name`` of a logged sample whose per-document value is ``value``.

    ``acc_<method>``, ``schema_acc_equal_len``, ``consistency_full_to_partial``…: the longest known
    metric name the name starts with, for the shape of the value. None for counts and unknown names.
    """
    if not isinstance(value, dict):
        return None
    if "before" in value and "after" in value:
        if "subset" in value:
            return None  # the associativity task: its own quantities, see the report
        candidates: dict[str, Form] = PAIR_FORMS
    elif "correct" in value:
        candidates = OUTCOME_FORMS
    else:
        return None
    for key in sorted(candidates, key=len, reverse=True):
        if name == key or name.startswith(key + "_"):
            return candidates[key]
    return None
