"""``serve``: what lm-eval's ``getattr(lm, REQUEST_TYPE)(requests)`` runs for this package's
log-likelihood requests, and only for them.

1. Each task behind the requests meets the model first (``Requester.meet_model``): the model must
   be the one its requests were built for (tokenizer, family), else one line says what to pass.
2. A served model's echoed log-probabilities are checked once (``served.preflight``), and the
   outcome recorded in the tasks' results config.
3. Each distinct request goes to the model once (overlapping tasks send the same sentences; a
   deterministic model's answer depends on the request's arguments only), and the answers are
   fanned back out.
4. lm-eval's answer cache (``--use_cache``) is read and written with lm-eval's own keys
   (``hash_args("loglikelihood", arguments)``), so these answers and lm-eval's own tasks' share
   it, a batch at a time (``answer_cache``); an unkeyed cache is warned of once.
5. lm-eval's Hugging Face causal model, its methods lm-eval's own (``own_methods``), tokenizes
   them with lm-eval's own code on a view of the model (``model_view``) that remembers its
   encodings (``encoding``), then scores every distinct token prefix once (``tries``); where that
   route is refused, lm-eval's own loop scores them with its logits cache off (lm-eval hands a
   cache hit the logits of a longer continuation and gathers a shorter one's log-likelihood from
   the wrong positions: ``lm_eval_fixes``). A subclass of it that defines one of those methods
   otherwise answers through its own ``loglikelihood``, its logits cache off too; every other
   model through its own ``loglikelihood(requests)``, called as lm-eval's evaluator calls it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import Any, TypeVar

from wsc_tasks.garbage_collection import survivors_frozen
from wsc_tasks.lm_eval_types import Answer
from wsc_tasks.scoring.tokens import TokenCounter
from wsc_tasks.serving import answer_cache, encoding, own_methods, tries
from wsc_tasks.serving.requests import LM_EVAL_TYPE, Requester, TaskRequest

log = logging.getLogger(f"lm_eval.{__name__}")

R = TypeVar("R", bound=TaskRequest)

_KEYED_CACHES: set[str] = set()  # --use_cache paths keyed by the model (``wsc-tasks run``)
_WARNED_CACHES: set[str] = set()


def distinct(requests: Sequence[R]) -> tuple[list[R], list[int]]:
    """The requests with distinct arguments, in first-seen order, and where each request went."""
    first: dict[tuple[str, ...], int] = {}
    unique: list[R] = []
    where: list[int] = []
    for request in requests:
        index = first.setdefault(tuple(request.args), len(unique))
        if index == len(unique):
            unique.append(request)
        where.append(index)
    return unique, where


def tasks_of(requests: Sequence[TaskRequest]) -> list[Requester]:
    """The tasks behind ``requests``, each once, in first-seen order."""
    found: dict[int, Requester] = {}
    for request in requests:
        if request.task is None:
            raise RuntimeError(
                f"task {request.task_name}: a request reached the model without its task; "
                "build the requests with the task's build_all_requests"
            )
        found.setdefault(id(request.task), request.task)
    return list(found.values())


def counters_of(tasks: Sequence[Requester]) -> list[TokenCounter]:
    """The tasks' token counters, each once (their encodings spare the model's tokenizer)."""
    found: dict[int, TokenCounter] = {}
    for task in tasks:
        counter = task.token_counter()
        if counter is not None:
            found[id(counter)] = counter
    return list(found.values())


def meet(lm: Any, requests: Sequence[TaskRequest]) -> list[Requester]:
    """The tasks behind ``requests``, each having met ``lm`` (``Requester.meet_model``)."""
    tasks = tasks_of(requests)
    for task in tasks:
        task.meet_model(lm)
    return tasks


def serve(lm: Any, requests: list[TaskRequest], disable_tqdm: bool = False) -> list[Answer]:
    """lm-eval's answer to each of ``requests``; see the module docstring. Python's collector
    walks once what the serving builds (``garbage_collection.survivors_frozen``)."""
    if not requests:
        return []
    with survivors_frozen():
        return _serve(lm, requests, disable_tqdm)


def _serve(lm: Any, requests: list[TaskRequest], disable_tqdm: bool) -> list[Answer]:
    from wsc_tasks.serving import served

    tasks = meet(lm, requests)
    outcome = served.preflight(lm, [(task.name, task.metadata) for task in tasks])
    if outcome is not None:
        for task in tasks:
            task.record_served_check(outcome)
    unique, where = distinct(requests)
    log.info(
        f"wsc_tasks: {len(requests)} loglikelihood requests, {len(unique)} distinct sent to the "
        "model"
    )
    found = cached_answers(lm, unique)
    todo = [request for request, answer in zip(unique, found, strict=True) if answer is None]
    if todo:
        keep = any(task.caches_requests for task in tasks)  # --cache_requests: encodings too
        answered = iter(model_answers(lm, todo, counters_of(tasks), keep, disable_tqdm))
        found = [answer if answer is not None else next(answered) for answer in found]
    return [found[i] for i in where]  # type: ignore[misc]  # every None answered above


# -- lm-eval's answer cache (--use_cache) --------------------------------------------------------
def mark_cache_keyed(prefix: str) -> None:
    """``--use_cache`` paths under ``prefix`` are keyed by the model: no warning for them."""
    _KEYED_CACHES.add(prefix)


def cached_answers(lm: Any, requests: Sequence[TaskRequest]) -> list[Answer | None]:
    """Each request's answer in lm-eval's answer cache (``--use_cache``, whose ``CachingLM``
    hands this request type straight to the model it wraps, with its cache hook), or None."""
    hook = getattr(lm, "cache_hook", None)
    db = getattr(hook, "dbdict", None)
    if db is None:
        return [None] * len(requests)
    from lm_eval.api.model import hash_args

    _warn_unkeyed(str(getattr(db, "filename", "")))
    keys = [hash_args(LM_EVAL_TYPE, request.args) for request in requests]
    kept = answer_cache.read(db, keys)
    found: list[Answer | None] = [
        (float(kept[key][0]), bool(kept[key][1])) if key in kept else None for key in keys
    ]
    hits = sum(answer is not None for answer in found)
    log.info(
        f"wsc_tasks: lm-eval's answer cache (--use_cache) answered {hits} of {len(requests)} "
        "distinct requests"
    )
    return found


def _warn_unkeyed(path: str) -> None:
    """lm-eval keys its answer cache by the request alone, not by the model (upstream issues
    #2715, #4063): warn once per cache file that ``wsc-tasks run`` did not key by the model."""
    if path in _WARNED_CACHES or any(path.startswith(prefix) for prefix in _KEYED_CACHES):
        return
    _WARNED_CACHES.add(path)
    log.warning(
        f"wsc_tasks: lm-eval's answer cache {path} (--use_cache) is keyed by the request alone, "
        "not by the model: another model, or new weights at the same path, run with the same "
        "--use_cache reads these answers as its own; give each model its own --use_cache path, "
        "or run `wsc-tasks run`, which keys the path by the model"
    )


# -- the model -----------------------------------------------------------------------------------
def model_answers(
    lm: Any,
    requests: list[TaskRequest],
    counters: Sequence[TokenCounter],
    keep: bool = False,
    disable_tqdm: bool = False,
) -> list[Answer]:
    """The model's answers to ``requests`` (distinct, not in the answer cache); ``keep``: the
    encodings are read from and kept in lm-eval's request-cache folder (``encoding``)."""
    if keep:
        read = encoding.load(lm, counters)
        log.info(f"wsc_tasks: {read} token encodings read from lm-eval's request cache")
    if own_methods.hf_own(lm):
        found = hf_causal_answers(lm, requests, counters, disable_tqdm)
    else:
        found = own_answers(lm, requests)
    if keep:
        written = encoding.save(lm, counters)
        log.info(f"wsc_tasks: {written} token encodings written to lm-eval's request cache")
    return found


def own_answers(lm: Any, requests: list[TaskRequest]) -> list[Answer]:
    """The model's own ``loglikelihood(requests)``, as lm-eval's evaluator calls it (an HFLM
    subclass on a view with its logits cache off), each answer kept in lm-eval's answer cache
    (``--use_cache``) as ``CachingLM`` keeps its own."""
    from lm_eval.models.huggingface import HFLM

    from wsc_tasks.serving.model_view import view

    own_methods.say_own_route(lm)
    asked = view(lm, logits_cache=False) if isinstance(lm, HFLM) else lm
    found = list(asked.loglikelihood(requests))
    db = getattr(getattr(lm, "cache_hook", None), "dbdict", None)
    if db is not None:
        with answer_cache.Batch(db) as batch:
            for request, answer in zip(requests, found, strict=True):
                batch.add_partial(LM_EVAL_TYPE, request.args, answer)
    return found


def check_length(lm: Any, token_requests: Sequence[tries.TokenRequest]) -> None:
    """Every request must fit the model's context whole: lm-eval would cut a longer one's
    context from the left (a score of another sentence) or stop on an assertion."""
    from wsc_tasks.scoring.methods import ScoringError

    longest = max(token_requests, key=lambda r: len(r[1]) + len(r[2]), default=None)
    if longest is None:
        return
    length = len(longest[1]) + len(longest[2]) - 1  # the model's input: all but the last token
    if length > lm.max_length:
        (context, continuation), *_ = longest
        raise ScoringError(
            f"the model's context (max_length={lm.max_length}) is shorter than the longest "
            f"request, {length} tokens ({(context + continuation)[:60]!r}…); give max_length="
            f"{length} or more in --model_args, or leave it out (the model's own)"
        )


def hf_causal_answers(
    lm: Any,
    requests: list[TaskRequest],
    counters: Sequence[TokenCounter],
    disable_tqdm: bool = False,
) -> list[Answer]:
    """lm-eval's own ``loglikelihood`` of an HF causal model, run on a view of it that remembers
    its encodings and scores the token requests as tries (or, refused, by lm-eval's own loop with
    its logits cache off); see the module docstring."""
    from wsc_tasks.serving.model_view import view

    encoding.prefill(lm, [(r.args[0], r.args[1]) for r in requests], counters)

    def score(
        self: Any,
        token_requests: list[tries.TokenRequest],
        disable_tqdm: bool = False,
        override_bs: int | None = None,
    ) -> list[Answer]:
        inputs = tries.model_inputs(token_requests)
        check_length(lm, token_requests)
        reason = tries.refusal(lm, inputs)
        if reason is None:
            return tries.answers(self, token_requests, inputs, disable_tqdm, override_bs)
        tries.say_once(reason)
        own: Callable[..., list[Answer]] = type(lm)._loglikelihood_tokens
        return own(self, token_requests, disable_tqdm=disable_tqdm, override_bs=override_bs)

    db = getattr(getattr(lm, "cache_hook", None), "dbdict", None)
    with answer_cache.Batch(db) if db is not None else nullcontext() as batch:
        hook = {"cache_hook": batch} if batch is not None else {}  # lm-eval's writes, batched
        seen = view(
            lm,
            tok_encode=encoding.memoised_tok_encode(encoding.memo_of(lm)),
            _loglikelihood_tokens=score,
            logits_cache=False,
            **hook,
        )
        return list(seen.loglikelihood(requests, disable_tqdm=disable_tqdm))
