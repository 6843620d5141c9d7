"""Masked-LM scoring methods (thesis §3.1.2), from ``mlm_score`` requests served by ``hf-mlm``.

``multi_mask`` (eq. 3.20), ``statement`` (pseudo-log-likelihood, eq. 3.22) and ``answer``
(eq. 3.24), and their means (eq. 3.19, 3.23, 3.25). Statement and answer scores come from the
same masked copies, so they share one request per option.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any, Literal

from wsc_tasks.data.problems import Problem
from wsc_tasks.scoring.methods import (
    Continuation,
    Request,
    Results,
    ScoringMethod,
    Setup,
)
from wsc_tasks.scoring.tokens import TokenCounter

# what an ``mlm_score`` request asks ``hf-mlm`` for: every blank masked at once, or each token
# of the sentence masked in turn (statement and answer scores)
MaskMode = Literal["multimask", "statement"]


class MaskedFormula(str, Enum):
    """Which masked-LM score a method reads from its request's result."""

    MULTI_MASK = "multi_mask"
    STATEMENT = "statement"
    ANSWER = "answer"


def answer_spans(problem: Problem, option: int) -> tuple[tuple[int, int], ...]:
    """Character spans of the fillers in the filled sentence."""
    spans, position = [], len(problem.segments[0])
    for filler, segment in zip(problem.options[option], problem.segments[1:], strict=True):
        spans.append((position, position + len(filler)))
        position += len(filler) + len(segment)
    return tuple(spans)


@dataclass(frozen=True)
class Masked(ScoringMethod):
    """A masked-LM score of the filled sentence, summed or its ``mean`` (module docstring)."""

    needs_tokens: bool = False
    formula: MaskedFormula = MaskedFormula.STATEMENT
    mean: bool = False

    def _request(self, problem: Problem, option: int) -> Request:
        multi = self.formula is MaskedFormula.MULTI_MASK
        mode: MaskMode = "multimask" if multi else "statement"
        return ("mlm_score", (problem.fill(option), answer_spans(problem, option), mode))

    def requests(self, problem: Problem, setup: Setup) -> list[list[Request]]:
        return [[self._request(problem, i)] for i in range(len(problem.options))]

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        scores = []
        for i in range(len(problem.options)):
            result = results[self._request(problem, i)]
            if self.formula is MaskedFormula.ANSWER:
                value, count = result.answer_total, result.answer_n
            else:
                value, count = result.total, result.n
            scores.append(value / max(count, 1) if self.mean else value)
        return scores


METHODS: dict[str, ScoringMethod] = {
    m.name: m
    for formula in MaskedFormula
    for m in (
        Masked(name=formula.value, formula=formula),
        Masked(name=f"{formula.value}_mean", formula=formula, mean=True),
    )
}


@dataclass(frozen=True)
class MaskedContinuation(Continuation):
    """The pseudo-log-likelihood of the text's tokens, each masked in turn with the rest visible
    (``hf-mlm``, answer scoring, eq. 3.24); the model counts the tokens itself."""

    def request(self, context: str, text: str, tokens: TokenCounter | None) -> Request:
        start = len(context) + 1
        return ("mlm_score", (f"{context} {text}", ((start, start + len(text)),), "statement"))

    def total(
        self, request: Request, result: Any, tokens: TokenCounter | None
    ) -> tuple[float, int]:
        return float(result.answer_total), int(result.answer_n)
