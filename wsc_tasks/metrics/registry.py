"""Every metric this package reports, one record each: the single place a metric is declared.

A record says how the metric is computed per lm-eval document (a ``ratios`` form: Σ numerator /
Σ denominator, or for the few that are not ratios — ROC-AUC, best threshold, group ranking — a
task-built function with its own vectorised replicates), its direction, its symbol in the report,
what it counts (problem, schema, document pair, reason, question) and what per-document value it
needs. lm-eval's aggregations (``aggregation``, ``bind``), the schema-bootstrap stderr
(``record_of``), the fast bootstrap (``form``), the samples reader (``by_name``), the report's
consistency columns and the summary's columns all read ``REGISTRY``; nothing recognises a metric by
its module or a name prefix of the function. Adding a consistency metric is its pure function in
``consistency`` and one ``_consistency(...)`` line below.

A task reports a record under its name or a variant ``<name>_<variant>`` (``acc_full``,
``consistency_full_to_partial``, ``acc_cat_spatial``); each aggregation it registers is an
``Aggregation`` bound to its record, so the record of a reported metric is known without parsing
its name. Only ``by_name`` — reading lm-eval's samples files, where a metric is just a name — maps
a name back to a record, by that naming rule.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from wsc_tasks.metrics import accuracy as metrics
from wsc_tasks.metrics import associativity, consistency, plausibility, ratios
from wsc_tasks.scoring import causal

# the per-document value a metric aggregates
OUTCOME = "outcome"  # metrics.SchemaOutcome: one schema's problems right or wrong
PAIR = "pair"  # consistency.PairOutcome: a schema before and after a transformation (or 2 methods)
TAGGED_PAIR = "tagged pair"  # a PairOutcome tagged with its associativity subset
REASONS = "reasons"  # one WinoWhy question: its reasons' scores, labels and categories
SPLITS = "splits"  # an int per schema: causal requests split after the first token(s)


@dataclass(frozen=True)
class Metric:
    """One reported metric (see the module docstring)."""

    name: str
    symbol: str  # as the report and the thesis write it
    level: str  # what it counts: problem, schema, pair (a document pair), reason, question
    value: str  # the per-document value it needs: OUTCOME, PAIR, TAGGED_PAIR, REASONS, SPLITS
    description: str
    form: ratios.Form | None = None  # Σ numerator / Σ denominator form, for the fast bootstrap
    aggregate: Callable[[Sequence[Any]], Any] | None = None  # None: the task binds its own
    function: Callable[..., Any] | None = None  # the pure formula (consistency: over Pair lists)
    higher_is_better: bool | None = True  # None: neither (counts, differences): no arrow
    stderr: bool = True  # lm-eval's stderr is the schema bootstrap; False: N/A (fixed counts)
    problem_matched: bool = False  # needs problems matched one by one (problem transformations)
    kind: str = "accuracy"  # accuracy, count, consistency, associativity, plausibility
    reported: bool = True  # under its own name; False: only as variants (``share_equal_len``)
    summary: tuple[str, ...] = ()  # the summary tables it is a column of


class Aggregation:
    """What a task gives lm-eval for one metric: the function lm-eval calls, and its record."""

    def __init__(self, metric: Metric, function: Callable[[Sequence[Any]], Any]) -> None:
        self.metric = metric
        self.function = function

    def __call__(self, items: Sequence[Any]) -> Any:
        return self.function(items)

    def __getattr__(self, name: str) -> Any:  # ``replicates`` of a WinoWhy function, __name__…
        if name in ("metric", "function"):
            raise AttributeError(name)
        return getattr(self.function, name)

    def __repr__(self) -> str:
        return f"Aggregation({self.metric.name})"


# -- consistency: aggregations over PairOutcomes from the pure functions over Pair lists ----------
def _pair_aggregate(name: str, function: consistency.Metric, level: str) -> Callable:
    pairs = consistency.problem_pairs if level == "problem" else consistency.schema_pairs

    def aggregate(items: Sequence[consistency.PairOutcome]) -> float:
        return function(pairs(items))

    aggregate.__name__ = name
    aggregate.__doc__ = function.__doc__
    return aggregate


def _consistency(
    name: str,
    symbol: str,
    level: str,
    function: consistency.Metric,
    hit: Callable[[Any, Any], Any],
    base: Callable[[Any, Any], Any] = lambda before, after: True,
    *,
    problem_matched: bool | None = None,
    summary: tuple[str, ...] = (),
    base_is: str = "",
) -> Metric:
    """A consistency metric: share of problems (or schema groups) ``(before, after)`` with
    ``hit`` among those with ``base`` (``base_is``: which, in words); ``function`` is its pure
    definition in ``consistency``."""
    ratio = ratios.problem_pair_ratio if level == "problem" else ratios.schema_pair_ratio
    return Metric(
        name, symbol, level, PAIR, (function.__doc__ or "").strip().split("\n")[0],
        form=ratio(name, hit, base, f"{level} {base_is}".strip()),
        aggregate=_pair_aggregate(name, function, level),
        function=function, kind="consistency", summary=summary,
        problem_matched=level == "problem" if problem_matched is None else problem_matched,
    )  # fmt: skip


def _both(before: Any, after: Any) -> bool:
    return all(before) and all(after)


_BEFORE, _AFTER = "solved before the transformation", "solved after the transformation"


# ``hit``, ``base``: a problem's (or schema group's) solved flags as (b, a) = (before, after)
CONSISTENCY = (
    _consistency("consistency", "c", "problem", consistency.consistency, lambda b, a: b == a,
                 summary=("pairs", "methods")),
    _consistency("consistent_acc", "c_a", "problem", consistency.consistent_acc,
                 lambda b, a: b and a, summary=("pairs",)),
    _consistency("preserved_acc", "c_p", "problem", consistency.preserved_acc,
                 lambda b, a: b and a, lambda b, a: b, base_is=_BEFORE),
    _consistency("preserved_acc_rev", "ĉ_p", "problem", consistency.preserved_acc_rev,
                 lambda b, a: b and a, lambda b, a: a, base_is=_AFTER),
    _consistency("schema_consistency_weak", "C̃", "schema", consistency.schema_consistency_weak,
                 lambda b, a: all(b) == all(a), summary=("pairs",)),
    _consistency("schema_consistency", "C", "schema", consistency.schema_consistency,
                 lambda b, a: sum(b) == sum(a), summary=("pairs", "methods")),
    _consistency("schema_consistency_strict", "C*", "schema",
                 consistency.schema_consistency_strict, lambda b, a: list(b) == list(a),
                 problem_matched=True, summary=("pairs", "methods")),
    _consistency("consistent_schema_acc", "C_a", "schema", consistency.consistent_schema_acc,
                 _both, summary=("pairs",)),
    _consistency("preserved_schema_acc", "C_p", "schema", consistency.preserved_schema_acc,
                 _both, lambda b, a: all(b), base_is=_BEFORE),
    _consistency("preserved_schema_acc_rev", "Ĉ_p", "schema",
                 consistency.preserved_schema_acc_rev, _both, lambda b, a: all(a),
                 base_is=_AFTER),
)  # fmt: skip


# -- accuracy of each side of a pair, and their difference ----------------------------------------
def _sides() -> list[Metric]:
    out = []
    accuracies = (
        ("acc", "a", "problem", metrics.problem_accuracy, ratios.problem_parts),
        ("schema_acc", "A", "schema", metrics.schema_accuracy, ratios.schema_parts),
    )
    for name, symbol, level, accuracy, parts in accuracies:
        before = ratios.Ratio(f"{name}_original", lambda i, p=parts: p(i["before"]), level)
        after = ratios.Ratio(f"{name}_perturbed", lambda i, p=parts: p(i["after"]), level)

        def side(key: str, accuracy: Callable = accuracy) -> Callable:
            return lambda items: accuracy([item[key] for item in items])

        def difference(accuracy: Callable = accuracy) -> Callable:
            return lambda items: (
                accuracy([i["after"] for i in items]) - accuracy([i["before"] for i in items])
            )

        out += [
            Metric(before.name, symbol, level, PAIR, "accuracy of the original schemas",
                   form=before, aggregate=side("before"), summary=("pairs",)),
            Metric(after.name, f"{symbol}_F", level, PAIR, "accuracy of the transformed schemas",
                   form=after, aggregate=side("after"), summary=("pairs",)),
            Metric(f"{name}_diff", f"{symbol}_F − {symbol}", level, PAIR,
                   "transformed − original accuracy",
                   form=ratios.Difference(f"{name}_diff", after, before),
                   aggregate=difference(), summary=("pairs",), higher_is_better=None),
        ]  # fmt: skip
    for metric in out:
        metric.aggregate.__name__ = metric.name  # type: ignore[union-attr]
    return out


# -- associativity: one record per reported quantity ----------------------------------------------
_ASSOCIATIVITY_SYMBOLS = {
    "original": "r", "nocands": "r_B", "adjusted": "r − r_B", "rel_loss": "(r − r_B)/r",
    "rel_gain": "(r − r_B)/(1 − r_B)", "assoc_gap": "r_assoc − r_nonassoc",
}  # fmt: skip


def _associativity() -> list[Metric]:
    out = []
    functions = associativity.aggregations()

    def add(name: str, quantity: str, level: str, form: ratios.Form) -> ratios.Form:
        out.append(
            Metric(name, _ASSOCIATIVITY_SYMBOLS[quantity], level, TAGGED_PAIR,
                   "accuracy against no-candidates, per associativity subset (thesis §4.4)",
                   form=form, aggregate=functions[name], kind="associativity",
                   higher_is_better=None if quantity == "assoc_gap" else True)
        )  # fmt: skip
        return form

    for metric, parts in (("acc", ratios.problem_parts), ("schema_acc", ratios.schema_parts)):
        level = "problem" if metric == "acc" else "schema"
        sides: dict[tuple[str, str], ratios.Ratio] = {}
        for scope in associativity.SCOPES:
            name = f"{metric}_{scope}"
            r = ratios.scoped(parts, "before", scope)
            r_b = ratios.scoped(parts, "after", scope)
            sides[scope, "original"] = add(f"{name}_original", "original", level, r)  # type: ignore[assignment]
            sides[scope, "nocands"] = add(f"{name}_nocands", "nocands", level, r_b)  # type: ignore[assignment]
            add(f"{name}_adjusted", "adjusted", level,
                ratios.Difference(f"{name}_adjusted", r, r_b))  # fmt: skip
            for quantity, function, undefined in (
                ("rel_loss", ratios.relative_loss, f"r = 0: no {level} solved before no-cands"),
                ("rel_gain", ratios.relative_gain, f"r_B = 1: every {level} solved after"),
            ):  # fmt: skip
                form = ratios.Combination(f"{name}_{quantity}", function, (r, r_b), undefined)
                add(f"{name}_{quantity}", quantity, level, form)
        for side in ("original", "nocands"):
            name = f"{metric}_assoc_gap_{side}"
            gap = ratios.Difference(name, sides["associative", side], sides["nonassociative", side])
            add(name, "assoc_gap", level, gap)
    if [m.name for m in out] != list(functions):
        raise AssertionError("associativity.aggregations and the registry disagree")
    return out


def _count(name: str, symbol: str, level: str, value: str, description: str,
           aggregate: Callable | None, summary: tuple[str, ...] = (),
           stderr: bool = False) -> Metric:  # fmt: skip
    return Metric(name, symbol, level, value, description, aggregate=aggregate, stderr=stderr,
                  kind="count", summary=summary, higher_is_better=None)  # fmt: skip


def _plausibility(
    name: str, symbol: str, level: str, description: str, function: Callable
) -> Metric:
    return Metric(name, symbol, level, REASONS, description, function=function,
                  kind="plausibility", summary=("reasons",))  # fmt: skip


REGISTRY: tuple[Metric, ...] = (
    # one schema: SchemaTask, CategorizedSchemaTask (thesis §3.7.1)
    Metric("acc", "a", "problem", OUTCOME, "share of problems answered correctly",
           form=ratios.PROBLEM_ACCURACY, aggregate=metrics.problem_accuracy,
           function=metrics.problem_accuracy, summary=("schemas",)),
    Metric("schema_acc", "A", "schema", OUTCOME, "share of schemas with every problem right",
           form=ratios.SCHEMA_ACCURACY, aggregate=metrics.schema_accuracy,
           function=metrics.schema_accuracy, summary=("schemas",)),
    Metric("half_solved", "A'", "schema", OUTCOME, "share of schemas with some problems right",
           form=ratios.Ratio("half_solved", ratios.half_solved_parts, "schema"),
           aggregate=metrics.half_solved, function=metrics.half_solved, higher_is_better=False,
           summary=("schemas",)),
    Metric("anti_solved", "A''", "schema", OUTCOME, "share of schemas with no problem right",
           form=ratios.Ratio("anti_solved", ratios.anti_solved_parts, "schema"),
           aggregate=metrics.anti_solved, function=metrics.anti_solved, higher_is_better=False,
           summary=("schemas",)),
    _count("n_problems", "n", "problem", OUTCOME, "problems", metrics.n_problems, ("schemas",)),
    _count("n_schemas", "N", "schema", OUTCOME, "schema-metric groups", metrics.n_schemas,
           ("schemas",)),
    Metric("share", "share", "problem", OUTCOME, "share of problems with a flag (token facts)",
           form=ratios.Ratio("share", ratios.problem_parts, "problem"), aggregate=metrics.share,
           function=metrics.share, reported=False),
    _count("n_shifted_splits", "splits", "problem", SPLITS,
           "causal requests split after their first token(s)", causal.n_shifted_splits),
    # a schema and its transformed schema: ConsistencyTask, method pairs (thesis §3.7.2–3.7.3)
    *CONSISTENCY,
    *_sides(),
    _count("n_pairs", "pairs", "pair", PAIR, "document pairs", len, ("pairs",)),
    # associativity controls (thesis §4.4)
    *_associativity(),
    # WinoWhy reasons (``plausibility``); functions bound per task (headline score)
    _plausibility("acc_best_threshold", "acc", "reason", "accuracy at the best threshold",
                  plausibility.best_threshold_accuracy),
    _plausibility("majority_baseline", "majority", "reason", "accuracy of the majority label",
                  plausibility.majority_baseline),
    _plausibility("roc_auc", "AUC", "reason", "area under the ROC curve",
                  plausibility.roc_auc),
    _plausibility("question_group_acc", "group", "question",
                  "share of questions with every positive reason above every negative one",
                  plausibility.group_ranking_accuracy),
    Metric("best_threshold", "threshold", "reason", REASONS,
           "the best threshold itself (not a quality: no direction)",
           function=plausibility.best_threshold, higher_is_better=None,
           kind="plausibility"),
    _count("n_reasons", "reasons", "reason", REASONS, "reasons", None, ("reasons",), stderr=True),
    _count("n_positive", "positive", "reason", REASONS, "positive reasons", None, stderr=True),
    _count("n_questions", "questions", "question", REASONS, "questions", len),
)  # fmt: skip

METRICS: dict[str, Metric] = {m.name: m for m in REGISTRY}
if len(METRICS) != len(REGISTRY):
    raise AssertionError("two metric records share a name")
_BY_AGGREGATE = {
    m.aggregate: m for m in REGISTRY if m.aggregate is not None and m.aggregate is not len
}


# -- what tasks, the bootstrap and the readers ask ------------------------------------------------
def bind(name: str, function: Callable[[Sequence[Any]], Any] | None = None) -> Aggregation:
    """The lm-eval aggregation of record ``name``: its own ``aggregate`` or a task's ``function``
    (WinoWhy's, built for the task's headline score)."""
    metric = METRICS[name]
    chosen = function if function is not None else metric.aggregate
    if chosen is None:
        raise ValueError(f"metric {name} has no fixed aggregation: pass the task's function")
    return Aggregation(metric, chosen)


def aggregation(name: str) -> Aggregation:
    return bind(name)


def aggregations(
    names: Iterable[str], variant: str = "", kind: str | None = None
) -> dict[str, Aggregation]:
    """``{<name><variant>: aggregation}`` for the records named (of ``kind``, if given)."""
    chosen = [METRICS[n] for n in names]
    return {m.name + variant: bind(m.name) for m in chosen if kind is None or m.kind == kind}


def select(**fields: Any) -> list[Metric]:
    """Records whose fields equal ``fields`` (``value=PAIR, kind="consistency"``), in order."""
    return [m for m in REGISTRY if all(getattr(m, k) == v for k, v in fields.items())]


def pair_aggregations(problem_transformation: bool) -> dict[str, Aggregation]:
    """A consistency task's metrics (thesis Table 3.6): the consistency metrics that apply to
    its transformation, each side's accuracy and their difference, and the pair count."""
    chosen = [
        m for m in select(value=PAIR, kind="consistency")
        if problem_transformation or not m.problem_matched
    ]  # fmt: skip
    chosen += select(value=PAIR, kind="accuracy") + select(value=PAIR, kind="count")
    return {m.name: bind(m.name) for m in chosen}


def record_of(aggregation: Callable[..., Any]) -> Metric | None:
    """The record of an lm-eval aggregation of this package (or of a pure aggregate such as
    ``metrics.problem_accuracy``); None for anyone else's."""
    function = getattr(aggregation, "func", aggregation)  # functools.partial
    if isinstance(function, Aggregation):
        return function.metric
    try:
        return _BY_AGGREGATE.get(function)
    except TypeError:  # unhashable
        return None


def form(aggregation: Callable[..., Any]) -> ratios.Form | None:
    """The ratio form of a form, an aggregation or a registered pure aggregate; None if none."""
    if isinstance(aggregation, ratios.Ratio | ratios.Difference | ratios.Combination):
        return aggregation
    found = record_of(aggregation)
    return found.form if found is not None else None


def higher_is_better(aggregations: dict[str, Any]) -> dict[str, bool | None]:
    """lm-eval's ``higher_is_better`` of a task's aggregations."""
    return {name: record_of(a).higher_is_better for name, a in aggregations.items()}  # type: ignore[union-attr]


def by_name(name: str, value: Any) -> ratios.Form | None:
    """The form of metric ``name`` of a logged sample whose per-document value is ``value``.

    ``acc_<method>``, ``schema_acc_equal_len``, ``consistency_full_to_partial``…: the record of
    the value's kind whose name is the metric's name or ``<record>_<variant>``, the longest such.
    None for counts, the associativity task (its own quantities, see the report) and unknown names.
    """
    if not isinstance(value, dict):
        return None
    if "before" in value and "after" in value:
        if "subset" in value:
            return None
        kind = PAIR
    elif "correct" in value:
        kind = OUTCOME
    else:
        return None
    candidates = {m.name: m.form for m in REGISTRY if m.value == kind and m.form is not None}
    for key in sorted(candidates, key=len, reverse=True):
        if name == key or name.startswith(key + "_"):
            return candidates[key]
    return None


# views other modules and the tests use
PROBLEM_TRANSFORMATION_METRICS: dict[str, consistency.Metric] = {
    m.name: m.function
    for m in CONSISTENCY  # type: ignore[misc]
}
SCHEMA_TRANSFORMATION_METRICS: dict[str, consistency.Metric] = {
    m.name: m.function
    for m in CONSISTENCY
    if not m.problem_matched  # type: ignore[misc]
}
SCHEMA_METRICS: dict[
    str, tuple[Callable[[Sequence[metrics.SchemaOutcome]], float], bool | None]
] = {
    m.name: (m.aggregate, m.higher_is_better)  # type: ignore[misc]
    for m in REGISTRY
    if "schemas" in m.summary
}


def accuracy_aggregations() -> dict[str, Aggregation]:
    """Accuracy of the original side, of the transformed side, and transformed − original."""
    return {m.name: bind(m.name) for m in select(value=PAIR, kind="accuracy")}
