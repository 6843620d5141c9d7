"""What every model family's scoring methods share: requests, the setup, the method and
continuation interfaces, and the one error they raise.

A method is independent of tasks: a task asks every active method for its requests, sends the
union once (a request two methods share is computed once) and hands each method the results it
asked for. Scores are log-likelihoods (higher wins), the negatives of the thesis's scores v. Each
family's methods live in a module of their own (``causal``, ``seq2seq``, ``masked``); which family
uses which, with its headline, is ``wsc_tasks.scoring.families``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from wsc_tasks.data.problems import Problem
from wsc_tasks.scoring.tokens import TokenCounter

# (lm-eval request type, arguments) — hashable, so shared requests are sent once.
Request = tuple[str, tuple[Any, ...]]
Results = Mapping[Request, Any]  # lm-eval's result of each (a log-likelihood pair, hf-mlm's score)


class Answered(dict[Request, Any]):
    """One problem's ``Results``, with each formula's value of each option computed from them
    ``kept`` for the problem's other methods (``causal.formula_value``)."""

    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.kept: dict[object, Any] = {}


# the lm-eval request types the families send: ``LM.loglikelihood`` and hf-mlm's ``mlm_score``
RequestType = Literal["loglikelihood", "mlm_score"]
# how a causal method scores the first token: WebText's unigram frequencies (GPT-2's tokenizer,
# as the thesis) or the model's own probability after its BOS/EOS prefix token
Prior = Literal["bos", "webtext"]
# where a method runs when ``metadata.scoring`` does not name the methods: on every schema task, or
# only on the tasks of ``METHOD_DATASETS`` (a method whose requests would cost every task more)
Scope = Literal["every_task", "method_tasks"]
# the datasets whose tasks compare scoring methods (thesis Tables 4.3, 4.7 and 4.11)
METHOD_DATASETS = ("wsc266", "wsc273_schemas", "wsc266_inverted")


class ScoringError(ValueError):
    """A method cannot score a problem (or a model family cannot serve the method)."""


@dataclass(frozen=True)
class Setup:
    """What methods need beyond the problem: the model's tokens and how to score a first token."""

    tokens: TokenCounter | None = None
    prior: Prior = "bos"
    smart_limit: int = 1

    def need_tokens(self, method: str) -> TokenCounter:
        if self.tokens is None:
            raise ScoringError(
                f"scoring method {method!r} counts tokens and needs the model's tokenizer: run "
                "through lm_eval's CLI (it passes --model_args to tasks) or pass "
                '--metadata \'{"tokenizer": "<name or path>"}\''
            )
        return self.tokens


def log_likelihood(results: Results, request: Request) -> float:
    """The summed log-probability of an lm-eval ``loglikelihood`` result."""
    return float(results[request][0])


@dataclass(frozen=True)
class ScoringMethod:
    """Base class: a way to score the options of a problem; higher score wins."""

    name: str
    needs_tokens: bool = True
    runs_on: Scope = "every_task"

    def runs_by_default(self, dataset: object) -> bool:
        """Whether a task of ``dataset`` runs the method when its metadata names no methods."""
        return self.runs_on == "every_task" or dataset in METHOD_DATASETS

    def validate(self, setup: Setup) -> None:
        """Raise ``ScoringError`` before any model work if the model cannot serve the method."""
        if self.needs_tokens:
            setup.need_tokens(self.name)

    def requests(self, problem: Problem, setup: Setup) -> list[list[Request]]:
        """Per option, the requests its score needs."""
        raise NotImplementedError

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        raise NotImplementedError

    def predict(self, problem: Problem, results: Results, setup: Setup) -> int:
        """Index of the chosen option; a tie goes to the first (as lm-eval's argmax)."""
        scores = self.option_scores(problem, results, setup)
        return max(range(len(scores)), key=lambda i: (scores[i], -i))


@dataclass(frozen=True)
class Continuation:
    """How a family scores a free text after a context (WinoWhy's reasons): the request, and
    the log-likelihood and the number of tokens the model predicted (0: not counted) of its
    result."""

    def request(self, context: str, text: str, tokens: TokenCounter | None) -> Request:
        raise NotImplementedError

    def validate(self, tokens: TokenCounter | None) -> None:
        """Raise ``ScoringError`` before any model work if the tokenizer cannot serve it."""

    def total(
        self, request: Request, result: Any, tokens: TokenCounter | None
    ) -> tuple[float, int]:
        raise NotImplementedError

    def count(self, request: Request, tokens: TokenCounter | None) -> int:
        """The tokens ``total`` counts for ``request`` before any result, where the tokenizer
        alone says (0: not counted, or counted by the model); encoded once, then remembered."""
        return 0
