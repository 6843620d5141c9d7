"""``python -m benchmarks run --models N``: what the models of a sweep after the first cost, when
they share the first one's tokenizer.

Each model runs in a process of its own, as a sweep runs them, with lm-eval's ``--cache_requests
true`` and one request-cache folder for all (what ``wsc-tasks sweep`` passes): the first builds and
encodes the requests, the others read them. The models are copies of the one given (its files
linked into folders of their own, so no path is shared). Printed: each
run's wall time, its time in the forward calls and outside them, and the phases that depend on
the tokenizer alone (task and request building, tokenization), with each later model's ratio to
the first.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

MODELS = "--models"
REPORT_ENV = "WSC_TASKS_BENCH_JSON"  # where a run of ``run_phases`` writes its figures as JSON
ROOT = Path(__file__).resolve().parents[1]  # the checkout: ``benchmarks`` importable from it
TOKENIZER_PHASES = ("task building", "request building", "tokenization")


def models_wanted(argv: list[str]) -> tuple[int, list[str]]:
    """``--models N`` (0 when absent) and the other flags."""
    for i, arg in enumerate(argv):
        if arg == MODELS or arg.startswith(f"{MODELS}="):
            inline = "=" in arg
            value = arg.split("=", 1)[1] if inline else (argv[i + 1] if i + 1 < len(argv) else "")
            if not value.isdigit() or int(value) < 2:
                raise SystemExit(f"benchmarks run: {MODELS} takes a number of models, 2 or more")
            rest = argv[:i] + argv[i + (1 if inline else 2) :]
            return int(value), rest
    return 0, argv


def _model_folder(argv: list[str]) -> tuple[int, str, Path]:
    """The index of ``--model_args`` in ``argv``, its value and its ``pretrained=`` folder."""
    for i, arg in enumerate(argv[:-1]):
        if arg == "--model_args":
            args = dict(item.split("=", 1) for item in argv[i + 1].split(",") if "=" in item)
            folder = Path(args.get("pretrained", ""))
            if folder.is_dir():
                return i + 1, argv[i + 1], folder
    raise SystemExit(
        f"benchmarks run: {MODELS} needs a local model: --model hf --model_args pretrained=DIR "
        "(or --tiny-gpt2)"
    )


def _copy(folder: Path, into: Path) -> Path:
    """``folder``'s files linked (else copied) into ``into``: the same model at another path."""
    into.mkdir(parents=True)
    for file in folder.iterdir():
        if file.is_file():
            try:
                os.link(file, into / file.name)
            except OSError:
                (into / file.name).write_bytes(file.read_bytes())
    return into


def bench_models(n: int, argv: list[str]) -> int:
    """Run the ``run`` benchmark on ``n`` copies of the model in ``argv``, one process each,
    sharing lm-eval's request cache; print the table."""
    where, model_args, folder = _model_folder(argv)
    runs: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "requests"
        for k in range(n):
            copy = folder if k == 0 else _copy(folder, Path(tmp) / f"copy{k}")
            args = list(argv)
            args[where] = model_args.replace(f"pretrained={folder}", f"pretrained={copy}")
            report = Path(tmp) / f"run{k}.json"
            path = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
            env = {**os.environ, "LM_HARNESS_CACHE_PATH": str(cache), REPORT_ENV: str(report),
                   "PYTHONPATH": path}  # fmt: skip
            command = [sys.executable, "-m", "benchmarks", "run", *args, "--no-winogrande",
                       "--cache_requests", "true"]  # fmt: skip
            print(f"benchmarks run: model {k + 1} of {n}: {' '.join(command[3:])}", flush=True)
            code = subprocess.run(command, env=env).returncode
            if code != 0:
                return code
            runs.append(json.loads(report.read_text(encoding="utf-8")))
    print(table(runs), flush=True)
    return 0


def table(runs: list[dict]) -> str:
    """Each run's wall, forward, outside-the-forward and tokenizer-phase seconds, and each later
    run's ratio to the first."""
    first = runs[0]

    def outside(run: dict) -> float:
        return float(run["wall"] - run["seconds"]["model forward"])

    def per_tokenizer(run: dict) -> float:
        return float(sum(run["seconds"][phase] for phase in TOKENIZER_PHASES))

    lines = [
        "",
        f"benchmarks run: {len(runs)} models sharing one tokenizer, one process each, lm-eval's "
        "request cache shared (--cache_requests true)",
        f"  {'model':6s} {'wall':>9s} {'forward':>9s} {'outside':>9s} {'tokenizer phases':>17s} "
        f"{'outside / 1st':>14s} {'tokenizer phases / 1st':>23s}",
    ]
    for k, run in enumerate(runs):
        ratio = outside(run) / outside(first) if outside(first) else 0.0
        phases = per_tokenizer(run) / per_tokenizer(first) if per_tokenizer(first) else 0.0
        lines.append(
            f"  {k + 1:<6d} {run['wall']:8.2f}s {run['seconds']['model forward']:8.2f}s "
            f"{outside(run):8.2f}s {per_tokenizer(run):16.2f}s {ratio:13.2f}x {phases:22.2f}x"
        )
    lines.append(
        "  tokenizer phases: task building, request building and tokenization (what the "
        "tokenizer decides); the rest outside the forward is imports, model loading, the "
        "log-softmax, result processing and lm-eval's bookkeeping, paid by every model"
    )
    return "\n".join(lines)
