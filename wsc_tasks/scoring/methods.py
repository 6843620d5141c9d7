"""Scoring methods: which model requests a problem needs, and how their results pick an option.

A method is independent of tasks: a task asks every active method for its requests, sends the
union once (a request two methods share is computed once) and hands each method the results it
asked for. Scores here are log-likelihoods (higher wins), the negatives of the thesis's scores v.

Causal LMs (thesis §3.1.1), every one from lm-eval ``loglikelihood`` requests:

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from wsc_tasks.data import sources
from wsc_tasks.data.problems import Problem
from wsc_tasks.scoring.tokens import RequestMismatch, TokenCounter, check_request

log = logging.getLogger(f"lm_eval.{__name__}")

# (lm-eval request type, arguments) — hashable, so shared requests are sent once.
Request = tuple[str, tuple[Any, ...]]
Results = Mapping[Request, object]

FREQUENCIES = "maler/token_frequencies/frequencies_with_eos.txt"


class ScoringError(ValueError):
    """A method cannot score a problem (or a model family cannot serve the method)."""


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


@dataclass(frozen=True)
class Setup:
    """What methods need beyond the problem: the model's tokens and how to score a first token."""

    tokens: TokenCounter | None = None
    prior: str = "bos"
    smart_limit: int = 1

    def need_tokens(self, method: str) -> TokenCounter:
        if self.tokens is None:
            raise ScoringError(
                f"scoring method {method!r} counts tokens and needs the model's tokenizer: run "
                "through lm_eval's CLI (it passes --model_args to tasks) or pass "
                '--metadata \'{"tokenizer": "<name or path>"}\''
            )
        return self.tokens


Split = tuple[tuple[int, ...], tuple[int, ...]]  # (context ids, continuation ids) lm-eval feeds


@dataclass(frozen=True)
class Pieces:
    """The requests and token counts of one filled sentence, shared by all causal methods."""

    partial: Request
    partial_tokens: int
    all_but_first: Request | None = None
    sentence_tokens: int = 0
    # σ1…σk: the tokens all-but-first conditions on (k = 1 unless the tokenizer has no
    # reproducible boundary after σ1, see ``token_split``); the WebText prior scores them
    first_tokens: tuple[int, ...] = ()
    bos_full: Request | None = None
    # per filler: the rest of it given its first tokens, or all of it (None: nothing to ask)
    answers: tuple[Request | None, ...] = ()
    answer_first_tokens: tuple[tuple[int, ...], ...] = ()
    answer_tokens: int = 0  # over all fillers
    # every request with the ids it must give the model (``tokens.check_request``)
    intended: tuple[tuple[Request, Split], ...] = ()
    shifted: int = 0  # splits moved past the first token because no request could express it


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
    offsets = tokens.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)[
        "offset_mapping"
    ]
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


def _partial_request(problem: Problem, option: int) -> Request:
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
def _pieces(problem: Problem, option: int, setup: Setup) -> Pieces:
    tokens = setup.need_tokens("full")
    where = problem.source or problem.uid
    partial = _partial_request(problem, option)
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
    pieces: dict[str, Any] = {
        "partial": partial,
        "partial_tokens": tokens.n_continuation(*partial[1]),
        "all_but_first": all_but_first,
        "sentence_tokens": len(sentence_ids),
        "first_tokens": tuple(sentence_ids[:k]),
        "shifted": int(k > 1),
    }
    if setup.prior == "bos":
        request, split = _bos_request(tokens, sentence)
        pieces["bos_full"] = request
        intended.append((request, split))
    answers, firsts, n_answer = [], [], 0
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
        request, k, split = token_split(tokens, answer)
        answers.append(request)
        firsts.append(tuple(answer_ids[:k]))
        pieces["shifted"] += int(k > 1)
        if request is not None and split is not None:
            intended.append((request, split))
    pieces.update(
        answers=tuple(answers),
        answer_first_tokens=tuple(firsts),
        answer_tokens=n_answer,
        intended=tuple(intended),
    )
    for request, split in intended:  # cheap: every encoding is in the counter's cache by now
        try:
            check_request(tokens, request, split)
        except RequestMismatch as error:
            raise ScoringError(
                f"{where}: {error}; this tokenizer cannot express the request, run with "
                'scoring methods that avoid it (e.g. --metadata \'{"scoring": ["full"]}\')'
            ) from error
    if pieces["shifted"]:
        log.info(
            f"wsc_tasks: {where}: {pieces['shifted']} all-but-first split(s) of {sentence!r} "
            "or its answer sit after the first few tokens, not the first (a lone-space or "
            "lone-'▁' token)"
        )
    return Pieces(**pieces)


def n_shifted_splits(items: Sequence[int]) -> int:
    """Aggregation: all-but-first splits moved past the first token (``token_split``)."""
    return int(sum(items))


def intended_requests(problem: Problem, setup: Setup) -> dict[Request, Split]:
    """Every causal request of a problem with the token ids it must give the model."""
    out: dict[Request, Split] = {}
    for option in range(len(problem.options)):
        out.update(_pieces(problem, option, setup).intended)
    return out


def shifted_splits(problem: Problem, setup: Setup) -> int:
    """How many of the problem's all-but-first splits sit after more than the first token."""
    return sum(_pieces(problem, i, setup).shifted for i in range(len(problem.options)))


def _ll(results: Results, request: Request) -> float:
    return float(results[request][0])  # type: ignore[index]


@dataclass(frozen=True)
class ScoringMethod:
    """Base class: a way to score the options of a problem; higher score wins."""

    name: str
    needs_tokens: bool = True

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
class Partial(ScoringMethod):
    """Partial scoring: the same requests as lm-eval's built-in ``winogrande`` and ``wsc273``."""

    name: str = "partial"
    needs_tokens: bool = False

    def requests(self, problem: Problem, setup: Setup) -> list[list[Request]]:
        return [[_partial_request(problem, i)] for i in range(len(problem.options))]

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        return [_ll(results, _partial_request(problem, i)) for i in range(len(problem.options))]


@dataclass(frozen=True)
class Causal(ScoringMethod):
    """Every token-counting causal method, by ``kind`` and ``mean``; see the module docstring."""

    kind: str = "full"  # full, all_but_first, partial, full_norm, smart
    mean: bool = False

    def _needed(self, pieces: Pieces) -> list[Request]:
        needed = []
        if self.kind in ("partial", "smart"):
            needed.append(pieces.partial)
        if self.kind == "all_but_first":
            needed.append(pieces.all_but_first)
        if self.kind in ("full", "full_norm", "smart"):
            # p1 · P(σ2… | σ1): the model's own after BOS, or WebText's p1 with all-but-first
            needed.append(pieces.bos_full or pieces.all_but_first)
        if self.kind == "full_norm":
            needed.extend(request for request in pieces.answers if request is not None)
        return needed

    def requests(self, problem: Problem, setup: Setup) -> list[list[Request]]:
        return [self._needed(_pieces(problem, i, setup)) for i in range(len(problem.options))]

    def _full(self, pieces: Pieces, results: Results) -> float:
        if pieces.bos_full is not None:
            return _ll(results, pieces.bos_full)
        prior = sum(webtext_log_prob(t) for t in pieces.first_tokens)
        return prior + _ll(results, pieces.all_but_first)

    def score(self, pieces: Pieces, results: Results, setup: Setup) -> float:
        kind = self.kind
        if kind == "smart":
            kind = "full" if pieces.partial_tokens <= setup.smart_limit else "partial"
        if kind == "partial":
            value, count = _ll(results, pieces.partial), pieces.partial_tokens
        elif kind == "all_but_first":
            value = _ll(results, pieces.all_but_first)
            count = pieces.sentence_tokens - len(pieces.first_tokens)
        elif kind == "full":
            value, count = self._full(pieces, results), pieces.sentence_tokens
        else:  # full_norm
            answer = 0.0
            for first, request in zip(pieces.answer_first_tokens, pieces.answers, strict=True):
                if pieces.bos_full is None:
                    answer += sum(webtext_log_prob(t) for t in first)
                if request is not None:
                    answer += _ll(results, request)
            value = self._full(pieces, results) - answer
            count = pieces.sentence_tokens - pieces.answer_tokens
        return value / max(count, 1) if self.mean else value

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        return [
            self.score(_pieces(problem, i, setup), results, setup)
            for i in range(len(problem.options))
        ]


def _causal_methods() -> list[ScoringMethod]:
    methods: list[ScoringMethod] = [Partial()]
    methods.append(Causal(name="partial_mean", kind="partial", mean=True))
    for kind in ("full", "all_but_first", "full_norm", "smart"):
        methods.append(Causal(name=kind, kind=kind))
        if kind != "all_but_first":
            methods.append(Causal(name=f"{kind}_mean", kind=kind, mean=True))
    methods.append(Causal(name="loss", kind="all_but_first", mean=True))
    return methods


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


def _t5_target_ids(
    tokens: TokenCounter, fillers: Sequence[str], eos: str | None
) -> tuple[int, ...]:
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
_T5_TARGET_FORMS = ("{s} {f} ", "{s} {f}", "{s}{f}")


@lru_cache(maxsize=65536)
def t5_target(fillers: tuple[str, ...], eos: str | None, tokens: TokenCounter | None) -> str:
    """Sentinels around the fillers (thesis §3.1.3), in the first spelling whose tokens are
    exactly the formula's (the first spelling when tokens are not counted)."""
    for form in _T5_TARGET_FORMS:
        target = "".join(form.format(s=sentinel(k), f=f) for k, f in enumerate(fillers))
        target += sentinel(len(fillers)) + (eos or "")
        if tokens is None or tuple(tokens.encode(target, False)) == _t5_target_ids(
            tokens, fillers, eos
        ):
            return target
    raise ScoringError(
        f"no spelling of the target {target!r} encodes to its sentinels and filler tokens alone "
        "with this tokenizer"
    )


def seq2seq_intended(
    tokens: TokenCounter, problem: Problem, option: int, prefix: bool, eos: str | None
) -> tuple[Request, Split]:
    """A T5 request with the ids it means: the input with one sentinel per blank (lm-eval
    encodes it on its own, with the EOS the tokenizer appends) and the target's ids."""
    request = _t5_strings(problem, option, prefix, eos, tokens)
    target = _t5_target_ids(tokens, tuple(problem.options[option]), eos)
    return request, (tuple(tokens.encode(request[1][0])), target)


def _t5_strings(
    problem: Problem, option: int, prefix: bool, eos: str | None, tokens: TokenCounter | None = None
) -> Request:
    """Input with one sentinel per blank; target = sentinels around the fillers."""
    text = problem.segments[0]
    for k, segment in enumerate(problem.segments[1:]):
        text += sentinel(k) + segment
    target = t5_target(tuple(problem.options[option]), eos, tokens)
    return ("loglikelihood", ((T5_PREFIX if prefix else "") + text, target))


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
            [_t5_strings(problem, i, self.prefix, eos, setup.tokens)]
            for i in range(len(problem.options))
        ]

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        eos, scores = self._eos(setup), []
        for i in range(len(problem.options)):
            request = _t5_strings(problem, i, self.prefix, eos, setup.tokens)
            value = _ll(results, request)
            if self.mean:
                value /= max(len(setup.need_tokens(self.name).encode(request[1][1], False)), 1)
            scores.append(value)
        return scores


def _t5_methods() -> list[ScoringMethod]:
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


def answer_spans(problem: Problem, option: int) -> tuple[tuple[int, int], ...]:
    """Character spans of the fillers in the filled sentence."""
    spans, position = [], len(problem.segments[0])
    for filler, segment in zip(problem.options[option], problem.segments[1:], strict=True):
        spans.append((position, position + len(filler)))
        position += len(filler) + len(segment)
    return tuple(spans)


@dataclass(frozen=True)
class Masked(ScoringMethod):
    """Masked-LM scores (thesis §3.1.2), served by ``--model hf-mlm``: ``multi_mask`` (eq. 3.20),
    ``statement`` (pseudo-log-likelihood, eq. 3.22) and ``answer`` (eq. 3.24), and their means
    (eq. 3.19, 3.23, 3.25). Statement and answer scores come from the same masked copies."""

    needs_tokens: bool = False
    kind: str = "statement"  # multi_mask, statement, answer
    mean: bool = False

    def _request(self, problem: Problem, option: int) -> Request:
        mode = "multimask" if self.kind == "multi_mask" else "statement"
        return ("mlm_score", (problem.fill(option), answer_spans(problem, option), mode))

    def requests(self, problem: Problem, setup: Setup) -> list[list[Request]]:
        return [[self._request(problem, i)] for i in range(len(problem.options))]

    def option_scores(self, problem: Problem, results: Results, setup: Setup) -> list[float]:
        scores = []
        for i in range(len(problem.options)):
            result = results[self._request(problem, i)]
            if self.kind == "answer":
                value, count = result.answer_total, result.answer_n  # type: ignore[attr-defined]
            else:
                value, count = result.total, result.n  # type: ignore[attr-defined]
            scores.append(value / max(count, 1) if self.mean else value)
        return scores


def _masked_methods() -> list[ScoringMethod]:
    methods: list[ScoringMethod] = []
    for kind in ("multi_mask", "statement", "answer"):
        methods.append(Masked(name=kind, kind=kind))
        methods.append(Masked(name=f"{kind}_mean", kind=kind, mean=True))
    return methods


# Each family's methods by name (names are per family: a causal and a T5 method may share one,
# e.g. ``loss``); which family uses which, with its headline, is ``wsc_tasks.scoring.families``.
CAUSAL_METHODS: dict[str, ScoringMethod] = {m.name: m for m in _causal_methods()}
SEQ2SEQ_METHODS: dict[str, ScoringMethod] = {m.name: m for m in _t5_methods()}
MASKED_METHODS: dict[str, ScoringMethod] = {m.name: m for m in _masked_methods()}
METHODS = CAUSAL_METHODS


@dataclass(frozen=True)
class Continuation:
    """How a family scores a free text after a context (WinoWhy's reasons): the request, and
    the log-likelihood and the number of tokens the model predicted (0: not counted) of its
    result. Causal: lm-eval ``loglikelihood(context, " " + text)``, counted as lm-eval splits
    it; the other families below."""

    def request(self, context: str, text: str, tokens: TokenCounter | None) -> Request:
        return ("loglikelihood", (context, " " + text))

    def validate(self, tokens: TokenCounter | None) -> None:
        """Raise ``ScoringError`` before any model work if the tokenizer cannot serve it."""

    def total(
        self, request: Request, result: Any, tokens: TokenCounter | None
    ) -> tuple[float, int]:
        return float(result[0]), tokens.n_continuation(*request[1]) if tokens is not None else 0


@dataclass(frozen=True)
class T5Continuation(Continuation):
    """The text as the span of a sentinel: ``context <extra_id_0>`` →
    ``<extra_id_0> text <extra_id_1>`` (thesis §3.1.3); counted: the target's tokens."""

    def request(self, context: str, text: str, tokens: TokenCounter | None) -> Request:
        return ("loglikelihood", (f"{context} {sentinel(0)}", t5_target((text,), None, tokens)))

    def validate(self, tokens: TokenCounter | None) -> None:
        if tokens is not None:
            sentinel_ids(tokens, 2)

    def total(
        self, request: Request, result: Any, tokens: TokenCounter | None
    ) -> tuple[float, int]:
        n = len(tokens.encode(request[1][1], False)) if tokens is not None else 0
        return float(result[0]), n


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
