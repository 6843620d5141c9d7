"""lm-eval patch 6, ``drop_expected_group_gaps``: what it changes and why, then the change."""

from __future__ import annotations

import logging
from functools import lru_cache

from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
    records_of,
)
from wsc_tasks.metrics.registry import ACC, column

# Our groups mix tasks that report accuracies with consistency tasks that report pair metrics; each
# group row averages a metric over the tasks that have it, by design (task_configs/README.md), so
# lm-eval's per-group warning "Group '<name>': metric '<m>' is missing in k/n tasks" (logged by
# ``lm_eval.api.group.Group.aggregate``) is dropped for our groups, and only for them. A logging
# filter, not a code patch: if lm-eval rewords the message, the warning shows again (and its
# check, ``still_needed``, fails). No upstream issue found; upstream, a group could declare that
# its metrics come from a subset of its tasks.
GROUP_LOGGER = "lm_eval.api.group"


class ExpectedGroupGaps(logging.Filter):
    """Drops lm-eval's "metric missing" warning for this package's groups."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not (
            message.startswith("Group '")
            and "' is missing in " in message
            and message.split("'")[1] in our_groups()
        )


@lru_cache(maxsize=1)
def our_groups() -> frozenset[str]:
    """The ``group:`` names of this package's YAMLs."""
    from importlib.resources import files

    import yaml

    names = set()
    for path in files("wsc_tasks.task_configs").iterdir():
        if path.name.endswith(".yaml") and "\ngroup:" in "\n" + path.read_text():
            names.add(yaml.safe_load(path.read_text())["group"])
    return frozenset(names)


def _drop_expected_group_gaps() -> bool:
    logger = logging.getLogger(GROUP_LOGGER)
    if any(isinstance(f, ExpectedGroupGaps) for f in logger.filters):
        return False
    logger.addFilter(ExpectedGroupGaps())
    return True


def lm_eval_warns_of_a_metric_missing_in_a_group() -> bool:
    """lm-eval's ``Group.aggregate`` warns that a group's metric is missing in one of its tasks,
    in the words ``ExpectedGroupGaps`` drops (for one of this package's groups)."""
    from types import SimpleNamespace

    from lm_eval.api.group import Group
    from lm_eval.api.task import ConfigurableTask
    from lm_eval.config.group import AggMetricConfig

    ours = sorted(our_groups())[0]
    group = Group(ours, aggregate_metric_list=[AggMetricConfig(ACC, ["none"])])
    for name in ("with_acc", "without_acc"):
        task = ConfigurableTask.__new__(ConfigurableTask)
        task._config = SimpleNamespace(task=name)
        group.add(task)
    with records_of(GROUP_LOGGER) as records:
        group.aggregate(
            {
                "with_acc": {"acc,none": 0.5, "acc_stderr,none": 0.1, "sample_len": 4},
                "without_acc": {"pair_consistency,none": 1.0, "sample_len": 4},
            }
        )
    dropped = [r for r in records if not ExpectedGroupGaps().filter(r)]
    return len(dropped) == 1 and f"metric '{column(ACC)}' is missing in " in dropped[0].getMessage()


PATCH = Patch(
    "drop_expected_group_gaps",
    "logger lm_eval.api.group",
    TESTED,
    still_needed=lm_eval_warns_of_a_metric_missing_in_a_group,
)
