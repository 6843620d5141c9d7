"""``--launcher local``: each model's run a subprocess of this machine.

On CPU the models run one after another. With CUDA devices, one model per device at a time
(``CUDA_VISIBLE_DEVICES``), or ``--per-gpu N`` models sharing each device (small models that leave
most of a GPU idle), or with ``--accelerate`` each model across all devices in turn.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from wsc_tasks.sweep import runner
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
ACCELERATE = flag_setting("accelerate", "each model across all GPUs (accelerate launch), in turn")
PER_GPU = Setting("per-gpu", "models that share one GPU at a time (small models)", positive_int, 1)
DEVICES = Setting("devices", "CUDA devices to use, e.g. 0,1", _devices, unset="all")


@register
class LocalLauncher(Launcher):
    name = "local"
    help = "subprocesses on this machine (the default)"
    settings = (ACCELERATE, PER_GPU, DEVICES)
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
        else:  # device-major: the first model of each device first, then the second…
            share = 1.0 / per_gpu
            self.slots = [
                self._placement(device, share) for _ in range(per_gpu) for device in self.devices
            ]
        self.free: queue.Queue[Placement] = queue.Queue()
        for slot in self.slots:
            self.free.put(slot)
        self.pool = ThreadPoolExecutor(max_workers=len(self.slots))
        self.futures: dict[str, Future[str]] = {}
        self.started: set[str] = set()

    def _placement(self, device: int | None = None, share: float = 1.0) -> Placement:
        if device is None:
            many = self.setting("accelerate") and len(self.devices) > 1
            return Placement(
                launcher=self.name,
                gpus=float(len(self.devices)) if self.setting("accelerate") else 0.0,
                env={**os.environ, "CUDA_VISIBLE_DEVICES": ",".join(map(str, self.devices))}
                if self.devices
                else None,
                processes=len(self.devices) if many else 1,
            )
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(device)}
        return Placement(launcher=self.name, gpus=share, env=env)

    def running_at_once(self) -> int:
        return len(self.slots)

    def _run(self, spec: ModelSpec, ahead: Sequence[ModelSpec]) -> str:
        slot = self.free.get()
        self.started.add(spec.name)
        try:
            return runner.run_one(spec, self.options, slot, ahead)
        finally:
            self.free.put(slot)

    def submit(self, specs: Sequence[ModelSpec]) -> None:
        """Queue the runs in order; each fetches the Hub weights of the next ``--prefetch``."""
        ahead = self.options.prefetch
        for index, spec in enumerate(specs):
            following = specs[index + 1 : index + 1 + ahead]
            self.futures[spec.name] = self.pool.submit(self._run, spec, following)

    def states(self) -> dict[str, RunState]:
        found = {}
        for name, future in self.futures.items():
            if not future.done():
                found[name] = RunState("running" if name in self.started else "queued")
            elif future.cancelled():
                found[name] = RunState("ended", "cancelled", "interrupted")
            elif future.exception() is not None:
                error = future.exception()
                found[name] = RunState("ended", f"{type(error).__name__}: {error}")
            else:
                found[name] = RunState("ended", outcome=future.result())
        return found

    def cancel(self) -> None:
        for future in self.futures.values():
            future.cancel()
        runner.stop_all()

    def close(self) -> None:
        self.pool.shutdown(wait=True, cancel_futures=True)
