"""Scoring methods: which model requests a problem needs, and how their results pick an option.

A method is independent of tasks: a task asks every active method for its requests, sends the
union once (a request two methods share is computed once) and hands each method the results it
asked for. New methods (full, smart, masked-LM, T5 scoring…) are added here without touching tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .problems import Problem

# (lm-eval request type, arguments) — hashable, so shared requests are sent once.
Request = tuple[str, tuple[str, ...]]


class ScoringError(ValueError):
    """A method cannot score a problem (or a model family cannot serve the method)."""


@dataclass(frozen=True)
class ScoringMethod:
    """Base class: a way to score the options of a problem; higher score wins."""

    name: str

    def requests(self, problem: Problem) -> list[list[Request]]:
        """Per option, the requests its score needs."""
        raise NotImplementedError

    def option_scores(self, problem: Problem, results: Mapping[Request, object]) -> list[float]:
        raise NotImplementedError

    def predict(self, problem: Problem, results: Mapping[Request, object]) -> int:
        """Index of the chosen option; a tie goes to the first (as lm-eval's argmax)."""
        scores = self.option_scores(problem, results)
        return max(range(len(scores)), key=lambda i: (scores[i], -i))


def partial_continuation(problem: Problem) -> str:
    """Text after the blank as lm-eval's built-in ``winogrande`` scores it.

    lm-eval sends ``" " + after.strip()``; when the blank is directly followed by punctuation
    (``*target*'s``, thesis files) no space is inserted, which would change the tokens.
    """
    after = problem.segments[-1]
    if not after.strip():
        raise ScoringError(
            f"{problem.source or problem.uid}: partial scoring needs text after the blank"
        )
    return " " + after.strip() if after[:1].isspace() else after.rstrip()


@dataclass(frozen=True)
class Partial(ScoringMethod):
    """-log P(text after the blank | text up to and including the answer) (Trinh & Le 2018).

    Identical requests to lm-eval's built-in ``winogrande`` and ``wsc273`` tasks.
    """

    name: str = "partial"

    def requests(self, problem: Problem) -> list[list[Request]]:
        if problem.n_blanks != 1:
            raise ScoringError(
                f"{problem.source or problem.uid}: partial scoring needs one blank, "
                f"found {problem.n_blanks}"
            )
        continuation = partial_continuation(problem)
        return [
            [("loglikelihood", (problem.segments[0] + filler, continuation))]
            for (filler,) in problem.options
        ]

    def option_scores(self, problem: Problem, results: Mapping[Request, object]) -> list[float]:
        return [float(results[reqs[0]][0]) for reqs in self.requests(problem)]  # type: ignore[index]


METHODS: dict[str, ScoringMethod] = {"partial": Partial()}


def get_methods(names: Sequence[str]) -> list[ScoringMethod]:
    unknown = [n for n in names if n not in METHODS]
    if unknown:
        raise ScoringError(f"unknown scoring method(s) {unknown}; available: {sorted(METHODS)}")
    return [METHODS[n] for n in names]
