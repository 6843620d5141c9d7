"""lm-eval patch 3, ``send_distinct_requests``: what it changes and why, then the change."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

from wsc_tasks.harness.patches.base import (
    _MARK,
    TESTED,
    Answer,
    Patch,
    Request,
    _replace,
    is_our_task,
    log,
)
from wsc_tasks.harness.patches.p04_remember_tokens import (
    _encode_in_one_batch,
    _remember_tokens,
    load_encodings,
    recording_template_lm,
    save_encodings,
)
from wsc_tasks.harness.patches.p10_warn_unkeyed_request_cache import (
    _tasks_of,
    warn_unkeyed_request_cache,
)
from wsc_tasks.harness.patches.p13_tasks_meet_the_model import meet_the_model
from wsc_tasks.scoring.tokens import TokenCounter

# lm-eval passes the loglikelihood requests of all tasks to the model in one call, duplicates
# included; overlapping tasks (``wsc266`` and its subsets, every consistency task's original side,
# Reid250's rows) send the same (context, continuation) many times, and ``TemplateLM`` tokenizes
# every request on its own. The model gets each distinct request once and the results are fanned
# back out (a deterministic model's result depends on the request's arguments only). No upstream
# issue found; upstream this belongs in ``TemplateLM.loglikelihood``, before
# ``_loglikelihood_tokens``.
R = TypeVar("R", bound=Request)


def distinct(requests: Sequence[R]) -> tuple[list[R], list[int]]:
    """The requests with distinct arguments, in first-seen order, and where each request went."""
    first: dict[tuple[str, str], int] = {}
    unique: list[R] = []
    where: list[int] = []
    for request in requests:
        index = first.setdefault(request.args, len(unique))
        if index == len(unique):
            unique.append(request)
        where.append(index)
    return unique, where


def deduplicated(
    method: Callable[..., list[Answer]], counters: Sequence[TokenCounter] = ()
) -> Callable[..., list[Answer]]:
    """``lm.loglikelihood`` that sends each distinct request once; ``counters``: the tasks'
    token counters, whose encodings section 4 reuses."""

    def loglikelihood(requests: list[Request], *args: object, **kwargs: object) -> list[Answer]:
        unique, where = distinct(requests)
        log.info(
            f"wsc_tasks: {len(requests)} loglikelihood requests, {len(unique)} distinct sent to "
            "the model"
        )
        _encode_in_one_batch(getattr(method, "__self__", None), unique, counters)
        results = method(unique, *args, **kwargs)
        return [results[i] for i in where]

    setattr(loglikelihood, _MARK, True)
    return loglikelihood


def _token_counters(task_dict: object) -> list[TokenCounter]:
    """The token counters of this package's tasks in ``task_dict``, each once."""
    found: dict[int, TokenCounter] = {}
    for task in filter(is_our_task, _tasks_of(task_dict)):
        counter = getattr(task, "token_counter", lambda: None)()  # ``TaskConventions``
        if isinstance(counter, TokenCounter):
            found[id(counter)] = counter
    return list(found.values())


def _send_distinct_requests() -> None:
    from lm_eval import evaluator

    evaluate_original = evaluator.evaluate
    if getattr(evaluate_original, _MARK, False):
        return
    _remember_tokens()

    @functools.wraps(evaluate_original)
    def evaluate(lm: object, *args: object, **kwargs: object) -> object:
        meet_the_model(lm, kwargs["task_dict"] if "task_dict" in kwargs else args[0])  # 13
        method = getattr(lm, "loglikelihood", None)
        if method is None or getattr(method, _MARK, False):
            return evaluate_original(lm, *args, **kwargs)
        task_dict = kwargs.get("task_dict", args[0] if args else {})
        warn_unkeyed_request_cache(lm, task_dict)
        counters = _token_counters(task_dict)
        kept = bool(kwargs.get("cache_requests")) and any(map(is_our_task, _tasks_of(task_dict)))
        if kept and not kwargs.get("rewrite_requests_cache"):
            read = load_encodings(lm, counters)
            log.info(f"wsc_tasks: {read} token encodings read from lm-eval's request cache")
        dedup = deduplicated(method, counters)
        setattr(lm, "loglikelihood", dedup)  # noqa: B010  (this object only)
        try:
            results = evaluate_original(lm, *args, **kwargs)
        finally:
            delattr(lm, "loglikelihood")
        if kept:
            written = save_encodings(lm, counters)
            log.info(f"wsc_tasks: {written} token encodings kept in lm-eval's request cache")
        return results

    _replace(evaluator, "evaluate", evaluate)


def lm_eval_sends_every_duplicate() -> bool:
    """lm-eval's ``TemplateLM.loglikelihood`` sends the same request three times when given it
    three times."""
    from lm_eval.api.instance import Instance

    lm = recording_template_lm()
    lm.loglikelihood([Instance("loglikelihood", {}, ("a b", " c"), 0) for _ in range(3)])
    return len(lm.sent) == 3


PATCH = Patch(
    "send_distinct_requests",
    "lm_eval.evaluator.evaluate",
    TESTED,
    still_needed=lm_eval_sends_every_duplicate,
)
