"""``--launcher local``: worker processes on this machine sharing the sweep's queue.

Each worker (``sweep.worker``) runs one model after another in its own process. On CPU one
worker runs by default; ``--workers N`` starts N. With CUDA devices, one worker per device
(``CUDA_VISIBLE_DEVICES``), or ``--per-gpu N`` workers sharing each device (small models that
leave most of a GPU idle); ``--workers`` then spreads its workers over those slots in turn. With
``--accelerate`` each model runs across all devices in turn, in a process of its own. Workers
die with the sweep (``tether``); a worker killed by a signal (out of memory, say) is replaced,
and its model is run again by the next worker, twice at most (``queue``). Ctrl-C sends SIGTERM
to every worker (each stops its run and its downloads), then SIGKILL to what is left.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from typing import IO, Any

from wsc_tasks.sweep import tether, worker
from wsc_tasks.sweep.launchers.base import (
    Launcher,
    LauncherError,
    RunState,
    Setting,
    flag_setting,
    positive_int,
    register,
)
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import Placement, SweepOptions
from wsc_tasks.sweep.queue import Queue
from wsc_tasks.sweep.runner import request_cache

STOP_S = 3.0  # how long Ctrl-C waits for the workers to stop their runs before killing them


def _devices(text: object) -> tuple[int, ...]:
    found = tuple(int(part) for part in str(text).split(",") if part.strip())
    if any(device < 0 for device in found):
        raise ValueError(f"expected CUDA device numbers such as 0,1, got {text!r}")
    return found


def cuda_devices() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:  # pragma: no cover - torch is a dependency
        return 0


# the settings, each its own name: a variant (a subclass) lists those it keeps and adds its own;
# one it leaves out takes its default (``Launcher.setting``)
WORKERS = Setting(
    "workers", "processes, each running models in turn", positive_int, unset="1 per GPU, else 1"
)
ACCELERATE = flag_setting("accelerate", "each model across all GPUs (accelerate launch), in turn")
PER_GPU = Setting("per-gpu", "workers that share one GPU (small models)", positive_int, 1)
DEVICES = Setting("devices", "CUDA devices to use, e.g. 0,1", _devices, unset="all")


class Worker:
    """One worker process of the sweep, and its log."""

    def __init__(self, index: int, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
        self.index, self.process, self.log = index, process, log

    def ended(self) -> bool:
        return self.process.poll() is not None

    def how(self) -> str:
        code = self.process.returncode
        if code is not None and code < 0:
            name = signal.Signals(-code).name
            what = f"killed by {name}" + (" (out of memory?)" if -code == signal.SIGKILL else "")
        else:
            what = f"ended with exit status {code}"
        return f"its worker (pid {self.process.pid}) was {what}; its log: {self.log.name}"


@register
class LocalLauncher(Launcher):
    name = "local"
    help = "worker processes on this machine (the default)"
    settings = (WORKERS, ACCELERATE, PER_GPU, DEVICES)
    poll_s = 0.2

    def __init__(self, values: dict[str, Any], options: SweepOptions) -> None:
        super().__init__(values, options)
        devices = self.setting("devices")
        self.devices: tuple[int, ...] = (
            devices if devices is not None else tuple(range(cuda_devices()))
        )
        per_gpu = self.setting("per-gpu")
        if self.setting("accelerate") and per_gpu > 1:
            raise LauncherError("--accelerate and --per-gpu: one model across all GPUs, or several")
        if self.setting("accelerate") or not self.devices:
            self.slots: list[Placement] = [self._placement()]
        else:  # device-major: the first worker of each device first, then the second…
            share = 1.0 / per_gpu
            self.slots = [
                self._placement(device, share) for _ in range(per_gpu) for device in self.devices
            ]
        self.size = self.setting("workers") or len(self.slots)
        self.queue: Queue | None = None
        self.workers: dict[int, Worker] = {}
        self.replaced: set[int] = set()  # workers killed by a signal, each started again
        self.cancelled = False

    def _placement(self, device: int | None = None, share: float = 1.0) -> Placement:
        if device is None:
            many = self.setting("accelerate") and len(self.devices) > 1
            return Placement(
                launcher=self.name,
                gpus=float(len(self.devices)) if self.setting("accelerate") else 0.0,
                env={"CUDA_VISIBLE_DEVICES": ",".join(map(str, self.devices))}
                if self.devices
                else None,
                processes=len(self.devices) if many else 1,
            )
        return Placement(launcher=self.name, gpus=share, env={"CUDA_VISIBLE_DEVICES": str(device)})

    def running_at_once(self) -> int:
        return self.size

    def submit(self, specs: Sequence[ModelSpec]) -> None:
        """The queue of ``specs``, and its workers."""
        slot = self.slots[0]
        self.queue = Queue.write(self.name, self.options, specs, slot.gpus, slot.processes)
        for index in range(min(self.size, len(specs))):
            self._start(index)

    def _start(self, index: int) -> None:
        assert self.queue is not None
        slot = self.slots[index % len(self.slots)]
        env = {**os.environ, **(slot.env or {}), **request_cache(self.options)}
        log = self.queue.path.with_name(f"{self.queue.worker(index)}.log").open("ab")
        process = subprocess.Popen(
            tether.command(os.getpid(), worker.command(self.queue.path, index)),
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its own process group: Ctrl-C reaches the sweep alone
        )
        self.workers[index] = Worker(index, process, log)

    def states(self) -> dict[str, RunState]:
        if self.queue is None:
            return {}
        for gone in list(self.workers.values()):
            killed = gone.ended() and gone.process.returncode < 0
            if killed and gone.index not in self.replaced and not self.cancelled:
                self.replaced.add(gone.index)  # out of memory, say: its model runs again
                if len(self.replaced) <= len(self.queue.specs):
                    self._start(max(self.workers) + 1)
        running = {i for i, w in self.workers.items() if not w.ended()}
        ended = {i: RunState("ended", w.how()) for i, w in self.workers.items() if w.ended()}
        return self.queue.states(running, (), ended)

    def cancel(self) -> None:
        """SIGTERM to every worker (its run and downloads stop), SIGKILL after ``STOP_S``."""
        self.cancelled = True
        alive = [w for w in self.workers.values() if not w.ended()]
        for each in alive:
            _signal(each.process.pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_S
        while any(not w.ended() for w in alive) and time.monotonic() < deadline:
            time.sleep(0.05)
        for each in alive:
            _signal(each.process.pid, signal.SIGKILL)  # the group: a run of its own, downloads
            each.process.wait()

    def close(self) -> None:
        for each in self.workers.values():
            if not each.ended():
                _signal(each.process.pid, signal.SIGKILL)
                each.process.wait()
            each.log.close()


def _signal(group: int, number: int) -> None:
    try:
        os.killpg(group, number)
    except ProcessLookupError:
        pass
