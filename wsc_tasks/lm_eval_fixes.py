"""Corrections to lm-eval (0.4.13; ``< 0.5`` in pyproject) that this package's tasks depend on.

1. The HF log-likelihood cache.

lm-eval's ``HFLM`` (``logits_cache=True``, its default) computes one forward pass for all requests
whose ``context + continuation[:-1]`` tokens are equal, then scores each with the logits of the
longest continuation. It gathers a shorter continuation's tokens from the *first* positions of those
logits instead of the last, so such a request gets a wrong log-likelihood. The same sentence split
at two places is exactly what partial scoring of a problem and of its inversion send
(``wsc266`` and ``wsc266_inverted`` fill the same sentence): without the correction, scores in a
run depend on which other tasks share it. The correction trims each cache hit's logits to its own
continuation, which is a no-op for every request that was already scored correctly.

2. Metrics logged but not aggregated. lm-eval aggregates (with ``mean`` and a warning, if the task
names no aggregation) every key ``process_results`` returns, and every key is a row of its
printed table. This package's tasks return a per-document value for every scoring method and
method pair, so that ``--log_samples`` keeps them all for ``wsc-tasks report``, but by default
list only their headline metrics in ``aggregation()``; lm-eval then aggregates only those.

3. Each distinct request sent once, each text tokenized once. lm-eval passes the loglikelihood
requests of all tasks to the model in one call; overlapping tasks (``wsc266`` and its subsets,
every consistency task's original side, Reid250's rows) send the same (context, continuation)
many times, and ``TemplateLM`` tokenizes every request on its own, two tokenizer calls each.
The model gets each distinct request once (results fanned back out), and an HF model's
``tok_encode`` remembers its texts, filled by one batched tokenizer call per model call.
Upstream, both would belong in ``TemplateLM.loglikelihood``: deduplicate before
``_loglikelihood_tokens`` and encode the pairs with one ``tokenizer(list)`` call.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

log = logging.getLogger(f"lm_eval.{__name__}")

_MARK = "_wsc_tasks_trailing_slice"


def apply() -> bool:
    """Patch lm-eval once per process; True if it was patched now."""
    _aggregate_listed_metrics_only()
    _send_distinct_requests()
    return _slice_cache_hits()


def distinct(requests: Sequence[Any]) -> tuple[list[Any], list[int]]:
    """The requests with distinct arguments, in first-seen order, and where each request went."""
    first: dict[Any, int] = {}
    unique, where = [], []
    for request in requests:
        index = first.setdefault(request.args, len(unique))
        if index == len(unique):
            unique.append(request)
        where.append(index)
    return unique, where


def deduplicated(method: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """``lm.loglikelihood`` that sends each distinct request once (a deterministic model's result
    depends on the request's arguments only)."""

    def loglikelihood(requests: list[Any], *args: Any, **kwargs: Any) -> list[Any]:
        unique, where = distinct(requests)
        log.info(
            f"wsc_tasks: {len(requests)} loglikelihood requests, {len(unique)} distinct sent to "
            "the model"
        )
        _encode_in_one_batch(getattr(method, "__self__", None), unique)
        results = method(unique, *args, **kwargs)
        return [results[i] for i in where]

    setattr(loglikelihood, _MARK, True)
    return loglikelihood


def _encode_in_one_batch(lm: Any, requests: Sequence[Any]) -> None:
    """Fill an HF causal model's text → tokens memo with one batched call for the texts that
    ``TemplateLM._encode_pair`` will encode (same tokenizer arguments as ``HFLM.tok_encode``)."""
    from lm_eval.models.huggingface import HFLM

    if not isinstance(lm, HFLM) or getattr(lm, "backend", None) != "causal":
        return
    from lm_eval.models.utils import _add_special_kwargs

    texts: set[str] = set()
    for request in requests:
        context, continuation = request.args[:2]
        if not context:
            continue
        spaces = len(context) - len(context.rstrip())
        if spaces:
            context, continuation = context[:-spaces], context[-spaces:] + continuation
        texts.update((context, context + continuation))
    memo = _memo(lm)
    bos = lm.tokenizer.decode(lm.prefix_token_id)
    plain = sorted(t for t in texts if (t, None) not in memo and not t.startswith(bos))
    if plain:
        kwargs = _add_special_kwargs(None, lm.add_bos_token)
        for text, ids in zip(plain, lm.tokenizer(plain, **kwargs)["input_ids"], strict=True):
            memo[(text, None)] = list(ids)


def _memo(lm: Any) -> dict[tuple[str, bool | None], list[int]]:
    if "_wsc_tasks_token_memo" not in vars(lm):
        lm._wsc_tasks_token_memo = {}
    return lm._wsc_tasks_token_memo


def _remember_tokens() -> None:
    from lm_eval.models.huggingface import HFLM

    original = HFLM.tok_encode
    if getattr(original, _MARK, False):
        return

    def tok_encode(
        self: Any, string: str, add_special_tokens: bool | None = None,
        left_truncate_len: int | None = None, **kwargs: Any,
    ) -> list[int]:  # fmt: skip
        if left_truncate_len or kwargs:
            return original(self, string, add_special_tokens, left_truncate_len, **kwargs)
        memo = _memo(self)
        key = (string, add_special_tokens)
        if key not in memo:
            memo[key] = original(self, string, add_special_tokens)
        return list(memo[key])

    setattr(tok_encode, _MARK, True)
    tok_encode.__doc__ = original.__doc__
    HFLM.tok_encode = tok_encode  # type: ignore[method-assign]


def _send_distinct_requests() -> None:
    from lm_eval import evaluator

    original = evaluator.evaluate
    if getattr(original, _MARK, False):
        return
    _remember_tokens()

    @functools.wraps(original)
    def evaluate(lm: Any, *args: Any, **kwargs: Any) -> Any:
        method = getattr(lm, "loglikelihood", None)
        if method is None or getattr(method, _MARK, False):
            return original(lm, *args, **kwargs)
        lm.loglikelihood = deduplicated(method)
        try:
            return original(lm, *args, **kwargs)
        finally:
            del lm.loglikelihood

    setattr(evaluate, _MARK, True)
    evaluator.evaluate = evaluate


def is_ours(task: Any) -> bool:
    return type(task).__module__.startswith("wsc_tasks.")


def _aggregate_listed_metrics_only() -> None:
    from lm_eval import evaluator_utils

    original = getattr(evaluator_utils, "_compute_task_aggregations", None)
    if original is None:  # another lm-eval: every logged metric is aggregated (a longer table)
        log.warning("wsc_tasks: lm-eval without _compute_task_aggregations: all metrics printed")
        return
    if getattr(original, _MARK, False):
        return

    def compute(task: Any, raw_metrics: dict, *args: Any, **kwargs: Any) -> Any:
        if is_ours(task):
            listed = task.aggregation()
            raw_metrics = {key: items for key, items in raw_metrics.items() if key[0] in listed}
        return original(task, raw_metrics, *args, **kwargs)

    setattr(compute, _MARK, True)
    compute.__doc__ = original.__doc__
    evaluator_utils._compute_task_aggregations = compute


def _slice_cache_hits() -> bool:
    from lm_eval.models.utils import Collator

    original = Collator.get_cache
    if getattr(original, _MARK, False):
        return False

    def get_cache(self: Any, *args: Any, **kwargs: Any) -> Iterator[tuple[Any, Any, Any]]:
        for request_str, cont_toks, logits in original(self, *args, **kwargs):
            # logits: [1, positions of the longest continuation, vocab]; keep this request's own
            yield request_str, cont_toks, logits[:, -len(cont_toks) :, :]

    setattr(get_cache, _MARK, True)
    get_cache.__doc__ = original.__doc__
    Collator.get_cache = get_cache  # type: ignore[method-assign]
    log.debug("wsc_tasks: lm-eval Collator.get_cache now slices each cache hit to its continuation")
    return True
