"""``--launcher ray``: each model's run a Ray task, on an existing Ray cluster or a local one.

``--ray-address auto`` (or ``ray://…``, ``HOST:PORT``) joins a running cluster; without it a
local one is started. Each task asks for ``--gpus-per-model`` GPUs (a fraction packs small models
onto one GPU; default: 1 where the cluster has GPUs, else 0) and ``--cpus-per-model`` CPUs, and
runs the same single-model code path as a local sweep into the shared output folder. A task whose
worker dies is retried (``--retries``); Ctrl-C cancels every task. Ray is an optional extra:
``pip install 'wsc-tasks[ray]'``.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ray import ObjectRef

from wsc_tasks.sweep.launchers.base import (
    Launcher,
    LauncherError,
    RunState,
    Setting,
    count,
    fraction,
    register,
)
from wsc_tasks.sweep.lock import STALE_S
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import Placement, SweepOptions

log = logging.getLogger(f"lm_eval.{__name__}")


def _run_task(spec: ModelSpec, options: SweepOptions, gpus: float) -> str:
    """In a Ray worker: the single-model code path (Ray has set ``CUDA_VISIBLE_DEVICES``)."""
    import ray

    from wsc_tasks.sweep.runner import run_one

    job = ray.get_runtime_context().get_task_id()
    placement = Placement("ray", gpus, job=f"ray:{job}", lock_wait_s=STALE_S + 60)
    return run_one(spec, options, placement)


@register
class RayLauncher(Launcher):
    name = "ray"
    help = "one Ray task per model (pip install 'wsc-tasks[ray]')"
    settings = (
        Setting(
            "ray-address",
            "a Ray cluster to join (auto, HOST:PORT, ray://…)",
            unset="a local Ray started for the sweep",
        ),
        Setting(
            "gpus-per-model",
            "GPUs of each model's task (0.25: four share one)",
            fraction,
            unset="1 where the cluster has GPUs, else 0",
        ),
        Setting("cpus-per-model", "CPUs of each model's task", fraction, 1.0),
        Setting("max-parallel", "models running at once (0: as the cluster fits)", count, 0),
        Setting("retries", "times a task whose worker died is run again", count, 3),
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
        self.pending: list[ModelSpec] = []
        self.refs: dict[str, ObjectRef] = {}  # each model's Ray task
        self.results: dict[str, RunState] = {}

    @classmethod
    def unavailable(cls, values: Mapping[str, Any]) -> str | None:
        if importlib.util.find_spec("ray") is None:
            return "Ray is not installed; pip install 'wsc-tasks[ray]'"
        return None

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
        self.pending += list(specs)
        self._start_more()

    def _start_more(self) -> None:
        cap = self.values["max-parallel"] or len(self.pending) + len(self.refs)
        task = self.ray.remote(_run_task).options(
            num_gpus=self.values["gpus-per-model"],
            num_cpus=self.values["cpus-per-model"],
            max_retries=self.values["retries"],
            name="wsc-sweep",
        )
        while self.pending and len(self.refs) < cap:
            spec = self.pending.pop(0)
            self.refs[spec.name] = task.remote(spec, self.options, self.values["gpus-per-model"])

    def states(self) -> dict[str, RunState]:
        if self.refs:
            refs = list(self.refs.values())
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
            for name, ref in list(self.refs.items()):
                if ref not in ready:
                    continue
                del self.refs[name]
                try:
                    self.results[name] = RunState("ended", outcome=self.ray.get(ref))
                except Exception as error:  # a worker that died more than --retries times
                    lines = [line for line in str(error).splitlines() if line.strip()]
                    why = lines[-1].strip() if lines else type(error).__name__
                    self.results[name] = RunState("ended", f"Ray task failed: {why}\n{error}")
            self._start_more()
        found = {spec.name: RunState("queued") for spec in self.pending}
        found |= {name: RunState("running") for name in self.refs}
        return found | self.results

    def cancel(self) -> None:
        self.pending.clear()
        for ref in self.refs.values():
            self.ray.cancel(ref, force=True)
        self.refs.clear()

    def close(self) -> None:
        if self.started_ray:
            self.ray.shutdown()
            self.started_ray = False
