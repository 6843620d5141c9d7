"""Every metric this package reports, one record each, and the names it is reported under.

A record says how the metric is computed per lm-eval document (a ``ratios`` form: Σ numerator /
Σ denominator, which is also the aggregation lm-eval calls; for the few that are not ratios —
counts, ROC-AUC, best threshold, group ranking — a count function or a task-built function with
its own vectorised replicates), its direction, its symbol in the report, what it counts (problem,
schema, document pair, reason, question), what per-document value it needs, which task kinds print
it by default (``headline``) and how its name may be extended (``variants``). lm-eval's
aggregations (``bind``), the schema-bootstrap stderr (``record_of``), the fast bootstrap
(``form``), the samples reader (``by_name``), the report and the summary all read ``REGISTRY``.
Adding a consistency metric is one ``_consistency(...)`` line below: its level, hit and base.

A metric is reported under the name of a ``Key``: a record, extended by at most one variant — a
scoring method (``acc_smart``), a pair of methods (``consistency_full_to_partial``), a subset of
problems by token facts (``acc_equal_len``), a knowledge category (``acc_cat_spatial``,
``roc_auc_spatial``) or a WinoWhy reason score (``roc_auc_mean``). ``Key.name`` is the one place
such a name is written and ``Key.parse`` the one place it is read; no other module takes a metric
name apart (tests/test_metric_names.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from enum import StrEnum
from functools import cache
from typing import Any, Literal

from wsc_tasks.data.knowledge import CATEGORIES
from wsc_tasks.metrics import accuracy, associativity, consistency, contamination, ratios
from wsc_tasks.scoring import causal

# the per-document value a metric aggregates
OUTCOME = "outcome"  # accuracy.SchemaOutcome: one schema's problems right or wrong
PAIR = "pair"  # consistency.PairOutcome: a schema before and after a transformation (or 2 methods)
TAGGED_PAIR = "tagged pair"  # a PairOutcome tagged with its associativity subset
REASONS = "reasons"  # one WinoWhy question: its reasons' scores, labels and categories
SPLITS = "splits"  # an int per schema: causal requests split after the first token(s)
SHARDS = "shard"  # contamination.ShardOutcome: one shard's published and shuffled log-likelihoods


class TaskKind(StrEnum):
    """What a task's documents are, read from the metrics it reports (``task_kind``)."""

    SCHEMA = "schema"  # one schema (SchemaTask, CategorizedSchemaTask)
    CONSISTENCY = "consistency"  # a schema and its transformed schema (ConsistencyTask)
    ASSOCIATIVITY = "associativity"  # the same, tagged with an associativity subset
    WINOWHY = "winowhy"  # one WinoWhy question and its reasons
    CONTAMINATION = "contamination"  # one shard of a published file (ContaminationTask)


# the variants of a name (the fields of ``Key`` after ``record``) and their vocabularies
VARIANTS = ("method", "pair", "subset", "category", "score")
EQUAL_LEN, BLANK_AT_END = "equal_len", "blank_at_end"  # problems by token facts (thesis §3.7.4)
SUBSETS = (EQUAL_LEN, BLANK_AT_END)
CATEGORY_STEMS = {"n_problems": "n"}  # problems per knowledge category: n_cat_<category>


MetricKind = Literal[
    "accuracy", "count", "consistency", "associativity", "plausibility", "contamination"
]


@dataclass(frozen=True)
class Metric:
    """One reported metric (see the module docstring)."""

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

    def __post_init__(self) -> None:
        if self.aggregate is None and self.form is not None:
            object.__setattr__(self, "aggregate", self.form)  # the ratio form is the aggregate
        unknown = set(self.variants) - set(VARIANTS)
        if unknown:
            raise ValueError(f"metric {self.name}: unknown variants {sorted(unknown)}")


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


# -- consistency: a share of matched problems or schema groups, declared as (level, hit, base) ----
def _consistency(
    name: str,
    symbol: str,
    level: str,
    description: str,
    hit: consistency.Condition,
    base: consistency.Condition = lambda before, after: True,
    *,
    problem_matched: bool | None = None,
    summary: tuple[str, ...] = (),
    headline: bool = False,
    base_is: str = "",
) -> Metric:
    """Of the problems (or schema groups) ``(b, a)`` = (before, after) with ``base`` (``base_is``:
    which, in words), the share with ``hit``; a problem metric needs a problem transformation, as
    does ``problem_matched``."""
    return Metric(
        name, symbol, level, PAIR, description,
        form=consistency.ratio(name, level, hit, base, base_is),
        kind="consistency", summary=summary, variants=frozenset({"pair"}),
        headline=frozenset({TaskKind.CONSISTENCY}) if headline else frozenset(),
        problem_matched=level == "problem" if problem_matched is None else problem_matched,
    )  # fmt: skip


def _both(before: Any, after: Any) -> bool:
    return all(before) and all(after)


_BEFORE, _AFTER = "solved before the transformation", "solved after the transformation"


# ``hit``, ``base``: a problem's (or schema group's) solved flags as (b, a) = (before, after)
CONSISTENCY = (
    _consistency("consistency", "c", "problem",
                 "share of problems right before and after the change, or wrong both (eq. 3.81)",
                 lambda b, a: b == a, summary=("pairs", "methods"), headline=True),
    _consistency("consistent_acc", "c_a", "problem",
                 "share of problems right both before and after the change (eq. 3.82)",
                 lambda b, a: b and a, summary=("pairs",)),
    _consistency("preserved_acc", "c_p", "problem",
                 "of the problems right before the change, the share still right after (eq. 3.83)",
                 lambda b, a: b and a, lambda b, a: b, base_is=_BEFORE),
    _consistency("preserved_acc_rev", "ĉ_p", "problem",
                 "of the problems right after the change, the share also right before (eq. 3.84)",
                 lambda b, a: b and a, lambda b, a: a, base_is=_AFTER),
    _consistency("schema_consistency_weak", "C̃", "schema",
                 "share of schemas solved both before and after the change, or neither (eq. 3.87)",
                 lambda b, a: all(b) == all(a), summary=("pairs",)),
    _consistency("schema_consistency", "C", "schema",
                 "share of schemas with equally many problems right before and after (eq. 3.88)",
                 lambda b, a: sum(b) == sum(a), summary=("pairs", "methods"), headline=True),
    _consistency("schema_consistency_strict", "C*", "schema",
                 "share of schemas with the same problems right before and after (eq. 3.89)",
                 lambda b, a: list(b) == list(a), problem_matched=True,
                 summary=("pairs", "methods")),
    _consistency("consistent_schema_acc", "C_a", "schema",
                 "share of schemas solved both before and after the change (eq. 3.90)",
                 _both, summary=("pairs",)),
    _consistency("preserved_schema_acc", "C_p", "schema",
                 "of the schemas solved before the change, the share still solved after (eq. 3.91)",
                 _both, lambda b, a: all(b), base_is=_BEFORE),
    _consistency("preserved_schema_acc_rev", "Ĉ_p", "schema",
                 "of the schemas solved after the change, the share also solved before (eq. 3.92)",
                 _both, lambda b, a: all(a), base_is=_AFTER),
)  # fmt: skip


# -- accuracy of each side of a pair, and their difference ----------------------------------------
def _side_parts(parts: ratios.Parts, side: str) -> ratios.Parts:
    """``parts`` of one side (``"before"`` or ``"after"``) of a pair's per-document value."""
    return lambda i: parts(i[side])


def _sides() -> list[Metric]:
    out = []
    shown = frozenset({TaskKind.CONSISTENCY})
    accuracies = (
        ("acc", "a", "problem", ratios.problem_parts),
        ("schema_acc", "A", "schema", ratios.schema_parts),
    )
    for name, symbol, level, parts in accuracies:
        before = ratios.Ratio(f"{name}_original", _side_parts(parts, "before"), level)
        after = ratios.Ratio(f"{name}_perturbed", _side_parts(parts, "after"), level)
        sides = shown if name == "acc" else frozenset()
        out += [
            Metric(before.name, symbol, level, PAIR, f"{level} accuracy of the original schemas",
                   form=before, summary=("pairs",), headline=sides),
            Metric(after.name, f"{symbol}_F", level, PAIR,
                   f"{level} accuracy of the transformed (perturbed) schemas",
                   form=after, summary=("pairs",), headline=sides),
            Metric(f"{name}_diff", f"{symbol}_F − {symbol}", level, PAIR,
                   f"{level} accuracy of the transformed minus the original schemas",
                   form=ratios.Difference(f"{name}_diff", after, before), summary=("pairs",),
                   headline=shown, higher_is_better=None),
        ]  # fmt: skip
    return out


# -- associativity: one record per reported quantity ----------------------------------------------
_ASSOCIATIVITY_SYMBOLS = {
    "original": "r", "nocands": "r_B", "adjusted": "r − r_B", "rel_loss": "(r − r_B)/r",
    "rel_gain": "(r − r_B)/(1 − r_B)", "assoc_gap": "r_assoc − r_nonassoc",
}  # fmt: skip
_ASSOCIATIVITY_DESCRIPTIONS = {
    "original": "accuracy on the original schemas of an associativity subset",
    "nocands": "accuracy on the same schemas with the candidates removed (no-cands baseline)",
    "adjusted": "accuracy adjusted for association: what the candidates add (thesis Table 4.28)",
    "rel_loss": "relative loss when the candidates are removed (eq. 4.1)",
    "rel_gain": "relative gain over the no-cands baseline (eq. 4.2)",
    "assoc_gap": "associative minus non-associative accuracy (independent schemas)",
}


def _associativity() -> list[Metric]:
    out = []

    def add(name: str, scope: str, quantity: str, form: ratios.Form) -> None:
        shown = quantity if scope else "assoc_gap"
        symbol, description = _ASSOCIATIVITY_SYMBOLS[shown], _ASSOCIATIVITY_DESCRIPTIONS[shown]
        out.append(
            Metric(name, symbol, level, TAGGED_PAIR, description,
                   form=form, kind="associativity", accuracy=metric, scope=scope,
                   quantity=quantity, higher_is_better=True if scope else None,
                   headline=frozenset({TaskKind.ASSOCIATIVITY}) if quantity == "adjusted"
                   else frozenset())
        )  # fmt: skip

    for metric, parts in (("acc", ratios.problem_parts), ("schema_acc", ratios.schema_parts)):
        level = "problem" if metric == "acc" else "schema"
        sides: dict[tuple[str, str], ratios.Ratio] = {}
        for scope in associativity.SCOPES:
            name = f"{metric}_{scope}"
            inside = None if scope == associativity.ALL else scope
            unit = associativity.SCOPE_UNITS[scope]
            r = ratios.scoped(f"{name}_original", parts, "before", inside, unit)
            r_b = ratios.scoped(f"{name}_nocands", parts, "after", inside, unit)
            sides[scope, "original"], sides[scope, "nocands"] = r, r_b
            add(r.name, scope, "original", r)
            add(r_b.name, scope, "nocands", r_b)
            add(
                f"{name}_adjusted", scope, "adjusted", ratios.Difference(f"{name}_adjusted", r, r_b)
            )
            for quantity, function, undefined in (
                ("rel_loss", ratios.relative_loss, f"r = 0: no {level} solved before no-cands"),
                ("rel_gain", ratios.relative_gain, f"r_B = 1: every {level} solved after"),
            ):
                form = ratios.Combination(f"{name}_{quantity}", function, (r, r_b), undefined)
                add(f"{name}_{quantity}", scope, quantity, form)
        for side in ("original", "nocands"):
            name = f"{metric}_assoc_gap_{side}"
            first, second = (sides[subset, side] for subset in associativity.SUBSETS)
            add(name, "", f"assoc_gap_{side}", ratios.Difference(name, first, second))
    return out


def _count(name: str, symbol: str, level: str, value: str, description: str,
           aggregate: Callable | None, summary: tuple[str, ...] = (),
           stderr: bool = False, **more: Any) -> Metric:  # fmt: skip
    return Metric(name, symbol, level, value, description, aggregate=aggregate, stderr=stderr,
                  kind="count", summary=summary, higher_is_better=None, **more)  # fmt: skip


def _plausibility(name: str, symbol: str, level: str, description: str, **more: Any) -> Metric:
    return Metric(
        name, symbol, level, REASONS, description, kind="plausibility", summary=("reasons",), **more
    )


def _contamination(name: str, symbol: str, description: str, aggregate: Callable,
                   stderr: bool = False) -> Metric:  # fmt: skip
    return Metric(name, symbol, "shard", SHARDS, description, aggregate=aggregate,
                  higher_is_better=None, stderr=stderr, kind="contamination",
                  headline=CONTAMINATION)  # fmt: skip


SCHEMA = frozenset({TaskKind.SCHEMA})
WINOWHY = frozenset({TaskKind.WINOWHY})
CONTAMINATION = frozenset({TaskKind.CONTAMINATION})
REGISTRY: tuple[Metric, ...] = (
    # one schema: SchemaTask, CategorizedSchemaTask (thesis §3.7.1)
    Metric("acc", "a", "problem", OUTCOME, "share of problems answered correctly",
           form=ratios.PROBLEM_ACCURACY, summary=("schemas",), headline=SCHEMA,
           variants=frozenset({"method", "subset", "category"})),
    Metric("schema_acc", "A", "schema", OUTCOME, "share of schemas with every problem right",
           form=ratios.SCHEMA_ACCURACY, summary=("schemas",), headline=SCHEMA,
           variants=frozenset({"method", "subset"})),
    Metric("half_solved", "A′", "schema", OUTCOME,
           "share of schemas with some but not all problems right (half-solved)",
           form=ratios.HALF_SOLVED, higher_is_better=False, summary=("schemas",)),
    Metric("anti_solved", "A″", "schema", OUTCOME,
           "share of schemas with no problem right (anti-solved)",
           form=ratios.ANTI_SOLVED, higher_is_better=False, summary=("schemas",)),
    _count("n_problems", "n", "problem", OUTCOME, "number of problems", accuracy.n_problems,
           ("schemas",), headline=SCHEMA, variants=frozenset({"category"})),
    _count("n_schemas", "N", "schema", OUTCOME, "number of schemas (schema-metric groups)",
           accuracy.n_schemas, ("schemas",), headline=SCHEMA),
    Metric("share", "share", "problem", OUTCOME, "share of problems with a flag (token facts)",
           form=ratios.Ratio("share", ratios.problem_parts, "problem"), reported=False,
           variants=frozenset({"subset"}), higher_is_better=None),  # a fact of data and tokens
    _count("n_shifted_splits", "splits", "problem", SPLITS,
           "causal requests split after their first token(s)", causal.n_shifted_splits),
    # a schema and its transformed schema: ConsistencyTask, method pairs (thesis §3.7.2–3.7.3)
    *CONSISTENCY,
    *_sides(),
    _count("n_pairs", "pairs", "pair", PAIR, "number of document pairs", len, ("pairs",),
           headline=frozenset({TaskKind.CONSISTENCY, TaskKind.ASSOCIATIVITY})),
    # associativity controls (thesis §4.4)
    *_associativity(),
    # WinoWhy reasons (``plausibility``); functions bound per task (``winowhy``, its headline score)
    _plausibility("acc_best_threshold", "acc", "reason", "accuracy at the best threshold",
                  headline=WINOWHY, variants=frozenset({"score", "category"})),
    _plausibility("majority_baseline", "majority", "reason", "accuracy of the majority label",
                  headline=WINOWHY),
    _plausibility("roc_auc", "AUC", "reason", "area under the ROC curve", headline=WINOWHY,
                  variants=frozenset({"score", "category"})),
    _plausibility("question_group_acc", "group", "question",
                  "share of questions with every positive reason above every negative one",
                  headline=WINOWHY, variants=frozenset({"score"})),
    Metric("best_threshold", "threshold", "reason", REASONS,
           "the best threshold itself (not a quality: no direction)",
           higher_is_better=None, kind="plausibility"),
    _count("n_reasons", "reasons", "reason", REASONS, "number of reasons", None, ("reasons",),
           stderr=True, headline=WINOWHY, variants=frozenset({"category"})),
    _count("n_positive", "positive", "reason", REASONS, "number of positive reasons", None,
           stderr=True),
    _count("n_questions", "questions", "question", REASONS, "number of questions", len,
           headline=WINOWHY),
    # the sharded exchangeability test (Oren et al. 2024): ``metrics.contamination``
    _contamination("contamination_p", "p_order",
                   "one-sided p-value of the published order being more likely than shuffles "
                   "(sharded t-test)", contamination.p_value),
    _contamination("contamination_effect", "Δ_order",
                   "published minus mean shuffled log-likelihood, nats per token (mean over "
                   "shards)", contamination.effect, stderr=True),
    _contamination("contamination_effect_low", "Δ_order low",
                   "lower end of the effect's 95% t interval", contamination.effect_low),
    _contamination("contamination_effect_high", "Δ_order high",
                   "upper end of the effect's 95% t interval", contamination.effect_high),
    _count("n_shards", "shards", "shard", SHARDS, "number of shards", contamination.n_shards,
           headline=CONTAMINATION),
    _count("n_positions", "positions", "shard", SHARDS,
           "token positions sent (each shard once per order)", contamination.n_positions,
           headline=CONTAMINATION),
)  # fmt: skip

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
    def parse(cls, name: str) -> Key | None:
        """The key whose ``name`` is ``name``; None for a name no record of ours has.

        A record's own name first; else the pattern with the longest fixed part, a variant from a
        vocabulary (token subsets, WinoWhy categories) before an open one (methods, scores).
        """
        if name in METRICS:
            return cls(name)
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


def reported(row: Mapping[str, Any]) -> dict[Key, Any]:
    """The metrics of ours in an lm-eval results row (stderr columns left out), in row order."""
    out = {}
    for text, value in row.items():
        name, comma, filtered = text.partition(",")
        if comma and filtered == FILTER and not name.endswith(STDERR):
            key = Key.parse(name)
            if key is not None:
                out[key] = value
    return out


# -- what the metric names of a task say ----------------------------------------------------------
_KINDS = ((SHARDS, TaskKind.CONTAMINATION), (REASONS, TaskKind.WINOWHY),
          (TAGGED_PAIR, TaskKind.ASSOCIATIVITY),
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
        if k.record == "acc" and k.method and Key("schema_acc", method=k.method) in found
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
    not ours, and a value of another kind than the record's.
    """
    key = Key.parse(name)
    if key is None or not isinstance(value, dict):
        return None
    if "before" in value and "after" in value:
        kind = None if "subset" in value else PAIR
    else:
        kind = OUTCOME if "correct" in value else None
    return key.metric.form if key.metric.value == kind else None
