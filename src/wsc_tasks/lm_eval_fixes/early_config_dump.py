"""Avoided: lm-eval 0.4.10 and 0.4.11 copy a task's config into the results before it runs.

Those releases dump every task's config (``TaskOutput.from_taskdict``) as the evaluation starts,
and write that copy into the results file, so whatever a task records in its config while it
runs is lost: this package's notes (why a headline used the token-free method, a metric left
undefined) and a served model's log-probability check. From 0.4.12 the configs are dumped after
the run. This package's tasks dump their config with their own metadata dict rather than a copy
of it, and record into that dict in place (``tasks.conventions.TaskConventions.dump_config``,
``tasks.notes.results_metadata``), so the results file carries what they recorded on every
release; no code of lm-eval is changed.
"""

from __future__ import annotations

from wsc_tasks.lm_eval_fixes.base import AVOIDED, Fix

RELEASES = ("0.4.10", "0.4.12")


def lm_eval_dumps_task_configs_before_the_run() -> bool:
    """lm-eval's evaluator takes each task's config when it lists the tasks, before any request
    runs (``TaskOutput.from_taskdict`` calls ``dump_config``)."""
    import inspect

    from lm_eval import evaluator_utils

    task_output = getattr(evaluator_utils, "TaskOutput", None)
    listing = getattr(task_output, "from_taskdict", None)
    return listing is not None and "dump_config" in inspect.getsource(listing)


FIX = Fix(
    "early_config_dump",
    AVOIDED,
    "lm-eval 0.4.10 and 0.4.11 copy each task's config into the results before the task runs, so "
    "what a task records while it runs never reaches the results file",
    "this package's tasks dump their config with their own metadata dict, not a copy, and record "
    "their notes into it in place",
    lm_eval=RELEASES,
    still_needed=lm_eval_dumps_task_configs_before_the_run,
)
