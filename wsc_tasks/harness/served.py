"""Served models: a server's echoed prompt log-probabilities, checked before a run relies on them.

lm-eval's API models score a log-likelihood request by sending context and continuation as one
prompt with ``echo`` and ``logprobs`` and summing what the server reports for the continuation's
tokens: entry *i* of the echo must be log p(token *i* | the tokens before it). A server can report
something else and still answer 200: llama-cpp-python 0.3.36 reports each prompt token's
log-probability under the distribution that predicts the *next* token, and the run then ends with
metrics built from numbers that mean nothing.

``check`` asks the server about a short probe sentence in two ways: as lm-eval asks (the echo, the
model's own request), and through the server's generation path, ``max_tokens`` 1 and ``logprobs``
5 after each prefix of the probe, whose answer is by definition the distribution of the token that
follows the prefix. ``compare`` (pure) says whether the two agree to within quantisation and
batching noise and, where they do not, what the echo is instead: the next token's, missing, all
equal, not normalised, cut at other tokens than lm-eval counts. The run then stops with one line
naming the server, the finding and what to do. ``logprob_check=false`` in ``--model_args`` (or
``--metadata``) skips the check for a server known to be right. ``harness.patches`` (section 12)
runs it once per model, before any task's requests, and records the outcome in lm-eval's results.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

log = logging.getLogger(f"lm_eval.{__name__}")

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
# lm-eval's names of the served models whose log-probabilities are checked (what --model says)
CHECKED_MODELS = ("local-completions", "openai-completions", "sglang-generate", "gguf")
# lm-eval's other log-likelihood API models: TextSynth's server scores (context, continuation)
# itself, watsonx goes through IBM's SDK; neither is checked, and a run says so
UNCHECKED = ("lm_eval.models.textsynth", "lm_eval.models.ibm_watsonx_ai")
RESULTS_KEY = "logprob_check"  # the outcome, a top-level entry of lm-eval's results
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


def _layout(echo: Echo, prompt: int, generated: int) -> Verdict | None:
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
    """The log-probability echoed at position ``i``, one ``_layout`` found to be a number."""
    return float(cast(float, echo.logprobs[i]))


def same_in_a_batch(echo: Echo, short: Echo, prompt: int, generated: int = 1) -> Verdict | None:
    """Whether ``short``, the echo of the probe's first ``prompt`` tokens sent in the same batch
    as the whole probe (``echo``), says what ``echo`` says for them; None if so."""
    wrong = _layout(short, prompt, generated)
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
    wrong_layout = _layout(echo, prompt, generated)
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


# -- asking the server ---------------------------------------------------------------------------
def model_type(lm: Any) -> str:
    """The name(s) lm-eval registered the model's class under (``local-completions``,
    ``ggml/gguf``, …), read without importing any other model."""
    from lm_eval.api.registry import model_registry

    cls = type(lm)
    spelled = f"{cls.__module__}:{cls.__name__}"
    names = [name for name, target in model_registry.items() if target in (cls, spelled)]
    return "/".join(names) or cls.__name__


@dataclass
class Server:
    """One lm-eval API model's server, asked in the model's own protocol: ``completions``
    (OpenAI's ``/v1/completions``: local-completions, openai-completions, gguf) or ``sglang``
    (SGLang's native ``/generate``: sglang-generate)."""

    lm: Any
    url: str
    protocol: str
    text: bool  # prompts sent as text (lm-eval's tokenized_requests=False; gguf always)
    ids: list[int] | None  # the probe as lm-eval tokenizes it (None: the model has no tokenizer)

    @property
    def where(self) -> str:
        return f"served model {model_type(self.lm)} at {self.url}"

    def post(self, payload: dict[str, Any], question: str) -> Any:
        import requests

        headers = getattr(self.lm, "header", None)
        timeout = getattr(self.lm, "timeout", 300)
        try:
            response = requests.post(self.url, json=payload, headers=headers, timeout=timeout)
        except requests.RequestException as error:
            raise ServedModelError(
                f"{self.where}: cannot reach the server ({error}); start it, or correct base_url"
            ) from error
        if not response.ok:
            said = " ".join(response.text.split())[:200]
            raise ServedModelError(
                f"{self.where}: {question} failed: HTTP {response.status_code} {said}; "
                + self.advice(question)
            )
        return response.json()

    def advice(self, question: str) -> str:
        """What to try when the server refused a request."""
        options = []
        if question.startswith("lm-eval's") and not self.text:
            options.append(
                "if the server takes text prompts only (llama-cpp-python's does), add "
                "tokenized_requests=False to --model_args"
            )
        if question.startswith("lm-eval's") and getattr(self.lm, "_batch_size", 1) > 1:
            options.append("if it takes one prompt per request, run with --batch_size 1")
        return "; ".join(options) or f"check the server's log, or, {SKIP_ADVICE}"

    # the echo, as lm-eval asks for it
    def echo(self) -> list[tuple[Echo, str | None, list[int] | None]]:
        """The server's echo of the probe, with the text sent (text prompts) and the offsets it
        gave. A model that batches (``batch_size`` > 1) sends a batch, as lm-eval does: the probe
        and its first half, whose echo comes second."""
        lm = self.lm
        question = "lm-eval's log-likelihood request (echo with logprobs)"
        if self.ids is None:  # gguf: one text, its own request
            payload = {"prompt": PROBE, "logprobs": lm.logprobs, "temperature": lm.temperature,
                       "max_tokens": 1, "echo": True}  # fmt: skip
            sent: list[str | None] = [PROBE]
        else:
            batch = [self.ids]
            if getattr(lm, "_batch_size", 1) > 1:
                batch.append(self.ids[: max(2, len(self.ids) // 2)])
            message = lm.create_message(batch)
            payload = lm._create_payload(message, generate=False, seed=lm._seed)
            texts = [message] if isinstance(message, str) else list(message)
            sent = [str(t) for t in texts] if self.text else [None] * len(batch)
        answer = self.post(payload, question)
        if self.protocol == "sglang":
            metas = [
                out.get("meta_info", {})
                for out in (answer if isinstance(answer, list) else [answer])
            ]
            echoes: list[tuple[Echo, str | None, list[int] | None]] = []
            for meta, text in zip(metas, sent, strict=False):
                tokens = meta.get("input_token_logprobs") or []
                tops = meta.get("input_top_logprobs") or [None] * len(tokens)
                echo = Echo(
                    tuple(entry[1] for entry in tokens),
                    tuple(entry[0] for entry in tokens),
                    tuple({e[1]: e[0] for e in top} if top else None for top in tops),
                )
                echoes.append((echo, text, None))
            return echoes
        choices = sorted(answer.get("choices") or [{}], key=lambda c: c.get("index", 0))
        echoes = []
        for choice, text in zip(choices, sent, strict=False):
            found = choice.get("logprobs") or {}
            logprobs = found.get("token_logprobs") or []
            echo = Echo(
                tuple(found.get("tokens") or [""] * len(logprobs)),
                tuple(logprobs),
                tuple(found.get("top_logprobs") or [None] * len(logprobs)),
            )
            echoes.append((echo, text, found.get("text_offset")))
        return echoes

    # the generation path
    def next_top(self, prefix: str | list[int]) -> Top | None:
        """The top log-probabilities of the token the server would generate after ``prefix``."""
        question = f"the server's generation path (max_tokens 1, logprobs {TOP_N})"
        if self.protocol == "sglang":
            payload: dict[str, Any] = {
                "input_ids": prefix,
                "return_logprob": True,
                "top_logprobs_num": TOP_N,
                "sampling_params": {"max_new_tokens": 1, "temperature": 0},
            }
            answer = self.post(payload, question)
            meta = (answer[0] if isinstance(answer, list) else answer).get("meta_info", {})
            tops = meta.get("output_top_logprobs") or [None]
            return {entry[1]: entry[0] for entry in tops[0]} if tops[0] else None
        payload = {"prompt": prefix, "max_tokens": 1, "temperature": 0, "logprobs": TOP_N}
        if self.ids is not None:
            payload |= {"model": self.lm.model, "seed": self.lm._seed}
        answer = self.post(payload, question)
        choice = min(answer.get("choices") or [{}], key=lambda c: c.get("index", 0))
        tops = (choice.get("logprobs") or {}).get("top_logprobs") or [None]
        return dict(tops[0]) if tops[0] else None


def server_of(lm: Any) -> Server | None:
    """The server behind an lm-eval model that scores log-likelihoods from a served model's echo;
    None for any other model (a local one, a chat API that cannot score log-likelihoods)."""
    lm = getattr(lm, "lm", lm)  # lm-eval's CachingLM (--use_cache) wraps the model
    try:
        from lm_eval.models.api_models import TemplateAPI
        from lm_eval.models.gguf import GGUFLM
        from lm_eval.models.openai_completions import LocalChatCompletion
        from lm_eval.models.sglang_generate_API import SGLANGGENERATEAPI
    except ImportError:  # lm-eval without its API models' dependencies: nothing is served
        return None
    if isinstance(lm, GGUFLM):
        return Server(lm, f"{lm.base_url}/v1/completions", "completions", True, None)
    if not isinstance(lm, TemplateAPI) or isinstance(lm, LocalChatCompletion):
        return None
    if lm.tokenizer is None:
        return None  # lm-eval refuses log-likelihood requests without a tokenizer itself
    protocol = "sglang" if isinstance(lm, SGLANGGENERATEAPI) else "completions"
    ids = list(lm.tok_encode(PROBE))
    return Server(lm, str(lm.base_url), protocol, not lm.tokenized_requests, ids)


def prefixes(
    server: Server, echo: Echo, sent: str | None, offsets: Sequence[int] | None, prompt: int
) -> dict[int, str | list[int]]:
    """The probe's first ``k`` tokens, as the server is sent them, for k = 1 … ``prompt``."""
    if not server.text:
        assert server.ids is not None
        return {k: server.ids[:k] for k in range(1, prompt + 1)}
    assert sent is not None
    if offsets and len(offsets) >= prompt:
        cuts = [*offsets[1:prompt], len(sent)]
        return {k: sent[: cuts[k - 1]] for k in range(1, prompt + 1)}
    texts = [str(t) for t in echo.tokens]
    return {k: "".join(texts[:k]) for k in range(1, prompt + 1)}


def check(lm: Any) -> dict[str, Any] | None:
    """Compare the server's echo with its generation path (module docstring); the outcome to
    record, None when the model is not served. Raises ``ServedModelError`` with the finding."""
    server = server_of(lm)
    if server is None:
        model = getattr(lm, "lm", lm)
        if type(model).__module__ in UNCHECKED:
            log.warning(
                f"wsc_tasks: {model_type(model)}: its log-probabilities are not checked before "
                "the run (the check speaks OpenAI's /v1/completions and SGLang's /generate)"
            )
        return None
    (echo, sent, offsets), *batched = server.echo()
    generated = 0 if server.protocol == "sglang" else 1
    if server.ids is not None:
        prompt = len(server.ids)
    elif offsets:  # gguf: lm-eval finds the continuation by text offset; so does this check
        prompt = sum(1 for offset in offsets if offset < len(PROBE))
    else:
        raise ServedModelError(
            f"{server.where}: the echo has no text_offset, which lm-eval's gguf model finds the "
            f"continuation by; {FIX_SERVER}"
        )
    verdict = _layout(echo, prompt, generated)
    if verdict is None and batched and server.ids is not None:
        verdict = same_in_a_batch(echo, batched[0][0], max(2, len(server.ids) // 2), generated)
    if verdict is None:
        nexts: dict[int, Top] = {}
        for k, prefix in prefixes(server, echo, sent, offsets, prompt).items():
            top = server.next_top(prefix)
            if top:
                nexts[k] = top
        verdict = compare(echo, nexts, prompt, generated)
    if verdict.finding:
        raise ServedModelError(f"{server.where}: {verdict.finding}; {verdict.advice}")
    outcome = {
        "model": model_type(server.lm),
        "base_url": server.url,
        "outcome": "passed",
        "probe_tokens": prompt,
        "positions_compared": verdict.compared,
        "largest_difference": round(verdict.largest, 4),
        "tolerance": f"{ABS_TOLERANCE} nats + {REL_TOLERANCE:.0%}",
    }
    log.info(
        f"wsc_tasks: {server.where}: echoed prompt log-probabilities agree with the server's "
        f"generation path at {verdict.compared} probe positions (largest difference "
        f"{verdict.largest:.4f})"
    )
    return outcome


def skip_requested(metadata: Sequence[tuple[str, Mapping[str, Any]]]) -> bool:
    """Whether the tasks' metadata (``--metadata``, and ``--model_args`` merged in by lm-eval's
    CLI) say ``logprob_check=false``; any other value than true/false is an error."""
    values = set()
    for task, meta in metadata:
        value = meta.get(SKIP_KEY, True)
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            value = value.strip().lower() == "true"
        if not isinstance(value, bool):
            raise ServedModelError(
                f"task {task}: metadata {SKIP_KEY}={value!r} is invalid; allowed: true (the "
                "default: check a served model's log-probabilities before the run) or false"
            )
        values.add(value)
    return values == {False}


def preflight(lm: Any, metadata: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any] | None:
    """``check`` once per model object (the outcome is kept on it), or the record of its skip."""
    model = getattr(lm, "lm", lm)
    if "_wsc_tasks_logprob_check" in vars(model):
        return model._wsc_tasks_logprob_check
    skip = skip_requested(metadata)
    server = server_of(model) if skip else None
    if server is not None:
        log.warning(f"wsc_tasks: {server.where}: log-probability check skipped ({SKIP_KEY}=false)")
        outcome: dict[str, Any] | None = {
            "model": model_type(server.lm),
            "base_url": server.url,
            "outcome": f"skipped ({SKIP_KEY}=false)",
        }
    else:
        outcome = None if skip else check(model)
    model._wsc_tasks_logprob_check = outcome
    return outcome
