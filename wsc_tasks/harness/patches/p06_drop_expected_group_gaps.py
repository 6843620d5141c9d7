"""lm-eval patch 6, ``drop_expected_group_gaps``: what it changes and why, then the change."""

from __future__ import annotations

import logging
from functools import lru_cache

from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
)

PATCH = Patch("drop_expected_group_gaps", "logger lm_eval.api.group", TESTED)


# Our groups mix tasks that report accuracies with consistency tasks that report pair metrics; each
# group row averages a metric over the tasks that have it, by design (task_configs/README.md), so
# lm-eval's per-group warning "Group '<name>': metric '<m>' is missing in k/n tasks" (logged by
# ``lm_eval.api.group.Group.aggregate``) is dropped for our groups, and only for them. A logging
# filter, not a code patch: if lm-eval rewords the message, the warning shows again (and
# tests/test_patches.py fails). No upstream issue found; upstream, a group could declare that its
# metrics come from a subset of its tasks.
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
