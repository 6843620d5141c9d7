"""``python -m wsc_tasks.cli.sweep_worker QUEUE INDEX``: a worker of a sweep that makes each
model's ``wsc-tasks run`` in its own process (the loop is ``wsc_tasks.sweep.worker``).

``evaluate`` runs ``wsc-tasks run`` as its command line would (``wsc_tasks.cli.main``: an error
one line and exit status 2, Ctrl-C 130), so a model's samples and results are those of a run of
its own, byte for byte. Its output, whatever writes it (Python, lm-eval's logger, progress bars,
C libraries), goes to the model's ``log.txt`` (``output_to``), and the run's environment is in
place while it runs (``environment``: offline for a Hub model, the Hub client included). A run
that raises fails alone (its ``error.txt`` says why) and the worker takes the next model; a
SIGTERM of the worker stops the run and the worker (``worker.terminate``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from wsc_tasks.sweep import hub
from wsc_tasks.sweep import worker as sweep_worker
from wsc_tasks.sweep.runner import Run

OFFLINE = "HF_HUB_OFFLINE"


@contextmanager
def output_to(path: Path) -> Iterator[None]:
    """This process's standard output and error into ``path`` while the block runs: the file
    descriptors (every writer's, C libraries' too) and Python's ``sys.stdout`` and
    ``sys.stderr`` (which a host such as a test runner may have pointed elsewhere)."""
    streams = sys.stdout, sys.stderr
    for stream in streams:
        stream.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with path.open("w", encoding="utf-8") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
        sys.stdout = open(1, "w", buffering=1, closefd=False, errors="backslashreplace")
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = streams
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for descriptor in saved:
            os.close(descriptor)


@contextmanager
def environment(env: Mapping[str, str]) -> Iterator[None]:
    """``env`` in place while the block runs. ``HF_HUB_OFFLINE`` goes to the Hub client alone
    (which reads the variable once, at import; transformers asks the client): in ``os.environ``
    it would also reach the next model's download, started meanwhile in a process of its own."""
    offline = env.get(OFFLINE)
    env = {key: value for key, value in env.items() if key != OFFLINE}
    before = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    from huggingface_hub import constants

    was = constants.HF_HUB_OFFLINE
    if offline is not None:
        constants.HF_HUB_OFFLINE = offline not in ("", "0")
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = was
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def evaluate(run: Run) -> int:
    """``wsc-tasks run`` of one model in this process; its exit status."""
    from wsc_tasks.cli import main

    with output_to(run.log), environment(run.env):
        try:
            return main(["run", *run.argv])
        except SystemExit as error:
            if hub.stopping():  # the worker's own SIGTERM: it stops
                raise
            if isinstance(error.code, int):  # lm-eval's own parser, say
                return error.code
            print(error.code, file=sys.stderr)
            return 1


def main(argv: list[str] | None = None) -> int:
    return sweep_worker.main(sys.argv[1:] if argv is None else argv, evaluate)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
