"""lm-eval patch 5, ``schema_stderr``: what it changes and why, then the change."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
    _replace,
    log,
    original,
)


# lm-eval asks ``stderr_for_metric(aggregation, bootstrap_iters)`` for every metric; it knows no
# error for an aggregation outside its own list and prints ``N/A``. This hook answers for this
# package's aggregations with the schema bootstrap of ``harness.stderr`` (which says which
# aggregations are ours and computes the error); every other metric gets lm-eval's own answer.
# lm-eval binds the name in two modules, so both are replaced. No upstream issue found; upstream, an
# aggregation could carry its own stderr function (as a metric's ``stderr`` attribute or a registry
# entry).
def _schema_stderr() -> bool:
    from lm_eval import evaluator_utils
    from lm_eval.api import metrics as lm_metrics

    from wsc_tasks.harness import stderr

    lookup_original = original(evaluator_utils, "stderr_for_metric")

    def stderr_for_metric(
        metric: Callable[..., object], bootstrap_iters: int
    ) -> Callable[[Sequence[object]], float | str] | None:
        if not stderr.is_ours(metric):
            return lookup_original(metric, bootstrap_iters)
        if bootstrap_iters <= 0 or stderr.is_count(metric):
            return None
        iters = min(bootstrap_iters, stderr.MAX_ITERS)

        def schema_stderr(items: Sequence[object]) -> float | str:
            value = stderr.schema_stderr(metric, items, iters)
            return "N/A" if math.isnan(value) else value  # no replicate had a value: none

        return schema_stderr

    patched = _replace(evaluator_utils, "stderr_for_metric", stderr_for_metric)
    _replace(lm_metrics, "stderr_for_metric", evaluator_utils.stderr_for_metric)
    if patched:
        log.debug("wsc_tasks: lm-eval's stderr for wsc_tasks metrics is now a schema bootstrap")
    return patched


def lm_eval_has_no_stderr_for_our_aggregations() -> bool:
    """lm-eval's ``stderr_for_metric`` knows no error for this package's aggregations."""
    from lm_eval import evaluator_utils

    from wsc_tasks.metrics import ratios

    lookup = original(evaluator_utils, "stderr_for_metric")
    return lookup(ratios.SCHEMA_ACCURACY, 1000) is None


PATCH = Patch(
    "schema_stderr",
    "lm_eval.evaluator_utils.stderr_for_metric",
    TESTED,
    still_needed=lm_eval_has_no_stderr_for_our_aggregations,
)
