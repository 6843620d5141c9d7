"""Every metric this package reports, one record each, and the names it is reported under.

A record says how the metric is computed per lm-eval document (a ``ratios`` form: Σ numerator /
Σ denominator, which is also the aggregation lm-eval calls; for the few that are not ratios —
counts, ROC-AUC, best threshold, group ranking — a count function or a task-built function with
its own vectorised replicates), its direction, its symbol in the report, what it counts (problem,
schema, document pair, reason, question), what per-document value it needs, which task kinds print
it by default (``headline``) and how its name may be extended (``variants``). lm-eval's
aggregations (``bind``), the schema-bootstrap stderr (``record_of``), the fast bootstrap
(``form``), the samples reader (``by_name``), the report and the summary all read ``REGISTRY``.
The records are in ``definitions`` (adding a consistency metric is one ``_consistency(...)`` entry
there: its level, hit and base, and its oracle that the shared metric tester checks it against);
their type and vocabulary in ``record``. This module indexes them and is the one place their names
are written and read; every other module imports them from here.

A metric is reported under the name of a ``Key``: a record, extended by at most one variant — a
scoring method (``acc_smart``), a pair of methods (``consistency_full_to_partial``), a subset of
problems by token facts (``acc_equal_len``), a knowledge category (``acc_cat_spatial``,
``roc_auc_spatial``) or a WinoWhy reason score (``roc_auc_mean``). ``Key.name`` is the one place
such a name is written and ``Key.parse`` the one place it is read; no other module takes a metric
name apart (tests/test_metric_names.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

from wsc_tasks.data.knowledge import CATEGORIES
from wsc_tasks.metrics import ratios
from wsc_tasks.metrics.definitions import CONSISTENCY, REGISTRY
from wsc_tasks.metrics.record import (
    ACC,
    ANSWERS,
    BLANK_AT_END,
    CATEGORY_STEMS,
    EQUAL_LEN,
    MORE_METRICS,
    OUTCOME,
    PAIR,
    REASONS,
    SCHEMA_ACC,
    SHARDS,
    SPLITS,
    SUBSETS,
    TAGGED_PAIR,
    VARIANTS,
    Metric,
    MetricKind,
    TaskKind,
)

__all__ = [
    "ACC", "ANSWERS", "BLANK_AT_END", "BYPASS", "CARRIED", "CATEGORY_STEMS", "CONSISTENCY",
    "EQUAL_LEN", "FILTER", "METRICS", "MORE_METRICS", "OTHERS", "OUTCOME", "PAIR", "REASONS",
    "REGISTRY", "SCHEMA_ACC", "SHARDS", "SPLITS", "STDERR", "SUBSETS", "TAGGED_PAIR", "VARIANTS",
    "aggregation", "Aggregation", "aggregations", "bind", "by_name", "carried", "column", "form",
    "headline", "higher_is_better", "in_summary", "is_stderr_name", "Key", "lm_eval_values",
    "logged", "method_pairs", "methods", "Metric", "MetricKind", "pair_aggregations", "parse_all",
    "predict_only", "record_of", "reported", "select", "stderr_name", "task_kind", "TaskKind",
]  # fmt: skip


class Aggregation:
    """What a task gives lm-eval for one metric: the function lm-eval calls, and its key."""

    def __init__(self, key: Key, function: Callable[[Sequence[Any]], Any]) -> None:
        self.key = key
        self.metric = key.metric
        self.function = function
        self.__name__ = key.name

    def __call__(self, items: Sequence[Any]) -> Any:
        return self.function(items)

    def __getattr__(self, name: str) -> Any:  # ``replicates`` of a WinoWhy function, __doc__…
        if name in ("key", "metric", "function"):
            raise AttributeError(name)
        return getattr(self.function, name)

    def __repr__(self) -> str:
        return f"Aggregation({self.key.name})"


METRICS: dict[str, Metric] = {m.name: m for m in REGISTRY}
if len(METRICS) != len(REGISTRY):
    raise AssertionError("two metric records share a name")
_BY_AGGREGATE = {
    m.aggregate: m for m in REGISTRY if m.aggregate is not None and m.aggregate is not len
}


# -- the names metrics are reported under ---------------------------------------------------------
@dataclass(frozen=True)
class Key:
    """A reported metric: a record and at most one variant (see the module docstring)."""

    record: str
    method: str = ""  # a scoring method: <record>_<method>
    pair: tuple[str, str] | None = None  # two scoring methods: <record>_<first>_to_<second>
    subset: str = ""  # problems by token facts (``SUBSETS``): <record>_<subset>
    category: str = ""  # a knowledge category: <record>_cat_<category>, WinoWhy <record>_<category>
    score: str = ""  # a WinoWhy reason score: <record>_<score>

    def __post_init__(self) -> None:
        if self.record not in METRICS:
            raise KeyError(f"no metric record {self.record!r}; known: {', '.join(METRICS)}")
        used = [v for v in VARIANTS if getattr(self, v)]
        allowed = METRICS[self.record].variants
        if len(used) > 1 or not set(used) <= allowed:
            raise ValueError(
                f"metric {self.record}: variants {used} given; it takes one of {sorted(allowed)}"
            )
        if self.pair is not None:
            if len(self.pair) != 2 or not all(self.pair):
                raise ValueError(f"metric {self.record}: a method pair is two names: {self.pair}")
            object.__setattr__(self, "pair", tuple(self.pair))

    @property
    def metric(self) -> Metric:
        return METRICS[self.record]

    @property
    def variant(self) -> str:
        """The variant given (``method``, ``pair``…), or '' for the record's own name."""
        return next((v for v in VARIANTS if getattr(self, v)), "")

    @property
    def name(self) -> str:
        """The name lm-eval reports the metric under: the inverse of ``parse``."""
        if self.pair is not None:
            return f"{self.record}_{self.pair[0]}_to_{self.pair[1]}"
        if self.category and self.metric.value != REASONS:
            return f"{CATEGORY_STEMS.get(self.record, self.record)}_cat_{self.category}"
        extension = self.method or self.subset or self.category or self.score
        return f"{self.record}_{extension}" if extension else self.record

    @classmethod
    @cache
    def parse(cls, name: str) -> Key | None:
        """The key whose ``name`` is ``name``; None for a name no record of ours has.

        A record's own name first; else the pattern with the longest fixed part, a variant from a
        vocabulary (token subsets, WinoWhy categories) before an open one (methods, scores).
        Kept per name (keys are immutable): a report parses the same few hundred names
        hundreds of thousands of times.
        """
        if name in METRICS:
            return cls(name)
        if name.endswith(STDERR):  # lm-eval's name of a metric's standard error
            return None
        best: tuple[tuple[int, bool], dict[str, Any]] | None = None
        for prefix, record, variant, vocabulary in _patterns():
            if not name.startswith(prefix) or len(name) == len(prefix):
                continue
            rest = name[len(prefix) :]
            value: Any = rest
            if variant == "pair":
                first, _, second = rest.partition("_to_")
                if not (first and second):
                    continue
                value = (first, second)
            elif vocabulary is not None and rest not in vocabulary:
                continue
            rank = (len(prefix), vocabulary is not None)
            if best is None or rank > best[0]:
                best = rank, {"record": record, variant: value}
        return cls(**best[1]) if best is not None else None


@cache
def _patterns() -> tuple[tuple[str, str, str, frozenset[str] | None], ...]:
    """(fixed prefix, record, variant, vocabulary or None for any) of every name ``Key`` writes."""
    out = []
    for metric in REGISTRY:
        for variant in sorted(metric.variants):
            prefix, vocabulary = f"{metric.name}_", None
            if variant == "subset":
                vocabulary = frozenset(SUBSETS)
            elif variant == "category" and metric.value == REASONS:
                vocabulary = frozenset(CATEGORIES)
            elif variant == "category":
                prefix = f"{CATEGORY_STEMS.get(metric.name, metric.name)}_cat_"
            out.append((prefix, metric.name, variant, vocabulary))
    return tuple(out)


def parse_all(names: Iterable[str]) -> dict[str, Key]:
    """The names that are keys of ours, each with its key, in their order."""
    found = ((name, Key.parse(name)) for name in names)
    return {name: key for name, key in found if key is not None}


# -- lm-eval's results rows: ``<metric>,<filter>`` and ``<metric>_stderr,<filter>`` -------------
FILTER = "none"
STDERR = "_stderr"


def column(name: str) -> str:
    """The column of an lm-eval results row that holds metric ``name``."""
    return f"{name},{FILTER}"


def stderr_name(name: str) -> str:
    """The name lm-eval reports metric ``name``'s standard error under (``acc_stderr``)."""
    return f"{name}{STDERR}"


def is_stderr_name(name: str) -> bool:
    """Whether ``name`` is lm-eval's name of a metric's standard error."""
    return name.endswith(STDERR)


def lm_eval_values(
    values: Mapping[str, Any], shown: Collection[str], with_stderr: Sequence[str]
) -> dict[str, Any]:
    """A document's metric values as a task hands them to lm-eval: those of ``shown`` under
    their names, then, for each of ``with_stderr``, the same value under its ``stderr_name``,
    whose aggregation is the metric's schema-bootstrap error (after every metric: lm-eval writes
    it where it wrote ``N/A`` for the metric).

    lm-eval prints a table row for every key it gets but ``<name>_stderr`` (which it prints as
    the ± of ``name``), and ``--log_samples`` keeps every key. So the values of the metrics not
    shown (counts among them: no figure of the model) ride with the first standard error's value
    (``carried``), where the samples keep them for ``wsc-tasks report`` and no row prints them:
    each distinct value once, with the names it is the value of (most metrics of a document share
    one outcome; written once each, a row is half the size to write, compress and read)."""
    out = {name: value for name, value in values.items() if name in shown}
    out.update((stderr_name(name), values[name]) for name in with_stderr)
    others = {name: value for name, value in values.items() if name not in shown}
    if others:
        if not with_stderr:
            raise ValueError(
                f"no shown metric has a standard error to carry the others ({sorted(others)})"
            )
        first = stderr_name(with_stderr[0])
        out[first] = {CARRIED: values[with_stderr[0]], OTHERS: _grouped(others)}
    return out


CARRIED, OTHERS = "value", "other_metrics"  # a carrying standard error's per-document value


def _grouped(values: Mapping[str, Any]) -> list[list[Any]]:
    """``values`` as ``[[names, value], ...]``: each value object once (names that share one
    object, as ``dict.fromkeys`` makes them, share its entry)."""
    groups: dict[int, list[Any]] = {}
    for name, value in values.items():
        groups.setdefault(id(value), [[], value])[0].append(name)
    return list(groups.values())


def _ungrouped(others: Any) -> dict[str, Any]:
    """The values ``_grouped`` wrote, by name (or a mapping, as samples written before held)."""
    if isinstance(others, Mapping):
        return dict(others)
    return {name: value for names, value in others for name in names}


def carried(item: Any) -> Any:
    """A standard error's per-document value without the other metrics' values it may carry
    (``lm_eval_values``)."""
    if isinstance(item, Mapping) and item.keys() == {CARRIED, OTHERS}:
        return item[CARRIED]
    return item


def logged(row: Mapping[str, Any]) -> dict[str, Any]:
    """Every metric value of a logged sample (a row of lm-eval's samples file), by name: its
    own keys (``row["metrics"]``), those a standard error carries and, in samples written before
    that, those under ``MORE_METRICS``; standard errors left out."""
    out: dict[str, Any] = {}
    for name in row.get("metrics", ()):
        value = row.get(name)
        if isinstance(value, Mapping) and name == MORE_METRICS:
            out.update(value)
        elif name.endswith(STDERR):
            if isinstance(value, Mapping) and value.keys() == {CARRIED, OTHERS}:
                out.update(_ungrouped(value[OTHERS]))
        elif name in row:
            out[name] = value
    return out


NOT_AVAILABLE = "N/A"  # lm-eval's value of a figure it does not have (a task's undefined metric)
BYPASS = "bypass"  # lm-eval's one metric of a --predict_only run, which computes none


def predict_only(row: Mapping[str, Any]) -> bool:
    """Whether an lm-eval results row is of a ``--predict_only`` run: its samples hold every
    request's score and no metric."""
    return column(BYPASS) in row


def reported(row: Mapping[str, Any]) -> dict[Key, Any]:
    """The metrics of ours in an lm-eval results row (stderr columns, and metrics without a
    value, ``N/A``, left out), in row order."""
    out = {}
    for text, value in row.items():
        name, comma, filtered = text.partition(",")
        if value == NOT_AVAILABLE:
            continue
        if comma and filtered == FILTER and not name.endswith(STDERR):
            key = Key.parse(name)
            if key is not None:
                out[key] = value
    return out


# -- what the metric names of a task say ----------------------------------------------------------
_KINDS = ((SHARDS, TaskKind.CONTAMINATION), (REASONS, TaskKind.WINOWHY),
          (TAGGED_PAIR, TaskKind.ASSOCIATIVITY), (ANSWERS, TaskKind.QUESTION),
          (PAIR, TaskKind.CONSISTENCY), (OUTCOME, TaskKind.SCHEMA))  # fmt: skip


def task_kind(keys: Iterable[Key]) -> TaskKind | None:
    """What a task's documents are, from the keys of the metrics it reports or logs (method-pair
    consistency is a schema task's); None when none is ours."""
    values = {k.metric.value for k in keys if k.variant != "pair"}
    return next((kind for value, kind in _KINDS if value in values), None)


def methods(keys: Iterable[Key]) -> list[str]:
    """The scoring methods with both accuracies (``acc_<m>``, ``schema_acc_<m>``), in order."""
    keys = list(keys)
    found = set(keys)
    return [
        k.method
        for k in keys
        if k.record == ACC and k.method and Key(SCHEMA_ACC, method=k.method) in found
    ]


def method_pairs(keys: Iterable[Key]) -> list[tuple[str, str]]:
    """The method pairs of the method-consistency metrics, in order, each once."""
    return list(dict.fromkeys(k.pair for k in keys if k.pair is not None))


def headline(kind: TaskKind) -> frozenset[str]:
    """The names a task of ``kind`` prints by default: records flagged for it, unvaried."""
    return frozenset(m.name for m in REGISTRY if kind in m.headline)


# -- what tasks, the bootstrap and the readers ask ------------------------------------------------
def bind(key: Key | str, function: Callable[[Sequence[Any]], Any] | None = None) -> Aggregation:
    """The lm-eval aggregation of ``key`` (a key or a record's name): its record's ``aggregate``
    or a task's ``function`` (WinoWhy's, built for the task's headline score)."""
    key = Key(key) if isinstance(key, str) else key
    chosen = function if function is not None else key.metric.aggregate
    if chosen is None:
        raise ValueError(f"metric {key.name} has no fixed aggregation: pass the task's function")
    return Aggregation(key, chosen)


def aggregation(name: str) -> Aggregation:
    return bind(name)


def aggregations(keys: Iterable[Key]) -> dict[str, Aggregation]:
    """``{name: aggregation}`` of the keys."""
    return {key.name: bind(key) for key in keys}


def select(**wanted: Any) -> list[Metric]:
    """Records whose fields equal ``wanted`` (``value=PAIR, kind="consistency"``), in order."""
    names = {f.name for f in fields(Metric)}
    if not set(wanted) <= names:
        raise TypeError(f"no metric field {sorted(set(wanted) - names)}")
    return [m for m in REGISTRY if all(getattr(m, k) == v for k, v in wanted.items())]


def in_summary(table: str) -> list[Metric]:
    """The records that are columns of summary table ``table`` (schemas, pairs, methods…)."""
    return [m for m in REGISTRY if table in m.summary]


def pair_aggregations(problem_transformation: bool) -> dict[str, Aggregation]:
    """A consistency task's metrics (thesis Table 3.6): the consistency metrics that apply to
    its transformation, each side's accuracy and their difference, and the pair count."""
    chosen = [
        m
        for m in select(value=PAIR, kind="consistency")
        if problem_transformation or not m.problem_matched
    ]
    chosen += select(value=PAIR, kind="accuracy") + select(value=PAIR, kind="count")
    return aggregations(Key(m.name) for m in chosen)


def record_of(aggregation: Callable[..., Any]) -> Metric | None:
    """The record of an lm-eval aggregation of this package (or of a record's own aggregate,
    such as ``ratios.PROBLEM_ACCURACY``); None for anyone else's."""
    function = getattr(aggregation, "func", aggregation)  # functools.partial
    if isinstance(function, Aggregation):
        return function.metric
    try:
        return _BY_AGGREGATE.get(function)
    except TypeError:  # unhashable
        return None


def form(aggregation: Callable[..., Any]) -> ratios.Form | None:
    """The ratio form of a form, an aggregation or a record's aggregate; None if none."""
    if isinstance(aggregation, ratios.Ratio | ratios.Difference | ratios.Combination):
        return aggregation
    found = record_of(aggregation)
    return found.form if found is not None else None


def higher_is_better(aggregations: dict[str, Any]) -> dict[str, bool | None]:
    """lm-eval's ``higher_is_better`` of a task's aggregations."""
    directions = {}
    for name, aggregation in aggregations.items():
        record = record_of(aggregation)
        if record is None:
            raise TypeError(f"{name}: {aggregation!r} is not an aggregation of wsc_tasks")
        directions[name] = record.higher_is_better
    return directions


def by_name(name: str, value: Any) -> ratios.Form | None:
    """The form of metric ``name`` of a logged sample whose per-document value is ``value``.

    None for counts, the associativity task (its own quantities, see the report), names that are
    not ours, and a value of another kind than the record's (``ANSWERS``: a question's answers).
    """
    key = Key.parse(name)
    if key is None or not isinstance(value, dict):
        return None
    if "before" in value and "after" in value:
        kind = None if "subset" in value else PAIR
    elif "chosen" in value:
        kind = ANSWERS
    else:
        kind = OUTCOME if "correct" in value else None
    return key.metric.form if key.metric.value == kind else None
