"""This package's task and group YAMLs as lm-eval merges them, read without building a task.

lm-eval reads a YAML's ``include`` first (relative to the YAML's own folder) and lets the YAML's
own keys win; ``!function`` names a class, kept here as its dotted name. What the sweep compares
(``versions``), what the command line knows of names before lm-eval's index, and the task tables
the family READMEs show (``report.readme_blocks``) are read from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from wsc_tasks.paths import include_path, task_yamls


class _Loader(yaml.SafeLoader):
    """YAML with lm-eval's ``!function`` tags read as the dotted name they give."""


_Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def read(path: Path) -> dict[str, Any]:
    """The YAML at ``path`` merged with what it includes, as lm-eval merges them."""
    found = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)  # noqa: S506
    config = dict(found) if isinstance(found, dict) else {}
    include = config.pop("include", None)
    if isinstance(include, str):
        config = {**read(path.parent / include), **config}
    return config


@dataclass(frozen=True)
class TaskConfig:
    """One task or group: its name, its YAML, its task family (the YAML's folder; "" for the
    top of the include path) and its merged config."""

    name: str
    path: Path
    family: str
    config: dict[str, Any]

    @property
    def group(self) -> bool:
        return "group" in self.config

    @property
    def class_name(self) -> str:
        """The task's class (``SchemaTask``, ``ConsistencyTask``…); "" for a group."""
        return str(self.config.get("class", "")).rpartition(".")[2]

    @property
    def metadata(self) -> dict[str, Any]:
        found = self.config.get("metadata")
        return found if isinstance(found, dict) else {}


@cache
def configs() -> dict[str, TaskConfig]:
    """Every task and group of the include path, by name, in the order of their files."""
    root = include_path()
    found = {}
    for path in task_yamls():
        config = read(path)
        name = config.get("group") or config.get("task")  # a group's ``task`` is its list
        if isinstance(name, str):
            folder = path.parent.relative_to(root)
            family = "" if folder == Path() else folder.as_posix()
            found[name] = TaskConfig(name, path, family, config)
    return found


def families() -> list[str]:
    """The task families: the folders of the include path that hold task YAMLs."""
    return sorted({c.family for c in configs().values() if c.family})
