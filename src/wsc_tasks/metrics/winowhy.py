"""WinoWhy's lm-eval aggregations: the ``plausibility`` metrics over the questions of a run.

One lm-eval document is one question with its kept reasons, so ``question_group_acc`` (every
positive reason of a question above every negative one) stays exact under multi-process runs.
A question's per-document value (``ReasonOutcome``) holds its reasons' scores under every
reason score (``SCORES``), their labels and the question's knowledge categories; each
aggregation comes with the vectorised bootstrap of ``plausibility.ReasonSet``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypedDict

import numpy as np

from wsc_tasks.data.knowledge import CATEGORIES
from wsc_tasks.metrics import registry, stats
from wsc_tasks.metrics.plausibility import (
    ReasonSet,
    accuracy_at,
    best_threshold,
    group_ranking_accuracy,
    majority_baseline,
    roc_auc,
)
from wsc_tasks.metrics.registry import Key

# a reason's score: mean log-likelihood per token, per UTF-8 byte, or summed
SCORES = ("mean", "per_byte", "sum")


class ReasonOutcome(TypedDict):
    """One question's per-document value."""

    scores: dict[str, list[float]]  # score name -> one value per reason
    labels: list[int]
    categories: list[str]


def _flat(
    items: Sequence[ReasonOutcome], score: str, category: str | None = None
) -> tuple[list[float], list[int]]:
    chosen = [i for i in items if category is None or category in i["categories"]]
    scores = [s for i in chosen for s in i["scores"][score]]
    labels = [y for i in chosen for y in i["labels"]]
    return scores, labels


def _reason_set(items: Sequence[ReasonOutcome], score: str, category: str | None = None):
    """Every question's reasons; a question outside ``category`` keeps its place, with none."""
    return ReasonSet(
        [
            (i["scores"][score], i["labels"])
            if category is None or category in i["categories"]
            else ((), ())
            for i in items
        ]
    )


Replicates = Callable[[Sequence[ReasonOutcome], np.ndarray], np.ndarray]


def _with_replicates(function: Callable, replicates: Replicates) -> Callable:
    """``function`` with the vectorised bootstrap ``stats.replicates`` uses (same values):
    ``replicates(items, counts)``, counts = how often each question is in each resample."""
    function.replicates = lambda items, indexes: replicates(  # type: ignore[attr-defined]
        items, stats.resample_counts(indexes, len(items))
    )
    return function


def make_aggregations(
    headline: str, scores: Sequence[str] = SCORES
) -> dict[str, Callable[[Sequence[ReasonOutcome]], float]]:
    """Metric name -> aggregation over the per-question outcomes (see docs for definitions)."""

    def threshold_acc(score: str) -> Callable[[Sequence[ReasonOutcome]], float]:
        return _with_replicates(
            lambda items: best_threshold(*_flat(items, score))[0],
            lambda items, c: _reason_set(items, score).best_threshold(c)[0],
        )

    def auc(score: str, category: str | None = None):
        return _with_replicates(
            lambda items: roc_auc(*_flat(items, score, category)),
            lambda items, c: _reason_set(items, score, category).roc_auc(c),
        )

    def group(score: str):
        def replicates(items: Sequence[ReasonOutcome], c: np.ndarray) -> np.ndarray:
            solved, counted = _reason_set(items, score).group_ranking_parts()
            totals = c @ counted
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(totals > 0, (c @ solved) / totals, np.nan)

        return _with_replicates(
            lambda items: group_ranking_accuracy(
                [(i["scores"][score], i["labels"]) for i in items]
            ),
            replicates,
        )

    def category_acc(category: str):
        def aggregate(items: Sequence[ReasonOutcome]) -> float:
            threshold = best_threshold(*_flat(items, headline))[1]  # the overall best threshold
            return accuracy_at(*_flat(items, headline, category), threshold)

        def replicates(items: Sequence[ReasonOutcome], c: np.ndarray) -> np.ndarray:
            thresholds = _reason_set(items, headline).best_threshold(c)[1]
            return _reason_set(items, headline, category).accuracy_at(c, thresholds)

        return _with_replicates(aggregate, replicates)

    def count(category: str | None = None):
        def replicates(items: Sequence[ReasonOutcome], c: np.ndarray) -> np.ndarray:
            reasons = _reason_set(items, headline, category)
            return c @ reasons.per_question(np.ones_like(reasons.labels))

        return _with_replicates(lambda items: len(_flat(items, headline, category)[1]), replicates)

    def n_positive(items: Sequence[ReasonOutcome], c: np.ndarray) -> np.ndarray:
        reasons = _reason_set(items, headline)
        return c @ reasons.per_question(reasons.labels)

    functions: dict[str, Callable[[Sequence[ReasonOutcome]], float]] = {
        "acc_best_threshold": threshold_acc(headline),
        "roc_auc": auc(headline),
        "question_group_acc": group(headline),
        "best_threshold": _with_replicates(
            lambda items: best_threshold(*_flat(items, headline))[1],
            lambda items, c: _reason_set(items, headline).best_threshold(c)[1],
        ),
        "majority_baseline": _with_replicates(
            lambda items: majority_baseline(_flat(items, headline)[1]),
            lambda items, c: _reason_set(items, headline).majority_baseline(c),
        ),
        "n_reasons": count(),
        "n_positive": _with_replicates(lambda items: sum(_flat(items, headline)[1]), n_positive),
        "n_questions": len,
    }
    keys = {Key(name): function for name, function in functions.items()}
    for score in scores:
        keys[Key("acc_best_threshold", score=score)] = threshold_acc(score)
        keys[Key("roc_auc", score=score)] = auc(score)
        keys[Key("question_group_acc", score=score)] = group(score)
    for category in CATEGORIES:
        keys[Key("acc_best_threshold", category=category)] = category_acc(category)
        keys[Key("roc_auc", category=category)] = auc(headline, category)
        keys[Key("n_reasons", category=category)] = count(category)
    return {key.name: registry.bind(key, f) for key, f in keys.items()}
