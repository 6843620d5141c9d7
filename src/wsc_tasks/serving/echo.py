"""The comparison of a served model's echoed prompt log-probabilities with its generation path's
(pure: no server, no lm-eval), for ``served.check``.

Entry *i* of an echo must be log p(token *i* | the tokens before it); the generation path's top
log-probabilities after each prefix of the probe are by definition that distribution. ``compare``
says whether the two agree to within quantisation and batching noise and, where they do not, what
the echo is instead: the next token's, missing, all equal, not normalised, cut at other tokens than
lm-eval counts. ``served`` asks the server and turns a verdict into the run's error or record.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

PROBE = "The trophy would not fit in the brown suitcase because it was too big."
TOP_N = 5  # log-probabilities asked of the generation path (OpenAI's API allows at most 5)
# How far an echoed value may be from the generation path's: llama.cpp's Q4_1 SmolLM2 on CPU gives
# values up to 0.20 nats apart for the same position computed in the whole prompt and in a prefix
# (other batch shapes, other kernels), the order GPU servers in bf16 show too; twice that, plus a
# share of the value for unlikely tokens. A value of the wrong position is off by nats.
ABS_TOLERANCE = 0.4
REL_TOLERANCE = 0.02
MIN_COMPARED = 4  # probe positions the generation path must answer for a verdict
SKIP_KEY = "logprob_check"  # --model_args / --metadata: false skips the check
SKIP_ADVICE = f"if you know this server is right, add {SKIP_KEY}=false to --model_args"
FIX_SERVER = (
    "serve the model where the echo is right (vLLM's server; README, Served models), or, "
    + SKIP_ADVICE
)

Key = str | int  # a token as the server names it: its text (OpenAI protocol) or its id (SGLang)
Top = Mapping[Key, float]


class ServedModelError(ValueError):
    """The server's prompt log-probabilities are not what lm-eval reads them as."""


# -- the comparison (pure) -----------------------------------------------------------------------
@dataclass(frozen=True)
class Echo:
    """What the server echoed for the probe, position by position (the prompt, then any generated
    token): the token, its log-probability and the top log-probabilities at that position."""

    tokens: tuple[Key, ...]
    logprobs: tuple[float | None, ...]
    tops: tuple[Top | None, ...]


@dataclass(frozen=True)
class Verdict:
    """``finding`` is None when the echo is right; ``largest`` is the largest difference between
    an echoed value and the generation path's over the ``compared`` positions."""

    finding: str | None
    advice: str = FIX_SERVER
    compared: int = 0
    largest: float = 0.0


def tolerance(value: float) -> float:
    return ABS_TOLERANCE + REL_TOLERANCE * abs(value)


def distance(token: Key, logprob: float, top: Top | None, dist: Top) -> tuple[float, float]:
    """(excess over the tolerance, largest raw difference) between one echoed position and
    ``dist``, the generation path's top log-probabilities after the same prefix.

    An echoed value of a token that ``dist`` lists must equal its value there; a token it does not
    list must be no likelier than the least likely one it does; the best echoed candidate must be
    as likely as the generation path's best. Values are compared, not ranks, so that two near-tied
    candidates swapped by noise still agree."""
    floor, best = min(dist.values()), max(dist.values())
    excess = largest = 0.0
    for key, value in [(token, logprob), *((top or {}).items())]:
        if key in dist:
            gap = abs(value - dist[key])
            largest = max(largest, gap)
            excess = max(excess, gap - tolerance(dist[key]))
        else:
            excess = max(excess, value - floor - tolerance(floor))
    if top:
        gap = abs(max(top.values()) - best)
        largest = max(largest, gap)
        excess = max(excess, gap - tolerance(best))
    return max(excess, 0.0), largest


def _unnormalised(values: Sequence[float], tops: Sequence[Top]) -> str | None:
    """Why these cannot be log-probabilities, if they cannot: a value above 0, or candidates
    whose probabilities add up to more than 1."""
    if values and max(values) > 1e-3:
        return f"a value of {max(values):.3g}, above 0"
    for top in tops:
        total = sum(math.exp(v) for v in top.values())
        if total > 1.01:
            return f"top candidates whose probabilities add up to {total:.3g}"
    return None


NO_GENERATED = (
    "the echo has no entry for the generated token, and lm-eval drops the echo's last entry as "
    "that token, so each request's last token would go unscored"
)


def layout(echo: Echo, prompt: int, generated: int) -> Verdict | None:
    """What is wrong with the echo before any value is compared, if anything (an echo without
    its generated token is compared, and ``compare`` says so besides)."""
    positions = range(1, min(prompt, len(echo.logprobs)))
    missing = sum(not isinstance(echo.logprobs[i], int | float) for i in positions)
    if missing or len(echo.logprobs) < 2:
        return Verdict(
            f"echoed log-probabilities are missing ({missing or prompt - 1} of the {prompt - 1} "
            "prompt tokens after the first have none)"
        )
    if len(echo.tops) != len(echo.logprobs) or any(echo.tops[i] is None for i in positions):
        return Verdict("echoed top_logprobs are missing (lm-eval reads them for is_greedy)")
    entries = len(echo.logprobs)
    if entries == prompt + generated or (generated and entries == prompt):  # see NO_GENERATED
        return None
    return Verdict(
        f"the server echoed {entries - generated} prompt tokens where the tokenizer lm-eval "
        f"counts with gives {prompt} (a BOS token added?), so lm-eval would cut every request "
        "at the wrong token",
        "give lm-eval the server's own tokenizer (tokenizer=…), or send token ids "
        "(tokenized_requests=True) where the server takes them",
    )


def _logprob(echo: Echo, i: int) -> float:
    """The log-probability echoed at position ``i``, one ``layout`` found to be a number."""
    return float(cast(float, echo.logprobs[i]))


def same_in_a_batch(echo: Echo, short: Echo, prompt: int, generated: int = 1) -> Verdict | None:
    """Whether ``short``, the echo of the probe's first ``prompt`` tokens sent in the same batch
    as the whole probe (``echo``), says what ``echo`` says for them; None if so."""
    wrong = layout(short, prompt, generated)
    if wrong is None:
        gaps = [
            abs(_logprob(short, i) - _logprob(echo, i)) - tolerance(_logprob(echo, i))
            for i in range(1, prompt)
        ]
        if max(gaps) <= 0:
            return None
    return Verdict(
        "the echo of a prompt depends on the other prompts of its batch (the probe's first "
        f"{prompt} tokens, sent beside the whole probe, came back "
        + (f"wrong: {wrong.finding}" if wrong else "with other log-probabilities")
        + ")",
        "run with --batch_size 1",
    )


def compare(echo: Echo, nexts: Mapping[int, Top], prompt: int, generated: int = 1) -> Verdict:
    """Whether the echo of a ``prompt``-token probe (followed by ``generated`` tokens) says what
    the generation path says: ``nexts[k]`` is its top log-probabilities after the first ``k``
    tokens (a prefix it gave none for is absent). Position 0 has no context and is skipped."""
    verdict = _compare_values(echo, nexts, prompt, generated)
    if generated and len(echo.logprobs) == prompt and not verdict.finding:
        return Verdict(NO_GENERATED)
    if generated and len(echo.logprobs) == prompt:
        return Verdict(
            f"{verdict.finding}; also, {NO_GENERATED}",
            verdict.advice,
            verdict.compared,
            verdict.largest,
        )
    return verdict


def _compare_values(echo: Echo, nexts: Mapping[int, Top], prompt: int, generated: int) -> Verdict:
    wrong_layout = layout(echo, prompt, generated)
    if wrong_layout:
        return wrong_layout
    positions = range(1, prompt)
    value = {i: _logprob(echo, i) for i in positions}
    tops = {i: echo.tops[i] or {} for i in positions}
    if len(value) > 1 and max(value.values()) - min(value.values()) < 1e-6:
        return Verdict(f"echoed log-probabilities are all equal ({value[1]:g})")
    unnormalised = _unnormalised(
        [*value.values(), *(v for top in tops.values() for v in top.values())],
        list(tops.values()),
    ) or _unnormalised([v for d in nexts.values() for v in d.values()], list(nexts.values()))
    if unnormalised:
        return Verdict(f"the server's log-probabilities are not normalised ({unnormalised})")
    here = {
        i: distance(echo.tokens[i], value[i], tops[i], nexts[i]) for i in positions if nexts.get(i)
    }
    if len(here) < min(MIN_COMPARED, prompt - 1):
        return Verdict(
            f"the generation path gave top log-probabilities after {len(here)} of the "
            f"{prompt - 1} prefixes of the probe, too few to check the echo against",
            f"make the server return logprobs with its completions, or, {SKIP_ADVICE}",
        )
    largest = max(raw for _, raw in here.values())
    wrong = [i for i, (excess, _) in here.items() if excess > 0]
    if not wrong:
        return Verdict(None, compared=len(here), largest=largest)
    later = [
        distance(echo.tokens[i], value[i], tops[i], nexts[i + 1])[0] == 0
        for i in here
        if nexts.get(i + 1)
    ]
    worst = max(wrong, key=lambda i: here[i][1])
    dist, token = nexts[worst], echo.tokens[worst]
    told = f"{dist[token]:.2f}" if token in dist else f"below {min(dist.values()):.2f}"
    example = (
        f"the echo gives {token!r} {value[worst]:.2f} after {worst} probe tokens, the server's "
        f"generation path {told}"
    )
    if len(later) >= 2 and sum(later) >= 2 * len(later) / 3:
        finding = (
            "echoed log-probabilities are the next token's: at "
            f"{sum(later)} of {len(later)} probe positions the echo matches the distribution one "
            f"token later ({example})"
        )
    else:
        finding = (
            f"echoed log-probabilities disagree with the server's generation path at "
            f"{len(wrong)} of {len(here)} probe positions ({example})"
        )
    return Verdict(finding, compared=len(here), largest=largest)
