"""One model's path through a sweep, in one direction: resolve, fetch, evaluate, clean, record.

``run_one`` holds the model's lock (``sweep.lock``) for the whole path:

1. **resolve**: the model's identity (``identify``: its arguments, the fingerprint of its weights
   and tokenizer, its Hub commit) and what was asked; a model done for this request and these
   weights is skipped, and so is a failed one unless ``retry_failed``; otherwise its folder is
   cleared and ``spec.json`` written.
2. **fetch**: a Hub model's snapshot in the cache (waiting for a download started ahead of it),
   then the next models' downloads started (``--prefetch``) and the very next one's weight files
   read into memory while this one evaluates (``read_ahead``).
3. **evaluate**: its ``wsc-tasks run`` (``run_command``), given to ``evaluate``: the worker's
   own process (warm imports, task index, tokenizers and encodings; ``wsc_tasks.cli
   .sweep_worker``) or a process of its own (``in_child``: ``--process-per-model``,
   ``--accelerate``, or a caller without a worker), its output in ``log.txt``.
4. **clean**: the paths of this machine scrubbed from what it wrote; its Hub snapshot removed
   from the cache (unless it stays).
5. **record**: ``error.txt``, or the samples gzipped, the leaderboard's figures and, last,
   ``done.json``. The verdict comes after the snapshot's removal: it ends the model for the sweep,
   whose own end removes every snapshot still recorded, so no two processes remove one snapshot.

A run stopped by a signal (Ctrl-C, a scheduler's requeue or cancel) writes neither verdict and
keeps its snapshot, so the model is run again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wsc_tasks.metrics import stats
from wsc_tasks.paths import KEEP_PATHS, SWEEP_RESULTS, include_path, local_model_paths, scrub
from wsc_tasks.runs import decoded_samples
from wsc_tasks.sweep import folder as protocol
from wsc_tasks.sweep import hub as weights
from wsc_tasks.sweep import tether
from wsc_tasks.sweep.identity import identify
from wsc_tasks.sweep.lock import Busy, FileLock
from wsc_tasks.sweep.models import ModelSpec, resolved_args
from wsc_tasks.sweep.options import Placement, SweepOptions
from wsc_tasks.sweep.read_ahead import ReadAhead

log = logging.getLogger(f"lm_eval.{__name__}")

REQUEST_CACHE_ENV = "LM_HARNESS_CACHE_PATH"  # lm-eval's request-cache folder (--cache_requests)
ERROR_LINE = re.compile(r"^([\w.]*(Error|Exception)\b|wsc-tasks:)")
STOPPED = {-signal.SIGTERM, -signal.SIGINT, -signal.SIGHUP, 128 + signal.SIGTERM, 130}


@dataclass(frozen=True)
class Run:
    """One model's ``wsc-tasks run``, as ``evaluate`` gets it."""

    name: str
    argv: list[str]  # the arguments of ``wsc-tasks run``
    log: Path  # its output
    env: dict[str, str]  # set while it runs (offline for a Hub model, summaries left to record)
    lock: FileLock  # the model's, which names the process that runs it
    processes: int = 1  # > 1: under ``accelerate launch``
    inherit: Mapping[str, str] | None = field(default=None, compare=False)  # a child's base env


Evaluate = Callable[[Run], int]  # a run's exit status (130 or 143: stopped by a signal)


def request_cache(options: SweepOptions) -> dict[str, str]:
    """lm-eval's request-cache folder for the sweep's runs (in its folder, unless one is set)."""
    if not options.cache or os.environ.get(REQUEST_CACHE_ENV):
        return {}
    return {REQUEST_CACHE_ENV: str(options.out.resolve() / ".cache" / "requests")}


def run_command(spec: ModelSpec, folder: Path, options: SweepOptions) -> list[str]:
    """The ``wsc-tasks run`` arguments of one model; a Hub model runs at its pinned commit."""
    args = weights.run_args(spec, resolved_args(spec))
    command = ["--model", spec.model, "--tasks", options.tasks, "--log_samples"]
    if args:
        command += ["--model_args", args]
    command += ["--output_path", str(folder / SWEEP_RESULTS / "results.json")]  # files right there
    if spec.metadata:
        command += ["--metadata", json.dumps(spec.metadata, sort_keys=True)]
    if options.cache:  # lm-eval's answer cache: `wsc-tasks run` names its file by cache_key
        command += ["--use_cache", f"{options.out / '.cache'}{os.sep}"]
        # the requests and their encodings, one file per task and tokenizer: the models that
        # share a tokenizer build and encode them once
        command += ["--cache_requests", "true"]
    if options.keep_paths:
        command.append(KEEP_PATHS)
    return command + list(options.lm_eval_flags)


def child_command(run: Run) -> list[str]:
    """The process of a run of its own (under ``accelerate launch`` if asked)."""
    if run.processes > 1:
        launch = [sys.executable, "-m", "accelerate.commands.launch"]
        return [*launch, "--num_processes", str(run.processes), "-m", "wsc_tasks.cli", "run",
                *run.argv]  # fmt: skip
    return [sys.executable, "-m", "wsc_tasks.cli", "run", *run.argv]


def in_child(run: Run) -> int:
    """``evaluate`` in a process of its own, in its own process group, that dies with this
    process (``tether``); the lock names it."""
    env = {**(run.inherit if run.inherit is not None else os.environ), **run.env}
    with run.log.open("w", encoding="utf-8") as handle:
        child = subprocess.Popen(
            tether.command(os.getpid(), child_command(run)),
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        try:
            run.lock.stamp(child.pid)
            return child.wait()
        except BaseException:  # Ctrl-C, SIGTERM: the whole group goes, not only this process
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise


@dataclass
class Model:
    """A model on its path: what it is, where it goes, and what happened to it so far."""

    spec: ModelSpec
    options: SweepOptions
    placement: Placement
    folder: Path
    asked: dict[str, object] = field(default_factory=dict)
    key: str = ""  # its fingerprint
    details: dict[str, Any] = field(default_factory=dict)  # for its worker's line (``queue``)


def run_one(
    spec: ModelSpec,
    options: SweepOptions,
    placement: Placement | None = None,
    ahead: Sequence[ModelSpec] = (),
    evaluate: Evaluate | None = None,
    reading: ReadAhead | None = None,
    details: dict[str, Any] | None = None,
) -> str:
    """Run one model unless it is done; returns done, failed, busy or interrupted. ``ahead``:
    the next models, whose weights are fetched (and the first's read) while this one evaluates;
    ``evaluate``: how (default ``in_child``); ``details``: filled with what its worker records
    (the seconds it evaluated, its weights read ahead)."""
    placement = placement or Placement()
    model = Model(spec, options, placement, options.out / spec.name)
    path = protocol.model_lock(options.out, spec.name)
    try:
        with FileLock(path, f"{model.folder}", wait_s=placement.lock_wait_s) as lock:
            state = _path(model, lock, ahead, evaluate or in_child, reading or ReadAhead())
    except Busy as error:
        log.warning(f"wsc_tasks: sweep: {spec.name}: not cleared nor run: {error}")
        state = "busy"
    if details is not None:
        details.update(model.details)
    return state


def _path(
    model: Model, lock: FileLock, ahead: Sequence[ModelSpec], evaluate: Evaluate, reading: ReadAhead
) -> str:
    """The five steps, under the model's lock."""
    skipped = resolve(model)
    if skipped is not None:
        return skipped
    unfetched = fetch(model, ahead, reading)
    if unfetched is not None:
        return unfetched
    since = time.time()
    code, wall = evaluation(model, lock, evaluate)
    scrub_paths(model)
    if stopped(model, code, since):
        log.warning(
            f"wsc_tasks: sweep: {model.spec.name}: stopped by a signal; run again next time"
        )
        return "interrupted"
    clean(model)
    return record(model, code, wall)


# 1. resolve ----------------------------------------------------------------------------------


def resolve(model: Model) -> str | None:
    """Its identity and request; the state it keeps (done, failed) if it is not to run, else
    None with its folder cleared and ``spec.json`` written."""
    spec, options, folder = model.spec, model.options, model.folder
    model.asked = protocol.request(spec, options)
    try:
        model.key = identify(spec).fingerprint
    except SystemExit as error:  # e.g. the default model is not installed
        protocol.write_error(folder, f"{error}")
        return "failed"
    state = protocol.status(folder, model.asked, model.key, spec.hub)
    if state.state == "done" or (state.state == "failed" and not options.retry_failed):
        log.info(f"wsc_tasks: sweep: {spec.name}: {state.state}, skipped")
        return state.state
    if state.state == "stale":  # the sweep said so when it planned; a job's log says it again
        log.info(f"wsc_tasks: sweep: {spec.name}: run again: {state.why}")
    elif folder.exists():
        log.info(f"wsc_tasks: sweep: {spec.name}: clearing an earlier {state.state} run")
    if weights.stopping():  # the sweep is stopping: its folder is left as it is
        return "interrupted"
    protocol.start(folder, model.asked)
    return None


# 2. fetch ------------------------------------------------------------------------------------


def fetch(model: Model, ahead: Sequence[ModelSpec], reading: ReadAhead) -> str | None:
    """The model's Hub snapshot in the cache; then the next ones' downloads and the next one's
    weights read into memory. None, or the state it ends in (failed, interrupted)."""
    spec, options = model.spec, model.options
    try:
        weights.fetch(spec, options.out)
    except weights.Interrupted:
        log.warning(f"wsc_tasks: sweep: {spec.name}: download stopped; run again next time")
        return "interrupted"
    except Exception as error:  # noqa: BLE001 - any download error ends this model only
        protocol.write_error(model.folder, f"{protocol.NOT_FETCHED}{error}")
        log.warning(f"wsc_tasks: sweep: {spec.name}: {protocol.error_summary(model.folder)}")
        return "failed"
    if weights.stopping():  # stopped while its weights came: no run starts
        return "interrupted"
    read = reading.taken(spec)
    if read:
        model.details["read_ahead"] = read
    downloads = weights.prefetch(ahead[: options.prefetch], options.out)
    if ahead:
        following = ahead[0]
        download = downloads[0] if downloads and following.hub else None
        reading.start(following, download)
    return None


# 3. evaluate ---------------------------------------------------------------------------------


def evaluation(model: Model, lock: FileLock, evaluate: Evaluate) -> tuple[int, float]:
    """Its ``wsc-tasks run``; (exit status, seconds)."""
    spec, options, placement = model.spec, model.options, model.placement
    run = Run(
        name=spec.name,
        argv=run_command(spec, model.folder, options),
        log=model.folder / protocol.LOG,
        env=_run_env(spec, options),
        lock=lock,
        processes=placement.processes,
        inherit=placement.env,
    )
    log.info(f"wsc_tasks: sweep: {spec.name}: wsc-tasks run " + " ".join(run.argv))
    model.details["started"] = time.strftime("%FT%T%z")
    if spec.hub:
        weights.record(options.out, "run-start", spec)
    clock = time.monotonic()
    code = evaluate(run)
    wall = time.monotonic() - clock
    if spec.hub:
        weights.record(options.out, "run-end", spec)
    model.details["evaluate_s"] = round(wall, 3)
    return code, wall


def _run_env(spec: ModelSpec, options: SweepOptions) -> dict[str, str]:
    """What a run's environment adds: offline for a Hub model (nothing downloads while it
    evaluates, and a moved branch cannot change what it loads), the run's summary left to
    ``record``, lm-eval's request cache (``--cache_requests``) in the sweep's folder."""
    env = {decoded_samples.LATER: "1", **request_cache(options)}
    if spec.hub:
        env["HF_HUB_OFFLINE"] = "1"
    return env


def stopped(model: Model, code: int, since: float) -> bool:
    """Whether the evaluation that began at ``since`` was stopped by a signal (its own exit
    status, a download stopped, or the sweep stopping since) rather than ending by itself."""
    if code in STOPPED or weights.stopping():
        return True
    return bool(code) and protocol.stopping(model.options.out, since)


# 4. clean ------------------------------------------------------------------------------------


def scrub_paths(model: Model) -> None:
    """This machine's paths out of the run's log and results (unless ``--keep-paths``): the
    output folder's own paths written relative to it."""
    spec, options, folder = model.spec, model.options, model.folder
    if options.keep_paths:
        return
    results = list((folder / SWEEP_RESULTS).rglob("results_*.json"))
    local = local_model_paths(_named_files(spec))
    here = {f"{path}{os.sep}": "" for path in {options.out, options.out.resolve()}
            if path.is_absolute()}  # fmt: skip
    replace = {str(include_path()): "<wsc_tasks.task_configs>", **local, **here}
    scrub([folder / protocol.LOG, *results], replace)


def clean(model: Model) -> None:
    """Its Hub snapshot out of the cache, unless it stays (``hub.remove`` says why)."""
    weights.remove(model.spec, model.options.out, model.options.keep_weights)


# 5. record -----------------------------------------------------------------------------------


def record(model: Model, code: int, wall: float) -> str:
    """Its verdict: failed (``error.txt``) or done (samples gzipped, the leaderboard's figures,
    ``done.json`` last)."""
    spec, folder = model.spec, model.folder
    results = list((folder / SWEEP_RESULTS).rglob("results_*.json"))
    if code != 0 or not results:
        protocol.write_error(folder, _why(folder / protocol.LOG, code, bool(results)))
        log.warning(f"wsc_tasks: sweep: {spec.name} failed: {protocol.error_summary(folder)}")
        return "failed"
    protocol.compress_samples(folder / SWEEP_RESULTS)
    _summarise(spec.name, folder)
    placement = model.placement
    cost = {
        "launcher": placement.launcher,
        "host": socket.gethostname(),
        "started": model.details["started"],
        "wall_s": round(wall, 1),
        "gpus": placement.gpus,
        "gpu_hours": round(wall / 3600 * placement.gpus, 4),
    }
    if placement.job:
        cost["job"] = placement.job
    if placement.worker:
        cost["worker"] = placement.worker
    protocol.write_done(folder, model.asked, model.key, cost, spec.hub)
    return "done"


def _named_files(spec: ModelSpec) -> dict[str, str]:
    """The model arguments and metadata values of ``spec`` (paths among them are scrubbed)."""
    found = {k: str(v) for k, v in spec.metadata.items() if isinstance(v, str)}
    items = [item for item in resolved_args(spec).split(",") if "=" in item]
    return {**found, **dict(item.split("=", 1) for item in items)}


def _summarise(name: str, folder: Path) -> None:
    """The run's summary and its leaderboard figures (default ranking task, R and seed) written
    now, so that neither the sweep's leaderboard nor a later one decodes its samples."""
    from wsc_tasks.leaderboard import DEFAULT_TASK, Board

    try:
        Board(DEFAULT_TASK, stats.DEFAULT_ITERS, stats.DEFAULT_SEED).load(name, folder, {})
    except Exception as error:  # noqa: BLE001 - a finished run is not failed by its figures
        log.warning(f"wsc_tasks: sweep: {name}: leaderboard figures not written ({error})")


def _why(log_file: Path, code: int, wrote_results: bool) -> str:
    """``error.txt``: what went wrong on its first line, then the end of the run's log."""
    tail = log_file.read_text(encoding="utf-8", errors="replace").splitlines()[-30:]
    if code == 0 and not wrote_results:
        return "lm-eval wrote no results file\n" + "\n".join(tail)
    why = "killed (out of memory?)" if code in (-9, 137) else f"exit status {code}"
    errors = [line for line in tail if ERROR_LINE.match(line)]
    if errors:
        why += f": {errors[-1]}"
    return f"{why}\n" + "\n".join(tail)


def fingerprint(spec: ModelSpec) -> str:
    """The model's identity (type, arguments, weight and tokenizer files or Hub commit)."""
    return identify(spec).fingerprint
