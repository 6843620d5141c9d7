"""A sweep's worker: one process that runs the models of the sweep's queue one after another.

Every launcher starts workers, not runs: ``--workers N`` local processes, one Slurm array task
each, one Ray actor each. A worker is ``python -m wsc_tasks.cli.sweep_worker QUEUE INDEX``
(``WORKER_MODULE``: the commands stage, which evaluates each model's ``wsc-tasks run`` in the
worker's own process); ``work`` is its loop: it takes the queue's models one at a time
(``queue.next``), runs each along ``runner.run_one`` and writes a line before and after each
(``queue.report``). Its imports, lm-eval's task index, the tokenizers and the requests'
encodings stay in memory from one model to the next; the next model's weights are read while
the current one computes (``read_ahead``); each model's memory is released before the next
(``release_memory``). What the worker keeps from one model to the next (millions of objects:
the kept requests, encodings and counters) is frozen out of the cyclic collector's walks
(``garbage_collection.survivors_frozen``), so that a later model's collections walk only its
own objects. With ``--process-per-model`` (and ``--accelerate``) each model is evaluated
in a process of its own instead (``runner.in_child``).

SIGTERM (a scheduler's cancel, requeue or time limit; the local sweep's Ctrl-C) stops the model
being run without a verdict and ends the worker, its downloads killed first (``terminate``).
Exit status: 0 once the queue holds nothing more it may take, 143 stopped.
"""

from __future__ import annotations

import ctypes
import logging
import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType
from typing import Any

from wsc_tasks import garbage_collection
from wsc_tasks.sweep import hub
from wsc_tasks.sweep.lock import job_id
from wsc_tasks.sweep.options import Placement
from wsc_tasks.sweep.queue import Queue
from wsc_tasks.sweep.read_ahead import ReadAhead
from wsc_tasks.sweep.runner import Evaluate, in_child, request_cache, run_one

log = logging.getLogger(f"lm_eval.{__name__}")

WORKER_MODULE = "wsc_tasks.cli.sweep_worker"  # what a launcher starts, by name (commands stage)
STOPPED = 143  # exit status of a worker stopped by SIGTERM (128 + 15)


def command(queue: Path, index: str | int) -> list[str]:
    """A worker's command line (``index``: its number, or a shell variable such as Slurm's)."""
    return [sys.executable, "-m", WORKER_MODULE, str(queue), str(index)]


def terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM's handler: the worker's downloads killed, the model it runs stopped unjudged."""
    hub.stop()  # a download under way ends now, not when it is done
    raise SystemExit(128 + signum)


def placement(queue: Queue, index: int, launcher_job: str | None = None) -> Placement:
    """What worker ``index`` records in its models' ``done.json``; a scheduler's worker waits
    for a lock its own earlier run left (a requeue: ``lock.FileLock.stale``)."""
    job = launcher_job or job_id()
    return Placement(queue.launcher, queue.gpus, processes=queue.processes, job=job,
                     worker=queue.worker(index))  # fmt: skip


def release_memory() -> None:
    """What a model left behind handed back before the next: Python's cycles collected (the
    frozen objects walked too: ``garbage_collection.collect``), the allocator's cached GPU blocks
    freed, the C heap's free pages returned to the system."""
    garbage_collection.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass


def chosen(queue: Queue, evaluate: Evaluate) -> Evaluate:
    """``evaluate`` (in this process), unless the queue asks for a process per model
    (``--process-per-model``, ``--accelerate``): ``runner.in_child``."""
    if queue.options.process_per_model or queue.processes > 1:
        return in_child
    return evaluate


def work(
    queue: Queue, index: int, where: Placement, evaluate: Evaluate = in_child
) -> dict[str, str]:
    """Run the models of ``queue`` that worker ``index`` may take, one at a time, until none is
    left; returns each one's state. ``evaluate``: how a run is made (``chosen``)."""
    options = queue.options
    reading = ReadAhead()
    states: dict[str, str] = {}
    with garbage_collection.survivors_frozen():
        try:
            while (spec := queue.next(index, states)) is not None:
                ahead = queue.following(spec, max(options.prefetch, 1), index)
                queue.report(index, "start", spec.name, job=where.job)
                state, details, clock = "interrupted", dict[str, Any](), time.monotonic()
                try:
                    state = run_one(spec, options, where, ahead, evaluate, reading, details)
                finally:
                    seconds = round(time.monotonic() - clock, 3)
                    queue.report(index, "end", spec.name, state=state, seconds=seconds,
                                 job=where.job, **details)  # fmt: skip
                    release_memory()
                states[spec.name] = state
                print(f"wsc-tasks sweep: {spec.name}: {state} ({seconds:.1f} s)", flush=True)
                if state == "interrupted":
                    break
        finally:
            reading.stop()
    return states


def main(argv: list[str], evaluate: Evaluate) -> int:
    """``QUEUE INDEX``: the worker of ``WORKER_MODULE``, with its way to evaluate."""
    if len(argv) != 2:
        print(f"usage: python -m {WORKER_MODULE} QUEUE INDEX", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    signal.signal(signal.SIGTERM, terminate)
    queue, index = Queue.read(Path(argv[0])), int(argv[1])
    os.environ.update(request_cache(queue.options))  # before lm-eval's import reads it
    where = placement(queue, index)
    print(f"wsc-tasks sweep: worker {queue.worker(index)} (job {where.job})", flush=True)
    try:
        work(queue, index, where, chosen(queue, evaluate))
    except SystemExit as stopped:
        if stopped.code == STOPPED:
            print("wsc-tasks sweep: worker stopped (SIGTERM)", flush=True)
        raise
    finally:
        hub.wait_for_prefetches()  # a download cut by the job's end would only be started again
    return 0
