"""Associativity controls (thesis §4.4, Tables 4.25–4.28): how much accuracy survives no-cands.

r is an accuracy (problem or schema) on a subset of WSC266 and r_B the same accuracy on its
no-candidates perturbation, where nothing but association can solve a problem. r − r_B is the
accuracy lost to the perturbation, also the thesis's *adjusted* accuracy; relative loss
(r − r_B)/r (eq. 4.1) and relative gain (r − r_B)/(1 − r_B) (eq. 4.2). Subsets: the associative
schemas of Trichelair et al., the others, and all of WSC266. Each lm-eval document is a
``consistency.PairOutcome`` (WSC266 schema, its no-cands schema) tagged with its ``subset``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

from wsc_tasks.data.problems import Schema
from wsc_tasks.metrics.accuracy import problem_accuracy, schema_accuracy

SUBSETS = ("associative", "nonassociative")
SCOPES = ("wsc266", *SUBSETS)
SCOPE_UNITS = {"wsc266": "schema", "associative": "associative schema",
               "nonassociative": "non-associative schema"}  # fmt: skip
ACCURACIES = {"acc": problem_accuracy, "schema_acc": schema_accuracy}

Aggregation = Callable[[Sequence[dict[str, Any]]], float]


def relative_loss(r: float, r_b: float) -> float:
    """(r − r_B)/r, eq. 4.1; NaN when r = 0."""
    return (r - r_b) / r if r > 0 else float("nan")


def relative_gain(r: float, r_b: float) -> float:
    """(r − r_B)/(1 − r_B), eq. 4.2; NaN when r_B = 1."""
    return (r - r_b) / (1 - r_b) if r_b < 1 else float("nan")


def _rates(items: Sequence[dict[str, Any]], accuracy: Callable, scope: str) -> tuple[float, float]:
    chosen = [i for i in items if scope == "wsc266" or i["subset"] == scope]
    return accuracy([i["before"] for i in chosen]), accuracy([i["after"] for i in chosen])


QUANTITIES: dict[str, Callable[[float, float], float]] = {
    "original": lambda r, r_b: r,
    "nocands": lambda r, r_b: r_b,
    "adjusted": lambda r, r_b: r - r_b,
    "rel_loss": relative_loss,
    "rel_gain": relative_gain,
}


def _metric(accuracy: Callable, scope: str, quantity: str) -> Aggregation:
    def aggregate(items: Sequence[dict[str, Any]]) -> float:
        return QUANTITIES[quantity](*_rates(items, accuracy, scope))

    return aggregate


def _gap(accuracy: Callable, side: int) -> Aggregation:
    def aggregate(items: Sequence[dict[str, Any]]) -> float:
        return (
            _rates(items, accuracy, "associative")[side]
            - _rates(items, accuracy, "nonassociative")[side]
        )

    return aggregate


def aggregations() -> dict[str, Aggregation]:
    """Metric name → aggregation: ``<acc|schema_acc>_<scope>_<quantity>`` and the gaps
    ``<acc|schema_acc>_assoc_gap_<original|nocands>`` (associative − non-associative). The same
    function objects every call: ``registry`` knows each by identity."""
    return dict(_aggregations())


@cache
def _aggregations() -> dict[str, Aggregation]:
    out: dict[str, Aggregation] = {}
    for metric, accuracy in ACCURACIES.items():
        for scope in SCOPES:
            for quantity in QUANTITIES:
                out[f"{metric}_{scope}_{quantity}"] = _metric(accuracy, scope, quantity)
        out[f"{metric}_assoc_gap_original"] = _gap(accuracy, 0)
        out[f"{metric}_assoc_gap_nocands"] = _gap(accuracy, 1)
    for name, function in out.items():
        function.__name__ = name
    return out


@cache
def _associative_numbers() -> frozenset[int | None]:
    from wsc_tasks.data import catalog

    return frozenset(p.number for s in catalog.load("wsc266_associative") for p in s.problems)


def subset(original: Schema) -> str:
    """``associative`` if the WSC266 schema is in the thesis's associative subset file."""
    numbers = _associative_numbers()
    inside = [p.number in numbers for p in original.problems]
    if any(inside) != all(inside):
        raise ValueError(f"schema {original.uid} is only partly in the associative subset")
    return SUBSETS[0] if all(inside) else SUBSETS[1]
