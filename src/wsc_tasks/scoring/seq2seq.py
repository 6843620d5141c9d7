"""Encoder–decoder (T5) scoring methods (thesis §3.1.3), from lm-eval ``loglikelihood`` requests.

The blank becomes T5's sentinel ``<extra_id_0>`` (a second blank ``<extra_id_1>``); the target is
the sentinels around the fillers, and the score is log P(target | input) (eq. 3.28–3.29) in the 8
combinations of the ``wsc: `` prefix, counting the end-of-string token, and the mean over the
target's tokens.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from wsc_tasks.data.problems import Problem
from wsc_tasks.scoring.methods import (
    Continuation,
    Request,
    Results,
    ScoringError,
    ScoringMethod,
    Setup,
    log_likelihood,
)
from wsc_tasks.scoring.tokens import TokenCounter

T5_PREFIX = "wsc: "


def sentinel(k: int) -> str:
    return f"<extra_id_{k}>"


def sentinel_ids(tokens: TokenCounter, n: int) -> list[int]:
    """The ids of the first ``n`` sentinels, each one token of its own, or a clear error: an
    encoder–decoder without T5's sentinels (BART's ``<mask>`` infilling) cannot be served."""
    unk = getattr(tokens.tokenizer, "unk_token_id", None)
    out = []
    for k in range(n):
        ids = tokens.encode(sentinel(k), False)
        if len(ids) != 1 or ids[0] == unk:
            raise ScoringError(
                f"the tokenizer has no sentinel token {sentinel(k)} (it encodes to {ids}): "
                "encoder–decoder scoring fills the blanks with T5's sentinels (thesis §3.1.3); "
                "a model without them (BART-style <mask> infilling) is not supported"
            )
        out.append(ids[0])
    return out


def target_ids(tokens: TokenCounter, fillers: Sequence[str], eos: str | None) -> tuple[int, ...]:
    """What a target means: sentinel, the filler's tokens, sentinel… (EOS when counted)."""
    marks = sentinel_ids(tokens, len(fillers) + 1)
    target: list[int] = []
    for k, filler in enumerate(fillers):
        target += [marks[k], *tokens.encode(filler, False)]
    target.append(marks[-1])
    if eos:
        target += tokens.encode(eos, False)
    return tuple(target)


# How a target writes the space around fillers: the thesis's "<X> filler <Y>" first; a
# SentencePiece tokenizer turns the space before a sentinel into a lone '▁' token that is no part
# of the formula (nor of T5's pre-training targets), so then without it.
_TARGET_FORMS = ("{s} {f} ", "{s} {f}", "{s}{f}")


@lru_cache(maxsize=65536)
def target(fillers: tuple[str, ...], eos: str | None, tokens: TokenCounter | None) -> str:
    """Sentinels around the fillers (thesis §3.1.3), in the first spelling whose tokens are
    exactly the formula's (the first spelling when tokens are not counted)."""
    for form in _TARGET_FORMS:
        text = "".join(form.format(s=sentinel(k), f=f) for k, f in enumerate(fillers))
        text += sentinel(len(fillers)) + (eos or "")
        if tokens is None or tuple(tokens.encode(text, False)) == target_ids(tokens, fillers, eos):
            return text
    raise ScoringError(
        f"no spelling of the target {text!r} encodes to its sentinels and filler tokens alone "
        "with this tokenizer"
    )


def sentinel_request(
    problem: Problem, option: int, prefix: bool, eos: str | None, tokens: TokenCounter | None
) -> Request:
    """Input with one sentinel per blank; target = sentinels around the fillers."""
    text = problem.segments[0]
    for k, segment in enumerate(problem.segments[1:]):
        text += sentinel(k) + segment
    filled = target(tuple(problem.options[option]), eos, tokens)
    return ("loglikelihood", ((T5_PREFIX if prefix else "") + text, filled))


@dataclass(frozen=True)
class T5Masked(ScoringMethod):
    """Encoder–decoder masked score (eq. 3.28–3.29): log P(target | input), optionally the
    ``wsc: `` prefix, the end-of-string token counted, and the mean over the target tokens."""

    prefix: bool = False
    mean: bool = False
    eos: bool = False

    def _eos(self, setup: Setup) -> str | None:
        if not self.eos:
            return None
        eos = setup.need_tokens(self.name).tokenizer.eos_token
        if not eos:
            raise ScoringError(f"method {self.name!r} counts EOS but the tokenizer has none")
        return eos

    def validate(self, setup: Setup) -> None:
        super().validate(setup)
        if setup.tokens is not None:
            sentinel_ids(setup.tokens, 3)
            self._eos(setup)

    def requests(self, problem: Problem, setup: Setup) -> list[list[Request]]:
        eos = self._eos(setup)
        return [
            [sentinel_request(problem, i, self.prefix, eos, setup.tokens)]
            for i in range(len(problem.options))
        ]

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        eos, scores = self._eos(setup), []
        for i in range(len(problem.options)):
            sent = sentinel_request(problem, i, self.prefix, eos, setup.tokens)
            value = log_likelihood(results, sent)
            if self.mean:
                value /= max(len(setup.need_tokens(self.name).encode(sent[1][1], False)), 1)
            scores.append(value)
        return scores


def _methods() -> list[ScoringMethod]:
    """All 8 combinations. Reported under the thesis's rule "discount EOS iff mean" as
    ``masked[_prefix][_mean]``; the other four are ``masked[_prefix]_noeos`` (sum without EOS)
    and ``loss[_prefix]`` (mean with EOS, the model's loss)."""
    methods: list[ScoringMethod] = []
    for prefix in (False, True):
        tag = "_prefix" if prefix else ""
        methods += [
            T5Masked(name=f"masked{tag}", prefix=prefix, mean=False, eos=True),
            T5Masked(name=f"masked{tag}_mean", prefix=prefix, mean=True, eos=False),
            T5Masked(name=f"masked{tag}_noeos", prefix=prefix, needs_tokens=False),
            T5Masked(name=f"loss{tag}", prefix=prefix, mean=True, eos=True),
        ]
    return methods


METHODS: dict[str, ScoringMethod] = {m.name: m for m in _methods()}


@dataclass(frozen=True)
class T5Continuation(Continuation):
    """The text as the span of a sentinel: ``context <extra_id_0>`` →
    ``<extra_id_0> text <extra_id_1>`` (thesis §3.1.3); counted: the target's tokens."""

    def request(self, context: str, text: str, tokens: TokenCounter | None) -> Request:
        return ("loglikelihood", (f"{context} {sentinel(0)}", target((text,), None, tokens)))

    def validate(self, tokens: TokenCounter | None) -> None:
        if tokens is not None:
            sentinel_ids(tokens, 2)

    def total(
        self, request: Request, result: Any, tokens: TokenCounter | None
    ) -> tuple[float, int]:
        return float(result[0]), self.count(request, tokens)

    def count(self, request: Request, tokens: TokenCounter | None) -> int:
        return len(tokens.encode(request[1][1], False)) if tokens is not None else 0
