"""Patch, on lm-eval 0.4.10 and 0.4.11 only: a task with a class of its own gets the metadata.

lm-eval merges its ``TaskManager``'s metadata (which its CLI makes from ``--model_args`` and
``--metadata``) into the config of every task it loads; 0.4.10 and 0.4.11 skip the tasks whose
YAML names a class of their own (``class:``), which all of this package's tasks do: they would
never see ``--metadata``, nor the model's tokenizer, and would score with their defaults while
the results record the metadata asked for. On those releases, while a ``TaskManager`` loads tasks
(``load_task_or_group``, ``load_config``), its metadata is offered to this package's task classes
(``offered``, a context variable only they read), which merge it as later releases do. Where
lm-eval merges it itself, the patch is not applied. It is applied when ``wsc_tasks`` is imported
(``wsc-tasks run``; from Python, ``from wsc_tasks.paths import include_path`` before building the
``TaskManager``); a plain ``lm_eval`` run imports the package only while lm-eval loads the first
task, too late: the tasks then say in their notes that lm-eval withheld the metadata and run
their token-free method (``withheld``).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Mapping
from typing import Any

from wsc_tasks.lm_eval_fixes.base import PATCH, Fix, installed_lm_eval, within

MARK = "_wsc_tasks_offers_metadata"
RELEASES = ("0.4.10", "0.4.12")  # the releases that behave so: the patch is applied there only
_OFFERED: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar(
    "wsc_tasks_task_manager_metadata", default=None
)


def offered() -> dict[str, Any] | None:
    """The metadata of the ``TaskManager`` loading tasks now, where lm-eval does not merge it
    into a class task's config itself; None where no manager offers it (lm-eval merges it
    itself, or this package was imported while lm-eval was already loading tasks)."""
    found = _OFFERED.get()
    return None if found is None else dict(found)


def withheld() -> bool:
    """Whether the task being loaded now gets none of its manager's metadata: lm-eval 0.4.10 or
    0.4.11 loading it without the offer (a plain ``lm_eval`` run imports this package only while
    it loads the first task, too late to wrap the loading)."""
    return _OFFERED.get() is None and within(installed_lm_eval(), RELEASES)


def _offering(load: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(load)
    def offering(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = _OFFERED.set(dict(getattr(self, "metadata", None) or {}))
        try:
            return load(self, *args, **kwargs)
        finally:
            _OFFERED.reset(token)

    setattr(offering, MARK, True)
    return offering


def offer_metadata() -> bool:
    """Wrap the manager's loading methods (once, and only where lm-eval still needs it); True
    if wrapped now."""
    from lm_eval.tasks import TaskManager

    if getattr(TaskManager.load_task_or_group, MARK, False):
        return False
    if (
        not within(installed_lm_eval(), RELEASES)
        or not lm_eval_leaves_class_tasks_without_metadata()
    ):
        return False
    for name in ("load_task_or_group", "load_config"):
        setattr(TaskManager, name, _offering(getattr(TaskManager, name)))
    return True


@functools.cache
def lm_eval_leaves_class_tasks_without_metadata() -> bool:
    """lm-eval's ``TaskManager`` loads a task whose YAML names its own class with the YAML's
    metadata alone, not the manager's."""
    import sys
    import tempfile
    from pathlib import Path

    from lm_eval.tasks import TaskManager

    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "wsc_tasks_probe_class.py").write_text(
            "class Probe:\n"
            "    task_name = 'wsc_tasks_probe'\n"
            "    def __init__(self, config=None):\n"
            "        self.probe_metadata = dict((config or {}).get('metadata') or {})\n"
        )
        Path(folder, "wsc_tasks_probe.yaml").write_text(
            "task: wsc_tasks_probe\nclass: !function wsc_tasks_probe_class.Probe\n"
            "metadata:\n  version: 1\n"
        )
        manager = TaskManager(include_path=folder, include_defaults=False, metadata={"asked": 1})
        load = TaskManager.load_task_or_group
        task = getattr(load, "__wrapped__", load)(manager, ["wsc_tasks_probe"])["wsc_tasks_probe"]
        sys.modules.pop("wsc_tasks_probe_class", None)
    return "asked" not in task.probe_metadata


FIX = Fix(
    "class_task_metadata",
    PATCH,
    "lm-eval 0.4.10 and 0.4.11 give a task with a class of its own the metadata of its YAML "
    "only, not the TaskManager's (--metadata, the model arguments)",
    "on those releases, the TaskManager's metadata is offered to this package's task classes "
    "while it loads them, and they merge it as later releases do",
    lm_eval=RELEASES,
    still_needed=lm_eval_leaves_class_tasks_without_metadata,
)
