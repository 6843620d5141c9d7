"""lm-eval's ``stderr`` column for this package's metrics: a bootstrap over schemas.

lm-eval asks ``stderr_for_metric(aggregation, bootstrap_iters)`` for every metric; it knows no error
for our aggregations and reports ``N/A`` (and the binomial error it would give ``mean`` ignores that
the problems of a schema are not independent, thesis §3.8.2). This module answers for every
metric of ``metrics.registry``: the standard deviation of the metric over
``min(bootstrap_iters, MAX_ITERS)`` resamples of the documents (schemas), with a fixed seed.
Counts whose record says ``stderr=False`` (``n_problems``, ``n_schemas``…) get none.
``--bootstrap_iters 0`` turns it off, as for lm-eval's own metrics.

lm-eval gathers every process's per-document values to rank 0 before it aggregates (concatenated
in rank order); the values are sorted into a canonical order first, so the error is the same for
1 and N processes.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import TypeVar

import numpy as np

from wsc_tasks.metrics import registry, stats

log = logging.getLogger(f"lm_eval.{__name__}")

MAX_ITERS = 1000  # lm-eval's default of 100000 would cost minutes per task for a second digit
SEED = 1234  # lm-eval's own numpy seed, for the look of it; any fixed value will do


T = TypeVar("T")  # one per-document value, as the task's process_results returned it


def is_ours(aggregation: Callable[..., object]) -> bool:
    """A metric of ``registry`` (an aggregation bound to its record, or a pure aggregate)."""
    return registry.record_of(aggregation) is not None


def is_count(aggregation: Callable[..., object]) -> bool:
    """A metric whose record asks for no stderr (counts the data fixes: lm-eval prints N/A)."""
    found = registry.record_of(aggregation)
    return found is not None and not found.stderr


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
