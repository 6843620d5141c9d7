"""Independent list-level definitions of the metrics, written from the thesis, for the tests.

The package computes every share as a ratio form (``wsc_tasks.metrics.ratios``); these functions
compute the same figures the obvious way, over whole lists, so that a test can check a form
against something that does not share its code. Nothing in ``wsc_tasks`` imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

Pair = tuple[Sequence[int], Sequence[int]]  # (solved flags of w, solved flags of F(w))


def share(hits: int, total: int) -> float:
    return hits / total if total else float("nan")


# -- one schema: lists of SchemaOutcome (thesis §3.7.1) -------------------------------------------
def _groups(outcomes: Sequence[dict]) -> list[tuple[int, int]]:
    """(right, size) for every schema-metric group."""
    return [(sum(o["correct"][i] for i in g), len(g)) for o in outcomes for g in o["groups"]]


def problem_accuracy(outcomes: Sequence[dict]) -> float:
    """a: share of problems answered correctly (each problem counted once)."""
    return share(sum(sum(o["correct"]) for o in outcomes), sum(len(o["correct"]) for o in outcomes))


def schema_accuracy(outcomes: Sequence[dict]) -> float:
    """A: share of schemas whose every problem is answered correctly."""
    groups = _groups(outcomes)
    return share(sum(right == size for right, size in groups), len(groups))


def half_solved(outcomes: Sequence[dict]) -> float:
    """A': share of schemas with some but not all problems right."""
    groups = _groups(outcomes)
    return share(sum(0 < right < size for right, size in groups), len(groups))


def anti_solved(outcomes: Sequence[dict]) -> float:
    """A'': share of schemas with no problem right."""
    groups = _groups(outcomes)
    return share(sum(right == 0 for right, _ in groups), len(groups))


ACCURACY = {
    "acc": problem_accuracy,
    "schema_acc": schema_accuracy,
    "half_solved": half_solved,
    "anti_solved": anti_solved,
}


# -- a schema and its transformed schema: lists of Pair (thesis §3.7.3, Table 3.6) ---------------
def _problems(pairs: Sequence[Pair]) -> list[tuple[int, int]]:
    out = []
    for before, after in pairs:
        if len(before) != len(after):
            raise ValueError("problem metrics need a problem transformation")
        out.extend(zip(before, after, strict=True))
    return out


def consistency(pairs: Sequence[Pair]) -> float:
    """c (3.81): problems with x and f(x) both solved or both not solved."""
    problems = _problems(pairs)
    return share(sum(b == a for b, a in problems), len(problems))


def consistent_acc(pairs: Sequence[Pair]) -> float:
    """c_a (3.82): problems with x and f(x) both solved."""
    problems = _problems(pairs)
    return share(sum(b and a for b, a in problems), len(problems))


def preserved_acc(pairs: Sequence[Pair]) -> float:
    """c_p (3.83): of the problems solved before, those also solved after."""
    problems = _problems(pairs)
    return share(sum(b and a for b, a in problems), sum(b for b, _ in problems))


def preserved_acc_rev(pairs: Sequence[Pair]) -> float:
    """ĉ_p (3.84): of the problems solved after, those also solved before."""
    problems = _problems(pairs)
    return share(sum(b and a for b, a in problems), sum(a for _, a in problems))


def schema_consistency_weak(pairs: Sequence[Pair]) -> float:
    """C̃ (3.87): schemas with w and F(w) both solved, or neither."""
    return share(sum(all(b) == all(a) for b, a in pairs), len(pairs))


def schema_consistency(pairs: Sequence[Pair]) -> float:
    """C (3.88): schemas with equally many problems solved in w and F(w)."""
    return share(sum(sum(b) == sum(a) for b, a in pairs), len(pairs))


def schema_consistency_strict(pairs: Sequence[Pair]) -> float:
    """C* (3.89): schemas solved identically, problem by problem."""
    _problems(pairs)
    return share(sum(list(b) == list(a) for b, a in pairs), len(pairs))


def consistent_schema_acc(pairs: Sequence[Pair]) -> float:
    """C_a (3.90): schemas with w and F(w) both solved."""
    return share(sum(all(b) and all(a) for b, a in pairs), len(pairs))


def preserved_schema_acc(pairs: Sequence[Pair]) -> float:
    """C_p (3.91): of the schemas solved before, those also solved after."""
    return share(sum(all(b) and all(a) for b, a in pairs), sum(all(b) for b, _ in pairs))


def preserved_schema_acc_rev(pairs: Sequence[Pair]) -> float:
    """Ĉ_p (3.92): of the schemas solved after, those also solved before."""
    return share(sum(all(b) and all(a) for b, a in pairs), sum(all(a) for _, a in pairs))


# name -> (function over pairs, the level its pairs are taken at)
CONSISTENCY: dict[str, tuple[Callable[[Sequence[Pair]], float], str]] = {
    "consistency": (consistency, "problem"),
    "consistent_acc": (consistent_acc, "problem"),
    "preserved_acc": (preserved_acc, "problem"),
    "preserved_acc_rev": (preserved_acc_rev, "problem"),
    "schema_consistency_weak": (schema_consistency_weak, "schema"),
    "schema_consistency": (schema_consistency, "schema"),
    "schema_consistency_strict": (schema_consistency_strict, "schema"),
    "consistent_schema_acc": (consistent_schema_acc, "schema"),
    "preserved_schema_acc": (preserved_schema_acc, "schema"),
    "preserved_schema_acc_rev": (preserved_schema_acc_rev, "schema"),
}


def problem_pairs(items: Sequence[dict]) -> list[Pair]:
    """One pair per document, all its problems."""
    return [(i["before"]["correct"], i["after"]["correct"]) for i in items]


def schema_pairs(items: Sequence[dict]) -> list[Pair]:
    """One pair per schema-metric group, matched group by group."""
    return [
        ([i["before"]["correct"][k] for k in gb], [i["after"]["correct"][k] for k in ga])
        for i in items
        for gb, ga in zip(i["before"]["groups"], i["after"]["groups"], strict=True)
    ]


def consistency_metric(name: str, items: Sequence[dict]) -> float:
    """Consistency metric ``name`` of per-document (before, after) outcomes."""
    function, level = CONSISTENCY[name]
    return function((problem_pairs if level == "problem" else schema_pairs)(items))


# -- associativity (thesis §4.4): tagged pairs ----------------------------------------------------
def relative_loss(r: float, r_b: float) -> float:
    """(r − r_B)/r, eq. 4.1; NaN when r = 0."""
    return (r - r_b) / r if r > 0 else float("nan")


def relative_gain(r: float, r_b: float) -> float:
    """(r − r_B)/(1 − r_B), eq. 4.2; NaN when r_B = 1."""
    return (r - r_b) / (1 - r_b) if r_b < 1 else float("nan")


QUANTITIES: dict[str, Callable[[float, float], float]] = {
    "original": lambda r, r_b: r,
    "nocands": lambda r, r_b: r_b,
    "adjusted": lambda r, r_b: r - r_b,
    "rel_loss": relative_loss,
    "rel_gain": relative_gain,
}


def _rates(items: Sequence[dict], accuracy: Callable, scope: str) -> tuple[float, float]:
    chosen = [i for i in items if scope == "wsc266" or i["subset"] == scope]
    return accuracy([i["before"] for i in chosen]), accuracy([i["after"] for i in chosen])


def associativity() -> dict[str, Callable[[Sequence[dict]], float]]:
    """Metric name -> function: ``<acc|schema_acc>_<scope>_<quantity>`` and the gaps
    ``<acc|schema_acc>_assoc_gap_<original|nocands>`` (associative − non-associative)."""
    out: dict[str, Callable[[Sequence[dict]], float]] = {}
    for metric in ("acc", "schema_acc"):
        accuracy = ACCURACY[metric]
        for scope in ("wsc266", "associative", "nonassociative"):
            for quantity, function in QUANTITIES.items():

                def aggregate(items: Any, a=accuracy, s=scope, f=function) -> float:
                    return f(*_rates(items, a, s))

                out[f"{metric}_{scope}_{quantity}"] = aggregate
        for index, side in enumerate(("original", "nocands")):

            def gap(items: Any, a=accuracy, i=index) -> float:
                return _rates(items, a, "associative")[i] - _rates(items, a, "nonassociative")[i]

            out[f"{metric}_assoc_gap_{side}"] = gap
    return out
