"""lm-eval patch 8, ``without_lm_eval_tasks``: what it changes and why, then the change."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from wsc_tasks.harness.patches.base import (
    GITHUB,
    TESTED,
    Patch,
)


# lm-eval's ``TaskManager`` reads the YAMLs of its thousands of tasks before it loads any (about 14
# s of CPU); a run of this package's tasks needs none of them.
# ``TaskManager(include_defaults=False)`` exists since issue #1801 asked for it, but ``lm_eval run``
# has no flag for it, so while a ``wsc-tasks run`` of only our tasks lasts, it is the default.
# Undone when the block ends.
@contextlib.contextmanager
def without_lm_eval_tasks() -> Iterator[None]:
    """While the block runs, a ``TaskManager`` indexes only the folders it is given."""
    from lm_eval.tasks import manager

    init_before = manager.TaskManager.__init__

    def init(self: object, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("include_defaults", False)
        init_before(self, *args, **kwargs)

    manager.TaskManager.__init__ = init
    try:
        yield
    finally:
        manager.TaskManager.__init__ = init_before


def lm_eval_run_has_no_flag_to_skip_its_own_tasks() -> bool:
    """lm-eval's ``run`` command never passes ``include_defaults`` to its ``TaskManager``."""
    import inspect

    from lm_eval._cli import run

    return "include_defaults" not in inspect.getsource(run)


PATCH = Patch(
    "without_lm_eval_tasks",
    "lm_eval.tasks.manager.TaskManager.__init__",
    TESTED,
    (f"{GITHUB}/issues/1801",),
    still_needed=lm_eval_run_has_no_flag_to_skip_its_own_tasks,
)
