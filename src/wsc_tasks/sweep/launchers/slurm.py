"""``--launcher slurm``: one Slurm job array of workers for the models not done, one array task
per worker.

Each task runs a worker (``sweep.worker``) that takes the sweep's models one after another from
its queue in the shared output folder; ``--max-parallel K`` gives K tasks (default: one per
model). With requeue on (the default) each task asks Slurm for a signal ``--requeue-before``
seconds before its time limit and requeues itself (at most ``--max-requeues`` times); a preempted
task is requeued by Slurm; either way the worker starts again on the model it was running, its
answers already in lm-eval's cache, and goes on with the queue. States come from ``squeue`` (no
accounting database) and the workers' lines (``queue``): a model whose task Slurm ended while it
ran it (out of memory, node failure, time limit, cancelled) gets an ``error.txt`` naming the
task's state and its log (at a time limit, also the limit and the flags that fix it); the other
tasks go on with the rest. Ctrl-C cancels the sweep's arrays in one ``scancel``. ``--no-wait``
submits and returns: the next sweep on the folder finds the arrays in
``<out>/.sweep/slurm/jobs.json``, waits for the models their tasks may still run and collects
the rest.
"""

from __future__ import annotations

import json
import logging
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsc_tasks.sweep import folder as protocol
from wsc_tasks.sweep.launchers.base import (
    Launcher,
    LauncherError,
    RunState,
    Setting,
    count,
    flag_setting,
    fraction,
    positive_int,
    register,
)
from wsc_tasks.sweep.lock import JOB_ENV
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import SweepOptions
from wsc_tasks.sweep.queue import Queue
from wsc_tasks.sweep.worker import command as worker_command

log = logging.getLogger(f"lm_eval.{__name__}")

QUEUED = {"PENDING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "RESIZING", "SUSPENDED",
          "CONFIGURING", "PREEMPTED"}  # fmt: skip
RUNNING = {"RUNNING", "COMPLETING", "STAGE_OUT", "SIGNALING"}
JOBS = "jobs.json"


def _log_tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@register
class SlurmLauncher(Launcher):
    name = "slurm"
    help = "one Slurm job array (sbatch --array), one task per worker"
    settings = (
        Setting("partition", "Slurm partition", unset="the cluster's default"),
        Setting("account", "Slurm account", unset="your default account"),
        Setting("qos", "Slurm quality of service", unset="the partition's"),
        Setting("time", "time limit per task, e.g. 4:00:00", unset="partition's"),
        Setting("gpus-per-model", "GPUs of each worker's task (--gres=gpu:N)", count, 1),
        Setting("cpus-per-model", "CPUs of each worker's task", positive_int, unset="Slurm's"),
        Setting("mem", "memory per task, e.g. 32G", unset="the partition's"),
        Setting("max-parallel", "workers: array tasks (0: one per model)", count, 0),
        Setting("sbatch", "an extra #SBATCH option, e.g. constraint=a100", kind="lines"),
        Setting("setup", "shell line before each model, e.g. 'module load cuda'", kind="lines"),
        flag_setting("no-requeue", "no requeue before the time limit or on preemption"),
        Setting("requeue-before", "seconds before the time limit to requeue", positive_int, 300),
        Setting("max-requeues", "times one task may requeue", count, 3),
        Setting("job-name", "Slurm job name", str, "wsc-sweep"),
        Setting("poll", "seconds between two squeue calls", fraction, 10.0),
        flag_setting("no-wait", "submit and return; the same command later collects", True),
        flag_setting("dry-run", "print the batch script, submit nothing", True),
    )

    def __init__(self, values: dict[str, Any], options: SweepOptions) -> None:
        super().__init__(values, options)
        self.dry_run = bool(self.values["dry-run"])
        self.waits = not (self.values["no-wait"] or self.dry_run)
        self.poll_s = float(self.values["poll"])
        self.settle_s = 3 * self.poll_s  # NFS may show a file written on another node later
        self.folder = protocol.bookkeeping(options.out.resolve(), self.name)
        self.arrays: dict[str, Queue] = {}  # array job id -> the queue its workers take from
        self.last: dict[str, RunState] = {}  # the states squeue gave last
        missing = self.unavailable(self.values)
        if missing:
            raise LauncherError(f"--launcher slurm: {missing}")

    @classmethod
    def unavailable(cls, values: Mapping[str, Any]) -> str | None:
        if values.get("dry-run"):
            return None  # the batch script is only printed
        for tool in ("sbatch", "squeue", "scancel"):
            if shutil.which(tool) is None:
                return (
                    f"{tool} not found on PATH; run the sweep on a Slurm login node, or use "
                    "--launcher local or ray"
                )
        return None

    def running_at_once(self) -> int | None:
        return int(self.values["max-parallel"]) or None

    def workers(self, models: int) -> int:
        return min(int(self.values["max-parallel"]) or models, models)

    # the batch script

    def script(self, queue: Path, size: int) -> str:
        """The ``sbatch`` script of a job array of ``size`` workers of ``queue``."""
        v = self.values
        array = f"0-{size - 1}"
        options = [
            f"--job-name={v['job-name']}",
            f"--array={array}",
            f"--output={self.folder / 'logs' / '%A_%a.log'}",
            "--open-mode=append",  # a requeued run adds to the same log
        ]
        for key in ("partition", "account", "qos", "time", "mem"):
            if v[key]:
                options.append(f"--{key}={v[key]}")
        if v["cpus-per-model"]:
            options.append(f"--cpus-per-task={v['cpus-per-model']}")
        if v["gpus-per-model"]:
            options.append(f"--gres=gpu:{v['gpus-per-model']}")
        requeue = not v["no-requeue"]
        if requeue:
            options += ["--requeue", f"--signal=B:USR1@{v['requeue-before']}"]
        else:
            options.append("--no-requeue")
        options += [o if o.startswith("-") else f"--{o}" for o in v["sbatch"]]
        worker = worker_command(queue, "")[:-1]
        lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in options), ""]
        lines += [
            "# a worker of a wsc-tasks sweep: the models of the queue, one after another",
            f'export {JOB_ENV}="${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}"',
            f'echo "wsc-tasks sweep: job ${JOB_ENV}, restart ${{SLURM_RESTART_COUNT:-0}}, '
            '$(date -Is) on $(hostname)"',
            *v["setup"],
        ]
        if requeue:
            lines += [
                "requeue() {  # the time limit is near: back to the queue, resumed from the cache",
                f'    if [ "${{SLURM_RESTART_COUNT:-0}}" -lt {v["max-requeues"]} ]; then',
                f'        echo "wsc-tasks sweep: requeue ${JOB_ENV} before the time limit"',
                f'        scontrol requeue "${JOB_ENV}"',
                "    fi",
                "}",
                "trap requeue USR1",
            ]
        lines += [
            f'{shlex.join(worker)} "$SLURM_ARRAY_TASK_ID" &',
            "child=$!",
            'while kill -0 "$child" 2>/dev/null; do wait "$child"; status=$?; done',
            'wait "$child" 2>/dev/null; status=${status:-$?}',
            'exit "$status"',
            "",
        ]
        return "\n".join(lines)

    # the jobs file: the arrays of the folder and their queues, kept for a later sweep

    def _read_jobs(self) -> dict[str, dict[str, Any]]:
        try:
            found = json.loads((self.folder / JOBS).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        if not isinstance(found, dict):
            return {}
        return {k: v for k, v in found.items() if isinstance(v, dict) and "queue" in v}

    def _write_jobs(self, jobs: dict[str, dict[str, Any]]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        temporary = self.folder / f".{JOBS}.tmp"
        temporary.write_text(json.dumps(jobs, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        temporary.replace(self.folder / JOBS)

    def _forget(self, arrays: Sequence[str]) -> None:
        self._write_jobs({k: v for k, v in self._read_jobs().items() if k not in arrays})
        for array in arrays:
            self.arrays.pop(array, None)

    # the interface

    def adopt(self, specs: Sequence[ModelSpec]) -> set[str]:
        """Models of an earlier sweep's arrays without a result yet: those its workers may still
        run, and those a worker had started when it ended unseen (their ``error.txt`` then says
        how). A model no worker started is not adopted: this sweep runs it."""
        names = {spec.name for spec in specs}
        adopted: set[str] = set()
        for array, job in self._read_jobs().items():
            try:
                queue = Queue.read(Path(job["queue"]))
            except (OSError, ValueError, KeyError):
                self._forget([array])
                continue
            self.arrays[array] = queue
            alive = any(run.state != "ended" for run in self._worker_states(array).values())
            started = queue.history().last
            for spec in queue.specs:
                settled = queue.settled(spec.name)
                if spec.name in names and not settled and (alive or spec.name in started):
                    adopted.add(spec.name)
            if not any(spec.name in adopted for spec in queue.specs) and not alive:
                self._forget([array])
        return adopted

    def submit(self, specs: Sequence[ModelSpec]) -> None:
        size = self.workers(len(specs))
        if self.values["dry-run"]:
            print(self.script(Path("QUEUE.json"), size), end="")
            log.info(f"wsc_tasks: sweep: dry run: {len(specs)} models, nothing submitted")
            return
        queue = Queue.write(self.name, self.options, specs, self.values["gpus-per-model"])
        gpus = self.values["gpus-per-model"]
        path = queue.path.with_suffix(".sbatch")
        path.write_text(self.script(queue.path, size), encoding="utf-8")
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            said = " ".join((done.stderr.strip() or done.stdout).split())
            hint = ""
            if "gres" in said.lower() and gpus:  # a cluster without GPUs refuses --gres=gpu:N
                hint = f" (each job asks for --gres=gpu:{gpus}: without GPUs, --gpus-per-model 0)"
            raise LauncherError(f"sbatch {path} failed: {said}{hint}")
        array = done.stdout.strip().split(";")[0]
        self.arrays[array] = queue
        self._write_jobs({**self._read_jobs(), array: {"queue": str(queue.path), "workers": size}})
        print(
            f"wsc-tasks sweep: submitted Slurm job array {array} ({len(specs)} models, {size} "
            f"workers; script {path}); follow it with: squeue --array --jobs={array}",
            file=sys.stderr,
        )

    def _squeue(self) -> dict[str, tuple[str, str, str]] | None:
        """Array task id -> (state, reason, time limit) of every task of this sweep's arrays that
        Slurm still knows."""
        if not self.arrays:
            return {}
        command = ["squeue", "--noheader", "--array", "--states=all",
                   f"--jobs={','.join(sorted(self.arrays))}", "--format=%i|%T|%r|%l"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            if "Invalid job id" in done.stderr:
                return {}  # every job ended long enough ago for Slurm to forget it
            log.warning(f"wsc_tasks: sweep: squeue failed, asking again: {done.stderr.strip()}")
            return None  # slurmctld restarting, say: states as they were
        found = {}
        for line in done.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 4:
                found[parts[0]] = (parts[1], parts[2], parts[3])
        return found

    def _worker_states(
        self, array: str, known: dict[str, tuple[str, str, str]] | None = None
    ) -> dict[int, RunState]:
        """Each worker of ``array``: queued, running, or ended (how, with its log)."""
        known = self._squeue() if known is None else known
        size = int(self._read_jobs().get(array, {}).get("workers", 0))
        found = {}
        for index in range(size):
            task = f"{array}_{index}"
            state, reason, limit = (known or {}).get(task, ("", "", ""))
            log_file = self.folder / "logs" / f"{task}.log"
            if state in QUEUED:
                found[index] = RunState("queued", f"{state} ({reason})")
            elif state in RUNNING:
                found[index] = RunState("running")
            else:
                how = f"in state {state}" if state else "(Slurm no longer knows its state)"
                if reason and reason != "None":
                    how += f", reason {reason}"
                fix = self._fix(state, limit)
                detail = f"Slurm job {task} ended {how} without a result{fix}; log: {log_file}"
                found[index] = RunState("ended", f"{detail}\n{_log_tail(log_file)}")
        return found

    def states(self) -> dict[str, RunState]:
        known = self._squeue()
        if known is None:
            return self.last
        out: dict[str, RunState] = {}
        for array, queue in self.arrays.items():
            workers = self._worker_states(array, known)
            running = {i for i, run in workers.items() if run.state == "running"}
            waiting = {i for i, run in workers.items() if run.state == "queued"}
            ended = {i: run for i, run in workers.items() if run.ended}
            out.update(queue.states(running, waiting, ended))
        self.last = out
        return out

    def _fix(self, state: str, limit: str) -> str:
        """What to change for a job that Slurm ended at its time limit (empty for another end)."""
        if state != "TIMEOUT":
            return ""
        if self.values["no-requeue"]:
            again = "drop --no-requeue so that it requeues itself before the limit and resumes"
        else:
            most = self.values["max-requeues"]
            again = f"raise --max-requeues (now {most}): each requeue resumes"
        return (
            f": it reached its time limit ({limit or 'unknown'}); give it a longer --time, or "
            f"{again} from its cache"
        )

    def cancel(self) -> None:
        arrays = sorted(self.arrays)
        if not arrays:
            return
        subprocess.run(["scancel", *arrays], capture_output=True, text=True)
        log.warning(f"wsc_tasks: sweep: cancelled Slurm job(s) {' '.join(arrays)}")
        deadline = time.monotonic() + 60
        command = ["squeue", "--noheader", f"--jobs={','.join(arrays)}", "--format=%i"]
        while time.monotonic() < deadline:
            listed = subprocess.run(command, capture_output=True, text=True).stdout.strip()
            if not listed:
                break
            time.sleep(1)
        self._forget(arrays)  # cancelled on purpose: the next sweep runs them again

    def close(self) -> None:
        if self.arrays and self.waits:
            settled = [a for a, q in self.arrays.items() if all(map(q.settled, self._names(q)))]
            self._forget(settled)

    @staticmethod
    def _names(queue: Queue) -> list[str]:
        return [spec.name for spec in queue.specs]
