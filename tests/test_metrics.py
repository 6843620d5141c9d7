"""Schema metrics on hand-computed cases, the identity a = A + A'/2, and chance levels.

The figures are the registry's aggregations (the ratio forms lm-eval calls), checked against hand
computations and against the list-level oracles of ``tests/oracles.py``.
"""

from __future__ import annotations

import itertools

import oracles
import pytest
from hypothesis import given
from hypothesis import strategies as st

from wsc_tasks.metrics import registry
from wsc_tasks.metrics.accuracy import n_problems, n_schemas, outcome

problem_accuracy, schema_accuracy, half_solved, anti_solved = (
    registry.bind(name) for name in ("acc", "schema_acc", "half_solved", "anti_solved")
)

PAIR = [[0, 1]]


def test_hand_computed_two_problem_schemas():
    # solved, half-solved (first right), half-solved (second right), anti-solved
    outs = [
        outcome([1, 1], PAIR),
        outcome([1, 0], PAIR),
        outcome([0, 1], PAIR),
        outcome([0, 0], PAIR),
    ]
    assert problem_accuracy(outs) == 4 / 8
    assert schema_accuracy(outs) == 1 / 4
    assert half_solved(outs) == 2 / 4
    assert anti_solved(outs) == 1 / 4
    assert (n_problems(outs), n_schemas(outs)) == (8, 4)


def test_three_problem_schema_counts_twice_for_schemas_once_for_problems():
    # WSC273 253-255 (thesis §3.7.6): groups {a,b} and {b,c}; b counted once for problem metrics.
    triple = outcome([1, 1, 0], [[0, 1], [1, 2]])
    pair = outcome([1, 1], PAIR)
    assert problem_accuracy([triple, pair]) == 4 / 5
    assert schema_accuracy([triple, pair]) == 2 / 3
    assert half_solved([triple, pair]) == 1 / 3
    assert (n_problems([triple, pair]), n_schemas([triple, pair])) == (5, 3)


def test_single_problem_documents_count_for_problems_only():
    # Winogrande dev problems without a twin: in acc, in no schema metric.
    outs = [outcome([1], []), outcome([0], []), outcome([1, 0], PAIR)]
    assert problem_accuracy(outs) == 2 / 4
    assert schema_accuracy(outs) == 0.0
    assert half_solved(outs) == 1.0
    assert n_schemas(outs) == 1


def test_empty_is_nan_not_zero():
    assert problem_accuracy([]) != problem_accuracy([])  # NaN: no data is not 0% accuracy


@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=200))
def test_problem_accuracy_is_schema_plus_half_of_half_solved(pairs):
    outs = [outcome(list(p), PAIR) for p in pairs]
    a, big_a, a1, a2 = (
        f(outs) for f in (problem_accuracy, schema_accuracy, half_solved, anti_solved)
    )
    assert a == pytest.approx(big_a + a1 / 2)  # eq. 3.80
    assert a == pytest.approx((1 + big_a - a2) / 2)
    assert big_a + a1 + a2 == pytest.approx(1)


def test_chance_levels_exactly():
    # Every equally likely way a random guesser answers a two-problem schema.
    outs = [outcome(list(c), PAIR) for c in itertools.product([0, 1], repeat=2)]
    assert problem_accuracy(outs) == 0.5
    assert schema_accuracy(outs) == 0.25
    assert half_solved(outs) == 0.5
    assert anti_solved(outs) == 0.25


def test_always_first_answer_is_half_right_and_never_solves():
    # Schemas have opposite labels, so a constant guess answers exactly one problem of each.
    outs = [outcome([1, 0], PAIR) for _ in range(10)] + [outcome([0, 1], PAIR) for _ in range(7)]
    assert problem_accuracy(outs) == 0.5 and schema_accuracy(outs) == 0.0


def test_metric_registry_names_and_directions():
    schema_metrics = {m.name: m.higher_is_better for m in registry.in_summary("schemas")}
    assert list(schema_metrics) == [
        "acc",
        "schema_acc",
        "half_solved",
        "anti_solved",
        "n_problems",
        "n_schemas",
    ]
    assert schema_metrics["acc"] and not schema_metrics["anti_solved"]


groups = st.sampled_from([[[0, 1]], [[0, 1], [1, 2]], [], [[0, 1, 2]]])


@given(st.lists(st.tuples(st.lists(st.booleans(), min_size=3, max_size=3), groups), max_size=40))
def test_the_ratio_forms_equal_the_list_level_oracles(docs):
    outs = [outcome(correct, g) for correct, g in docs]
    for name, oracle in oracles.ACCURACY.items():
        found, expected = registry.bind(name)(outs), oracle(outs)
        assert found == expected or (found != found and expected != expected), name
