"""``python -m benchmarks sweep``: what each model of a sweep costs around its forward, a warm
worker against a process per model.

It builds the CPU benchmark's tiny GPT-2 (``run --tiny-gpt2``) and ``--models N`` copies of it
(its files linked: N models sharing a tokenizer), and runs them as a sweep's worker does
(``wsc_tasks.sweep.worker``), each way in a process of its own, alternating ``--rounds`` times:

- ``warm``: one worker making every model's run in its own process;
- ``own``: the same worker with ``--process-per-model``, each run a process of its own (what
  every sweep did before its workers were warm).

Each is timed by phase (``phase_timer``; in ``own`` each run's process times itself, as ``run``
does): per model its time (from the end of the model before it, the first from the worker's
start), its forward, the time outside the forward, its model loading, and its next model's
weights read ahead (how much, how long, whether before that model's run); then each later
model's time outside the forward against the first's, and the whole sweep's wall time, warm
against own. ``--code CHECKOUT`` adds a third way, alternating with the two: another
checkout's warm worker (``warm, CHECKOUT``) over the same models. ``--limit N`` passes lm-eval's
``--limit``: what a later model costs with few documents is what it pays whatever the number
of its requests.

``--as-users-run`` times ``wsc-tasks sweep`` of the models instead, as a user runs it (local
launcher, one process, nothing instrumented): each model's time from its ``done.json`` (the
first from the sweep's start), against ``wsc-tasks run`` of the first model alone; with
``--code CHECKOUT`` another checkout's sweep too (``PYTHONPATH``), alternating with this one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES_ENV = "WSC_TASKS_BENCH_JSON"  # where a run of ``run_phases`` writes its figures
FLAGS = ("--batch_size", "64")


def _models(folder: Path, count: int) -> list[Path]:
    """The tiny GPT-2 and ``count - 1`` copies of it (its files linked)."""
    from benchmarks.random_models import tiny_gpt2
    from benchmarks.run_models import _copy

    shutil.rmtree(folder, ignore_errors=True)
    first = tiny_gpt2(folder / "m1")
    return [first, *(_copy(first, folder / f"m{k}") for k in range(2, count + 1))]


def _env(code: Path = ROOT) -> dict[str, str]:
    """The environment of a command of ``code`` (a checkout: its ``src/`` and its root, ahead of
    the installed package)."""
    found = [str(code / "src"), str(code)] if (code / "src").is_dir() else [str(code)]
    path = os.pathsep.join([*found, *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path}


# -- one worker, instrumented, in a process of its own ---------------------------------------------


def _worker(queue_path: str, figures: str) -> int:
    """``python -m benchmarks.sweep_speed worker QUEUE FIGURES``: the sweep's worker over
    ``QUEUE``, each model timed by phase; its figures as JSON in ``FIGURES``."""
    from wsc_tasks.sweep import runner
    from wsc_tasks.sweep.queue import Queue

    queue = Queue.read(Path(queue_path))
    os.environ.update(runner.request_cache(queue.options))  # before lm-eval's import reads it
    from benchmarks.phase_timer import PhaseTimer, instrument
    from wsc_tasks.cli import sweep_worker
    from wsc_tasks.sweep import worker

    timer = PhaseTimer()
    instrument(timer)
    own = queue.options.process_per_model
    models: dict[str, dict[str, float]] = {}

    def child(run: runner.Run) -> list[str]:  # a run of its own that times itself
        return [sys.executable, "-m", "benchmarks", "run", *run.argv, "--no-winogrande"]

    def evaluate(run: runner.Run) -> int:
        before = dict(timer.seconds)
        report = Path(figures).with_name(f"{run.name}.json")
        os.environ[FIGURES_ENV] = str(report)
        code = runner.in_child(run) if own else sweep_worker.evaluate(run)
        if own:
            seconds = json.loads(report.read_text(encoding="utf-8"))["seconds"]
        else:
            seconds = {k: v - before.get(k, 0.0) for k, v in timer.seconds.items()}
        models[run.name] = {k: round(v, 3) for k, v in seconds.items()}
        return code

    runner.child_command = child  # ``own``: each run a ``benchmarks run`` of its own
    worker.work(queue, 0, worker.placement(queue, 0), evaluate)
    ends = {line["model"]: line for line in queue.lines() if line["event"] == "end"}
    found = [{"name": s.name, "end": ends[s.name]["time"], "seconds": models.get(s.name, {}),
              "read_ahead": ends[s.name].get("read_ahead")} for s in queue.specs]  # fmt: skip
    Path(figures).write_text(json.dumps(found), encoding="utf-8")
    return 0


def _sweep_worker(
    models: list[Path], work: Path, way: str, args: argparse.Namespace
) -> dict[str, Any]:
    """One way (``own``: a process per model; ``warm, …``: another checkout's warm worker), in
    a process of its own; its figures."""
    from wsc_tasks.sweep.models import ModelSpec
    from wsc_tasks.sweep.options import SweepOptions
    from wsc_tasks.sweep.queue import Queue

    own, code = way == "own", ROOT if way in WAYS else args.code.resolve()
    name = way if way in WAYS else "before"
    out = work / name
    shutil.rmtree(out, ignore_errors=True)
    specs = [ModelSpec(f"m{k}", "hf", f"pretrained={path}") for k, path in enumerate(models, 1)]
    options = SweepOptions(out, args.tasks, _flags(args), process_per_model=own, quiet=True)
    queue = Queue.write("local", options, specs)
    figures = work / f"{name}.json"
    command = [sys.executable, "-m", "benchmarks.sweep_speed", "worker", str(queue.path),
               str(figures)]  # fmt: skip
    start = time.time()
    log = (work / f"{name}.log").open("w")
    done = subprocess.run(command, env=_env(code), stdout=log, stderr=subprocess.STDOUT, cwd=code)
    if done.returncode:
        raise SystemExit(f"benchmarks sweep: the worker failed; its log: {log.name}")
    found = json.loads(figures.read_text(encoding="utf-8"))
    previous, rows = start, []
    for model in found:
        forward = model["seconds"].get("model forward", 0.0)
        took = model["end"] - previous
        previous = model["end"]
        rows.append({"name": model["name"], "time": took, "forward": forward,
                     "outside": took - forward, "loading": model["seconds"].get("model loading"),
                     "read_ahead": model["read_ahead"]})  # fmt: skip
    return {"wall": previous - start, "models": rows}


def _table(way: str, result: dict[str, Any]) -> list[str]:
    rows = result["models"]
    first = rows[0]["outside"]
    lines = [f"  {way}: sweep wall {result['wall']:.1f} s",
             f"    {'model':6s} {'time':>8s} {'forward':>8s} {'outside':>8s} {'/ 1st':>6s} "
             f"{'loading':>8s}  weights read ahead"]  # fmt: skip
    for row in rows:
        read = row["read_ahead"] or {}
        ahead = (f"{read.get('bytes', 0) / 1e6:.1f} MB in {read.get('seconds', 0):.2f} s, "
                 f"{'before its run' if read.get('before_its_run') else read.get('state')}"
                 if read else "-")  # fmt: skip
        loading = "-" if row["loading"] is None else f"{row['loading']:7.2f}s"
        lines.append(
            f"    {row['name']:6s} {row['time']:7.2f}s {row['forward']:7.2f}s "
            f"{row['outside']:7.2f}s {row['outside'] / first:5.2f}x {loading:>8s}  {ahead}"
        )
    return lines


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def _flags(args: argparse.Namespace) -> tuple[str, ...]:
    return FLAGS + (("--limit", str(args.limit)) if args.limit else ())


WAYS = ("warm", "own")


def workers(args: argparse.Namespace, work: Path) -> int:
    models = _models(work / "models", args.models)
    ways = [*WAYS, *([f"warm, {args.code}"] if args.code else [])]
    results: dict[str, list[dict[str, Any]]] = {way: [] for way in ways}
    for round_ in range(args.rounds):
        for way in ways:  # alternating
            print(f"benchmarks sweep: round {round_ + 1}, {way}", flush=True)
            results[way].append(_sweep_worker(models, work, way, args))
    lines = ["", f"benchmarks sweep: {args.models} tiny GPT-2s sharing a tokenizer, "
             f"--tasks {args.tasks} {' '.join(_flags(args))}, one worker; warm: every run in the "
             "worker's process, own: a process per run"]  # fmt: skip
    for way in ways:
        for result in results[way]:
            lines += _table(way, result)
    later = {way: [r["outside"] / rs["models"][0]["outside"] for rs in results[way]
                   for r in rs["models"][1:]] for way in results}  # fmt: skip
    seconds = {way: [r["outside"] for rs in results[way] for r in rs["models"][1:]]
               for way in results}  # fmt: skip
    walls = {way: _median([r["wall"] for r in results[way]]) for way in results}
    lines += [
        "  each later model's time outside the forward / the first's: "
        + ", ".join(
            f"{way} median {_median(later[way]):.2f}x (max {max(later[way]):.2f}x; "
            f"{_median(seconds[way]):.1f} s)"
            for way in results
        ),  # fmt: skip
        f"  sweep wall, median of {args.rounds}: "
        + ", ".join(f"{way} {walls[way]:.1f} s" for way in results)
        + f"; warm / own {walls['warm'] / walls['own']:.2f}x",
    ]
    print("\n".join(lines), flush=True)
    return 0


# -- as a user runs it -------------------------------------------------------------------------


def _user_sweep(models_file: Path, out: Path, code: Path, tasks: str) -> dict[str, Any]:
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-m", "wsc_tasks.cli", "sweep", str(models_file), "--out",
               str(out), "--tasks", tasks, "--quiet", *FLAGS]  # fmt: skip
    start = time.time()
    done = subprocess.run(command, env=_env(code), capture_output=True, text=True, cwd=out.parent)
    wall = time.time() - start
    if done.returncode:
        raise SystemExit(f"benchmarks sweep: wsc-tasks sweep failed: {done.stderr[-2000:]}")
    names = [line.split()[0] for line in models_file.read_text().splitlines() if line.strip()]
    ends = [(out / name / "done.json").stat().st_mtime for name in names]
    times = [end - before for end, before in zip(ends, [start, *ends[:-1]], strict=True)]
    return {"wall": wall, "times": times}


def _alone(model: Path, code: Path, tasks: str) -> float:
    command = [sys.executable, "-m", "wsc_tasks.cli", "run", "--model", "hf", "--model_args",
               f"pretrained={model}", "--tasks", tasks, *FLAGS]  # fmt: skip
    start = time.time()
    subprocess.run(command, env=_env(code), capture_output=True, check=True, cwd=model.parent)
    return time.time() - start


def as_users_run(args: argparse.Namespace, work: Path) -> int:
    models = _models(work / "models", args.models)
    models_file = work / "models.txt"
    models_file.write_text("".join(f"m{k} hf pretrained={p}\n" for k, p in enumerate(models, 1)))
    codes = {"this": ROOT, **({"before": args.code.resolve()} if args.code else {})}
    sweeps: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    alone: dict[str, list[float]] = {name: [] for name in codes}
    for round_ in range(args.rounds):
        for name, code in codes.items():  # alternating
            print(f"benchmarks sweep: round {round_ + 1}, {name}: sweep, then a run alone",
                  flush=True)  # fmt: skip
            sweeps[name].append(_user_sweep(models_file, work / f"sweep-{name}", code, args.tasks))
            alone[name].append(_alone(models[0], code, args.tasks))
    lines = ["", f"benchmarks sweep --as-users-run: wsc-tasks sweep of {args.models} tiny "
             f"GPT-2s, --tasks {args.tasks} {' '.join(FLAGS)}, local launcher; each model's "
             "time from its done.json (the first from the sweep's start)"]  # fmt: skip
    for name in codes:
        for result, single in zip(sweeps[name], alone[name], strict=True):
            times = result["times"]
            later = [t / times[0] for t in times[1:]]
            lines.append(
                f"  {name}: sweep {result['wall']:.1f} s; models "
                + " ".join(f"{t:.1f}" for t in times)
                + f" s; later / first: median {_median(later):.2f}x, max {max(later):.2f}x; "
                f"the first model alone (wsc-tasks run) {single:.1f} s, first in the sweep / "
                f"alone {times[0] / single:.2f}x"
            )
    print("\n".join(lines), flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["worker"]:
        return _worker(*argv[1:3])
    command = argparse.ArgumentParser(
        prog="python -m benchmarks sweep",
        description="Per model of a sweep of tiny GPT-2s sharing a tokenizer: its time, forward, "
        "time outside the forward, loading and weights read ahead, with one warm worker and "
        "with a process per model, alternating; or (--as-users-run) wsc-tasks sweep as a user "
        "runs it against wsc-tasks run of one model alone. Needs WSC_TASKS_DATA.",
    )
    command.add_argument("--models", type=int, default=10, metavar="N", help="(default 10)")
    command.add_argument("--rounds", type=int, default=1, metavar="R", help="each way (default 1)")
    command.add_argument("--tasks", default="wsc_group", help="(default wsc_group)")
    command.add_argument("--as-users-run", action="store_true", help="wsc-tasks sweep, whole")
    command.add_argument("--code", type=Path, help="a checkout to compare, alternating")
    command.add_argument("--limit", type=int, metavar="N", help="lm-eval's --limit (workers)")
    command.add_argument("--work", type=Path, help="a folder for the models and sweeps (kept)")
    args = command.parse_args(argv)
    if args.models < 2:
        command.error("--models: 2 or more")
    with tempfile.TemporaryDirectory() as temporary:
        work = args.work or Path(temporary)
        work.mkdir(parents=True, exist_ok=True)
        return as_users_run(args, work) if args.as_users_run else workers(args, work)


if __name__ == "__main__":
    sys.exit(main())
