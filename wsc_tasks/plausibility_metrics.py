"""Metrics of reason-plausibility classification (WinoWhy, seed 004 §5.1), as pure functions.

A model gives every reason a score (higher = more plausible); the gold label is 1 for a positive
reason (plausibility ≥ 0.8) and 0 for a negative one (≤ 0.2).

- ``best_threshold_accuracy``: the accuracy the paper reports — call a reason positive when its
  score reaches a threshold, with the threshold that maximises accuracy on the evaluated reasons
  themselves (an optimistic, fitted figure; predicting every reason negative gives the majority
  baseline, 55.67% on WinoWhy, so it never falls below that).
- ``roc_auc``: threshold-free; the probability that a random positive reason outscores a random
  negative one, ties counting one half (Mann–Whitney U / (n₁ n₀)). Chance is 0.5.
- ``group_ranking_accuracy``: share of questions where every positive reason outscores every
  negative reason of the same question (strictly; a tie fails), the analogue of group scoring.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.stats import mannwhitneyu


def _arrays(scores: Sequence[float], labels: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=int)
    if s.shape != y.shape or s.ndim != 1:
        raise ValueError(f"{len(scores)} scores for {len(labels)} labels")
    if not np.isfinite(s).all():
        raise ValueError("scores must be finite numbers (a NaN or infinite log-likelihood?)")
    if not np.isin(y, (0, 1)).all():
        raise ValueError("labels must be 0 or 1")
    return s, y.astype(bool)


def majority_baseline(labels: Sequence[int]) -> float:
    """Accuracy of always answering the more frequent label."""
    if not labels:
        return math.nan
    positive = sum(labels) / len(labels)
    return max(positive, 1 - positive)


def best_threshold(scores: Sequence[float], labels: Sequence[int]) -> tuple[float, float]:
    """(accuracy, threshold) of the rule "positive iff score ≥ threshold" that is most accurate.

    Every distinct score and +∞ (all negative) is tried; of equally accurate thresholds the
    lowest is returned, so equal scores always get the same prediction.
    """
    s, y = _arrays(scores, labels)
    if not len(s):
        return math.nan, math.nan
    thresholds = np.append(np.unique(s), np.inf)
    positives, negatives = np.sort(s[y]), np.sort(s[~y])
    true_pos = len(positives) - np.searchsorted(positives, thresholds, side="left")
    true_neg = np.searchsorted(negatives, thresholds, side="left")
    accuracy = (true_pos + true_neg) / len(s)
    best = int(np.argmax(accuracy))
    return float(accuracy[best]), float(thresholds[best])


def accuracy_at(scores: Sequence[float], labels: Sequence[int], threshold: float) -> float:
    """Accuracy of "positive iff score ≥ threshold" (a subset at the overall best threshold)."""
    s, y = _arrays(scores, labels)
    if not len(s):
        return math.nan
    return float(np.mean((s >= threshold) == y))


def best_threshold_accuracy(scores: Sequence[float], labels: Sequence[int]) -> float:
    return best_threshold(scores, labels)[0]


def roc_auc(scores: Sequence[float], labels: Sequence[int]) -> float:
    """Area under the ROC curve, ties counting one half; NaN without both labels."""
    s, y = _arrays(scores, labels)
    positives, negatives = s[y], s[~y]
    if not len(positives) or not len(negatives):
        return math.nan
    u = mannwhitneyu(positives, negatives, alternative="two-sided").statistic
    return float(u) / (len(positives) * len(negatives))


def group_ranking_accuracy(
    questions: Sequence[tuple[Sequence[float], Sequence[int]]],
) -> float:
    """Share of questions whose every positive reason scores above every negative one.

    Questions without both a positive and a negative reason are not counted (none in WinoWhy).
    """
    solved = counted = 0
    for scores, labels in questions:
        s, y = _arrays(scores, labels)
        if y.all() or not y.any():
            continue
        counted += 1
        solved += bool(s[y].min() > s[~y].max())
    return solved / counted if counted else math.nan
