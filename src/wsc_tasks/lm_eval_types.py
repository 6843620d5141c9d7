"""The parts of lm-eval's objects this package reads, as Protocols.

lm-eval ships no type information (mypy here knows none of its names): where one of its objects
crosses into this package, the parameter names what is read of it, so that the rest is checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

# lm-eval's log-likelihood answer to one request: (sum of log-probabilities, greedy)
Answer = tuple[float, bool]


class Request(Protocol):
    """lm-eval's ``Instance`` of a log-likelihood request: its (context, continuation) and the
    task that sent it."""

    task_name: str | None

    @property
    def args(self) -> tuple[str, str]: ...


class TaskConfig(Protocol):
    """lm-eval's ``TaskConfig``: the task's name and its metadata."""

    task: str
    metadata: dict[str, object] | None


class ConfiguredTask(Protocol):
    """An lm-eval task, as far as its config goes."""

    @property
    def config(self) -> TaskConfig: ...


class AggregatingTask(ConfiguredTask, Protocol):
    """An lm-eval task as lm-eval aggregates it: its config and the aggregation of each metric
    it lists."""

    def aggregation(self) -> Mapping[str, Callable[..., object]]: ...


def groups_of(results: Mapping[str, Any]) -> list[str]:
    """The groups of an lm-eval results dict (or results file), in its order: those with an
    aggregate row (``groups``), then those without one (``wsc_group``), which ``group_subtasks``
    lists with their members. lm-eval 0.4.10 and 0.4.11 list a task run alone there too, with no
    members: that one is a task."""
    names = list(results.get("groups", {}))
    listed = results.get("group_subtasks", {})
    return names + [name for name, members in listed.items() if members and name not in names]
