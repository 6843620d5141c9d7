"""The parts of lm-eval's objects this package reads, as Protocols.

lm-eval ships no type information (mypy here knows none of its names): where one of its objects
crosses into this package, the parameter names what is read of it, so that the rest is checked.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

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
