"""What a user names, read as a run: an lm-eval output folder, a samples file, a details file or
folder, or a Hub dataset repository of details (``hub:<owner>/<name>[@<revision>]``).

A folder with winogrande details files in it (a copy of a details repository, or one run's
folder) is read from its newest; an lm-eval output folder (``results_<date>.json``) by
``folders.load_run``, which reads lm-eval's built-in ``winogrande`` and ``wsc273`` in it as foreign
tasks; a folder of lm-eval 0.4.0-0.4.2 (``results.json`` and ``<model_args>_<task>.jsonl``) and a
samples file given by itself here. A run's label defaults to what names the model: the details
repository's ``<org>__<model>``, else the folder's name.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from wsc_tasks.paths import SWEEP_RESULTS
from wsc_tasks.runs.folders import ModelInfo, Run, TaskRun, default_label, load_run
from wsc_tasks.runs.foreign import details_hub, leaderboard_details, lm_eval_samples
from wsc_tasks.runs.foreign.pinned import ForeignError
from wsc_tasks.runs.output_files import RESULTS_FILE, results_files

log = logging.getLogger(f"lm_eval.{__name__}")

DETAILS_MODEL = "open-llm-leaderboard"  # a details run's lm-eval model column: who ran it
REPO_PREFIX = "details_"  # a details repository's name: details_<org>__<model>
OLD_RESULTS = "results.json"  # lm-eval 0.4.0-0.4.2's results file in an output folder


def is_hub(text: str) -> bool:
    return text.startswith(details_hub.PREFIX)


def holds_run(folder: Path) -> bool:
    """A folder a leaderboard reads as a model's run though no sweep made it: winogrande details
    files, or lm-eval output with its samples (``results_<date>.json`` and ``samples_*``: a run
    without ``--log_samples`` has nothing to rank) in it or in its ``lm_eval/``."""
    if leaderboard_details.details_files(folder):
        return True
    for place in (folder, folder / SWEEP_RESULTS):
        if not place.is_dir():
            continue
        results = any(RESULTS_FILE.match(p.name) for p in place.glob("*.json"))
        if results and next(place.glob("samples_*.jsonl*"), None) is not None:
            return True
    return False


def load(text: str, label: str | None = None, keep_paths: bool = False) -> Run:
    """The run ``text`` names (see the module docstring)."""
    if is_hub(text):
        fetched = details_hub.fetch(text)
        name = label or _model_of_repo(fetched.repo) or fetched.repo.replace("/", "__")
        return _details_run(fetched.path, name, fetched.shown, repo=fetched.repo)
    path = Path(text)
    if not path.exists():
        raise ForeignError(f"{text}: no such file or folder (a Hub repository: hub:<owner>/<name>)")
    if path.is_file():
        if path.suffix == ".parquet":
            return _details_run(path, label or _label_of(path), _shown(path))
        return _samples_run(path, label or _label_of(path.parent), keep_paths)
    return load_folder(path, label, keep_paths)


def load_folder(folder: Path, label: str | None = None, keep_paths: bool = False) -> Run:
    """A folder's run: its newest winogrande details file, else its lm-eval output."""
    found = leaderboard_details.details_files(folder)
    if found:
        if len(found) > 1:
            log.info(f"wsc_tasks: {folder}: {len(found)} winogrande details files; the newest, "
                     f"{found[-1].path.name}, is read")  # fmt: skip
        return _details_run(found[-1].path, label or _label_of(folder), _shown(found[-1].path))
    if results_files(folder):
        return load_run(folder, label, keep_paths)
    if (folder / OLD_RESULTS).is_file():
        samples = sorted(p for p in folder.glob("*.jsonl*") if lm_eval_samples.peek(p))
        if samples:
            runs = [_samples_run(p, label or _label_of(folder), keep_paths) for p in samples]
            tasks = {name: task for run in runs for name, task in run.tasks.items()}
            first = runs[0]
            return Run(first.label, first.model, first.model_args, tasks, info=first.info)
    raise ForeignError(
        f"{folder}: no lm-eval results_*.json, no samples of lm-eval's winogrande or wsc273 and "
        "no winogrande details file in it (run lm-eval with --output_path and --log_samples)"
    )


def _shown(path: Path) -> str:
    """How a details file is named in what a run writes: from its ``details_<org>__<model>``
    folder down, else its name (no path of this machine)."""
    parts = path.parts
    for at in range(len(parts) - 2, -1, -1):
        if parts[at].startswith(REPO_PREFIX):
            return "/".join(parts[at:])
    return path.name


def _model_of_repo(repo: str) -> str | None:
    name = repo.split("/")[-1]
    return name.removeprefix(REPO_PREFIX) if name.startswith(REPO_PREFIX) else None


def _label_of(path: Path) -> str:
    """The model's label: the nearest ``details_<org>__<model>`` folder's ``<org>__<model>``,
    else the folder's own name (a sweep's ``<name>/lm_eval``: ``<name>``)."""
    folder = path if path.is_dir() else path.parent
    for part in [folder, *folder.resolve().parents]:
        if part.name.startswith(REPO_PREFIX):
            return part.name.removeprefix(REPO_PREFIX)
    return default_label(path if path.is_dir() else path.parent)


def _details_run(path: Path, label: str, shown: str, repo: str | None = None) -> Run:
    tasks = leaderboard_details.read(path, shown)
    model = _model_of_repo(repo) if repo else _label_of(path)
    args = f"pretrained={model.replace('__', '/', 1)}" if model and "__" in model else ""
    named = leaderboard_details.DetailsFile.of(path)
    date = _date(named.date) if named else None
    info = ModelInfo(date=date)
    return Run(label, DETAILS_MODEL, args, tasks, info=info)


def _date(text: str) -> float | None:
    """A details file's run time (``2023-09-18T03-05-58.053951`` or with ``:``) as seconds."""
    day, _, time = text.partition("T")
    try:
        return datetime.fromisoformat(f"{day}T{time.replace('-', ':')}").timestamp()
    except ValueError:
        return None


def _samples_run(path: Path, label: str, keep_paths: bool) -> Run:
    """One samples file given by itself, with the results file beside it if there is one."""
    results, name = _results_beside(path)
    task = _task_of(path, results)
    counts = ((results or {}).get("n-samples") or {}).get(task) or {}
    expected = counts.get("effective") if isinstance(counts.get("effective"), int) else None
    if lm_eval_samples.peek(path) is None:
        raise ForeignError(f"{path}: not samples of lm-eval's winogrande or wsc273")
    tasks: dict[str, TaskRun] = lm_eval_samples.read(task, path, results, name, expected)
    config = (results or {}).get("config") or {}
    model = str(config.get("model") or "lm-eval")
    args = config.get("model_args")
    args = json.dumps(args, sort_keys=True) if isinstance(args, dict) else str(args or "")
    if not keep_paths:
        from wsc_tasks.paths import hide_model_paths, portable

        args = hide_model_paths(portable(args))
    info = ModelInfo.of(results, path) if results else ModelInfo()
    return Run(label, model, args, tasks, info=info)


def _results_beside(path: Path) -> tuple[dict[str, Any] | None, str]:
    """The results file written with a samples file: ``results_<date>.json`` of its date, or
    0.4.0-0.4.2's ``results.json``; (None, "") when there is none."""
    stem = path.name.removesuffix(".gz").removesuffix(".jsonl")
    date = stem.rsplit("_", 1)[-1]
    for candidate in (path.with_name(f"results_{date}.json"), path.with_name(OLD_RESULTS)):
        if candidate.is_file():
            try:
                found = json.loads(candidate.read_text(encoding="utf-8"))
            except ValueError as error:
                raise ForeignError(f"{candidate}: not a complete results file ({error})") from None
            if isinstance(found, dict):
                return found, candidate.name
    return None, ""


def _task_of(path: Path, results: dict[str, Any] | None) -> str:
    """The lm-eval task of a samples file: from its name (``samples_<task>_<date>.jsonl``,
    ``<model_args>_<task>.jsonl``) among the results file's tasks, else from its documents."""
    stem = path.name.removesuffix(".gz").removesuffix(".jsonl").removesuffix(".json")
    known = list((results or {}).get("results") or {})
    for task in sorted(known, key=len, reverse=True):
        if f"_{task}_" in f"_{stem}_" or stem.endswith(f"_{task}"):
            return task
    if stem.startswith("samples_"):
        return stem.removeprefix("samples_").rsplit("_", 1)[0]
    return lm_eval_samples.peek(path) or stem
