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
from pathlib import Path

import yaml

from wsc_tasks.paths import task_yamls


class _Loader(yaml.SafeLoader):
    """YAML with lm-eval's ``!function`` tags read as None: only names and versions matter."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _read(path: Path) -> dict[str, object]:
    found = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506
    return found if isinstance(found, dict) else {}


def _version(config: dict[str, object], path: Path) -> float | None:
    """The version of the YAML at ``path`` (read into ``config``), or of what it includes
    (relative to its own folder, as lm-eval reads it)."""
    metadata = config.get("metadata")
    version = metadata.get("version") if isinstance(metadata, dict) else None
    include = config.get("include")
    if version is None and isinstance(include, str):
        included = path.parent / include
        return _version(_read(included), included)
    return None if version is None else float(version)


@cache
def current() -> dict[str, float]:
    """``{task or group name: version}`` of every YAML under the include path."""
    out: dict[str, float] = {}
    for path in task_yamls():
        config = _read(path)
        name = config.get("group") or config.get("task")  # a group's ``task`` is its list
        version = _version(config, path)
        if isinstance(name, str) and version is not None:
            out[name] = version
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
