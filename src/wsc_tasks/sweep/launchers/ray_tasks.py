"""``--launcher ray``: one Ray actor per worker, on an existing Ray cluster or a local one.

``--ray-address auto`` (or ``ray://…``, ``HOST:PORT``) joins a running cluster; without it a
local one is started. Each actor is a worker (``sweep.worker``): it takes the sweep's models one
after another from the queue in the shared output folder, in its own process, asking for
``--gpus-per-model`` GPUs (a fraction packs small models onto one GPU; default: 1 where the
cluster has GPUs, else 0) and ``--cpus-per-model`` CPUs; ``--max-parallel K`` gives K actors
(default: one per model). An actor whose process dies is started again and goes on with the queue,
the model it was running first (``--retries`` times); Ctrl-C kills every actor. Ray is an
optional extra: ``pip install 'wsc-tasks[ray]'``.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray import ObjectRef
    from ray.actor import ActorHandle

from wsc_tasks.sweep.launchers.base import (
    Launcher,
    LauncherError,
    RunState,
    Setting,
    count,
    fraction,
    register,
)
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import SweepOptions
from wsc_tasks.sweep.queue import Queue

log = logging.getLogger(f"lm_eval.{__name__}")


class Worker:
    """A Ray actor: a worker of the sweep in the actor's process (Ray has set
    ``CUDA_VISIBLE_DEVICES``), evaluating as the worker command does, which it runs by name as a
    scheduler's job does (``worker.WORKER_MODULE``: the commands stage)."""

    def work(self, path: str, index: int) -> dict[str, str]:
        import os
        from pathlib import Path

        import ray

        from wsc_tasks.sweep import worker
        from wsc_tasks.sweep.runner import request_cache

        queue = Queue.read(Path(path))
        os.environ.update(request_cache(queue.options))  # before lm-eval's import reads it
        actor = ray.get_runtime_context().get_actor_id()
        where = worker.placement(queue, index, f"ray:{actor}")
        command = importlib.import_module(worker.WORKER_MODULE)
        return worker.work(queue, index, where, worker.chosen(queue, command.evaluate))


@register
class RayLauncher(Launcher):
    name = "ray"
    help = "one Ray actor per worker (pip install 'wsc-tasks[ray]')"
    settings = (
        Setting(
            "ray-address",
            "a Ray cluster to join (auto, HOST:PORT, ray://…)",
            unset="a local Ray started for the sweep",
        ),
        Setting(
            "gpus-per-model",
            "GPUs of each worker (0.25: four share one)",
            fraction,
            unset="1 where the cluster has GPUs, else 0",
        ),
        Setting("cpus-per-model", "CPUs of each worker", fraction, 1.0),
        Setting("max-parallel", "workers: actors (0: one per model)", count, 0),
        Setting("retries", "times a worker whose process died starts again", count, 3),
    )
    poll_s = 0.5

    def __init__(self, values: dict[str, Any], options: SweepOptions) -> None:
        super().__init__(values, options)
        missing = self.unavailable(self.values)
        if missing:
            raise LauncherError(f"--launcher ray: {missing}")
        import ray

        self.ray = ray
        self.started_ray = False
        self.queue: Queue | None = None
        self.actors: dict[int, ActorHandle] = {}
        self.refs: dict[int, ObjectRef] = {}  # each worker's run over the queue
        self.ended: dict[int, RunState] = {}

    @classmethod
    def unavailable(cls, values: Mapping[str, Any]) -> str | None:
        if importlib.util.find_spec("ray") is None:
            return "Ray is not installed; pip install 'wsc-tasks[ray]'"
        return None

    def running_at_once(self) -> int | None:
        return int(self.values["max-parallel"]) or None

    def _connect(self) -> None:
        """Join ``--ray-address``, or the Ray this process already runs, or start a local one."""
        address = self.values["ray-address"]
        if self.ray.is_initialized():
            pass
        elif address:
            self.ray.init(address=address, log_to_driver=False)
        else:
            self.ray.init(log_to_driver=False, include_dashboard=False)
            self.started_ray = True
        if self.values["gpus-per-model"] is None:
            has_gpus = self.ray.cluster_resources().get("GPU", 0) > 0
            self.values["gpus-per-model"] = 1.0 if has_gpus else 0.0
        log.info(f"wsc_tasks: sweep: Ray cluster: {self.ray.cluster_resources()}")

    def submit(self, specs: Sequence[ModelSpec]) -> None:
        self._connect()
        gpus = self.values["gpus-per-model"]
        self.queue = Queue.write(self.name, self.options, specs, gpus)
        retries = self.values["retries"]
        actor = self.ray.remote(Worker).options(
            num_gpus=gpus,
            num_cpus=self.values["cpus-per-model"],
            max_restarts=retries,
            max_task_retries=retries,
            name=None,
        )
        size = min(int(self.values["max-parallel"]) or len(specs), len(specs))
        for index in range(size):
            self.actors[index] = actor.remote()
            self.refs[index] = self.actors[index].work.remote(str(self.queue.path), index)

    def states(self) -> dict[str, RunState]:
        if self.queue is None:
            return {}
        if self.refs:
            refs = list(self.refs.values())
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
            for index, ref in list(self.refs.items()):
                if ref not in ready:
                    continue
                del self.refs[index]
                try:
                    self.ray.get(ref)
                    self.ended[index] = RunState("ended")
                except Exception as error:  # an actor that died more than --retries times
                    lines = [line for line in str(error).splitlines() if line.strip()]
                    why = lines[-1].strip() if lines else type(error).__name__
                    self.ended[index] = RunState("ended", f"Ray worker failed: {why}\n{error}")
        return self.queue.states(set(self.refs), (), self.ended)

    def cancel(self) -> None:
        for actor in self.actors.values():
            self.ray.kill(actor, no_restart=True)
        self.refs.clear()

    def close(self) -> None:
        if self.started_ray:
            self.ray.shutdown()
            self.started_ray = False
