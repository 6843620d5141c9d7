"""What the reader of a run's figures must know beside them, said once per task.

A task records each note in its own results config (``metadata.notes``: lm-eval writes every task's
config into the results file) and in this process's list, which ``wsc-tasks run`` prints after
lm-eval's tables (``footer``); each note is logged as a warning as well. Examples: a headline that
had to use the token-free method (a chance model without a tokenizer), a metric left out because it
is undefined on the documents evaluated.
"""

from __future__ import annotations

import logging
from typing import Any

from wsc_tasks.lm_eval_types import ConfiguredTask

log = logging.getLogger(f"lm_eval.{__name__}")

_RECORDED: dict[str, list[str]] = {}  # note -> the tasks that recorded it, first-seen order
LISTED = 6  # task names a footer line lists before "and N more"


def results_metadata(task: ConfiguredTask) -> dict[str, Any]:
    """The task's metadata dict, which lm-eval writes into the results file: what the task records
    while it runs is written into it in place (``TaskConventions.dump_config`` says why)."""
    meta = task.config.metadata
    if not isinstance(meta, dict):
        meta = task.config.metadata = dict(meta or {})
    return meta


def add(task: ConfiguredTask, text: str, replaces: str | None = None) -> None:
    """Record ``text`` for ``task`` (an lm-eval task of this package); once per task and text.
    ``replaces``: an earlier note of the task that ``text`` says more completely (in its place)."""
    name = str(task.config.task)
    meta = results_metadata(task)
    found = meta.get("notes")
    notes = [str(note) for note in found] if isinstance(found, list | tuple) else []
    if replaces in notes:
        notes[notes.index(replaces)] = text
        meta["notes"] = list(dict.fromkeys(notes))
        log.warning(f"wsc_tasks: {name}: {text}")
        earlier = _RECORDED.get(replaces, [])
        if name in earlier:
            earlier.remove(name)
            if not earlier:
                del _RECORDED[replaces]
    elif text not in notes:
        meta["notes"] = [*notes, text]
        log.warning(f"wsc_tasks: {name}: {text}")
    tasks = _RECORDED.setdefault(text, [])
    if name not in tasks:
        tasks.append(name)


def recorded() -> dict[str, list[str]]:
    """Every note of this process with the tasks that recorded it."""
    return {text: list(tasks) for text, tasks in _RECORDED.items()}


def clear() -> None:
    _RECORDED.clear()


def footer(found: dict[str, list[str]] | None = None) -> str:
    """The notes as lines to print after lm-eval's tables; empty when there are none."""
    found = recorded() if found is None else found
    if not found:
        return ""
    lines = ["Notes:"]
    for text, tasks in found.items():
        shown = ", ".join(tasks[:LISTED])
        if len(tasks) > LISTED:
            shown += f" and {len(tasks) - LISTED} more"
        lines.append(f"- {shown}: {text}")
    return "\n".join(lines)
