"""Metrics of WinoWhy's plausibility classification (Zhang et al. 2020 §5.1), as pure functions.

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


# -- bootstrap replicates, all at once (lm-eval's stderr; see ``stats.replicates``) ---------------
# A replicate resamples questions; ``counts`` (replicates × questions) says how often each
# question is drawn, so a reason's weight in a replicate is its question's count. Every figure is
# a ratio of integer sums (AUC's U counts half-points), so it equals, bit for bit, the function
# above applied to the resampled list.
class ReasonSet:
    """The reasons of several questions, flattened, with the question each belongs to."""

    def __init__(self, questions: Sequence[tuple[Sequence[float], Sequence[int]]]) -> None:
        arrays = [_arrays(scores, labels) for scores, labels in questions]
        self.n_questions = len(arrays)
        self.scores = np.concatenate([s for s, _ in arrays]) if arrays else np.zeros(0)
        self.labels = np.concatenate([y for _, y in arrays]) if arrays else np.zeros(0, bool)
        self.question = np.repeat(np.arange(len(arrays)), [len(s) for s, _ in arrays])

    def per_question(self, flags: np.ndarray) -> np.ndarray:
        """How many reasons of each question have ``flags``."""
        return np.bincount(self.question[flags], minlength=self.n_questions)

    def roc_auc(self, counts: np.ndarray) -> np.ndarray:
        """``roc_auc`` of every replicate: U = cᵀ M c, M[i, j] the (half-)wins of question i's
        positives over question j's negatives."""
        y = self.labels
        pos, neg = self.scores[y], self.scores[~y]
        wins = (pos[:, None] > neg[None, :]) + 0.5 * (pos[:, None] == neg[None, :])
        matrix = np.zeros((self.n_questions, self.n_questions))
        pos_q, neg_q = self.question[y], self.question[~y]  # ascending: reasons are in order
        if len(pos) and len(neg):
            rows, row_starts = np.unique(pos_q, return_index=True)
            cols, col_starts = np.unique(neg_q, return_index=True)
            by_rows = np.add.reduceat(wins, row_starts, axis=0)
            matrix[np.ix_(rows, cols)] = np.add.reduceat(by_rows, col_starts, axis=1)
        c = counts.astype(float)
        u = ((c @ matrix) * c).sum(axis=1)
        n_pos = counts @ self.per_question(y)
        n_neg = counts @ self.per_question(~y)
        pairs = (n_pos * n_neg).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(pairs > 0, u / pairs, np.nan)

    def best_threshold(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(accuracy, threshold) of ``best_threshold`` for every replicate."""
        iters = len(counts)
        order = np.argsort(self.scores, kind="stable")
        ranked, positive = self.scores[order], self.labels[order]
        weights = counts[:, self.question[order]]
        values, starts = np.unique(ranked, return_index=True)
        ends = np.append(starts[1:], len(ranked))

        def before(w: np.ndarray) -> np.ndarray:  # iters × (reasons + 1): weight before index
            return np.concatenate([np.zeros((iters, 1), np.int64), np.cumsum(w, axis=1)], axis=1)

        pos_before = before(weights * positive)
        neg_before = before(weights * ~positive)
        all_before = pos_before + neg_before
        total_pos, total_neg = pos_before[:, -1:], neg_before[:, -1:]
        true_pos = np.concatenate([total_pos - pos_before[:, starts], np.zeros((iters, 1))], 1)
        true_neg = np.concatenate([neg_before[:, starts], total_neg], axis=1)
        present = np.concatenate(
            [all_before[:, ends] > all_before[:, starts], np.ones((iters, 1), bool)], axis=1
        )
        n = all_before[:, -1:]
        with np.errstate(invalid="ignore", divide="ignore"):
            accuracy = (true_pos + true_neg) / n
        accuracy[~present] = -np.inf
        best = np.argmax(accuracy, axis=1)
        thresholds = np.append(values, np.inf)[best]
        accuracy = accuracy[np.arange(iters), best]
        empty = n[:, 0] == 0
        accuracy[empty] = thresholds[empty] = np.nan
        return accuracy, thresholds

    def accuracy_at(self, counts: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
        """``accuracy_at`` of every replicate, each at its own threshold."""
        weights = counts[:, self.question]
        right = (self.scores[None, :] >= thresholds[:, None]) == self.labels[None, :]
        n = weights.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, (weights * right).sum(axis=1) / n, np.nan)

    def majority_baseline(self, counts: np.ndarray) -> np.ndarray:
        n = counts @ self.per_question(np.ones_like(self.labels))
        positive = (counts @ self.per_question(self.labels)) / n
        return np.maximum(positive, 1 - positive)

    def group_ranking_parts(self) -> tuple[np.ndarray, np.ndarray]:
        """Per question: (solved, counted) of ``group_ranking_accuracy``."""
        solved = np.zeros(self.n_questions)
        counted = np.zeros(self.n_questions)
        for q in range(self.n_questions):
            s, y = self.scores[self.question == q], self.labels[self.question == q]
            if y.all() or not y.any():
                continue
            counted[q] = 1
            solved[q] = float(s[y].min() > s[~y].max())
        return solved, counted
