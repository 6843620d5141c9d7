"""Consistency metrics: the worked examples of thesis §3.7.3 and its inequalities.

The metrics are the registry's aggregations (lm-eval's), called on schemas given as pairs of
solved flags (one schema-metric group each), and checked against the oracles declared beside
them in the registry.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import oracles
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wsc_tasks.metrics import registry
from wsc_tasks.metrics.accuracy import outcome
from wsc_tasks.metrics.consistency import pair_outcome

flags = st.tuples(st.integers(0, 1), st.integers(0, 1))
pairs_strategy = st.lists(st.tuples(flags, flags), min_size=1, max_size=60)


def _items(pairs) -> list:
    """Each (before, after) pair of flags as one document whose schema is one group."""
    return [
        pair_outcome(outcome(b, [list(range(len(b)))]), outcome(a, [list(range(len(a)))]))
        for b, a in pairs
    ]


def _metric(name: str) -> Callable:
    return lambda pairs: registry.bind(name)(_items(pairs))


RECORDS = registry.select(value=registry.PAIR, kind="consistency")
cm = SimpleNamespace(**{m.name: _metric(m.name) for m in RECORDS})


def test_half_solved_with_answers_flipped():
    # Every schema half-solved before and after, the other problem solved after (§3.7.3).
    pairs = [((1, 0), (0, 1)), ((0, 1), (1, 0))] * 5
    assert cm.consistency(pairs) == 0
    assert cm.schema_consistency_strict(pairs) == 0
    assert cm.schema_consistency(pairs) == 1
    assert cm.schema_consistency_weak(pairs) == 1


def test_all_solved_before_all_half_solved_after():
    pairs = [((1, 1), (1, 0)), ((1, 1), (0, 1))] * 4
    assert cm.consistency(pairs) == 0.5
    assert cm.schema_consistency_strict(pairs) == 0
    assert cm.schema_consistency(pairs) == 0
    assert cm.schema_consistency_weak(pairs) == 0


def test_hand_computed_values():
    pairs = [((1, 1), (1, 1)), ((1, 0), (1, 1)), ((0, 0), (0, 1)), ((1, 0), (0, 0))]
    # problems: (1,1) (1,1) (1,1) (0,1) (0,0) (0,1) (1,0) (0,0)
    assert cm.consistency(pairs) == 5 / 8
    assert cm.consistent_acc(pairs) == 3 / 8
    assert cm.preserved_acc(pairs) == 3 / 4  # solved before: 4
    assert cm.preserved_acc_rev(pairs) == 3 / 5  # solved after: 5
    assert cm.consistent_schema_acc(pairs) == 1 / 4
    assert cm.preserved_schema_acc(pairs) == 1 / 1
    assert cm.preserved_schema_acc_rev(pairs) == 1 / 2
    assert cm.schema_consistency(pairs) == 1 / 4
    assert cm.schema_consistency_weak(pairs) == 3 / 4  # both solved (1st); neither (3rd, 4th)
    assert cm.schema_consistency_strict(pairs) == 1 / 4


@given(pairs_strategy)
def test_thesis_inequalities(pairs):
    c, ca = cm.consistency(pairs), cm.consistent_acc(pairs)
    for value in (c, cm.preserved_acc(pairs), cm.preserved_acc_rev(pairs)):
        assert value != value or value >= ca  # NaN when nothing was solved
    weak, mid, strict = (
        f(pairs)
        for f in (cm.schema_consistency_weak, cm.schema_consistency, cm.schema_consistency_strict)
    )
    assert weak >= mid >= strict
    big_ca = cm.consistent_schema_acc(pairs)
    assert mid >= big_ca and c >= strict
    for value in (cm.preserved_schema_acc(pairs), cm.preserved_schema_acc_rev(pairs)):
        assert value != value or value >= big_ca


def test_consistent_schema_accuracy_can_be_below_strict_consistency():
    # §3.7.3 also states C_a >= C*, which fails when schemas are anti-solved identically:
    # C* counts them (nothing changed), C_a does not (nothing solved).
    pairs = [((0, 0), (0, 0))]
    assert cm.schema_consistency_strict(pairs) == 1 and cm.consistent_schema_acc(pairs) == 0


def test_problem_metrics_refuse_schema_transformations():
    with pytest.raises(ValueError, match="problem transformation"):
        cm.consistency([((1, 0), (1, 0, 1))])
    assert "consistency" not in registry.pair_aggregations(problem_transformation=False)
    assert "schema_consistency_strict" not in registry.pair_aggregations(False)


@given(pairs_strategy)
def test_the_ratio_forms_equal_the_list_level_oracles(pairs):
    for name, (oracle, level) in oracles.CONSISTENCY.items():
        found, expected = getattr(cm, name)(pairs), oracle(oracles.matched(level, pairs))
        assert found == expected or (found != found and expected != expected), name
