"""A sweep's queue in its output folder: the models to run, in order, and what each worker did.

The launcher writes the queue (``.sweep/queue/<stamp>.json``): the sweep's options, the GPUs each
worker holds, and the models in order. Every worker of the sweep (a local process, a Slurm array
task, a Ray actor) walks it in order and takes the first model it may (``next``); the model's
lock (``runner.run_one``) lets only one take it. So workers share one queue with nobody handing
models out, and a worker that comes back (a requeued Slurm task, a restarted Ray actor) goes on
where the folder says. Each worker appends what it does to a file of its own
(``<stamp>.<worker>.jsonl``): a line when it takes a model (``start``) and one when it is done
with it (``end``: done, failed, busy or interrupted, and its seconds). From those lines and the
folder the sweep tells a running model from a queued one, and one whose worker died with it (a
start without an end) from one a worker gave back.

A worker takes a model without a verdict written since the queue was (an older ``done.json`` or
``error.txt`` is for the runner to judge), not held by a live process, not given back
interrupted by another worker (a Slurm task requeued or cancelled: its restart takes it again,
or the sweep settles it), and not started ``MAX_DEATHS`` times by workers that died with it (out
of memory, a node failure): the sweep then settles it with an ``error.txt``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wsc_tasks.paths import SWEEP_DONE, SWEEP_ERROR, write_text_aside
from wsc_tasks.sweep.folder import bookkeeping, model_lock
from wsc_tasks.sweep.lock import holder_alive
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import RunState, SweepOptions

FOLDER = "queue"  # under <out>/.sweep/
MAX_DEATHS = 2  # workers that may die with one model before the sweep settles it


@dataclass(frozen=True)
class History:
    """What the workers' lines say of each model: its last line, and how many of its starts
    have no end (their worker died with it)."""

    last: dict[str, dict[str, Any]]
    deaths: dict[str, int]


@dataclass(frozen=True)
class Queue:
    path: Path  # the queue's file; its lines are <stem>.<worker>.jsonl beside it
    launcher: str
    options: SweepOptions
    specs: tuple[ModelSpec, ...]
    gpus: float = 0.0  # GPUs each worker holds (recorded in each model's done.json)
    processes: int = 1  # > 1: each model under ``accelerate launch`` across them

    @classmethod
    def write(
        cls,
        launcher: str,
        options: SweepOptions,
        specs: Sequence[ModelSpec],
        gpus: float = 0.0,
        processes: int = 1,
    ) -> Queue:
        """A new queue of ``specs`` in the sweep's folder (its path absolute, for workers on
        other nodes)."""
        options = dataclasses.replace(options, out=options.out.resolve())
        folder = bookkeeping(options.out, FOLDER)
        stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{specs[0].name}"
        path = folder / f"{stem}.json"
        number = 1
        while path.exists():  # two queues of one sweep within a second
            number += 1
            path = folder / f"{stem}-{number}.json"
        queue = cls(path, launcher, options, tuple(specs), gpus, processes)
        manifest = {"launcher": launcher, "options": options.to_json(), "gpus": gpus,
                    "processes": processes, "models": [vars(spec) for spec in specs]}  # fmt: skip
        write_text_aside(path, json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        return queue

    @classmethod
    def read(cls, path: Path) -> Queue:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        specs = tuple(ModelSpec(**entry) for entry in manifest["models"])
        options = SweepOptions.from_json(manifest["options"])
        gpus, processes = float(manifest["gpus"]), int(manifest.get("processes", 1))
        return cls(path, str(manifest["launcher"]), options, specs, gpus, processes)

    @property
    def name(self) -> str:
        return self.path.stem

    def worker(self, index: int) -> str:
        """A worker's name: the queue's and its index (an array task's, an actor's)."""
        return f"{self.name}.{index}"

    # -- what the workers did --------------------------------------------------------------------

    def report(self, index: int, event: str, model: str, **more: Any) -> None:
        """One line of worker ``index``: it took (``start``) or is done with (``end``) a model."""
        line = {"time": round(time.time(), 3), "worker": index, "event": event, "model": model,
                "host": socket.gethostname(), "pid": os.getpid(), **more}  # fmt: skip
        path = self.path.with_name(f"{self.worker(index)}.jsonl")
        with path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(line, sort_keys=True) + "\n")

    def lines(self) -> list[dict[str, Any]]:
        """Every worker's lines, each worker's in its order, workers one after another."""
        found = []
        for path in sorted(self.path.parent.glob(f"{self.name}.*.jsonl")):
            for text in path.read_text(encoding="utf-8").splitlines():
                try:
                    found.append(json.loads(text))
                except ValueError:  # a line cut by a kill: its worker died there
                    continue
        return found

    def history(self) -> History:
        lines = self.lines()
        taken: dict[tuple[int, str], int] = {}  # (worker, model) -> its start line's position
        skipped: set[int] = set()  # a start and end of a model another worker held: no run
        for position, line in enumerate(lines):
            key = (line["worker"], line["model"])
            if line["event"] == "start":
                taken[key] = position
            elif line["event"] == "end" and line.get("state") == "busy" and key in taken:
                skipped.update((taken.pop(key), position))
        last: dict[str, dict[str, Any]] = {}
        deaths: dict[str, int] = {}
        open_start: dict[int, str] = {}  # worker -> the model of its start without an end yet
        for position, line in enumerate(lines):
            if position in skipped:  # what a model held by others last saw: that it was held
                if line["event"] == "end" and line["model"] not in last:
                    last[line["model"]] = line
                continue
            worker, model = line["worker"], line["model"]
            if line["event"] == "start":
                if worker in open_start:  # it started again without an end: it died there
                    died = open_start[worker]
                    deaths[died] = deaths.get(died, 0) + 1
                open_start[worker] = model
            elif line["event"] == "end" and open_start.get(worker) == model:
                del open_start[worker]
            if model not in last or _held(last[model]) or line["time"] >= last[model]["time"]:
                last[model] = line
        for model in open_start.values():  # running now, or died with it: ``next`` tells
            deaths[model] = deaths.get(model, 0) + 1
        return History(last, deaths)

    def settled(self, name: str) -> bool:
        """Whether the model has a verdict written since the queue was."""
        since = self.path.stat().st_mtime
        for verdict in (SWEEP_DONE, SWEEP_ERROR):
            try:
                if (self.options.out / name / verdict).stat().st_mtime >= since:
                    return True
            except FileNotFoundError:
                continue
        return False

    # -- what a worker takes ---------------------------------------------------------------------

    def _takeable(self, spec: ModelSpec, index: int, history: History) -> bool:
        if self.settled(spec.name) or holder_alive(model_lock(self.options.out, spec.name)):
            return False
        last = history.last.get(spec.name)
        if last and last["event"] == "end" and last.get("state") == "interrupted":
            return bool(last["worker"] == index)  # its own restart takes it again
        return history.deaths.get(spec.name, 0) < MAX_DEATHS

    def next(self, index: int, tried: Collection[str] = ()) -> ModelSpec | None:
        """The first model worker ``index`` may take (see the module docstring), or None."""
        history = self.history()
        for spec in self.specs:
            if spec.name not in tried and self._takeable(spec, index, history):
                return spec
        return None

    def following(self, spec: ModelSpec, count: int, index: int) -> list[ModelSpec]:
        """The ``count`` models after ``spec`` that a worker may take next: their weights are
        fetched while ``spec`` evaluates."""
        history = self.history()
        after = list(self.specs[self.specs.index(spec) + 1 :])
        return [s for s in after if self._takeable(s, index, history)][:count]

    # -- what the sweep sees ---------------------------------------------------------------------

    def states(
        self, running: Collection[int], waiting: Collection[int], ended: dict[int, RunState]
    ) -> dict[str, RunState]:
        """Each model's run, from the folder and the workers' lines. ``running``: the workers
        whose process lives; ``waiting``: those that may still start (queued, requeued,
        restarting); ``ended``: how each other worker ended (a scheduler's account, in its
        ``detail``; or an ``outcome``)."""
        history = self.history()
        alive = set(running) | set(waiting)
        found = {}
        for spec in self.specs:
            name = spec.name
            last = history.last.get(name)
            worker: int = last["worker"] if last else -1
            if self.settled(name):
                found[name] = RunState("ended")
            elif last and last["event"] == "start" and worker in running:
                found[name] = RunState("running")
            elif last and last["event"] == "end" and last.get("state") == "interrupted":
                found[name] = (
                    RunState("queued")
                    if worker in alive
                    else ended.get(worker, RunState("ended", outcome="interrupted"))
                )
            elif alive and history.deaths.get(name, 0) < MAX_DEATHS:
                found[name] = RunState("queued")
            elif worker in alive:  # its worker died with it; its own restart may settle it
                found[name] = RunState("queued")
            elif last is None:
                found[name] = RunState("ended", "no worker of the sweep took it", "interrupted")
            elif last["event"] == "end":
                found[name] = RunState("ended", outcome=str(last.get("state")))
            else:  # its worker died with it
                how = ended.get(worker, RunState("ended"))
                deaths = history.deaths.get(name, 0)
                detail = how.detail or f"its worker (pid {last['pid']} on {last['host']}) died"
                if deaths > 1:
                    detail = f"{deaths} workers died while running it; the last: {detail}"
                found[name] = RunState("ended", detail)
        return found

    def job_of(self, name: str) -> str | None:
        """The scheduler's job of the worker that took the model last (None if none did)."""
        last = self.history().last.get(name)
        return str(last["job"]) if last and last.get("job") else None


def _held(line: dict[str, Any]) -> bool:
    return bool(line["event"] == "end" and line.get("state") == "busy")


def queues(out: Path) -> list[Path]:
    """The queues written in a sweep folder, oldest first."""
    return sorted(bookkeeping(out, FOLDER).glob("*.json"), key=lambda p: p.stat().st_mtime)
