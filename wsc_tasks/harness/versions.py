"""The version lm-eval records for each task and group of this package (``versions`` in its
results files), read from the YAMLs without loading a task.

A task's figures change meaning when its definition does (a new headline method, another
dataset), and lm-eval's convention is that its ``metadata.version`` changes with it. A sweep
compares the versions a finished run recorded with these, so an upgrade never leaves a model's
scores from an older definition on the leaderboard.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import yaml

from wsc_tasks.paths import include_path


class _Loader(yaml.SafeLoader):
    """YAML with lm-eval's ``!function`` tags read as None: only names and versions matter."""


_Loader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _read(path: Path) -> dict[str, Any]:
    found = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506
    return found if isinstance(found, dict) else {}


def _version(config: dict[str, Any], folder: Path) -> Any:
    version = (config.get("metadata") or {}).get("version")
    if version is None and isinstance(config.get("include"), str):
        return _version(_read(folder / config["include"]), folder)
    return version


@cache
def current() -> dict[str, float]:
    """``{task or group name: version}`` of every YAML under the include path."""
    folder = include_path()
    out: dict[str, float] = {}
    for path in sorted(folder.glob("*.yaml")):
        config = _read(path)
        name = config.get("group") or config.get("task")  # a group's ``task`` is its list
        version = _version(config, folder)
        if isinstance(name, str) and version is not None:
            out[name] = float(version)
    return out


def changed(recorded: dict[str, Any]) -> list[tuple[str, Any, float]]:
    """``(name, recorded version, current version)`` for each task or group of a results file's
    ``versions`` whose version is not the current one (names this package does not define are
    not its to judge)."""
    now = current()
    out = []
    for name, version in sorted(recorded.items()):
        if name not in now:
            continue
        try:
            same = float(version) == now[name]
        except (TypeError, ValueError):
            same = False
        if not same:
            out.append((name, version, now[name]))
    return out
