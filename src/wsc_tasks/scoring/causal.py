"""Causal LMs' scoring methods (thesis §3.1.1), every one from lm-eval ``loglikelihood`` requests.

- ``partial``: log P(text after the blank | text up to and including the answer) (Trinh & Le);
- ``all_but_first``: log P(σ2…σn | σ1); ``loss`` is its mean (eq. 3.8, 3.15);
- ``full``: log p1 + log P(σ2…σn | σ1), p1 from the first-token prior (eq. 3.10, see below);
- ``full_norm``: full − log P(answer alone) (eq. 3.6–3.7, 3.11); with two blanks (inverted
  transposition schemas) the answer is the ordered pair, P(answer) the product of each filler
  alone, so the normalizer cancels between options except where casing differs;
- ``smart``: partial, unless the blank is followed by at most ``smart_limit`` tokens, then full;
- ``<method>_mean``: divided by the number of tokens it predicts (eq. 3.12–3.14).

First-token prior: with GPT-2's tokenizer, the WebText unigram frequencies the thesis used
(``maler/token_frequencies/frequencies_with_eos.txt``); with any other tokenizer, the model's own
probability after its BOS/EOS prefix token (lm-eval's empty-context request), for both p1 and
P(answer). Partial, all-but-first and loss predict the same tokens from the same inputs, so lm-eval
computes them in one forward pass per option (its logits cache groups requests by input tokens).
"""

from __future__ import annotations

import ast
import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

from wsc_tasks.data import sources
from wsc_tasks.data.problems import Problem
from wsc_tasks.scoring.methods import (
    Answered,
    Continuation,
    Request,
    Results,
    Scope,
    ScoringError,
    ScoringMethod,
    Setup,
    log_likelihood,
)
from wsc_tasks.scoring.tokens import RequestMismatch, TokenCounter, check_request

log = logging.getLogger(f"lm_eval.{__name__}")

FREQUENCIES = "maler/token_frequencies/frequencies_with_eos.txt"


@lru_cache(maxsize=1)
def webtext_log_frequencies() -> tuple[float, dict[int, int]]:
    """(log total, {GPT-2 token id: count}) over the public WebText subset (thesis §3.1.1)."""
    path = sources.resolve(FREQUENCIES)
    total_line, table_line = path.read_text(encoding="utf-8").splitlines()[:2]
    return math.log(int(total_line)), ast.literal_eval(table_line)


def webtext_log_prob(token_id: int) -> float:
    """log f(token); a token never seen in WebText counts once rather than making −inf."""
    log_total, counts = webtext_log_frequencies()
    return math.log(max(counts.get(token_id, 0), 1)) - log_total


def is_gpt2_tokenizer(counter: TokenCounter) -> bool:
    """GPT-2's byte-level BPE: the tokens of thesis eq. 3.2 and its 50,257-entry vocabulary."""
    try:
        return (
            len(counter.tokenizer) == 50257
            and counter.encode("The trophy", False) == [464, 16383]
            and counter.encode(" the trophy", False) == [262, 16383]
        )
    except Exception:  # noqa: BLE001 - any tokenizer that cannot answer is not GPT-2's
        return False


Split = tuple[tuple[int, ...], tuple[int, ...]]  # (context ids, continuation ids) lm-eval feeds


@dataclass(frozen=True)
class Pieces:
    """The requests and token counts of one filled sentence, shared by all causal methods."""

    partial: Request
    partial_tokens: int
    all_but_first: Request
    sentence_tokens: int
    # σ1…σk: the tokens all-but-first conditions on (k = 1 unless the tokenizer has no
    # reproducible boundary after σ1, see ``token_split``); the WebText prior scores them
    first_tokens: tuple[int, ...]
    bos_full: Request | None
    # per filler: the rest of it given its first tokens, or all of it (None: nothing to ask)
    answers: tuple[Request | None, ...]
    answer_first_tokens: tuple[tuple[int, ...], ...]
    answer_tokens: int  # over all fillers
    # every request with the ids it must give the model (``tokens.check_request``)
    intended: tuple[tuple[Request, Split], ...]
    shifted: int  # splits moved past the first token because no request could express it


def token_split(tokens: TokenCounter, text: str) -> tuple[Request | None, int, Split | None]:
    """The all-but-first request of ``text``: (σ1…σk, σk+1…σn) for the smallest k ≥ 1 at which
    a string request reproduces the split under lm-eval's rules (checked by re-encoding).

    k > 1 when σ1 alone cannot be a context: a lone space (GPT-2 splits " iced" into 'Ġ' +
    'iced', and lm-eval moves a context's trailing space into the continuation) or a lone '▁'
    whose text re-encodes differently (SentencePiece). The documented equivalent conditions on
    the first k tokens instead of the first one, the prior scores all k (``Pieces.shifted``
    counts it). (None, n, None) when no k < n works: the prior covers the whole text.
    """
    ids = tokens.encode(text, False)
    offsets = tokens.offsets(text)
    for k in range(1, len(ids)):
        for cut in dict.fromkeys((offsets[k - 1][1], offsets[k][0])):  # end of σk first
            head = text[:cut]
            if not head:
                continue
            request: Request = ("loglikelihood", (head, text[cut:]))
            intended = tokens.intended_split(text, k)
            try:
                check_request(tokens, request, intended)
            except RequestMismatch:
                continue
            return request, k, (tuple(intended[0]), tuple(intended[1]))
    return None, len(ids), None


def _bos_request(tokens: TokenCounter, text: str) -> tuple[Request, Split]:
    if tokens.prefix_token_id is None:
        raise ScoringError(
            "the tokenizer has neither a BOS nor an EOS token: lm-eval has no prefix token for "
            "the empty-context requests of full scoring; choose methods without them, e.g. "
            '--metadata \'{"scoring": ["partial", "all_but_first", "loss"]}\''
        )
    context, continuation = tokens.intended_split(text, 0)
    return ("loglikelihood", ("", text)), (tuple(context), tuple(continuation))


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


def partial_request(problem: Problem, option: int) -> Request:
    """The partial-scoring request of an option: lm-eval's ``winogrande`` request exactly."""
    filled = problem.fill(option)
    context = filled[: len(filled) - len(problem.segments[-1])]
    return ("loglikelihood", (context, partial_continuation(problem)))


def _partial_intended(tokens: TokenCounter, request: Request) -> Split:
    """Partial scoring means the filled sentence's own tokens, split where the answer ends."""
    context, continuation = request[1]
    text = context + continuation
    intended = tokens.intended_split(text, len(tokens.encode(context.rstrip(), False)))
    return tuple(intended[0]), tuple(intended[1])


@lru_cache(maxsize=65536)
def pieces(problem: Problem, option: int, setup: Setup) -> Pieces:
    """The requests of one option, each checked to give the model the ids its formula means."""
    tokens = setup.need_tokens("full")
    where = problem.source or problem.uid
    partial = partial_request(problem, option)
    sentence = problem.fill(option)
    sentence_ids = tokens.encode(sentence, False)
    if len(sentence_ids) < 2:
        raise ScoringError(f"{where}: sentence has fewer than two tokens")
    all_but_first, k, split = token_split(tokens, sentence)
    if all_but_first is None or split is None:
        raise ScoringError(
            f"{where}: no token boundary of {sentence!r} can be sent as an lm-eval request with "
            "this tokenizer (all-but-first and full scoring need one); use scoring=partial"
        )
    intended = [(partial, _partial_intended(tokens, partial)), (all_but_first, split)]
    first_tokens, shifted = tuple(sentence_ids[:k]), int(k > 1)
    bos_full = None
    if setup.prior == "bos":
        bos_full, split = _bos_request(tokens, sentence)
        intended.append((bos_full, split))
    answers: list[Request | None] = []
    firsts, n_answer = [], 0
    for filler, before in zip(problem.options[option], problem.segments, strict=False):
        answer = (" " if before.endswith(" ") else "") + filler
        answer_ids = tokens.encode(answer, False)
        n_answer += len(answer_ids)
        if setup.prior == "bos":
            request, split = _bos_request(tokens, answer)
            answers.append(request)
            intended.append((request, split))
            firsts.append(tuple(answer_ids[:1]))
            continue
        rest, k, rest_split = token_split(tokens, answer)
        answers.append(rest)
        firsts.append(tuple(answer_ids[:k]))
        shifted += int(k > 1)
        if rest is not None and rest_split is not None:
            intended.append((rest, rest_split))
    for request, split in intended:  # cheap: every encoding is in the counter's cache by now
        try:
            check_request(tokens, request, split)
        except RequestMismatch as error:
            raise ScoringError(
                f"{where}: {error}; this tokenizer cannot express the request, run with "
                'scoring methods that avoid it (e.g. --metadata \'{"scoring": ["full"]}\')'
            ) from error
    if shifted:
        log.info(
            f"wsc_tasks: {where}: {shifted} all-but-first split(s) of {sentence!r} "
            "or its answer sit after the first few tokens, not the first (a lone-space or "
            "lone-'▁' token)"
        )
    return Pieces(
        partial=partial,
        partial_tokens=tokens.n_continuation(*partial[1]),
        all_but_first=all_but_first,
        sentence_tokens=len(sentence_ids),
        first_tokens=first_tokens,
        bos_full=bos_full,
        answers=tuple(answers),
        answer_first_tokens=tuple(firsts),
        answer_tokens=n_answer,
        intended=tuple(intended),
        shifted=shifted,
    )


def prime(tokens: TokenCounter, problems: Iterable[Problem]) -> int:
    """Encode in a few batch calls every text that ``pieces`` and the token facts of
    ``problems`` will count, so that they find it cached; returns how many texts it encoded.

    Three rounds, as the texts depend on earlier encodings: the sentences, answers and
    partial-scoring texts with the character offsets of the sentences and answers; then the
    heads of their first-token splits (``token_split``), both with and without the
    tokenizer's special tokens. Whatever is missed (a split after more than one token) is
    encoded one text at a time, as before: priming never changes a count."""
    if not tokens.batched:
        return 0
    plain: list[str] = []  # encoded without special tokens
    default: list[str] = []  # encoded as the model reads them (lm-eval's request encoding)
    split: list[str] = []  # texts split after their first token(s)
    for problem in problems:
        for option in range(len(problem.options)):
            sentence = problem.fill(option)
            after = problem.segments[-1]
            head = sentence[: len(sentence) - len(after)]
            plain.append(sentence)
            split.append(sentence)
            if after.strip():
                context, continuation = partial_request(problem, option)[1]
                default += [context.rstrip(), context + continuation]
                plain += [context.rstrip(), context + continuation]
            default += [head.rstrip(), sentence]  # tokens after the blank (``tokens_after_blank``)
            for filler, before in zip(problem.options[option], problem.segments, strict=False):
                answer = (" " if before.endswith(" ") else "") + filler
                plain.append(answer)
                split.append(answer)
                default += [before.rstrip(), before + filler]  # ``answer_lengths``
    done = tokens.prime_offsets(split) + tokens.prime(plain, False) + tokens.prime(default)
    heads = []
    for text in split:
        offsets = tokens.offsets(text)  # known: ``prime_offsets`` above
        for k in (1, 2):
            if len(offsets) > k:
                heads += [text[: offsets[k - 1][1]].rstrip(), text[: offsets[k][0]].rstrip()]
    return done + tokens.prime([h for h in heads if h] + split)


def n_shifted_splits(items: Sequence[int]) -> int:
    """Aggregation: all-but-first splits moved past the first token (``token_split``)."""
    return int(sum(items))


def shifted_splits(problem: Problem, setup: Setup) -> int:
    """How many of the problem's all-but-first splits sit after more than the first token."""
    return sum(pieces(problem, i, setup).shifted for i in range(len(problem.options)))


def _splits(pieces: Pieces, *requests: Request) -> list[tuple[Request, Split]]:
    """``requests`` of ``pieces`` with the ids each must give the model."""
    known = dict(pieces.intended)
    return [(request, known[request]) for request in requests]


@lru_cache(maxsize=65536)
def token_steps(problem: Problem, option: int, setup: Setup) -> tuple[tuple[Request, Split], ...]:
    """The suffix requests of a filled sentence σ1…σn, log P(σk+1…σn | σ1…σk) for each k ≥ 1
    at which a string request reproduces the split (as ``token_split`` checks all-but-first's).

    Consecutive differences are per-token log-probabilities (``token_log_probs``); every step
    feeds the model all-but-first's input, the sentence without BOS, so lm-eval computes them
    all in the forward pass that request already costs. Built only for methods that ask."""
    tokens = setup.need_tokens("per-token")
    sentence = problem.fill(option)
    n = len(tokens.encode(sentence, False))
    offsets = tokens.offsets(sentence)
    steps: list[tuple[Request, Split]] = []
    for k in range(1, n):
        for cut in dict.fromkeys((offsets[k - 1][1], offsets[k][0])):  # end of σk first
            if not sentence[:cut]:
                continue
            request: Request = ("loglikelihood", (sentence[:cut], sentence[cut:]))
            intended = tokens.intended_split(sentence, k)
            split = (tuple(intended[0]), tuple(intended[1]))
            try:
                check_request(tokens, request, split)
            except RequestMismatch:
                continue
            steps.append((request, split))
            break
    if not steps:
        raise ScoringError(
            f"{problem.source or problem.uid}: no token boundary of {sentence!r} can be sent as "
            "an lm-eval request with this tokenizer; per-token methods need one"
        )
    return tuple(steps)


def token_log_probs(
    problem: Problem, option: int, setup: Setup, results: Results
) -> tuple[float, ...]:
    """log P(σi | σ1…σi−1) of each token of the filled sentence after its first (no first-token
    prior, no BOS: the model's own conditionals on all-but-first's input); tokens that no request
    can split apart count as one (their joint log-probability), so the values always sum to
    all-but-first's."""
    sums = [log_likelihood(results, request) for request, _ in token_steps(problem, option, setup)]
    return (*(a - b for a, b in zip(sums, sums[1:], strict=False)), sums[-1])


# An option's log-probabilities and counts as the tests compute them from explicit forward passes,
# by name: what a formula's ``hand`` reads. ``partial``, ``all_but_first``, ``full`` (σ1 by the
# prior), ``answer`` (log P(answer alone), over every filler), ``token_lps`` (log P(σi | σ1…σi−1)
# for i ≥ 2, without BOS); counts ``n`` (tokens of the sentence), ``n_after`` (after
# the blank), ``n_answer`` (of the answer); ``limit`` (smart's). A term is computed only when a
# formula reads it, so the model inputs the tests expect follow from the formulas too.
Hand = Mapping[str, Any]


@dataclass(frozen=True)
class Formula:
    """The score of one filled sentence that a causal method computes: the requests it needs (each
    with the ids it must give the model), its value and the number of tokens it predicts from
    their results, and the same from an option's ``Hand`` terms (checked by tests/test_scoring.py
    and tests/test_reid.py against explicit forward passes). A new formula is a subclass in its
    own module of ``wsc_tasks.scoring.causal_methods``."""

    name: str
    # the score as the docs' table of methods states it (Markdown; task_configs/README.md is
    # written from it by tests/regenerate.py readme)
    text: ClassVar[str] = ""

    def needed(self, problem: Problem, option: int, setup: Setup) -> list[tuple[Request, Split]]:
        raise NotImplementedError

    def value(
        self, problem: Problem, option: int, setup: Setup, results: Results
    ) -> tuple[float, int]:
        """(score, tokens it predicts) of the option."""
        raise NotImplementedError

    def hand(self, h: Hand) -> tuple[float, float]:
        """(score, tokens it predicts) by the formula as written, from ``h``'s terms."""
        raise NotImplementedError


def _full(pieces: Pieces, results: Results) -> float:
    # p1 · P(σ2… | σ1): the model's own after BOS, or WebText's p1 with all-but-first
    if pieces.bos_full is not None:
        return log_likelihood(results, pieces.bos_full)
    prior = sum(webtext_log_prob(t) for t in pieces.first_tokens)
    return prior + log_likelihood(results, pieces.all_but_first)


def _full_request(pieces: Pieces) -> Request:
    return pieces.bos_full or pieces.all_but_first


def _answer(pieces: Pieces, results: Results) -> float:
    """log P(answer alone), over every filler."""
    answer = 0.0
    for first, request in zip(pieces.answer_first_tokens, pieces.answers, strict=True):
        if pieces.bos_full is None:
            answer += sum(webtext_log_prob(t) for t in first)
        if request is not None:
            answer += log_likelihood(results, request)
    return answer


class PartialFormula(Formula):
    """log P(text after the blank | text up to and including the answer)."""

    text = (
        "log P(text after the blank \\| text up to and including the answer), lm-eval's "
        "`winogrande` requests exactly"
    )

    def needed(self, problem: Problem, option: int, setup: Setup) -> list[tuple[Request, Split]]:
        found = pieces(problem, option, setup)
        return _splits(found, found.partial)

    def value(
        self, problem: Problem, option: int, setup: Setup, results: Results
    ) -> tuple[float, int]:
        found = pieces(problem, option, setup)
        return log_likelihood(results, found.partial), found.partial_tokens

    def hand(self, h: Hand) -> tuple[float, float]:
        return h["partial"], h["n_after"]


class AllButFirst(Formula):
    """log P(σ2…σn | σ1)."""

    text = "log P(σ2…σn \\| σ1)"

    def needed(self, problem: Problem, option: int, setup: Setup) -> list[tuple[Request, Split]]:
        found = pieces(problem, option, setup)
        return _splits(found, found.all_but_first)

    def value(
        self, problem: Problem, option: int, setup: Setup, results: Results
    ) -> tuple[float, int]:
        found = pieces(problem, option, setup)
        count = found.sentence_tokens - len(found.first_tokens)
        return log_likelihood(results, found.all_but_first), count

    def hand(self, h: Hand) -> tuple[float, float]:
        return h["all_but_first"], h["n"] - 1


class Full(Formula):
    """log p1 + log P(σ2…σn | σ1)."""

    text = "log p1 + log P(σ2…σn \\| σ1)"

    def needed(self, problem: Problem, option: int, setup: Setup) -> list[tuple[Request, Split]]:
        found = pieces(problem, option, setup)
        return _splits(found, _full_request(found))

    def value(
        self, problem: Problem, option: int, setup: Setup, results: Results
    ) -> tuple[float, int]:
        found = pieces(problem, option, setup)
        return _full(found, results), found.sentence_tokens

    def hand(self, h: Hand) -> tuple[float, float]:
        return h["full"], h["n"]


class FullNorm(Formula):
    """full − log P(answer alone)."""

    text = "full − log P(answer alone) (eq. 3.6–3.7)"

    def needed(self, problem: Problem, option: int, setup: Setup) -> list[tuple[Request, Split]]:
        found = pieces(problem, option, setup)
        answers = [request for request in found.answers if request is not None]
        return _splits(found, _full_request(found), *answers)

    def value(
        self, problem: Problem, option: int, setup: Setup, results: Results
    ) -> tuple[float, int]:
        found = pieces(problem, option, setup)
        value = _full(found, results) - _answer(found, results)
        return value, found.sentence_tokens - found.answer_tokens

    def hand(self, h: Hand) -> tuple[float, float]:
        return h["full"] - h["answer"], h["n"] - h["n_answer"]


PARTIAL = PartialFormula("partial")
FULL = Full("full")


class Smart(Formula):
    """partial, unless at most ``smart_limit`` tokens follow the blank, then full."""

    text = "partial, unless at most `smart_limit` (default 1) tokens follow the blank, then full"

    def needed(self, problem: Problem, option: int, setup: Setup) -> list[tuple[Request, Split]]:
        found = pieces(problem, option, setup)
        return _splits(found, found.partial, _full_request(found))

    def value(
        self, problem: Problem, option: int, setup: Setup, results: Results
    ) -> tuple[float, int]:
        short = pieces(problem, option, setup).partial_tokens <= setup.smart_limit
        return formula_value(FULL if short else PARTIAL, problem, option, setup, results)

    def hand(self, h: Hand) -> tuple[float, float]:
        return (FULL if h["n_after"] <= h["limit"] else PARTIAL).hand(h)


ALL_BUT_FIRST = AllButFirst("all_but_first")
FULL_NORM = FullNorm("full_norm")
SMART = Smart("smart")


def formula_value(
    formula: Formula, problem: Problem, option: int, setup: Setup, results: Results
) -> tuple[float, int]:
    """``formula.value`` of one option; once per problem where ``results`` keep what formulas
    computed (``Answered``): ``full`` and ``full_mean`` read one formula, ``smart`` reads
    full's or partial's."""
    if not isinstance(results, Answered):
        return formula.value(problem, option, setup, results)
    found = results.kept.get((formula, option))
    if found is None:
        found = results.kept[(formula, option)] = formula.value(problem, option, setup, results)
    return found


@dataclass(frozen=True)
class Causal(ScoringMethod):
    """A causal method: a ``formula``'s score of each option, summed or its ``mean`` over the
    tokens it predicts. ``runs_on``: where it runs unless ``metadata.scoring`` says
    (``methods.Scope``); a new method runs on the method-comparison tasks only unless it says
    ``"every_task"``."""

    formula: Formula = FULL
    mean: bool = False
    runs_on: Scope = "method_tasks"
    text: str = ""  # the docs' line, where not the formula's own (or its mean's)

    def requests(self, problem: Problem, setup: Setup) -> list[list[Request]]:
        return [
            [request for request, _ in self.formula.needed(problem, i, setup)]
            for i in range(len(problem.options))
        ]

    def intended(self, problem: Problem, setup: Setup) -> dict[Request, Split]:
        """Every request of the problem with the ids it must give the model."""
        found: dict[Request, Split] = {}
        for i in range(len(problem.options)):
            found.update(self.formula.needed(problem, i, setup))
        return found

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        scores = []
        for i in range(len(problem.options)):
            value, count = formula_value(self.formula, problem, i, setup, results)
            scores.append(value / max(count, 1) if self.mean else value)
        return scores

    def hand(self, h: Hand) -> float:
        """The option's score by hand (``Formula.hand``)."""
        value, count = self.formula.hand(h)
        return value / count if self.mean else value


@dataclass(frozen=True)
class Partial(Causal):
    """Partial scoring: the same requests as lm-eval's built-in ``winogrande`` and ``wsc273``,
    built without a tokenizer (the token-free method)."""

    name: str = "partial"
    needs_tokens: bool = False
    formula: Formula = PARTIAL
    runs_on: Scope = "every_task"

    def requests(self, problem: Problem, setup: Setup) -> list[list[Request]]:
        return [[partial_request(problem, i)] for i in range(len(problem.options))]

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        return [
            log_likelihood(results, partial_request(problem, i))
            for i in range(len(problem.options))
        ]


# every causal method by name, in the order runs report them: the thesis's here, others added by
# ``register`` from their own modules (``wsc_tasks.scoring.causal_methods``)
METHODS: dict[str, Causal] = {
    m.name: m
    for m in (
        Partial(),
        Causal("partial_mean", formula=PARTIAL, mean=True, runs_on="every_task"),
        Causal("full", formula=FULL, runs_on="every_task"),
        Causal("full_mean", formula=FULL, mean=True, runs_on="every_task"),
        Causal("all_but_first", formula=ALL_BUT_FIRST, runs_on="every_task"),
        Causal("full_norm", formula=FULL_NORM, runs_on="every_task"),
        Causal("full_norm_mean", formula=FULL_NORM, mean=True, runs_on="every_task"),
        Causal("smart", formula=SMART, runs_on="every_task"),
        Causal("smart_mean", formula=SMART, mean=True, runs_on="every_task"),
        Causal(
            "loss",
            formula=ALL_BUT_FIRST,
            mean=True,
            runs_on="every_task",
            text="mean all-but-first (eq. 3.8)",
        ),
    )
}


def register(*methods: Causal) -> None:
    """Make ``methods`` causal scoring methods (after those above, in the order given)."""
    for method in methods:
        if METHODS.get(method.name, method) is not method:
            raise TypeError(f"two causal scoring methods are named {method.name!r}")
        METHODS[method.name] = method


@dataclass(frozen=True)
class CausalContinuation(Continuation):
    """lm-eval ``loglikelihood(context, " " + text)``, counted as lm-eval splits it."""

    def request(self, context: str, text: str, tokens: TokenCounter | None) -> Request:
        return ("loglikelihood", (context, " " + text))

    def total(
        self, request: Request, result: Any, tokens: TokenCounter | None
    ) -> tuple[float, int]:
        return float(result[0]), self.count(request, tokens)

    def count(self, request: Request, tokens: TokenCounter | None) -> int:
        return tokens.n_continuation(*request[1]) if tokens is not None else 0
