"""Consistency metrics between a schema and its transformed schema (thesis §3.7.2–3.7.3, Table 3.6).

Each item is the pair (``before``, ``after``): which problems of a schema w the model solved, and
which of F(w). For a *problem* transformation f, problem i of F(w) is f of problem i of w, so the
problem metrics and strict schema consistency apply; for a *schema* transformation (inversion) only
the counts per schema are comparable, so only the schema metrics marked "problem or schema" apply.
A share with an empty denominator is NaN, not 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypedDict

from wsc_tasks.metrics.accuracy import SchemaOutcome

Pair = tuple[Sequence[int], Sequence[int]]  # (solved flags of w, solved flags of F(w))


def _share(hits: int, total: int) -> float:
    return hits / total if total else float("nan")


def _problem_pairs(pairs: Sequence[Pair]) -> list[tuple[int, int]]:
    out = []
    for before, after in pairs:
        if len(before) != len(after):
            raise ValueError(
                "problem metrics need a problem transformation: schemas of "
                f"{len(before)} and {len(after)} problems cannot be matched problem by problem"
            )
        out.extend(zip(before, after, strict=True))
    return out


def consistency(pairs: Sequence[Pair]) -> float:
    """c (3.81): share of problems x with x and f(x) both solved or both not solved."""
    problems = _problem_pairs(pairs)
    return _share(sum(before == after for before, after in problems), len(problems))


def consistent_acc(pairs: Sequence[Pair]) -> float:
    """c_a (3.82): share of problems with x and f(x) both solved."""
    problems = _problem_pairs(pairs)
    return _share(sum(before and after for before, after in problems), len(problems))


def preserved_acc(pairs: Sequence[Pair]) -> float:
    """c_p (3.83): of the problems solved before, the share also solved after."""
    problems = _problem_pairs(pairs)
    both = sum(before and after for before, after in problems)
    return _share(both, sum(before for before, _ in problems))


def preserved_acc_rev(pairs: Sequence[Pair]) -> float:
    """ĉ_p (3.84): of the problems solved after, the share also solved before."""
    problems = _problem_pairs(pairs)
    both = sum(before and after for before, after in problems)
    return _share(both, sum(after for _, after in problems))


def _solved(flags: Sequence[int]) -> bool:
    return all(flags)


def schema_consistency_weak(pairs: Sequence[Pair]) -> float:
    """C̃ (3.87): share of schemas with w and F(w) both solved, or neither solved."""
    return _share(sum(_solved(before) == _solved(after) for before, after in pairs), len(pairs))


def schema_consistency(pairs: Sequence[Pair]) -> float:
    """C (3.88): share of schemas with equally many problems solved in w and F(w)."""
    return _share(sum(sum(before) == sum(after) for before, after in pairs), len(pairs))


def schema_consistency_strict(pairs: Sequence[Pair]) -> float:
    """C* (3.89): share of schemas solved identically, problem by problem (3.86)."""
    _problem_pairs(pairs)
    return _share(sum(list(before) == list(after) for before, after in pairs), len(pairs))


def consistent_schema_acc(pairs: Sequence[Pair]) -> float:
    """C_a (3.90): share of schemas with w and F(w) both solved."""
    return _share(sum(_solved(before) and _solved(after) for before, after in pairs), len(pairs))


def preserved_schema_acc(pairs: Sequence[Pair]) -> float:
    """C_p (3.91): of the schemas solved before, the share also solved after."""
    both = sum(_solved(before) and _solved(after) for before, after in pairs)
    return _share(both, sum(_solved(before) for before, _ in pairs))


def preserved_schema_acc_rev(pairs: Sequence[Pair]) -> float:
    """Ĉ_p (3.92): of the schemas solved after, the share also solved before."""
    both = sum(_solved(before) and _solved(after) for before, after in pairs)
    return _share(both, sum(_solved(after) for _, after in pairs))


Metric = Callable[[Sequence[Pair]], float]

# Each metric's record (level, symbol, ratio form, the transformations it applies to: thesis
# Table 3.6) is in ``registry``.


# -- lm-eval aggregations over per-document (before, after) outcomes -------------------------------


class PairOutcome(TypedDict):
    """One lm-eval document's value: a schema (or its groups) before and after the change."""

    before: SchemaOutcome
    after: SchemaOutcome


def pair_outcome(before: SchemaOutcome, after: SchemaOutcome) -> PairOutcome:
    return {"before": before, "after": after}


def problem_pairs(items: Sequence[PairOutcome]) -> list[Pair]:
    """One pair per document, all its problems: the input of the problem metrics."""
    return [(item["before"]["correct"], item["after"]["correct"]) for item in items]


def schema_pairs(items: Sequence[PairOutcome]) -> list[Pair]:
    """One pair per schema-metric group (thesis §3.7.6), matched group by group.

    WSC273's three-problem schema has two groups, a problem without a twin has none; both sides of
    a document must have the same number of groups, else the schemas do not correspond.
    """
    out: list[Pair] = []
    for item in items:
        before, after = item["before"], item["after"]
        if len(before["groups"]) != len(after["groups"]):
            raise ValueError(
                f"schema metrics need corresponding schemas: {len(before['groups'])} and "
                f"{len(after['groups'])} schema groups"
            )
        for g_before, g_after in zip(before["groups"], after["groups"], strict=True):
            out.append(
                (
                    [before["correct"][i] for i in g_before],
                    [after["correct"][i] for i in g_after],
                )
            )
    return out
