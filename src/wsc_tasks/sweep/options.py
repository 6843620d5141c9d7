"""What a sweep asks of every model's run, where one run of one model is placed, and how its
launcher sees it.

Objects instead of long parameter lists: ``SweepOptions`` is the same for every model of a sweep
(and travels to a scheduler's job as JSON), ``Placement`` is what a launcher decides for the runs
of one worker (its GPUs, its environment, the scheduler's id of the job), ``RunState`` what a
launcher knows of one model's run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SweepOptions:
    out: Path
    tasks: str
    lm_eval_flags: tuple[str, ...] = ()
    cache: bool = True  # lm-eval's answer cache (--use_cache, a file per model fingerprint) and
    # its request cache (--cache_requests)
    retry_failed: bool = False
    quiet: bool = False
    keep_paths: bool = False  # local model paths written as given (else <last component>)
    prefetch: int = 1  # Hub models whose weights are fetched while the current one evaluates
    keep_weights: bool = False  # keep each Hub model's snapshot in the cache after its run
    process_per_model: bool = False  # each model's run a process of its own (isolation)

    def to_json(self) -> dict[str, object]:
        found = asdict(self)
        found["out"] = str(self.out)
        found["lm_eval_flags"] = list(self.lm_eval_flags)
        return found

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SweepOptions:
        return cls(
            out=Path(data["out"]),
            tasks=str(data["tasks"]),
            lm_eval_flags=tuple(data.get("lm_eval_flags", ())),
            cache=bool(data.get("cache", True)),
            retry_failed=bool(data.get("retry_failed", False)),
            quiet=bool(data.get("quiet", False)),
            keep_paths=bool(data.get("keep_paths", False)),
            prefetch=int(data.get("prefetch", 1)),
            keep_weights=bool(data.get("keep_weights", False)),
            process_per_model=bool(data.get("process_per_model", False)),
        )


@dataclass(frozen=True)
class Placement:
    """Where one model's run goes: recorded in its ``done.json`` (GPUs held, job id)."""

    launcher: str = "local"
    gpus: float = 0.0  # GPUs the run holds (a fraction when several models share one)
    env: Mapping[str, str] | None = field(default=None, compare=False)  # None: inherit
    processes: int = 1  # > 1: under ``accelerate launch`` (a process of its own per model)
    job: str | None = None  # the scheduler's id of this run, e.g. Slurm's 12_3
    lock_wait_s: float = 0.0  # how long to wait for the model's lock (a requeued job's old one)
    worker: str = ""  # the worker that runs it: ``<queue>.<index>`` (``sweep.queue``)


@dataclass(frozen=True)
class RunState:
    """A submitted run as its launcher sees it: queued, running, or ended. ``detail`` says, for an
    ended run, how the launcher saw it end (a scheduler's state and log), for ``error.txt``."""

    state: str
    detail: str = ""
    outcome: str | None = None  # what the run itself reported, where the launcher knows it

    @property
    def ended(self) -> bool:
        return self.state == "ended"
