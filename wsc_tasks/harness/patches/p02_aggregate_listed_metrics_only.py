"""lm-eval patch 2, ``aggregate_listed_metrics_only``: what it changes and why, then the change."""

from __future__ import annotations

from wsc_tasks.harness.patches.base import (
    TESTED,
    AggregatingTask,
    Patch,
    _replace,
    is_our_task,
    log,
    original,
)
from wsc_tasks.harness.patches.p14_leave_out_undefined_metrics import leave_out_undefined
from wsc_tasks.metrics.registry import ACC, column


# lm-eval aggregates (with ``mean`` and a warning, if the task names no aggregation) every key
# ``process_results`` returns, and every key is a row of its printed table. This package's tasks
# return a per-document value for every scoring method and method pair, so that ``--log_samples``
# keeps them all for ``wsc-tasks report``, but by default list only their headline metrics in
# ``aggregation()``; with this patch lm-eval aggregates only those (for this package's tasks only).
# No upstream issue found; upstream, a task could mark keys as logged-only.
def _aggregate_listed_metrics_only() -> None:
    from lm_eval import evaluator_utils

    compute_original = getattr(evaluator_utils, "_compute_task_aggregations", None)
    if compute_original is None:  # another lm-eval: every logged metric is aggregated
        log.warning("wsc_tasks: lm-eval without _compute_task_aggregations: all metrics printed")
        return

    def compute(
        task: AggregatingTask,
        raw_metrics: dict[tuple[str, str], list[object]],
        *args: object,
        **kwargs: object,
    ) -> tuple[dict[str, object], int]:
        if not is_our_task(task):
            return compute_original(task, raw_metrics, *args, **kwargs)
        listed = task.aggregation()
        raw_metrics = {key: items for key, items in raw_metrics.items() if key[0] in listed}
        aggregated, size = compute_original(task, raw_metrics, *args, **kwargs)
        leave_out_undefined(task, aggregated, raw_metrics)  # section 14
        return aggregated, size

    _replace(evaluator_utils, "_compute_task_aggregations", compute)


def lm_eval_aggregates_every_logged_metric() -> bool:
    """lm-eval's ``_compute_task_aggregations`` aggregates a key the task does not list."""
    from lm_eval import evaluator_utils
    from lm_eval.api.metrics import mean

    class Task:
        task_name = "t"

        def aggregation(self) -> dict[str, object]:
            return {ACC: mean}

    compute = original(evaluator_utils, "_compute_task_aggregations")
    raw = {(ACC, "none"): [1.0, 0.0], ("acc_logged_only", "none"): [1.0, 1.0]}
    aggregated, _ = compute(Task(), raw, bootstrap_iters=0)
    return column("acc_logged_only") in aggregated


PATCH = Patch(
    "aggregate_listed_metrics_only",
    "lm_eval.evaluator_utils._compute_task_aggregations",
    TESTED,
    still_needed=lm_eval_aggregates_every_logged_metric,
)
