"""The one metric tester: every accuracy and consistency record of the registry, run through the
same contract with the oracle declared beside its formula (``Metric.oracle``).

A new record is tested here without an edit of this file: its ratio form, the aggregation lm-eval
calls and the samples reader must all equal its oracle (NaN where the oracle is undefined) on
random documents; its names must parse back; its symbol must be in the report's glossary.
"""

from __future__ import annotations

import math

import oracles
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wsc_tasks.metrics import registry
from wsc_tasks.metrics.accuracy import outcome
from wsc_tasks.metrics.consistency import pair_outcome
from wsc_tasks.report.symbols import GLOSSARY

ACCURACY = [m for m in registry.select(value=registry.OUTCOME, kind="accuracy") if m.reported]
CONSISTENCY = registry.select(value=registry.PAIR, kind="consistency")
RECORDS = [m.name for m in ACCURACY + CONSISTENCY]


def _equal(found: float, expected: float) -> bool:
    return (math.isnan(found) and math.isnan(expected)) or found == pytest.approx(expected, 1e-12)


# one schema: 1-3 problems, grouped as the schema-metric groups of thesis §3.7.6 (or none)
GROUPS = {1: [[], [[0]]], 2: [[[0, 1]], []], 3: [[[0, 1, 2]], [[0, 1], [1, 2]]]}
flags = st.integers(1, 3).flatmap(lambda n: st.lists(st.integers(0, 1), min_size=n, max_size=n))
schema = flags.flatmap(lambda c: st.sampled_from(GROUPS[len(c)]).map(lambda g: outcome(c, g)))
# a schema and its transformed schema, matched problem by problem (a problem transformation)
pair = st.integers(1, 3).flatmap(
    lambda n: st.tuples(
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
        st.lists(st.integers(0, 1), min_size=n, max_size=n),
        st.sampled_from(GROUPS[n]),
    ).map(lambda t: pair_outcome(outcome(t[0], t[2]), outcome(t[1], t[2])))
)


def test_every_accuracy_and_consistency_record_declares_its_oracle():
    assert RECORDS and all(registry.METRICS[name].oracle is not None for name in RECORDS)


def test_every_accuracy_and_consistency_record_says_its_direction():
    """A report's arrow and a "went down" both need it."""
    assert all(registry.METRICS[name].higher_is_better is not None for name in RECORDS)


@pytest.mark.parametrize("name", RECORDS)
def test_the_record_is_named_and_explained_once(name):
    record = registry.METRICS[name]
    assert registry.Key.parse(name) == registry.Key(name)
    assert record.symbol in GLOSSARY and record.description
    for variant in record.variants:  # every name the record is reported under parses back
        given = {"method": "full", "pair": ("full", "partial"), "subset": registry.EQUAL_LEN,
                 "category": "spatial", "score": "mean"}[variant]  # fmt: skip
        key = registry.Key(name, **{variant: given})
        assert registry.Key.parse(key.name) == key, key.name


@pytest.mark.parametrize("name", [m.name for m in ACCURACY])
@settings(max_examples=60, deadline=None)
@given(docs=st.lists(schema, max_size=30))
def test_an_accuracy_record_is_its_oracle(name, docs):
    record = registry.METRICS[name]
    assert record.oracle is not None and record.form is not None
    expected = record.oracle(docs)
    assert _equal(record.form(docs), expected)
    assert _equal(registry.bind(name)(docs), expected)  # what lm-eval calls
    if docs:
        assert registry.by_name(name, docs[0]) is record.form  # what the samples reader uses


@pytest.mark.parametrize("name", [m.name for m in CONSISTENCY])
@settings(max_examples=60, deadline=None)
@given(items=st.lists(pair, max_size=30))
def test_a_consistency_record_is_its_oracle(name, items):
    record = registry.METRICS[name]
    assert record.oracle is not None and record.form is not None
    pairs = (oracles.problem_pairs if record.level == "problem" else oracles.schema_pairs)(items)
    expected = record.oracle(oracles.matched(record.level, pairs))
    assert _equal(record.form(items), expected)
    assert _equal(registry.bind(name)(items), expected)
    key = registry.Key(name, pair=("full", "partial"))  # between two scoring methods
    assert _equal(registry.bind(key)(items), expected)
    if items:
        assert registry.by_name(key.name, items[0]) is record.form


@pytest.mark.parametrize("name", [m.name for m in CONSISTENCY])
def test_a_consistency_record_applies_to_the_transformations_it_can_match(name):
    record = registry.METRICS[name]
    assert name in registry.pair_aggregations(problem_transformation=True)
    assert (name in registry.pair_aggregations(False)) is not record.problem_matched
    assert record.problem_matched or record.level == "schema"
