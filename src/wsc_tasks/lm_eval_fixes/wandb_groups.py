"""Patched: lm-eval's W&B logger takes a group without an aggregate row for a task.

``WandbLogger.post_init`` counts as groups only the names under ``groups`` in the results, that is
the groups with an aggregate row. A group without one (every group of this package that holds
tasks of more than one kind, ``wsc_group`` first; lm-eval's own ``portuguese_bench`` and others
alike) is then logged as a task: its sample table is looked up under its name (a ``KeyError``:
no sample tables at all), and its row of the results table carries its version as text beside the
tasks' numbers, which W&B refuses. Either way the run ends with "Logging to W&B failed" and
nothing logged. The patch adds every name of ``group_subtasks`` that holds tasks to the logger's
group names after lm-eval's ``post_init`` has run; the logger is otherwise lm-eval's. Upstream:
the logger's handling of heterogeneous groups (issue 1958).
"""

from __future__ import annotations

from typing import Any

from wsc_tasks.lm_eval_fixes.base import GITHUB, PATCH, Fix
from wsc_tasks.lm_eval_types import groups_of

MARK = "_wsc_tasks_groups"  # set on the wrapped post_init


def own_post_init() -> Any:
    """lm-eval's ``WandbLogger.post_init``, unwrapped if the patch is on."""
    from lm_eval.loggers.wandb_logger import WandbLogger

    found = WandbLogger.post_init
    return getattr(found, "__wrapped__", found)


def name_every_group() -> bool:
    """Wrap ``WandbLogger.post_init`` once per process; True if it was wrapped now."""
    from lm_eval.loggers.wandb_logger import WandbLogger

    if getattr(WandbLogger.post_init, MARK, False):
        return False
    lm_eval_post_init = WandbLogger.post_init

    def post_init(self: Any, results: dict[str, Any]) -> None:
        lm_eval_post_init(self, results)
        self.group_names = groups_of(results)

    post_init.__wrapped__ = lm_eval_post_init  # type: ignore[attr-defined]
    post_init.__doc__ = lm_eval_post_init.__doc__
    setattr(post_init, MARK, True)
    WandbLogger.post_init = post_init
    return True


def lm_eval_logs_a_group_without_aggregate_row_as_a_task() -> bool:
    """lm-eval's own ``post_init`` on results holding a group without an aggregate row: the group
    is not among the logger's group names."""
    from lm_eval.loggers.wandb_logger import WandbLogger

    logger = object.__new__(WandbLogger)
    results = {
        "results": {"g": {"alias": "g"}, "t": {"acc,none": 0.5, "alias": " - t"}},
        "group_subtasks": {"g": ["t"], "t": []},
        "configs": {"t": {}},
    }
    own_post_init()(logger, results)
    return "g" not in logger.group_names


FIX = Fix(
    "wandb_groups",
    PATCH,
    "lm-eval's W&B logger logs a group without an aggregate row as a task: no sample tables (a "
    "KeyError) and a results table W&B refuses",
    "WandbLogger.post_init, after lm-eval's, names every group of group_subtasks a group",
    (f"{GITHUB}/issues/1958",),
    still_needed=lm_eval_logs_a_group_without_aggregate_row_as_a_task,
)
