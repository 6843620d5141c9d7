"""lm-eval patch 12, ``check_served_logprobs``: what it changes and why, then the change."""

from __future__ import annotations

import functools

from wsc_tasks.harness.patches.base import (
    GITHUB,
    TESTED,
    Patch,
    _replace,
    is_our_task,
)

# Not a bug of lm-eval's code: of what it trusts. Its API models (``local-completions``,
# ``openai-completions``, ``sglang-generate``, ``gguf``) sum the prompt log-probabilities a server
# echoes as they come, and check nothing (upstream #1949 asks whether servers' echoes are
# compatible at all); llama-cpp-python 0.3.36's server echoes the next token's log-probabilities,
# and the run ends with plausible metrics that mean nothing. Before lm-eval's ``evaluate`` sends
# anything, a run of our tasks on such a model first has ``served.preflight`` compare the
# server's echo with its generation path (once per model object) and stop with one line if they
# disagree; the outcome goes into the results (``served.RESULTS_KEY``). lm-eval's CLI merges
# ``--model_args`` into the tasks' metadata, which is where ``logprob_check=false`` is read, and
# its API models ignore model arguments they do not know; the unchecked echo is this module's check
# (``still_needed``), the other two are tested in ``tests/test_patches.py``.
CHECK_MARK = "_wsc_tasks_patch_check_served_logprobs"


def our_tasks_metadata(task_dict: object) -> list[tuple[str, dict[str, object]]]:
    """(name, metadata) of this package's tasks among those lm-eval's ``evaluate`` was given."""
    tasks = task_dict.get("tasks", {}) if isinstance(task_dict, dict) else {}
    return [
        (str(name), dict(task.config.metadata or {}))
        for name, task in tasks.items()
        if is_our_task(task)
    ]


def check_served_logprobs() -> bool:
    """Run ``served.preflight`` at the start of lm-eval's ``evaluate``; True if patched now."""
    from lm_eval import evaluator

    from wsc_tasks.harness import served

    evaluate_before = evaluator.evaluate

    @functools.wraps(evaluate_before)
    def evaluate(lm: object, *args: object, **kwargs: object) -> object:
        task_dict = kwargs.get("task_dict", args[0] if args else None)
        ours = our_tasks_metadata(task_dict)
        outcome = served.preflight(lm, ours) if ours else None
        results = evaluate_before(lm, *args, **kwargs)
        if outcome is not None and isinstance(results, dict):
            results[served.RESULTS_KEY] = outcome
        return results

    return _replace(evaluator, "evaluate", evaluate, CHECK_MARK)


def lm_eval_sums_echoed_logprobs_unchecked() -> bool:
    """lm-eval's completions model adds up whatever a server echoes, positive
    "log-probabilities" included, without a word."""
    from lm_eval.models.openai_completions import LocalCompletionsAPI

    echoed = {
        "tokens": ["a", "b", "c", "d"],
        "token_logprobs": [None, 3.0, 5.0, -1.0],
        "top_logprobs": [None, {"b": 3.0}, {"c": 5.0}, {"d": -1.0}],
    }
    outputs = {"choices": [{"index": 0, "logprobs": echoed}]}
    return bool(LocalCompletionsAPI.parse_logprobs(outputs, ctxlens=[1]) == [(8.0, True)])


PATCH = Patch(
    "check_served_logprobs",
    "lm_eval.evaluator.evaluate",
    TESTED,
    (f"{GITHUB}/issues/1949",),
    still_needed=lm_eval_sums_echoed_logprobs_unchecked,
)
