"""The version lm-eval records for each task and group of this package (``versions`` in its
results files), read from the YAMLs without loading a task.

A task's figures change meaning when its definition does (a new headline method, another
dataset), and lm-eval's convention is that its ``metadata.version`` changes with it. A sweep
compares the versions a finished run recorded with these, so an upgrade never leaves a model's
scores from an older definition on the leaderboard.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache

from wsc_tasks.tasks.configs import configs


@cache
def current() -> dict[str, float]:
    """``{task or group name: version}`` of every YAML under the include path."""
    out: dict[str, float] = {}
    for name, found in configs().items():
        version = found.metadata.get("version")
        if version is not None:
            out[name] = float(version)
    return out


def changed(recorded: Mapping[str, object]) -> list[tuple[str, object, float]]:
    """``(name, recorded version, current version)`` for each task or group of a results file's
    ``versions`` whose version is not the current one (names this package does not define are
    not its to judge)."""
    now = current()
    out = []
    for name, version in sorted(recorded.items()):
        if name not in now:
            continue
        try:
            same = isinstance(version, int | float | str) and float(version) == now[name]
        except ValueError:
            same = False
        if not same:
            out.append((name, version, now[name]))
    return out
