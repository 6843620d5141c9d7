"""Consistency between a schema and its transformed schema (thesis §3.7.2–3.7.3, Table 3.6).

Each lm-eval document's value is the pair (``before``, ``after``): which problems of a schema w
the model solved, and which of F(w). For a *problem* transformation f, problem i of F(w) is f of
problem i of w, so problems are matched one by one (``problem_flags``) and the problem metrics
and strict schema consistency apply; for a *schema* transformation (inversion) only the schemas
correspond, group by group (``schema_flags``), so only the schema metrics apply.

Every consistency metric is a share: of the matched problems (or schema groups) ``(b, a)`` with
``base(b, a)``, those with ``hit(b, a)`` (``ratio``); each is declared once, as its level, hit and
base, in ``registry``. A share with an empty denominator is NaN, not 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypedDict

from wsc_tasks.metrics import ratios
from wsc_tasks.metrics.accuracy import SchemaOutcome

Flags = Any  # a problem's solved flag (int), or a schema group's flags (list of ints)
Condition = Callable[[Flags, Flags], Any]  # (before, after) -> truthy
LEVELS = ("problem", "schema")


class PairOutcome(TypedDict):
    """One lm-eval document's value: a schema (or its groups) before and after the change."""

    before: SchemaOutcome
    after: SchemaOutcome


def pair_outcome(before: SchemaOutcome, after: SchemaOutcome) -> PairOutcome:
    return {"before": before, "after": after}


def problem_flags(item: PairOutcome) -> list[tuple[int, int]]:
    """(before, after) solved flags of each problem of the document, matched problem by problem."""
    before, after = item["before"]["correct"], item["after"]["correct"]
    if len(before) != len(after):
        raise ValueError(
            f"problem metrics need a problem transformation: schemas of {len(before)} and "
            f"{len(after)} problems cannot be matched problem by problem"
        )
    return list(zip(before, after, strict=True))


def schema_flags(item: PairOutcome) -> list[tuple[list[int], list[int]]]:
    """(before, after) flags of each schema-metric group (thesis §3.7.6), matched group by group.

    WSC273's three-problem schema has two groups, a problem without a twin has none; both sides of
    a document must have the same number of groups, else the schemas do not correspond.
    """
    before, after = item["before"], item["after"]
    if len(before["groups"]) != len(after["groups"]):
        raise ValueError(
            f"schema metrics need corresponding schemas: {len(before['groups'])} and "
            f"{len(after['groups'])} schema groups"
        )
    return [
        ([before["correct"][i] for i in g_before], [after["correct"][i] for i in g_after])
        for g_before, g_after in zip(before["groups"], after["groups"], strict=True)
    ]


def ratio(
    name: str, level: str, hit: Condition, base: Condition, base_is: str = ""
) -> ratios.Ratio:
    """Matched problems (``level`` problem) or schema groups (schema) with ``hit`` over those
    with ``base`` (``base_is``: which, in words); both are called (before, after) with the flags
    of one problem or group."""
    if level not in LEVELS:
        raise ValueError(f"consistency metric {name}: level {level!r} is not one of {LEVELS}")
    flags: Callable[[PairOutcome], Sequence[tuple[Flags, Flags]]] = (
        problem_flags if level == "problem" else schema_flags
    )

    def parts(item: PairOutcome) -> tuple[float, float]:
        matched = flags(item)
        return sum(bool(hit(b, a)) for b, a in matched), sum(bool(base(b, a)) for b, a in matched)

    return ratios.Ratio(name, parts, f"{level} {base_is}".strip())
