"""Every metric this package reports, one ``Metric`` record each (``REGISTRY``).

Adding a consistency metric is one ``_consistency(...)`` entry below: its level, hit and base,
and its oracle (the thesis's equation over lists) that the shared metric tester
(tests/test_metric_contract.py) checks it against. ``wsc_tasks.metrics.registry`` indexes the
records and writes and reads the names they are reported under.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from wsc_tasks.metrics import (
    accuracy,
    associativity,
    consistency,
    contamination,
    questions,
    ratios,
)
from wsc_tasks.metrics.record import (
    ACC,
    ANSWERS,
    OUTCOME,
    PAIR,
    REASONS,
    SCHEMA_ACC,
    SHARDS,
    SPLITS,
    TAGGED_PAIR,
    Metric,
    TaskKind,
)
from wsc_tasks.scoring import causal


# -- consistency: a share of matched problems or schema groups, declared as (level, hit, base) ----
def _consistency(
    name: str,
    symbol: str,
    level: str,
    description: str,
    hit: consistency.Condition,
    base: consistency.Condition = lambda before, after: True,
    *,
    higher_is_better: bool,
    oracle: Oracle,
    problem_matched: bool | None = None,
    summary: tuple[str, ...] = (),
    headline: bool = False,
    base_is: str = "",
) -> Metric:
    """Of the problems (or schema groups) ``(b, a)`` = (before, after) with ``base`` (``base_is``:
    which, in words), the share with ``hit``; a problem metric needs a problem transformation, as
    does ``problem_matched``. ``higher_is_better``: its direction, said by every record (a share
    that counts what a change broke is better lower)."""
    return Metric(
        name, symbol, level, PAIR, description,
        form=consistency.ratio(name, level, hit, base, base_is),
        kind="consistency", summary=summary, variants=frozenset({"pair"}), oracle=oracle,
        higher_is_better=higher_is_better,
        headline=frozenset({TaskKind.CONSISTENCY}) if headline else frozenset(),
        problem_matched=level == "problem" if problem_matched is None else problem_matched,
    )  # fmt: skip


def _both(before: Any, after: Any) -> bool:
    return all(before) and all(after)


# an oracle of a consistency record: over every matched (before, after) problem or schema group
Oracle = Callable[[Sequence[tuple[consistency.Flags, consistency.Flags]]], float]


def _share(hits: int, total: int) -> float:
    return hits / total if total else float("nan")


_BEFORE, _AFTER = "solved before the transformation", "solved after the transformation"


# ``hit``, ``base``: a problem's (or schema group's) solved flags as (b, a) = (before, after)
CONSISTENCY = (
    _consistency("consistency", "c", "problem",
                 "share of problems right before and after the change, or wrong both (eq. 3.81)",
                 lambda b, a: b == a, summary=("pairs", "methods"), headline=True,
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(b == a for b, a in u), len(u))),
    _consistency("consistent_acc", "c_a", "problem",
                 "share of problems right both before and after the change (eq. 3.82)",
                 lambda b, a: b and a, summary=("pairs",),
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(b and a for b, a in u), len(u))),
    _consistency("preserved_acc", "c_p", "problem",
                 "of the problems right before the change, the share still right after (eq. 3.83)",
                 lambda b, a: b and a, lambda b, a: b, base_is=_BEFORE,
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(b and a for b, a in u), sum(b for b, _ in u))),
    _consistency("preserved_acc_rev", "ĉ_p", "problem",
                 "of the problems right after the change, the share also right before (eq. 3.84)",
                 lambda b, a: b and a, lambda b, a: a, base_is=_AFTER,
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(b and a for b, a in u), sum(a for _, a in u))),
    _consistency("schema_consistency_weak", "C̃", "schema",
                 "share of schemas solved both before and after the change, or neither (eq. 3.87)",
                 lambda b, a: all(b) == all(a), summary=("pairs",),
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(all(b) == all(a) for b, a in u), len(u))),
    _consistency("schema_consistency", "C", "schema",
                 "share of schemas with equally many problems right before and after (eq. 3.88)",
                 lambda b, a: sum(b) == sum(a), summary=("pairs", "methods"), headline=True,
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(sum(b) == sum(a) for b, a in u), len(u))),
    _consistency("schema_consistency_strict", "C*", "schema",
                 "share of schemas with the same problems right before and after (eq. 3.89)",
                 lambda b, a: list(b) == list(a), problem_matched=True,
                 summary=("pairs", "methods"),
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(list(b) == list(a) for b, a in u), len(u))),
    _consistency("consistent_schema_acc", "C_a", "schema",
                 "share of schemas solved both before and after the change (eq. 3.90)",
                 _both, summary=("pairs",),
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(all(b) and all(a) for b, a in u), len(u))),
    _consistency("preserved_schema_acc", "C_p", "schema",
                 "of the schemas solved before the change, the share still solved after (eq. 3.91)",
                 _both, lambda b, a: all(b), base_is=_BEFORE,
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(all(b) and all(a) for b, a in u),
                                         sum(all(b) for b, _ in u))),
    _consistency("preserved_schema_acc_rev", "Ĉ_p", "schema",
                 "of the schemas solved after the change, the share also solved before (eq. 3.92)",
                 _both, lambda b, a: all(a), base_is=_AFTER,
                 higher_is_better=True,
                 oracle=lambda u: _share(sum(all(b) and all(a) for b, a in u),
                                         sum(all(a) for _, a in u))),
)  # fmt: skip


# -- accuracy of each side of a pair, and their difference ----------------------------------------
def _side_parts(parts: ratios.Parts, side: str) -> ratios.Parts:
    """``parts`` of one side (``"before"`` or ``"after"``) of a pair's per-document value."""
    return lambda i: parts(i[side])


def _sides() -> list[Metric]:
    out = []
    shown = frozenset({TaskKind.CONSISTENCY})
    accuracies = (
        (ACC, "a", "problem", ratios.problem_parts),
        (SCHEMA_ACC, "A", "schema", ratios.schema_parts),
    )
    for name, symbol, level, parts in accuracies:
        before = ratios.Ratio(f"{name}_original", _side_parts(parts, "before"), level)
        after = ratios.Ratio(f"{name}_perturbed", _side_parts(parts, "after"), level)
        sides = shown if name == ACC else frozenset()
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

    for metric, parts in ((ACC, ratios.problem_parts), (SCHEMA_ACC, ratios.schema_parts)):
        level = "problem" if metric == ACC else "schema"
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


def _groups(outcomes: Sequence[accuracy.SchemaOutcome]) -> list[tuple[int, int]]:
    """(right, size) of every schema-metric group of a list of ``SchemaOutcome``s (an oracle's)."""
    return [(sum(o["correct"][i] for i in g), len(g)) for o in outcomes for g in o["groups"]]


def _of_schemas(
    test: Callable[[int, int], bool],
) -> Callable[[Sequence[accuracy.SchemaOutcome]], float]:
    """An oracle: the share of schema groups whose (right, size) passes ``test``."""
    return lambda docs: _share(sum(test(*g) for g in _groups(docs)), len(_groups(docs)))


def _contamination(name: str, symbol: str, description: str, aggregate: Callable,
                   stderr: bool = False) -> Metric:  # fmt: skip
    return Metric(name, symbol, "shard", SHARDS, description, aggregate=aggregate,
                  higher_is_better=None, stderr=stderr, kind="contamination",
                  headline=CONTAMINATION)  # fmt: skip


def _question(name: str, symbol: str, level: str, description: str,
              parts: ratios.Parts, of: str, oracle: Callable[[Sequence[Any]], float],
              higher_is_better: bool | None) -> Metric:  # fmt: skip
    """A share of a question task's ``questions.Answers`` (``of``: what its denominator counts)."""
    return Metric(name, symbol, level, ANSWERS, description, form=ratios.Ratio(name, parts, of),
                  higher_is_better=higher_is_better, kind="question", headline=QUESTION,
                  oracle=oracle)  # fmt: skip


def _asked(docs: Sequence[questions.Answers]) -> list[tuple[int, int, int, int]]:
    """(document, problem, order, chosen) of every question of every document (an oracle's)."""
    return [
        (d, p, o, c)
        for d, v in enumerate(docs)
        for c, o, p in zip(v["chosen"], v["order"], v["problem"], strict=True)
    ]


def _order_oracle(docs: Sequence[questions.Answers]) -> float:
    """Of the problems asked, the share whose two answers name the same option."""
    chosen: dict[tuple[int, int], dict[int, int]] = {}
    for d, p, o, c in _asked(docs):
        chosen.setdefault((d, p), {})[o] = c
    same = [len(c) == 2 and c[0] == c[1] and c[0] != questions.UNANSWERED for c in chosen.values()]
    return _share(sum(same), len(same))


def _first_oracle(docs: Sequence[questions.Answers]) -> float:
    """Of the questions answered, the share whose answer is the option shown first."""
    shown_first = [(c if o == 0 else 1 - c) == 0 for _, _, o, c in _asked(docs) if c >= 0]
    return _share(sum(shown_first), len(shown_first))


SCHEMA = frozenset({TaskKind.SCHEMA})
QUESTION = frozenset({TaskKind.QUESTION})
SCHEMA_OR_QUESTION = SCHEMA | QUESTION
WINOWHY = frozenset({TaskKind.WINOWHY})
CONTAMINATION = frozenset({TaskKind.CONTAMINATION})
REGISTRY: tuple[Metric, ...] = (
    # one schema: SchemaTask, CategorizedSchemaTask (thesis §3.7.1)
    Metric(ACC, "a", "problem", OUTCOME, "share of problems answered correctly",
           form=ratios.PROBLEM_ACCURACY, summary=("schemas",), headline=SCHEMA_OR_QUESTION,
           variants=frozenset({"method", "subset", "category"}),
           oracle=lambda docs: _share(sum(sum(o["correct"]) for o in docs),
                                      sum(len(o["correct"]) for o in docs))),
    Metric(SCHEMA_ACC, "A", "schema", OUTCOME, "share of schemas with every problem right",
           form=ratios.SCHEMA_ACCURACY, summary=("schemas",), headline=SCHEMA_OR_QUESTION,
           variants=frozenset({"method", "subset"}), oracle=_of_schemas(lambda r, n: r == n)),
    Metric("half_solved", "A′", "schema", OUTCOME,
           "share of schemas with some but not all problems right (half-solved)",
           form=ratios.HALF_SOLVED, higher_is_better=False, summary=("schemas",),
           oracle=_of_schemas(lambda r, n: 0 < r < n)),
    Metric("anti_solved", "A″", "schema", OUTCOME,
           "share of schemas with no problem right (anti-solved)",
           form=ratios.ANTI_SOLVED, higher_is_better=False, summary=("schemas",),
           oracle=_of_schemas(lambda r, n: r == 0)),
    _count("n_problems", "n", "problem", OUTCOME, "number of problems", accuracy.n_problems,
           ("schemas",), variants=frozenset({"category"})),
    _count("n_schemas", "N", "schema", OUTCOME, "number of schemas (schema-metric groups)",
           accuracy.n_schemas, ("schemas",)),
    Metric("share", "share", "problem", OUTCOME, "share of problems with a flag (token facts)",
           form=ratios.Ratio("share", ratios.problem_parts, "problem"), reported=False,
           variants=frozenset({"subset"}), higher_is_better=None),  # a fact of data and tokens
    _count("n_shifted_splits", "splits", "problem", SPLITS,
           "causal requests split after their first token(s)", causal.n_shifted_splits),
    # a schema and its transformed schema: ConsistencyTask, method pairs (thesis §3.7.2–3.7.3)
    *CONSISTENCY,
    *_sides(),
    _count("n_pairs", "pairs", "pair", PAIR, "number of document pairs", len, ("pairs",)),
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
           variants=frozenset({"category"})),
    _count("n_positive", "positive", "reason", REASONS, "number of positive reasons", None),
    _count("n_questions", "questions", "question", REASONS, "number of questions", len),
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
    _count("n_shards", "shards", "shard", SHARDS, "number of shards", contamination.n_shards),
    _count("n_positions", "positions", "shard", SHARDS,
           "token positions sent (each shard once per order)", contamination.n_positions),
    # a schema's problems asked as questions, in both option orders: QuestionTask
    _question("unanswered", "u", "question",
              "share of questions whose answer names no option (no text, both, a refusal, "
              "neither, no answer from the server); counted wrong in a and A",
              questions.unanswered_parts, "question asked",
              lambda docs: _share(sum(c == questions.UNANSWERED for *_, c in _asked(docs)),
                                  len(_asked(docs))),
              higher_is_better=False),
    _question("first_option", "f_A", "question",
              "share of the answered questions answered with the option shown first (A): 0.5 "
              "when the answers do not depend on the order of the options",
              questions.first_option_parts, "question answered", _first_oracle,
              higher_is_better=None),
    _question("order_consistency", "c_o", "problem",
              "share of problems whose two answers, one per order of the options, name the same "
              "option",
              questions.order_consistency_parts, "problem asked", _order_oracle,
              higher_is_better=True),
    _count("n_unanswered", "unanswered", "question", ANSWERS,
           "number of questions whose answer names no option", questions.n_unanswered),
    _count("n_asked", "asked", "question", ANSWERS,
           "number of questions asked (every problem once in each order of its options)",
           questions.n_asked),
)  # fmt: skip
