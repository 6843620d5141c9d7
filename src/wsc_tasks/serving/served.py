"""Served models: a server's echoed prompt log-probabilities, checked before a run relies on them.

lm-eval's API models score a log-likelihood request by sending context and continuation as one
prompt with ``echo`` and ``logprobs`` and summing what the server reports for the continuation's
tokens: entry *i* of the echo must be log p(token *i* | the tokens before it). A server can report
something else and still answer 200: llama-cpp-python 0.3.36 reports each prompt token's
log-probability under the distribution that predicts the *next* token, and the run then ends with
metrics built from numbers that mean nothing.

``check`` asks the server about a short probe sentence in two ways: as lm-eval asks (the echo, the
model's own request), and through the server's generation path, ``max_tokens`` 1 and ``logprobs`` 5
after each prefix of the probe, whose answer is by definition the distribution of the token that
follows the prefix. ``echo.compare`` (pure, its own module) says whether the two agree to within
quantisation and batching noise and, where they do not, what the echo is instead: the next token's,
missing, all equal, not normalised, cut at other tokens than lm-eval counts. The run then stops with
one line naming the server, the finding and what to do. ``logprob_check=false`` in ``--model_args``
(or ``--metadata``) skips the check for a server known to be right. ``serving.route`` runs it once
per model, before this package's requests are sent, and records the outcome in the tasks' results
config (``RESULTS_KEY`` in their metadata).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wsc_tasks.serving.echo import (
    ABS_TOLERANCE,
    FIX_SERVER,
    MIN_COMPARED,
    NO_GENERATED,
    PROBE,
    REL_TOLERANCE,
    SKIP_ADVICE,
    SKIP_KEY,
    TOP_N,
    Echo,
    Key,
    ServedModelError,
    Top,
    Verdict,
    compare,
    distance,
    layout,
    same_in_a_batch,
    tolerance,
)

log = logging.getLogger(f"lm_eval.{__name__}")

# lm-eval's names of the served models whose log-probabilities are checked (what --model says)
CHECKED_MODELS = ("local-completions", "openai-completions", "sglang-generate", "gguf")
# lm-eval's other log-likelihood API models: TextSynth's server scores (context, continuation)
# itself, watsonx goes through IBM's SDK; neither is checked, and a run says so
UNCHECKED = ("lm_eval.models.textsynth", "lm_eval.models.ibm_watsonx_ai")
RESULTS_KEY = "logprob_check"  # the outcome, in the tasks' results config (their metadata)
_KEPT: weakref.WeakKeyDictionary[object, Outcome | None] = weakref.WeakKeyDictionary()

__all__ = [
    "CHECKED_MODELS", "FIX_SERVER", "MIN_COMPARED", "NO_GENERATED", "PROBE", "RESULTS_KEY",
    "SKIP_ADVICE", "SKIP_KEY", "TOP_N", "UNCHECKED", "Echo", "Key", "ServedModelError", "Top",
    "Verdict", "check", "compare", "distance", "preflight", "same_in_a_batch", "skip_requested",
    "tolerance",
]  # fmt: skip


# -- asking the server ---------------------------------------------------------------------------
# what a check records in the results (``RESULTS_KEY``): model, server, outcome and its figures
Outcome = dict[str, str | int | float]


def model_type(lm: object) -> str:
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

    lm: Any  # lm-eval's API model (TemplateAPI or GGUFLM), asked for its settings
    url: str
    protocol: str
    text: bool  # prompts sent as text (lm-eval's tokenized_requests=False; gguf always)
    ids: list[int] | None  # the probe as lm-eval tokenizes it (None: the model has no tokenizer)

    @property
    def where(self) -> str:
        return f"served model {model_type(self.lm)} at {self.url}"

    def post(self, payload: dict[str, Any], question: str) -> Any:  # JSON out, JSON back
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
    # lm-eval's classes by name (module, class), so that no model module is imported here: an
    # API model's module was imported when lm-eval built it (and some releases fail to import a
    # model module twice)
    classes = {(c.__module__, c.__name__) for c in type(lm).__mro__}
    if ("lm_eval.models.gguf", "GGUFLM") in classes:
        return Server(lm, f"{lm.base_url}/v1/completions", "completions", True, None)
    api = ("lm_eval.models.api_models", "TemplateAPI") in classes
    if not api or ("lm_eval.models.openai_completions", "LocalChatCompletion") in classes:
        return None
    if lm.tokenizer is None:
        return None  # lm-eval refuses log-likelihood requests without a tokenizer itself
    sglang = ("lm_eval.models.sglang_generate_API", "SGLANGGENERATEAPI") in classes
    protocol = "sglang" if sglang else "completions"
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


def check(lm: object) -> Outcome | None:
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
    verdict = layout(echo, prompt, generated)
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
    outcome: Outcome = {
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


def skip_requested(metadata: Sequence[tuple[str, Mapping[str, object]]]) -> bool:
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


def preflight(lm: object, metadata: Sequence[tuple[str, Mapping[str, object]]]) -> Outcome | None:
    """``check`` once per model object (the outcome is kept for it), or the record of its skip."""
    model = getattr(lm, "lm", lm)
    if model in _KEPT:
        return _KEPT[model]
    skip = skip_requested(metadata)
    server = server_of(model) if skip else None
    if server is not None:
        log.warning(f"wsc_tasks: {server.where}: log-probability check skipped ({SKIP_KEY}=false)")
        outcome: Outcome | None = {
            "model": model_type(server.lm),
            "base_url": server.url,
            "outcome": f"skipped ({SKIP_KEY}=false)",
        }
    else:
        outcome = None if skip else check(model)
    _KEPT[model] = outcome
    return outcome
