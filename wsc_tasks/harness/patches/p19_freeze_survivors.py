"""lm-eval patch 19, ``freeze_survivors``: what it changes and why, then the change."""

from __future__ import annotations

import functools
from collections.abc import Callable

from wsc_tasks.collector import survivors_frozen
from wsc_tasks.harness.patches.base import TESTED, Patch, _replace, is_our_task
from wsc_tasks.harness.patches.p10_warn_unkeyed_request_cache import _tasks_of

# Not a bug of lm-eval: a cost of Python's cyclic garbage collector in a process that holds
# millions of objects. Each full collection walks every object the process holds (torch,
# transformers and lm-eval as imported, the model, the tasks' documents, the run's requests and
# results), and one comes each time the long-lived objects grow by a quarter: for ``wsc_group``
# (137,441 requests) on a 2-core CPU, five full collections inside ``evaluate`` took 4.3 s of a
# 37 s run. While ``evaluate`` runs with one of this package's tasks, the objects that survive a
# full collection are now moved to the collector's permanent generation (``gc.freeze``), so that
# the next one walks only what was made since; when ``evaluate`` returns they are handed back
# (``gc.unfreeze``), and a cycle among them that became garbage meanwhile goes at the next full
# collection (``wsc_tasks.collector``, which reading a run's samples uses too). No upstream
# issue found; upstream, ``evaluate`` could do the same.
MARK = "_wsc_tasks_patch_freeze_survivors"


def freezing(evaluate_before: Callable[..., object]) -> Callable[..., object]:
    """lm-eval's ``evaluate`` run inside ``survivors_frozen`` when one of our tasks is in it."""

    @functools.wraps(evaluate_before)
    def evaluate(lm: object, *args: object, **kwargs: object) -> object:
        task_dict = kwargs.get("task_dict", args[0] if args else None)
        if not any(map(is_our_task, _tasks_of(task_dict))):
            return evaluate_before(lm, *args, **kwargs)
        with survivors_frozen():
            return evaluate_before(lm, *args, **kwargs)

    return evaluate


def freeze_survivors() -> bool:
    """Section 19, once per process; True if ``evaluate`` was wrapped now."""
    from lm_eval import evaluator

    return _replace(evaluator, "evaluate", freezing(evaluator.evaluate), MARK)


def lm_eval_leaves_the_collector_as_it_is() -> bool:
    """lm-eval's evaluator neither freezes objects nor tunes or turns off the collector."""
    import inspect

    from lm_eval import evaluator

    source = inspect.getsource(evaluator)
    return not any(call in source for call in ("gc.freeze", "gc.disable", "gc.set_threshold"))


PATCH = Patch(
    "freeze_survivors",
    "lm_eval.evaluator.evaluate",
    TESTED,
    still_needed=lm_eval_leaves_the_collector_as_it_is,
)
