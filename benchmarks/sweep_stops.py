"""How fast a Hub sweep stops, and what it leaves on disk: ``python -m benchmarks sweep-stops WORK
[--code ROOT] [download] [run] [disk]`` (or ``python benchmarks/sweep_stops.py …``).

Three tiny random GPT-2s served by the tests' local Hub (``tests/hub_server.py``, the real
``huggingface_hub`` client through ``HF_ENDPOINT``); ``wsc-tasks sweep --hub-query author=tiny`` of
the package at ``--code`` (default: this checkout; give another checkout to compare) in a process
group of its own, signalled as a terminal's Ctrl-C is:

- ``download``: SIGINT, then SIGTERM, 2 s into the first model's 30-s download: seconds to exit;
- ``run``: SIGINT, then SIGTERM, 3 s into the first model's run while the next one downloads
  (30 s): seconds to exit;
- ``disk``: SIGINT 3 s into a run, twice, then a resume to the end: the size of ``$HF_HOME`` and
  its snapshots after each, and the most at once (sampled every 0.1 s), against the stated bound.

Prints one JSON object. Needs ``WSC_TASKS_DATA`` (the tokenizer's vocabulary beside it).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parents[1]
TASK = "wsc266_associative"


def _tests(name: str) -> Any:
    """A module of the tests' (``tiny_models``, ``hub_server``), imported when a sweep needs it."""
    if str(HERE / "tests") not in sys.path:
        sys.path.insert(0, str(HERE / "tests"))
    return importlib.import_module(name)


def _models(root: Path) -> Path:
    folder = root / "models"
    if not folder.is_dir():
        tiny_models = _tests("tiny_models")
        tiny_models.GPT2_FILES = Path(os.environ["WSC_TASKS_DATA"]).parent / "tokenizers" / "gpt2"
        tokenizer = tiny_models.gpt2_tokenizer()
        for seed, name in enumerate("abc", 1):
            tiny_models.save_random(folder / name, "gpt2", tokenizer, seed, vocab_size=50257,
                                    **tiny_models.GPT2_SIZES["1x16"])  # fmt: skip
    return folder


def _env(server: Any, home: Path, code: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HF_TOKEN", "HF_HUB_OFFLINE")}
    return {**env, "HF_ENDPOINT": server.url, "HF_HOME": str(home), "PYTHONPATH": str(code),
            "HF_HUB_DISABLE_TELEMETRY": "1"}  # fmt: skip


def _start(out: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "wsc_tasks.cli", "sweep", "--out", str(out), "--tasks", TASK,
               "--rank-task", TASK, "--iters", "100", "--quiet", "--hub-query", "author=tiny",
               "--limit", "4"]  # fmt: skip
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip


def _events(out: Path) -> list[dict[str, Any]]:
    path = out / ".sweep" / "weights.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _wait_for(condition: Any, limit_s: float = 600) -> None:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > limit_s:
            raise SystemExit("timed out")
        time.sleep(0.05)


def _signal(process: subprocess.Popen[str], sig: int) -> tuple[float, str]:
    start = time.monotonic()
    os.killpg(process.pid, sig)
    _, err = process.communicate(timeout=600)
    return time.monotonic() - start, err


def _size(home: Path) -> tuple[int, int]:
    """Bytes of ``home``'s files and its snapshots holding files."""
    files = sum(p.stat().st_size for p in home.rglob("*") if p.is_file() and not p.is_symlink())
    snapshots = sum(1 for p in home.glob("hub/models--*/snapshots/*") if any(p.iterdir()))
    return files, snapshots


def _stop(work: Path, code: Path, models: Path, sig: int, during: str) -> dict[str, Any]:
    root = work / f"{during}-{sig}"
    with _tests("hub_server").HubServer(
        seconds_per_weights=30 if during == "download" else 0
    ) as server:
        for name in "abc":
            server.push(f"tiny/gpt2-{name}", models / name)
        out = root / "out"
        process = _start(out, _env(server, root / "hf", code))
        if during == "download":
            _wait_for(lambda: any(p.endswith(".safetensors") for _, p in
                                  server.downloads("tiny/gpt2-a")))  # fmt: skip
            time.sleep(2)
        else:
            _wait_for(lambda: any(e["event"] == "run-start" for e in _events(out)))
            server.seconds_per_weights = 30  # the next model's download
            time.sleep(3)
        seconds, _ = _signal(process, sig)
    return {"seconds": round(seconds, 1), "exit": process.returncode,
            "events": [f"{e['event']} {e['model']}" for e in _events(out)]}  # fmt: skip


def _disk(work: Path, code: Path, models: Path) -> dict[str, Any]:
    root, peak, done = work / "disk", {"bytes": 0, "snapshots": 0}, threading.Event()
    home, out = root / "hf", root / "out"

    def watch() -> None:
        while not done.is_set():
            try:
                size, count = _size(home)
                peak["bytes"] = max(peak["bytes"], size)
                peak["snapshots"] = max(peak["snapshots"], count)
            except OSError:  # a file removed while it was counted
                pass
            time.sleep(0.1)

    after, err = [], ""
    with _tests("hub_server").HubServer(seconds_per_weights=1) as server:
        for name in "abc":
            server.push(f"tiny/gpt2-{name}", models / name)
        threading.Thread(target=watch, daemon=True).start()
        for attempt in range(3):
            runs = sum(e["event"] == "run-start" for e in _events(out))
            process = _start(out, _env(server, home, code))
            if attempt < 2:
                _wait_for(lambda runs=runs: sum(e["event"] == "run-start"
                                                for e in _events(out)) > runs)  # fmt: skip
                time.sleep(3)
                _signal(process, signal.SIGINT)
            else:
                _, err = process.communicate(timeout=900)
            after.append(
                {
                    "exit": process.returncode,
                    **dict(zip(("bytes", "snapshots"), _size(home), strict=True)),
                }
            )
        done.set()
    one = sum(p.stat().st_size for p in (models / "a").iterdir())
    stated = [line for line in err.splitlines() if "at most" in line]
    return {"model_bytes": one, "after_each": after, "most_at_once": peak, "stated": stated}


def main(argv: list[str] | None = None) -> int:
    command = argparse.ArgumentParser(
        prog="python -m benchmarks sweep-stops",
        description="How fast a Hub sweep of three tiny models stops on SIGINT or SIGTERM during a "
        "download and during a run, and what it leaves on disk after two interruptions and a "
        "resume (a local Hub, weights served slowly). Prints one JSON object. Needs "
        "WSC_TASKS_DATA (the tokenizers beside it).",
    )
    command.add_argument("work", type=Path, help="a folder for the sweeps (created)")
    command.add_argument("which", nargs="*", default=["download", "run", "disk"])
    command.add_argument("--code", type=Path, default=HERE, help="the checkout to measure")
    args = command.parse_args(argv)
    models = _models(args.work)
    found: dict[str, Any] = {}
    for during in ("download", "run"):
        if during in args.which:
            for sig in (signal.SIGINT, signal.SIGTERM):
                found[f"{during} {sig.name}"] = _stop(args.work, args.code, models, sig, during)
    if "disk" in args.which:
        found["disk"] = _disk(args.work, args.code, models)
    print(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
