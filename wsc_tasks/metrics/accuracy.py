"""Problem and schema accuracy metrics (thesis §3.7.1, Elazar et al. §3.1), as pure functions.

Each lm-eval document is one schema, and its per-document value is a ``SchemaOutcome``: which of
its problems were answered correctly, and which problems form its schema-metric groups. The
aggregations below turn the list of outcomes of a task into one figure, so the result is exact no
matter how lm-eval distributed documents over processes.

For a two-problem group: solved = both right (schema accuracy A, Elazar's group score),
half-solved = one right (A'), anti-solved = none right (A''); problem accuracy a = A + A'/2
(eq. 3.80).
Chance: a = 0.5, A = 0.25.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypedDict


class SchemaOutcome(TypedDict):
    correct: list[int]  # 1 if the problem was answered correctly
    groups: list[list[int]]  # indexes into ``correct``; one entry per schema-metric group


def outcome(correct: Sequence[bool], groups: Sequence[Sequence[int]]) -> SchemaOutcome:
    return {"correct": [int(c) for c in correct], "groups": [list(g) for g in groups]}


def _group_scores(outcomes: Iterable[SchemaOutcome]) -> list[tuple[int, int]]:
    """(right, size) for every schema-metric group."""
    return [
        (sum(o["correct"][i] for i in group), len(group)) for o in outcomes for group in o["groups"]
    ]


def _share(hits: int, total: int) -> float:
    return hits / total if total else float("nan")


def n_problems(outcomes: Sequence[SchemaOutcome]) -> int:
    return sum(len(o["correct"]) for o in outcomes)


def n_schemas(outcomes: Sequence[SchemaOutcome]) -> int:
    """Number of schema-metric groups: the denominator of every schema metric."""
    return sum(len(o["groups"]) for o in outcomes)


def problem_accuracy(outcomes: Sequence[SchemaOutcome]) -> float:
    """a: share of problems answered correctly (each problem counted once)."""
    return _share(sum(sum(o["correct"]) for o in outcomes), n_problems(outcomes))


def schema_accuracy(outcomes: Sequence[SchemaOutcome]) -> float:
    """A: share of schemas whose every problem is answered correctly."""
    groups = _group_scores(outcomes)
    return _share(sum(right == size for right, size in groups), len(groups))


def half_solved(outcomes: Sequence[SchemaOutcome]) -> float:
    """A': share of schemas with some but not all problems right (exactly one of two)."""
    groups = _group_scores(outcomes)
    return _share(sum(0 < right < size for right, size in groups), len(groups))


def anti_solved(outcomes: Sequence[SchemaOutcome]) -> float:
    """A'': share of schemas with no problem right."""
    groups = _group_scores(outcomes)
    return _share(sum(right == 0 for right, _ in groups), len(groups))


def restrict(value: SchemaOutcome, keep: Sequence[bool]) -> SchemaOutcome:
    """The outcome on a subset of problems (e.g. equal-length answers, thesis §3.7.4).

    A schema-metric group counts only if all its problems are kept: a schema left with one
    problem would make schema accuracy equal problem accuracy (thesis §3.7.6).
    """
    kept = [i for i, k in enumerate(keep) if k]
    index = {old: new for new, old in enumerate(kept)}
    return {
        "correct": [value["correct"][i] for i in kept],
        "groups": [[index[i] for i in g] for g in value["groups"] if all(keep[i] for i in g)],
    }


def share(outcomes: Sequence[SchemaOutcome]) -> float:
    """Share of problems flagged 1 (the flags travel in ``correct``; groups are unused)."""
    return problem_accuracy(outcomes)
