"""lm-eval's ``stderr`` column for this package's metrics: a bootstrap over schemas.

lm-eval knows no error for an aggregation outside its own list and reports ``N/A`` (and the
binomial error it would give ``mean`` ignores that the problems of a schema are not independent,
thesis §3.8.2). Each task therefore reports, beside every aggregated metric whose record asks for
one, a metric named ``registry.stderr_name(metric)`` with the same per-document values, whose
aggregation (``stderr_of``) is the standard deviation of the metric over ``MAX_ITERS`` resamples
of the documents (schemas), with a fixed seed: lm-eval aggregates it after the metric and writes
it in the metric's stderr column (``lm_eval_fixes.stderr_keys``). Counts (``n_problems``…) get
none.

lm-eval gathers every process's per-document values to rank 0 before it aggregates (concatenated
in rank order); the values are sorted into a canonical order first, so the error is the same for
1 and N processes.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from wsc_tasks.metrics import registry, stats

log = logging.getLogger(f"lm_eval.{__name__}")

MAX_ITERS = 1000  # lm-eval's default of 100000 would cost minutes per task for a second digit
SEED = 1234  # lm-eval's own numpy seed, for the look of it; any fixed value will do


T = TypeVar("T")  # one per-document value, as the task's process_results returned it


def has_stderr(aggregation: Callable[..., object]) -> bool:
    """A metric of ``registry`` whose record asks for a standard error (counts the data fixes
    do not: lm-eval prints N/A for them)."""
    found = registry.record_of(aggregation)
    return found is not None and found.stderr


def canonical(items: Sequence[T]) -> list[T]:
    """The per-document values in an order that does not depend on how ranks split them."""
    keyed = sorted(
        (json.dumps(item, sort_keys=True, default=str), i) for i, item in enumerate(items)
    )
    return [items[i] for _, i in keyed]


def schema_stderr(aggregation: Callable[..., object], items: Sequence[object], iters: int) -> float:
    """Bootstrap standard error of ``aggregation(items)``, documents resampled (ddof 1)."""
    values = canonical(items)
    reps = stats.replicates(values, aggregation, stats.resample_indexes(len(values), iters, SEED))
    finite = reps[~np.isnan(reps)]
    return float(np.std(finite, ddof=1)) if len(finite) > 1 else float("nan")


def stderr_of(aggregation: Callable[..., object]) -> Callable[[Sequence[object]], float | str]:
    """lm-eval's aggregation of ``<metric>_stderr``: the schema bootstrap of ``aggregation``
    over the same per-document values; ``N/A`` (lm-eval's word) when no replicate had a value."""

    def stderr(items: Sequence[object]) -> float | str:
        if len(items) < 2:
            return "N/A"
        own = [registry.carried(item) for item in items]  # the others' values left aside
        value = schema_stderr(aggregation, own, MAX_ITERS)
        return "N/A" if math.isnan(value) else value

    stderr.__name__ = f"{getattr(aggregation, '__name__', 'metric')}_stderr"
    return stderr
