"""lm-eval patch 14, ``leave_out_undefined_metrics``: what it changes and why, then the change."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from wsc_tasks.harness.lm_eval_types import ConfiguredTask
from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
    original,
)
from wsc_tasks.metrics.registry import ACC


# lm-eval stores and prints whatever an aggregation returns, NaN included ("NaN ± nan"), and then
# ``simple_evaluate`` and ``evaluate`` on the same documents no longer compare equal (NaN != NaN).
# A metric of ours with no value on the documents evaluated (a share with nothing to count, e.g.
# the non-associative schemas among the first 5 documents) is left out of the results instead,
# with a note naming it and why (``TaskConventions.why_undefined``; ``notes``). Part of section 2's
# replacement. No upstream issue found; upstream, an aggregation could return "undefined" with a
# reason.
def leave_out_undefined(
    task: ConfiguredTask,
    aggregated: dict[str, object],
    raw_metrics: Mapping[tuple[str, str], Sequence[object]],
) -> None:
    from wsc_tasks.harness import notes

    why: dict[str, list[str]] = {}
    for (metric, filter_key), items in raw_metrics.items():
        value = aggregated.get(f"{metric},{filter_key}")
        if not (isinstance(value, float) and math.isnan(value)):
            continue
        del aggregated[f"{metric},{filter_key}"]
        aggregated.pop(f"{metric}_stderr,{filter_key}", None)
        why_undefined = getattr(task, "why_undefined", None)  # TaskConventions' reasons
        reason = why_undefined(metric, items) if why_undefined else ""
        documents = getattr(task, "documents_evaluated", None)
        where = documents(len(items)) if why_undefined and documents else ""
        why.setdefault(f"{reason or 'undefined'} in {where or 'these documents'}", []).append(
            metric
        )
    for reason, metrics in why.items():
        notes.add(task, f"{', '.join(metrics)} not reported: {reason}")


def lm_eval_stores_an_undefined_aggregation_as_nan() -> bool:
    """lm-eval's ``_compute_task_aggregations`` stores a NaN aggregation as it is."""
    from lm_eval import evaluator_utils

    class Task:
        task_name = "t"

        def aggregation(self) -> dict[str, object]:
            return {ACC: lambda items: float("nan")}

    compute = original(evaluator_utils, "_compute_task_aggregations")
    aggregated, _ = compute(Task(), {(ACC, "none"): [1, 2]}, 0)
    value = aggregated.get("acc,none")
    return isinstance(value, float) and math.isnan(value)


PATCH = Patch(
    "leave_out_undefined_metrics",
    "lm_eval.evaluator_utils._compute_task_aggregations",
    TESTED,
    still_needed=lm_eval_stores_an_undefined_aggregation_as_nan,
)
