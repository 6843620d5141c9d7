"""``serve``: what lm-eval's ``getattr(lm, GENERATION_TYPE)(requests)`` runs for the question
tasks' generation requests, and only for them.

The question tasks (``tasks.questions``) ask for greedy generations; they send them under a
request type of their own, so that what lm-eval would do to a whole run on one bad answer from a
server happens to that answer alone:

1. A chat-completions model (``local-chat-completions``, ``openai-chat-completions``…) takes
   chat messages: given plain text (no ``--apply_chat_template``) it would stop on an assertion;
   here one line names the flag, before any request is sent.
2. Each distinct request goes to the model once (greedy decoding: its answer depends on its
   arguments only), and the answers are fanned back out.
3. lm-eval's answer cache (``--use_cache``) is read with lm-eval's own keys
   (``hash_args("generate_until", arguments)``); the model's own ``generate_until`` writes the
   answers it gives, as it does for lm-eval's tasks. Sampled generations are not read from it;
   a cache not keyed by the model is warned of once, as for the log-likelihood requests.
4. The model answers through its own ``generate_until``, ``CHUNK`` requests a call. When a call
   fails (an HTTP error after lm-eval's retries, a dropped connection), its requests are asked
   again one at a time, and one that still fails gets ``failure(reason)`` as its answer, logged,
   counted unanswered and named by the task (``ERROR``). ``IN_A_ROW`` failures in a row stop
   the run with one line naming the error: a server that answers nothing scores nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from wsc_tasks.serving import answer_cache

log = logging.getLogger(f"lm_eval.{__name__}")

GENERATION_TYPE = "wsc_tasks_generate_until"  # the method lm-eval calls on the model for them
LM_EVAL_GENERATION = "generate_until"  # what each is in lm-eval's terms (its cache keys them so)
IN_A_ROW = 5  # failed requests in a row that stop the run
CHUNK = 256  # requests a call of the model's generate_until (a failure asks its chunk again)
NO_ANSWER = "wsc_tasks: no answer from the model"  # how a failed request's answer reads
CHAT_MODELS = (
    ("lm_eval.models.openai_completions", "LocalChatCompletion"),
    ("lm_eval.models.anthropic_llms", "AnthropicChat"),
)


class GenerationError(RuntimeError):
    """The model gave no answer to ``IN_A_ROW`` requests in a row, or cannot take them."""


class Failure(str):
    """The answer of a request the model gave none to: a text (lm-eval logs it in the samples as
    it logs answers, ``NO_ANSWER (why)``) that ``failed`` tells from any answer the model gave."""

    reason: str


def failure(reason: str) -> Failure:
    found = Failure(f"{NO_ANSWER} ({reason})")
    found.reason = reason
    return found


def failed(answer: object) -> str | None:
    """Why ``answer`` is no answer (``failure``), or None for a text the model gave."""
    return answer.reason if isinstance(answer, Failure) else None


def _key(request: Any) -> str:
    return json.dumps(list(request.args), default=str, sort_keys=True)


def _names(requests: Sequence[Any]) -> str:
    return ", ".join(sorted({str(r.task_name) for r in requests if r.task_name})) or "?"


def chat_model(lm: Any) -> bool:
    """Whether ``lm`` takes chat messages only (lm-eval's chat-completions models)."""
    import importlib

    for module, name in CHAT_MODELS:
        try:
            found = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError):
            continue
        if isinstance(lm, found):
            return True
    return False


def check_messages(lm: Any, requests: Sequence[Any]) -> None:
    """A chat-completions model given plain text: one line naming the flag."""
    if not chat_model(lm):
        return
    plain = [r for r in requests if isinstance(r.args[0], str)]
    if plain:
        raise GenerationError(
            f"task {_names(plain)}: {type(lm).__name__} takes chat messages, and these questions "
            "are plain text; run with --apply_chat_template"
        )


def cached(lm: Any, requests: Sequence[Any]) -> list[str | None]:
    """Each request's answer in lm-eval's answer cache (``--use_cache``), or None."""
    hook = getattr(lm, "cache_hook", None)
    db = getattr(hook, "dbdict", None)
    if db is None:
        return [None] * len(requests)
    from lm_eval.api.model import hash_args

    from wsc_tasks.serving.route import _warn_unkeyed  # one warning, whatever the request type

    _warn_unkeyed(str(getattr(db, "filename", "")))

    keys = [hash_args(LM_EVAL_GENERATION, request.args) for request in requests]
    kept = answer_cache.read(db, keys)  # one query a chunk, not a round trip a question
    found: list[str | None] = [
        None
        if bool((request.args[1] or {}).get("do_sample", False)) or key not in kept
        else str(kept[key])
        for request, key in zip(requests, keys, strict=True)
    ]
    hits = sum(answer is not None for answer in found)
    log.info(
        f"wsc_tasks: lm-eval's answer cache (--use_cache) answered {hits} of {len(requests)} "
        "questions"
    )
    return found


def _reason(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}"[:300]


def answers(lm: Any, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
    """The model's answers (``generate_until``, ``CHUNK`` requests a call), a failed request's
    ``failure`` (step 4)."""
    out: list[str] = []
    for start in range(0, len(requests), CHUNK):
        chunk = requests[start : start + CHUNK]
        try:
            out += list(lm.generate_until(chunk, disable_tqdm=disable_tqdm))
        except Exception as error:  # noqa: BLE001 - every failure is asked again, one at a time
            log.warning(
                f"wsc_tasks: {len(chunk)} questions to {type(lm).__name__} failed together "
                f"({_reason(error)}); asked one at a time"
            )
            out += one_at_a_time(lm, chunk)
    return out


def one_at_a_time(lm: Any, requests: list[Any]) -> list[str]:
    """Each request asked alone: its answer, or its ``failure``; ``IN_A_ROW`` in a row stop."""
    out: list[str] = []
    in_a_row: list[str] = []
    for request in requests:
        try:
            [answer] = lm.generate_until([request], disable_tqdm=True)
        except Exception as error:  # noqa: BLE001 - named in the answer and the log
            reason = _reason(error)
            log.warning(f"wsc_tasks: {request.task_name}: a question got no answer ({reason})")
            out.append(failure(reason))
            in_a_row.append(reason)
            if len(in_a_row) >= IN_A_ROW:
                raise GenerationError(
                    f"task {_names(requests)}: {IN_A_ROW} questions in a row got no answer from "
                    f"{type(lm).__name__}, the last: {reason}; is the server up?"
                ) from error
            continue
        in_a_row.clear()
        out.append(answer)
    return out


def serve(lm: Any, requests: list[Any], disable_tqdm: bool = False) -> list[str]:
    """lm-eval's answer to each of ``requests``; see the module docstring."""
    if not requests:
        return []
    check_messages(lm, requests)
    first: dict[str, int] = {}
    unique: list[Any] = []
    where: list[int] = []
    for request in requests:
        index = first.setdefault(_key(request), len(unique))
        if index == len(unique):
            unique.append(request)
        where.append(index)
    log.info(f"wsc_tasks: {len(requests)} questions, {len(unique)} distinct sent to the model")
    found: list[str | None] = list(cached(lm, unique))
    todo = [request for request, answer in zip(unique, found, strict=True) if answer is None]
    if todo:
        answered = iter(answers(lm, todo, disable_tqdm))
        found = [answer if answer is not None else next(answered) for answer in found]
    return [found[i] for i in where]  # type: ignore[misc]  # every None answered above
