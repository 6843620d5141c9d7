"""The record type of a metric and the vocabulary its fields are written in.

``Metric`` is one reported metric (see ``wsc_tasks.metrics.registry`` for what a record says and
the names it is reported under). The records themselves are in ``wsc_tasks.metrics.definitions``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

from wsc_tasks.metrics import ratios

# the per-document value a metric aggregates
OUTCOME = "outcome"  # accuracy.SchemaOutcome: one schema's problems right or wrong
PAIR = "pair"  # consistency.PairOutcome: a schema before and after a transformation (or 2 methods)
TAGGED_PAIR = "tagged pair"  # a PairOutcome tagged with its associativity subset
REASONS = "reasons"  # one WinoWhy question: its reasons' scores, labels and categories
SPLITS = "splits"  # an int per schema: causal requests split after the first token(s)
SHARDS = "shard"  # contamination.ShardOutcome: one shard's published and shuffled log-likelihoods
ANSWERS = "answers"  # questions.Answers: one schema's problems asked as questions, each answer


class TaskKind(StrEnum):
    """What a task's documents are, read from the metrics it reports (``task_kind``)."""

    SCHEMA = "schema"  # one schema (SchemaTask, CategorizedSchemaTask)
    CONSISTENCY = "consistency"  # a schema and its transformed schema (ConsistencyTask)
    ASSOCIATIVITY = "associativity"  # the same, tagged with an associativity subset
    WINOWHY = "winowhy"  # one WinoWhy question and its reasons
    CONTAMINATION = "contamination"  # one shard of a published file (ContaminationTask)
    QUESTION = "question"  # one schema whose problems were asked as questions (QuestionTask)


# the variants of a name (the fields of ``Key`` after ``record``) and their vocabularies
VARIANTS = ("method", "pair", "subset", "category", "score")
EQUAL_LEN, BLANK_AT_END = "equal_len", "blank_at_end"  # problems by token facts (thesis §3.7.4)
SUBSETS = (EQUAL_LEN, BLANK_AT_END)
CATEGORY_STEMS = {"n_problems": "n"}  # problems per knowledge category: n_cat_<category>


# the two accuracy records every report and leaderboard asks for by name (no other module spells
# them): a, the share of problems, and A, the share of schemas
ACC, SCHEMA_ACC = "acc", "schema_acc"
# where samples written before 0.2 carry, per document, the metrics lm-eval's table left out (now
# a standard error carries them: ``registry.lm_eval_values``); read back, never written
MORE_METRICS = "n_more_metrics"

MetricKind = Literal[
    "accuracy", "count", "consistency", "associativity", "plausibility", "contamination", "question"
]


@dataclass(frozen=True)
class Metric:
    """One reported metric (see ``wsc_tasks.metrics.registry``)."""

    name: str
    symbol: str  # as the report and the thesis write it
    level: str  # what it counts: problem, schema, pair (a document pair), reason, question
    value: str  # the per-document value it needs: OUTCOME, PAIR, TAGGED_PAIR, REASONS, SPLITS…
    description: str
    form: ratios.Form | None = None  # Σ numerator / Σ denominator: the aggregate, fast to resample
    aggregate: Callable[[Sequence[Any]], Any] | None = None  # the form, a count; None: task binds
    higher_is_better: bool | None = True  # None: neither (counts, differences): no arrow
    stderr: bool = True  # lm-eval's stderr is the schema bootstrap; False: N/A (fixed counts)
    problem_matched: bool = False  # needs problems matched one by one (problem transformations)
    kind: MetricKind = "accuracy"
    reported: bool = True  # under its own name; False: only as variants (``share_equal_len``)
    summary: tuple[str, ...] = ()  # the summary tables it is a column of
    headline: frozenset[TaskKind] = frozenset()  # the task kinds that print it by default
    variants: frozenset[str] = frozenset()  # the ``Key`` variants its name takes
    accuracy: str = ""  # associativity: the accuracy record (acc, schema_acc) it is a quantity of
    scope: str = ""  # associativity: the subset, or ``associativity.ALL``
    quantity: str = ""  # associativity: original, nocands, adjusted, rel_loss, rel_gain, assoc_gap…
    # the same figure written the obvious way, from the thesis, over whole lists (not the ratio
    # code): per-document values (OUTCOME) or matched (before, after) flags at the record's level
    # (consistency, ``Oracle``); the one metric tester (tests/test_metric_contract.py) checks the
    # form against it. Never used to report a figure.
    oracle: Callable[[Sequence[Any]], float] | None = None

    def __post_init__(self) -> None:
        if self.aggregate is None and self.form is not None:
            object.__setattr__(self, "aggregate", self.form)  # the ratio form is the aggregate
        unknown = set(self.variants) - set(VARIANTS)
        if unknown:
            raise ValueError(f"metric {self.name}: unknown variants {sorted(unknown)}")
