"""``python -m benchmarks run``: where the time of an lm-eval run goes.

``python -m benchmarks run [wsc-tasks run flags…]`` runs exactly what ``wsc-tasks run`` runs with
the same flags (its table printed as usual) and then prints the wall time split into phases,
measured by timers around the functions of each phase (``phase_timer``; exclusive: a phase's time
excludes the phases it calls): model loading (lm-eval's ``HFLM``: its tokenizer and weights),
task building (lm-eval's task index and the tasks' data), request building, tokenization
(lm-eval's and the tasks' token counting), the model's forward calls
(``torch.cuda.synchronize()`` around each when CUDA is used; the whole ``loglikelihood`` call of
``wsc-chance``), result processing, aggregation (lm-eval's, with the bootstrap errors) and
printing; the rest (imports, writing files, lm-eval's bookkeeping) is "other". It
also prints the requests, the distinct requests, the token positions through the model beside the
nodes of their tries, the peak memory and the ratio of wall time to model time. Then, in the same
process and on the same model, it runs lm-eval's own ``winogrande`` (the dev file of
``WSC_TASKS_DATA`` when there is one, else the Hub's) and prints both runs' wall time, time inside
and outside the forward calls, CPU time, tokens per forward call and, on CUDA, TFLOP/s inside the
forward (2 × parameters × token positions), with the ratios (``--no-winogrande``: not).
``--tiny-gpt2`` runs a random GPT-2 (width 32, 2 layers) with a 1,000-token byte-level BPE trained
on the Winogrande dev sentences, built at start: what a run costs outside the model, on a CPU.
``--models N``: ``run_models``.

Its help prints without importing torch or lm-eval: the benchmark's imports (seconds) happen in
the functions that run it.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.run_models import REPORT_ENV, bench_models, models_wanted

if TYPE_CHECKING:
    from benchmarks.phase_timer import PhaseTimer

HELP = """\
usage: python -m benchmarks run [wsc-tasks run flags…]

Runs exactly what `wsc-tasks run` runs with the same flags (its table printed
as usual), then prints the run's wall time split into phases: model loading,
task building (lm-eval's task index and the tasks' data), request building,
tokenization, the model's forward calls, result processing, aggregation (with
the bootstrap errors), printing, and "other" (imports, writing files). Also
printed: the requests, the distinct requests, the token positions through the
model, peak memory, and wall time over model time. Then, unless
--no-winogrande, lm-eval's own `winogrande` runs on the same model in the same
process (its data from WSC_TASKS_DATA, else the Hub), and the ratios of wall
time and of time outside the forward calls are printed, with tokens per forward
call and, on CUDA, TFLOP/s inside the forward. --tiny-gpt2 builds the CPU
benchmark's model first (GPT-2, width 32, 2 layers, a 1,000-token BPE trained
on the Winogrande dev sentences). The other flags are run's:
`wsc-tasks run --help`.

  python -m benchmarks run                  # the README's main job, timed
  python -m benchmarks run --tasks wsc266   # the README's quick try, timed
  python -m benchmarks run --tiny-gpt2 --batch_size 64  # against winogrande
  python -m benchmarks run --model wsc-chance --model_args default,seed=1
  python -m benchmarks run --tiny-gpt2 --models 3  # a sweep's later models

--models N runs N copies of the model (--model hf --model_args pretrained=DIR,
or --tiny-gpt2), each in a process of its own with lm-eval's --cache_requests
true and one request cache, as wsc-tasks sweep runs them, and prints what the
models after the first cost against it.
"""

NO_COMPARE = "--no-winogrande"  # skip the run of lm-eval's own winogrande
TINY = "--tiny-gpt2"  # the CPU benchmark's model, built at start (``tiny_gpt2``)


WINOGRANDE_TASK = "winogrande_local"


def local_winogrande(folder: Path) -> str | None:
    """lm-eval's own ``winogrande`` task, unchanged but for reading the Winogrande dev file of
    ``WSC_TASKS_DATA`` (written as a YAML in ``folder``); None without that file (the Hub's)."""
    import lm_eval
    import yaml

    from wsc_tasks.data import catalog

    root = os.environ.get("WSC_TASKS_DATA")
    dev = Path(root) / catalog.WINOGRANDE_DEV if root else None
    if dev is None or not dev.is_file():
        return None
    config = {
        "include": str(Path(lm_eval.__file__).parent / "tasks" / "winogrande" / "default.yaml"),
        "task": WINOGRANDE_TASK,
        "dataset_path": "json",
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {"validation": str(dev)}},
        "training_split": None,
    }
    (folder / f"{WINOGRANDE_TASK}.yaml").write_text(yaml.safe_dump(config))
    return str(folder)


def with_tasks(argv: list[str], tasks: str, include: str | None) -> list[str]:
    """``argv`` with its ``--tasks`` replaced by ``tasks`` (and ``include`` added to its
    ``--include_path``)."""
    out, skip = [], False
    included = [include] if include else []
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("--tasks", "-t", "--include_path"):
            skip = True
            if arg == "--include_path":
                included.insert(0, argv[argv.index(arg) + 1])
            continue
        if arg.startswith(("--tasks=", "--include_path=")):
            if arg.startswith("--include_path="):
                included.insert(0, arg.split("=", 1)[1])
            continue
        out.append(arg)
    out += ["--tasks", tasks]
    return out + (["--include_path", os.pathsep.join(included)] if included else [])


@dataclass
class Timed:
    """One run's phase timer, wall and CPU seconds."""

    timer: PhaseTimer
    wall: float
    cpu: float
    code: int

    @property
    def forward(self) -> float:
        return self.timer.seconds["model forward"]

    @property
    def outside(self) -> float:
        return self.wall - self.forward

    def tokens_per_call(self) -> float:
        calls = self.timer.counts["forward calls"]
        return self.timer.counts["token positions through the model"] / calls if calls else 0.0

    def tflops(self) -> float | None:
        """Model TFLOP/s inside the forward calls: 2 × parameters (the input embedding left out)
        × token positions over the forward seconds; None off CUDA or without a model."""
        if not (self.timer.cuda and self.timer.parameters and self.forward > 0):
            return None
        flops = 2 * self.timer.parameters * self.timer.counts["token positions through the model"]
        return flops / self.forward / 1e12


def timed_run(argv: list[str], run: Callable[[list[str]], int]) -> Timed:
    """``run(argv)`` with a fresh phase timer."""
    from benchmarks.phase_timer import PhaseTimer, instrument, report, uninstrument

    start, cpu_start = time.perf_counter(), time.process_time()
    timer = PhaseTimer()
    instrument(timer)
    code = 1
    try:
        code = run(argv)
    finally:
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        uninstrument()
        print(report(timer, wall, cpu), file=sys.stdout, flush=True)
    figures = os.environ.get(REPORT_ENV)
    if figures:  # for ``--models N``, which runs each model in a process of its own
        summary = {"wall": wall, "cpu": cpu, "seconds": dict(timer.seconds),
                   "counts": dict(timer.counts)}  # fmt: skip
        Path(figures).write_text(json.dumps(summary), encoding="utf-8")
    return Timed(timer, wall, cpu, code)


def comparison(ours: Timed, theirs: Timed, tasks: str) -> str:
    """The ratios of ``tasks``' run to lm-eval's ``winogrande`` on the same model."""

    def ratio(a: float, b: float) -> str:
        return f"{a / b:.2f}x" if b > 0 else "-"

    rows = [("lm-eval winogrande", theirs), (tasks, ours)]
    lines = [
        "",
        f"benchmarks run: {tasks} against lm-eval's own winogrande, same model, one process "
        "(winogrande second: its imports are warm)",
        f"  {'':22s} {'wall':>9s} {'forward':>9s} {'outside':>9s} {'CPU':>9s} {'calls':>6s} "
        f"{'tokens/call':>11s} {'TFLOP/s':>8s}",
    ]
    for name, run in rows:
        tflops = run.tflops()
        lines.append(
            f"  {name:22s} {run.wall:8.2f}s {run.forward:8.2f}s {run.outside:8.2f}s "
            f"{run.cpu:8.2f}s {run.timer.counts['forward calls']:6d} "
            f"{run.tokens_per_call():11.0f} {'-' if tflops is None else f'{tflops:.0f}':>8s}"
        )
    lines.append(
        f"  ratio {tasks} / winogrande: wall {ratio(ours.wall, theirs.wall)}, outside the "
        f"forward calls {ratio(ours.outside, theirs.outside)}, CPU {ratio(ours.cpu, theirs.cpu)}"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks run``: its help here, the benchmark's imports only to run it."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(HELP, end="")
        return 0
    return bench_run(argv)


def bench_run(argv: list[str], run: Callable[[list[str]], int] | None = None) -> int:
    """``wsc-tasks run`` with the same flags, timed by phase; then, unless ``--no-winogrande``,
    lm-eval's own ``winogrande`` on the same model, and the ratios."""
    from benchmarks.random_models import tiny_gpt2
    from wsc_tasks.cli.run import DEFAULT_TASKS, _value, run_lm_eval

    run = run or run_lm_eval
    compare = NO_COMPARE not in argv
    if TINY in argv:
        with tempfile.TemporaryDirectory() as folder:
            tiny_gpt2(Path(folder))
            model = ["--model", "hf", "--model_args", f"pretrained={folder}"]
            return bench_run([*model, *(a for a in argv if a != TINY)], run)
    models, argv = models_wanted(argv)
    if models:
        return bench_models(models, argv)
    argv = [a for a in argv if a != NO_COMPARE]
    ours = timed_run(argv, run)
    if not compare or ours.code != 0:
        return ours.code
    tasks = (_value(argv, "--tasks", "-t") or (0, DEFAULT_TASKS))[1]
    with tempfile.TemporaryDirectory() as folder:
        local = local_winogrande(Path(folder))
        theirs_argv = with_tasks(argv, WINOGRANDE_TASK if local else "winogrande", local)
        print(
            f"benchmarks run: lm-eval's own winogrande on the same model, after {tasks}",
            flush=True,
        )
        own = local and run is run_lm_eval  # lm-eval's index of its own tasks is not needed
        ran = functools.partial(run_lm_eval, lm_eval_tasks=False) if own else run
        theirs = timed_run(theirs_argv, ran)
    print(comparison(ours, theirs, tasks), flush=True)
    return theirs.code


if __name__ == "__main__":
    sys.exit(main())
