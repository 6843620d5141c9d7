"""``--launcher slurm``: one Slurm job array for the models not done, one array task per model.

Each task runs ``python -m wsc_tasks.sweep.worker`` (the same single-model code path as a local
sweep) into the shared output folder. ``sbatch --array=0-N%K`` caps the tasks running at once
(``--max-parallel K``). With requeue on (the default) the job asks Slurm for a signal
``--requeue-before`` seconds before its time limit and requeues itself (at most ``--max-requeues``
times); a preempted job is requeued by Slurm; either way the run starts again with the requests
already in its lm-eval cache. States come from ``squeue`` (no accounting database): a task that
Slurm ended without the run writing ``done.json`` or ``error.txt`` (out of memory, node failure,
time limit, cancelled) gets an ``error.txt`` naming its state and its log (at a time limit, also
the limit and the flags that fix it). Ctrl-C cancels the sweep's jobs in one ``scancel``.
``--no-wait`` submits and returns: the next sweep on the folder finds the jobs in
``<out>/.sweep/slurm/jobs.json``, waits for those still queued or running and collects the rest.
"""

from __future__ import annotations

import dataclasses
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
from wsc_tasks.sweep.worker import write_manifest

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
    help = "one Slurm job array (sbatch --array), one task per model"
    settings = (
        Setting("partition", "Slurm partition", unset="the cluster's default"),
        Setting("account", "Slurm account", unset="your default account"),
        Setting("qos", "Slurm quality of service", unset="the partition's"),
        Setting("time", "time limit per job, e.g. 4:00:00", unset="partition's"),
        Setting("gpus-per-model", "GPUs of each model's job (--gres=gpu:N)", count, 1),
        Setting("cpus-per-model", "CPUs of each model's job", positive_int, unset="Slurm's"),
        Setting("mem", "memory per job, e.g. 32G", unset="the partition's"),
        Setting("max-parallel", "models at once (--array=…%%K; 0: no cap)", count, 0),
        Setting("sbatch", "an extra #SBATCH option, e.g. constraint=a100", kind="lines"),
        Setting("setup", "shell line before each model, e.g. 'module load cuda'", kind="lines"),
        flag_setting("no-requeue", "no requeue before the time limit or on preemption"),
        Setting("requeue-before", "seconds before the time limit to requeue", positive_int, 300),
        Setting("max-requeues", "times one model's job may requeue", count, 3),
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
        self.jobs: dict[str, dict[str, str]] = {}  # model name -> {job, log}
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

    # the batch script

    def script(self, manifest: Path, size: int) -> str:
        """The ``sbatch`` script of a job array over the ``size`` models of ``manifest``."""
        v = self.values
        array = f"0-{size - 1}" + (f"%{v['max-parallel']}" if v["max-parallel"] else "")
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
        worker = [sys.executable, "-m", "wsc_tasks.sweep.worker", str(manifest)]
        lines = ["#!/bin/bash", *(f"#SBATCH {o}" for o in options), ""]
        lines += [
            "# one model of a wsc-tasks sweep: the array task's index in the manifest",
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

    # the jobs file: which model runs in which array task, kept for a later sweep

    def _read_jobs(self) -> dict[str, dict[str, str]]:
        try:
            found = json.loads((self.folder / JOBS).read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}
        return found if isinstance(found, dict) else {}

    def _write_jobs(self) -> None:
        kept = self._read_jobs() | self.jobs
        self.folder.mkdir(parents=True, exist_ok=True)
        temporary = self.folder / f".{JOBS}.tmp"
        temporary.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        temporary.replace(self.folder / JOBS)

    def _forget(self, names: Sequence[str]) -> None:
        kept = {k: v for k, v in self._read_jobs().items() if k not in names}
        self.folder.mkdir(parents=True, exist_ok=True)
        (self.folder / JOBS).write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
        for name in names:
            self.jobs.pop(name, None)

    # the interface

    def adopt(self, specs: Sequence[ModelSpec]) -> set[str]:
        """Models whose task an earlier sweep submitted and that have no result yet: queued,
        running, or ended unseen (their ``error.txt`` then says how)."""
        names = {spec.name for spec in specs}
        settled = []
        for name, job in self._read_jobs().items():
            folder = self.options.out / name
            if protocol.has_result(folder):
                settled.append(name)
            elif name in names:
                self.jobs[name] = job
        if settled:
            self._forget(settled)
        return set(self.jobs)

    def submit(self, specs: Sequence[ModelSpec]) -> None:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        manifest = self.folder / f"{stamp}-{specs[0].name}.json"
        script = self.script(manifest, len(specs))
        if self.values["dry-run"]:
            print(script, end="")
            log.info(f"wsc_tasks: sweep: dry run: {len(specs)} models, nothing submitted")
            return
        gpus = self.values["gpus-per-model"]
        absolute = dataclasses.replace(self.options, out=self.options.out.resolve())
        write_manifest(manifest, self.name, absolute, list(specs), gpus)
        path = manifest.with_suffix(".sbatch")
        path.write_text(script, encoding="utf-8")
        (self.folder / "logs").mkdir(parents=True, exist_ok=True)
        done = subprocess.run(["sbatch", "--parsable", str(path)], capture_output=True, text=True)
        if done.returncode != 0:
            said = " ".join((done.stderr.strip() or done.stdout).split())
            hint = ""
            if "gres" in said.lower() and gpus:  # a cluster without GPUs refuses --gres=gpu:N
                hint = f" (each job asks for --gres=gpu:{gpus}: without GPUs, --gpus-per-model 0)"
            raise LauncherError(f"sbatch {path} failed: {said}{hint}")
        array = done.stdout.strip().split(";")[0]
        for index, spec in enumerate(specs):
            log_file = self.folder / "logs" / f"{array}_{index}.log"
            self.jobs[spec.name] = {"job": f"{array}_{index}", "log": str(log_file)}
        self._write_jobs()
        print(
            f"wsc-tasks sweep: submitted Slurm job array {array} ({len(specs)} models; script "
            f"{path}); follow it with: squeue --array --jobs={array}",
            file=sys.stderr,
        )

    def _squeue(self) -> dict[str, tuple[str, str, str]] | None:
        """Array task id -> (state, reason, time limit) of every task of this sweep's jobs that
        Slurm still knows."""
        arrays = sorted({job["job"].split("_")[0] for job in self.jobs.values()})
        if not arrays:
            return {}
        command = ["squeue", "--noheader", "--array", "--states=all",
                   f"--jobs={','.join(arrays)}", "--format=%i|%T|%r|%l"]  # fmt: skip
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

    def states(self) -> dict[str, RunState]:
        known = self._squeue()
        if known is None:
            return self.last
        out = {}
        for name, job in self.jobs.items():
            task, log_file = job["job"], Path(job["log"])
            state, reason, limit = known.get(task, ("", "", ""))
            if state in QUEUED:
                out[name] = RunState("queued", f"{state} ({reason})")
            elif state in RUNNING:
                out[name] = RunState("running")
            else:
                how = f"in state {state}" if state else "(Slurm no longer knows its state)"
                if reason and reason != "None":
                    how += f", reason {reason}"
                fix = self._fix(state, limit)
                detail = f"Slurm job {task} ended {how} without a result{fix}; log: {log_file}"
                out[name] = RunState("ended", f"{detail}\n{_log_tail(log_file)}")
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
        arrays = sorted({job["job"].split("_")[0] for job in self.jobs.values()})
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
        self._forget(list(self.jobs))  # cancelled on purpose: the next sweep runs them again

    def close(self) -> None:
        if self.jobs and self.waits:
            settled = [name for name, run in self.states().items() if run.ended]
            self._forget(settled)
