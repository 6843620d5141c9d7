"""Problem and schema accuracy (thesis §3.7.1, Elazar et al. §3.1): the per-document outcome.

Each lm-eval document is one schema, and its per-document value is a ``SchemaOutcome``: which of
its problems were answered correctly, and which problems form its schema-metric groups. A task's
figure is a function of the list of outcomes (the accuracies are the ratio forms of ``ratios``,
the counts below), so the result is exact no matter how lm-eval distributed documents over
processes.

For a two-problem group: solved = both right (schema accuracy A, Elazar's group score),
half-solved = one right (A'), anti-solved = none right (A''); problem accuracy a = A + A'/2
(eq. 3.80).
Chance: a = 0.5, A = 0.25.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict


class SchemaOutcome(TypedDict):
    correct: list[int]  # 1 if the problem was answered correctly
    groups: list[list[int]]  # indexes into ``correct``; one entry per schema-metric group


def outcome(correct: Sequence[bool], groups: Sequence[Sequence[int]]) -> SchemaOutcome:
    return {"correct": [int(c) for c in correct], "groups": [list(g) for g in groups]}


def n_problems(outcomes: Sequence[SchemaOutcome]) -> int:
    return sum(len(o["correct"]) for o in outcomes)


def n_schemas(outcomes: Sequence[SchemaOutcome]) -> int:
    """Number of schema-metric groups: the denominator of every schema metric."""
    return sum(len(o["groups"]) for o in outcomes)


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
