"""Progress for this package's own long phases (the report's bootstraps, a sweep's models).

On a terminal: tqdm bars, as lm-eval uses for its model calls, on stderr, with the rate and the
time left. Elsewhere (a log file, Slurm's output, ``nohup``) a bar would be silent or garble the
file, so a sweep writes ``ModelLines`` instead: one line when a model starts and one when it ends,
with the time it took, the sweep's time so far and an estimate of the rest. ``quiet``: neither.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from tqdm import tqdm


def progress(total: int, description: str, unit: str, quiet: bool = False) -> tqdm:
    return tqdm(
        total=total,
        desc=description,
        unit=f" {unit}",
        file=sys.stderr,
        disable=True if quiet else None,  # None: off when stderr is not a terminal
        dynamic_ncols=True,
        smoothing=0.1,
    )


def duration(seconds: float) -> str:
    """``42s``, ``7m02s``, ``1h03m``: short enough for a log line, exact to the unit shown."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def time_left(
    finished: list[float], running: list[float], waiting: int, at_once: int
) -> float | None:
    """Seconds until the last model ends, if every model takes the mean time of ``finished``:
    each running one its remaining share of it (none if past it), each waiting one all of it,
    ``at_once`` models at a time. None before any model has finished."""
    if not finished:
        return None
    mean = sum(finished) / len(finished)
    work = sum(max(0.0, mean - elapsed) for elapsed in running) + waiting * mean
    return work / max(1, at_once)


class ModelLines:
    """A sweep's log lines for a stream that is not a terminal (one per model start and end)."""

    def __init__(
        self,
        total: int,
        quiet: bool = False,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream or sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.enabled = not quiet and not isatty()
        self.total, self.clock = total, clock
        self.began = clock()
        self.starts: dict[str, float] = {}
        self.took: dict[str, float] = {}
        self.at_once = 1  # the most models seen running together

    def started(self, name: str) -> None:
        """``name`` runs (or has ended before it was seen running); said once."""
        if name in self.starts:
            return
        self.starts[name] = self.clock()
        running = len(self.starts) - len(self.took)
        self.at_once = max(self.at_once, running)
        self._say(f"{name} started ({len(self.starts)}/{self.total}); {self._times()}")

    def finished(self, name: str, state: str) -> None:
        """``name`` ended as ``state`` (done, failed, …)."""
        self.started(name)
        self.took[name] = self.clock() - self.starts[name]
        ended = f"{len(self.took)}/{self.total} ended"
        self._say(f"{name} {state} in {duration(self.took[name])} ({ended}); {self._times()}")

    def _times(self) -> str:
        now = self.clock()
        running = [now - t for n, t in self.starts.items() if n not in self.took]
        waiting = self.total - len(self.starts)
        left = time_left(list(self.took.values()), running, waiting, self.at_once)
        so_far = f"sweep {duration(now - self.began)} so far"
        if len(self.took) == self.total:
            return so_far
        if left is None:
            return f"{so_far}, no estimate of the rest before a model ends"
        return f"{so_far}, about {duration(left)} left (the mean time of the models ended)"

    def _say(self, text: str) -> None:
        if self.enabled:
            print(f"wsc-tasks sweep: {text}", file=self.stream, flush=True)
