"""The single-model code path every launcher runs: one model's ``wsc-tasks run`` into its folder.

Under the model's lock: skip it if done (same request, same fingerprint) or failed (unless
``retry_failed``), else clear its folder, fetch a Hub model's snapshot (and start fetching the
next models'), run ``wsc-tasks run`` in a child process of its own (a crash or an out-of-memory
kill ends that model only), then write ``done.json`` or ``error.txt`` and remove the snapshot.
A run stopped by a signal (Ctrl-C, a scheduler's requeue or cancel) writes neither, so the next
sweep runs it again.
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
from collections.abc import Sequence
from pathlib import Path

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

log = logging.getLogger(f"lm_eval.{__name__}")

REQUEST_CACHE_ENV = "LM_HARNESS_CACHE_PATH"  # lm-eval's request-cache folder (--cache_requests)
ERROR_LINE = re.compile(r"^([\w.]*(Error|Exception)\b|wsc-tasks:)")
STOPPED = {-signal.SIGTERM, -signal.SIGINT, -signal.SIGHUP, 128 + signal.SIGTERM, 130}
_children: set[int] = set()  # process groups of the runs in progress in this process
_stops = [0]  # how many times stop_all was called: a run that saw it change was stopped


def stop_all() -> None:
    """Kill every run this process started (Ctrl-C of a local sweep); they count as interrupted,
    not failed, so the next sweep runs them again."""
    _stops[0] += 1
    weights.stop()  # no download starts, those under way are killed
    for group in list(_children):
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def fingerprint(spec: ModelSpec) -> str:
    """The model's identity (type, arguments, weight and tokenizer files or Hub commit)."""
    return identify(spec).fingerprint


def _named_files(spec: ModelSpec) -> dict[str, str]:
    """The model arguments and metadata values of ``spec`` (paths among them are scrubbed)."""
    found = {k: str(v) for k, v in spec.metadata.items() if isinstance(v, str)}
    items = [item for item in resolved_args(spec).split(",") if "=" in item]
    return {**found, **dict(item.split("=", 1) for item in items)}


def run_command(
    spec: ModelSpec, folder: Path, options: SweepOptions, processes: int = 1
) -> list[str]:
    """The ``wsc-tasks run`` command line of one model (under ``accelerate launch`` if asked);
    a Hub model runs at its pinned commit."""
    args = weights.run_args(spec, resolved_args(spec))
    command = ["--model", spec.model, "--tasks", options.tasks, "--log_samples"]
    if args:
        command += ["--model_args", args]
    command += ["--output_path", str(folder / SWEEP_RESULTS / "results.json")]  # files right there
    if spec.metadata:
        command += ["--metadata", json.dumps(spec.metadata, sort_keys=True)]
    if options.cache:  # `wsc-tasks run` names the file by the model's cache_key
        command += ["--use_cache", f"{options.out / '.cache'}{os.sep}"]
        # the requests and their encodings, one file per task and tokenizer (patches §4, §11):
        # the models that share a tokenizer build and encode them once
        command += ["--cache_requests", "true"]
    if options.keep_paths:
        command.append(KEEP_PATHS)
    command += options.lm_eval_flags
    if processes > 1:
        launch = [sys.executable, "-m", "accelerate.commands.launch"]
        return [*launch, "--num_processes", str(processes), "-m", "wsc_tasks.cli", "run", *command]
    return [sys.executable, "-m", "wsc_tasks.cli", "run", *command]


def _run_child(
    command: list[str], log_file: Path, env: dict[str, str] | None, lock: FileLock, stops: int
) -> int:
    """The run in its own process group that dies with this process (``tether``); the lock
    names it."""
    with log_file.open("w", encoding="utf-8") as handle:
        child = subprocess.Popen(
            tether.command(os.getpid(), command),
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        _children.add(child.pid)
        try:
            if _stops[0] != stops:  # stop_all came between this run's start and now
                os.killpg(child.pid, signal.SIGKILL)
            lock.stamp(child.pid)
            return child.wait()
        except BaseException:  # Ctrl-C, SIGTERM: the whole group goes, not only this process
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise
        finally:
            _children.discard(child.pid)


def run_one(
    spec: ModelSpec,
    options: SweepOptions,
    placement: Placement | None = None,
    ahead: Sequence[ModelSpec] = (),
) -> str:
    """Run one model unless it is done; returns done, failed, busy or interrupted. ``ahead``:
    the next models, whose Hub snapshots are fetched while this one evaluates."""
    placement = placement or Placement()
    folder = options.out / spec.name
    path = protocol.model_lock(options.out, spec.name)
    try:
        with FileLock(path, f"{folder}", wait_s=placement.lock_wait_s) as lock:
            return _run_locked(spec, options, placement, folder, lock, ahead)
    except Busy as error:
        log.warning(f"wsc_tasks: sweep: {spec.name}: not cleared nor run: {error}")
        return "busy"


def _run_locked(
    spec: ModelSpec,
    options: SweepOptions,
    placement: Placement,
    folder: Path,
    lock: FileLock,
    ahead: Sequence[ModelSpec],
) -> str:
    asked = protocol.request(spec, options)
    try:
        identity = identify(spec)
    except SystemExit as error:  # e.g. the default model is not installed
        protocol.write_error(folder, f"{error}")
        return "failed"
    key = identity.fingerprint
    state = protocol.status(folder, asked, key, spec.hub)
    if state.state == "done" or (state.state == "failed" and not options.retry_failed):
        log.info(f"wsc_tasks: sweep: {spec.name}: {state.state}, skipped")
        return state.state
    if state.state == "stale":  # the sweep said so when it planned; a job's log says it again
        log.info(f"wsc_tasks: sweep: {spec.name}: run again: {state.why}")
    elif folder.exists():
        log.info(f"wsc_tasks: sweep: {spec.name}: clearing an earlier {state.state} run")
    stops = _stops[0]
    if weights.stopping():  # the sweep is stopping: its folder is left as it is
        return "interrupted"
    protocol.start(folder, asked)
    try:
        weights.fetch(spec, options.out)
    except weights.Interrupted:
        log.warning(f"wsc_tasks: sweep: {spec.name}: download stopped; run again next time")
        return "interrupted"
    except Exception as error:  # noqa: BLE001 - any download error ends this model only
        protocol.write_error(folder, f"{protocol.NOT_FETCHED}{error}")
        log.warning(f"wsc_tasks: sweep: {spec.name}: {protocol.error_summary(folder)}")
        return "failed"
    if _stops[0] != stops:  # stopped while its weights came: no run starts
        return "interrupted"
    weights.prefetch(ahead[: options.prefetch], options.out)
    command = run_command(spec, folder, options, placement.processes)
    log.info(f"wsc_tasks: sweep: {spec.name}: " + " ".join(command))
    env = weights.env_for_run(spec, placement.env)
    env = {
        **(env if env is not None else os.environ),
        decoded_samples.LATER: "1",
    }  # after gzip, below
    if options.cache:  # lm-eval's request cache in the sweep's folder, unless one is chosen
        env.setdefault(REQUEST_CACHE_ENV, str(options.out / ".cache" / "requests"))
    started, clock, since = time.strftime("%FT%T%z"), time.monotonic(), time.time()
    if spec.hub:
        weights.record(options.out, "run-start", spec)
    code = _run_child(command, folder / protocol.LOG, env, lock, stops)
    wall = time.monotonic() - clock
    if spec.hub:
        weights.record(options.out, "run-end", spec)
    results = list((folder / SWEEP_RESULTS).rglob("results_*.json"))
    if not options.keep_paths:  # the output folder's own paths are written relative to it
        local = local_model_paths(_named_files(spec))
        here = {f"{path}{os.sep}": "" for path in {options.out, options.out.resolve()}
                if path.is_absolute()}  # fmt: skip
        replace = {str(include_path()): "<wsc_tasks.task_configs>", **local, **here}
        scrub([folder / protocol.LOG, *results], replace)
    if code in STOPPED or _stops[0] != stops or (code and protocol.stopping(options.out, since)):
        log.warning(f"wsc_tasks: sweep: {spec.name}: stopped by a signal; run again next time")
        return "interrupted"
    weights.remove(spec, options.out, options.keep_weights)
    if code != 0 or not results:
        protocol.write_error(folder, _why(folder / protocol.LOG, code, bool(results)))
        log.warning(f"wsc_tasks: sweep: {spec.name} failed: {protocol.error_summary(folder)}")
        return "failed"
    protocol.compress_samples(folder / SWEEP_RESULTS)
    _summarise(spec.name, folder)
    cost = {
        "launcher": placement.launcher,
        "host": socket.gethostname(),
        "started": started,
        "wall_s": round(wall, 1),
        "gpus": placement.gpus,
        "gpu_hours": round(wall / 3600 * placement.gpus, 4),
    }
    if placement.job:
        cost["job"] = placement.job
    protocol.write_done(folder, asked, key, cost, spec.hub)
    return "done"


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
