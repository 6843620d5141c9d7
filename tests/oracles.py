"""Independent list-level definitions of the metrics, written from the thesis, for the tests.

The package computes every share as a ratio form (``wsc_tasks.metrics.ratios``); these functions
compute the same figures the obvious way, over whole lists, so that a test can check a form
against something that does not share its code. Nothing in ``wsc_tasks`` imports this module.
The oracles of the accuracy and consistency records are declared beside their formulas, in
``wsc_tasks.metrics.registry`` (``Metric.oracle``): a new record brings its own, and the one metric
tester (``tests/test_metric_contract.py``) runs every record through it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wsc_tasks.metrics import registry

Pair = tuple[Sequence[int], Sequence[int]]  # (solved flags of w, solved flags of F(w))


# -- one schema (thesis §3.7.1) and a schema and its transformed schema (§3.7.3, Table 3.6) -------
# Each record's oracle is declared beside its formula in the registry (``Metric.oracle``); these
# are those oracles, by name. (name -> oracle over SchemaOutcome dicts)
ACCURACY: dict[str, Callable[[Sequence[dict]], float]] = {
    m.name: m.oracle
    for m in registry.select(value=registry.OUTCOME, kind="accuracy")
    if m.oracle is not None
}
problem_accuracy, schema_accuracy = ACCURACY["acc"], ACCURACY["schema_acc"]

# name -> (oracle over matched (before, after) flags, the level its pairs are taken at)
CONSISTENCY: dict[str, tuple[Callable[[Sequence[Pair]], float], str]] = {
    m.name: (m.oracle, m.level)
    for m in registry.select(value=registry.PAIR, kind="consistency")
    if m.oracle is not None
}


def matched(level: str, pairs: Sequence[Pair]) -> list[tuple[Any, Any]]:
    """The (before, after) units a consistency oracle takes: each problem of every pair (a problem
    transformation: the pairs must have as many problems), or each pair of flags as one group."""
    if level == "schema":
        return [(list(b), list(a)) for b, a in pairs]
    out = []
    for before, after in pairs:
        if len(before) != len(after):
            raise ValueError("problem metrics need a problem transformation")
        out.extend(zip(before, after, strict=True))
    return out


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
    return function(matched(level, (problem_pairs if level == "problem" else schema_pairs)(items)))


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
