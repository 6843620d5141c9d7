"""Avoided: lm-eval knows no standard error for an aggregation outside its own list.

lm-eval asks ``stderr_for_metric(aggregation, bootstrap_iters)`` for every metric and, for an
aggregation it does not list, prints ``N/A``; the binomial error it gives ``mean`` would ignore that
the problems of a schema are not independent. This package's tasks report each aggregated
metric's schema-bootstrap error as a metric of its own, ``<metric>_stderr``
(``tasks.stderr``): lm-eval aggregates it after the metric and writes it where it writes a
metric's stderr, so its table, its results file and its groups' pooled errors read it, and no
function of lm-eval is replaced (``tests/test_lm_eval_fixes.py`` runs a task and reads it back).
Upstream, an aggregation could carry its own stderr function.
"""

from __future__ import annotations

from wsc_tasks.lm_eval_fixes.base import AVOIDED, Fix


def lm_eval_has_no_stderr_for_other_aggregations() -> bool:
    """lm-eval's ``stderr_for_metric`` knows no error for this package's aggregations."""
    from lm_eval.api.metrics import stderr_for_metric

    from wsc_tasks.metrics import ratios

    return stderr_for_metric(ratios.SCHEMA_ACCURACY, 1000) is None


FIX = Fix(
    "stderr_keys",
    AVOIDED,
    "lm-eval computes no standard error for an aggregation outside its own list",
    "each aggregated metric's schema-bootstrap error is a per-document metric of its own, "
    "<metric>_stderr, which lm-eval writes where it writes a stderr",
    still_needed=lm_eval_has_no_stderr_for_other_aggregations,
)
