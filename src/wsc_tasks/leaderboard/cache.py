"""Each model's leaderboard figures kept beside its run, so a board of N models reads N small files.

What the leaderboard says of one model alone (its intervals and p's of *A* and *a*, the control
baselines and the datasets they are made from, the schema consistency; the run's metadata and
notes; the ranking task's per-schema outcomes, each a JSON text of its own, which the paired
differences with other models need) is computed once per (ranking
task, R, seed) and written to ``<model>/wsc_leaderboard_<task>_R<iters>_s<seed>.json``. Its key is
what it was computed from: the name, size and modification time of every file of the run's
``lm_eval/`` folder, the package's version and this format's number; a changed key, or a file that
cannot be read as a whole, is recomputed from the run (never trusted). What compares models (the
ranking, the differences with the next model, the matrix, the findings and their adjustments
across models) is computed when the board is rendered.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from wsc_tasks.metrics import registry, stats
from wsc_tasks.report.tables import Interval
from wsc_tasks.runs import decoded_samples
from wsc_tasks.runs.decoded_samples import PREFIX, package_version
from wsc_tasks.runs.folders import ModelInfo, Run, TaskRun
from wsc_tasks.runs.foreign.origin import Origin

log = logging.getLogger(f"lm_eval.{__name__}")

FORMAT = 5  # bumped when what a cache file holds changes
CACHE_PREFIX = "wsc_leaderboard_"  # a cache file's name starts so (not part of what it keys)
RANKED = (registry.SCHEMA_ACC, registry.ACC)  # the ranking task's metrics kept per schema


def cache_path(folder: Path, task: str, iters: int, seed: int) -> Path:
    return folder / f"{CACHE_PREFIX}{task}_R{iters}_s{seed}.json"


def run_key(lm_eval: Path, task: str, iters: int, seed: int) -> dict[str, Any]:
    """What a model's figures are computed from (``stat_key`` of each file of its run)."""
    return {
        "format": FORMAT,
        "version": package_version(),
        "task": task,
        "iters": iters,
        "seed": seed,
        "files": sorted(_files(str(lm_eval), ""), key=lambda f: f[0].split("/")),
    }


def _files(folder: str, under: str) -> list[list[Any]]:
    """[path under the run's folder, size, modification time] of each of its files, not the
    summary or the figures it writes (``os.scandir``: one system call per file, for boards of
    thousands)."""
    found: list[list[Any]] = []
    with os.scandir(folder) as listing:
        for item in listing:
            if item.is_dir(follow_symlinks=False):
                found += _files(item.path, f"{under}{item.name}/")
            elif item.is_file() and not item.name.startswith((".", PREFIX, CACHE_PREFIX)):
                stat = item.stat()
                found.append([f"{under}{item.name}", stat.st_size, stat.st_mtime_ns])
    return found


def _interval(cell: Interval | None) -> dict[str, Any] | None:
    return None if cell is None else {"estimate": asdict(cell.estimate), "show_p": cell.show_p}


def _cell(data: dict[str, Any] | None) -> Interval | None:
    if data is None:
        return None
    return Interval(stats.Estimate(**data["estimate"]), bool(data["show_p"]))


def dump(
    run: Run,
    folder: Path,
    key: dict[str, Any],
    figures: dict[str, Any],
    task: str,
) -> dict[str, Any]:
    """The cache file's content: the key, the run without its documents (but the ranking task's
    per-schema outcomes), and the model's figures (``Interval``s)."""
    info = asdict(run.info)
    info["results"] = _relative(run.info.results, folder)
    tasks = {
        name: {
            "dataset": t.dataset,
            "scored": list(t.scored) if t.scored else None,
            "samples": _relative(t.samples, folder),
            "problems": t.problems,
            "origin": t.origin.to_json() if t.origin is not None else None,
        }
        for name, t in run.tasks.items()
    }
    ranking = run.task_for(task)
    ranked = None
    if ranking is not None:
        ranked = {
            "name": ranking.task,  # the ranking task's own name (a foreign run's may differ)
            # one JSON text each (``decoded_samples.encode``): a thousand models' outcomes and
            # documents are a few hundred distinct values, each decoded once when read
            "docs": decoded_samples.encode(
                [{"schema_uid": d.get("schema_uid")} for d in ranking.docs]
            ),
            "values": {
                m: decoded_samples.encode(ranking.values[m]) for m in RANKED if m in ranking.forms
            },
        }
    return {
        "key": key,
        "run": {
            "model": run.model,
            "model_args": run.model_args,
            "limit": run.limit,
            "incomplete": run.incomplete,
            "logprob_check": run.logprob_check,
            "info": info,
            "tasks": tasks,
        },
        "ranking": ranked,
        "A": _interval(figures["A"]),
        "a": _interval(figures["a"]),
        "controls": {k: _interval(v) for k, v in figures["controls"].items()},
        "originals": {k: _interval(v) for k, v in figures["originals"].items()},
        "consistency": {k: _interval(v) for k, v in figures["consistency"].items()},
        "questions": {
            k: _interval(v) if isinstance(v, Interval) else v
            for k, v in figures.get("questions", {}).items()
        },
    }


def load(data: dict[str, Any], label: str, folder: Path, task: str) -> tuple[Run, dict[str, Any]]:
    """The run (its documents left out, but the ranking task's) and figures of ``dump``."""
    found = data["run"]
    tasks = {}
    for name, t in found["tasks"].items():
        samples = folder / t["samples"] if t["samples"] else None
        scored = tuple(t["scored"]) if t["scored"] else None
        origin = Origin.from_json(t["origin"]) if t.get("origin") else None
        tasks[name] = TaskRun(name, {}, samples=samples, dataset=t["dataset"], scored=scored,
                              problems=t["problems"], origin=origin)  # fmt: skip
    ranked = data["ranking"]
    if ranked is not None and ranked["name"] in tasks:
        ranking = tasks[ranked["name"]]
        ranking.docs = decoded_samples.decode(ranked["docs"])
        for metric, texts in ranked["values"].items():
            values = decoded_samples.decode(texts)
            ranking.values[metric] = values
            form = registry.by_name(metric, values[0]) if values else None
            if form is not None:
                ranking.forms[metric] = form
    info = dict(found["info"])
    info["results"] = folder / info["results"] if info["results"] else None
    run = Run(
        label,
        found["model"],
        found["model_args"],
        tasks,
        found["limit"],
        found["incomplete"],
        found["logprob_check"],
        ModelInfo(**info),
    )
    figures = {
        "A": _cell(data["A"]),
        "a": _cell(data["a"]),
        "controls": {k: _cell(v) for k, v in data["controls"].items()},
        "originals": {k: _cell(v) for k, v in data["originals"].items()},
        "consistency": {k: _cell(v) for k, v in data["consistency"].items()},
        "questions": {
            k: _cell(v) if isinstance(v, dict) else v
            for k, v in (data.get("questions") or {}).items()
        },
    }
    return run, figures


def read(path: Path, key: dict[str, Any]) -> dict[str, Any] | None:
    """The cache file's content if it was computed from ``key``; None if missing, stale,
    truncated or not ours (then recomputed)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        log.warning(f"wsc_tasks: {path}: unreadable ({error}); recomputed")
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    return data


def write(path: Path, data: dict[str, Any]) -> None:
    """Atomically (a reader never sees half a file); skipped where the folder is read-only."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        partial.write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        os.replace(partial, path)
    except OSError as error:
        log.info(f"wsc_tasks: {path}: not written ({error})")
        partial.unlink(missing_ok=True)


def _relative(path: Path | None, folder: Path) -> str | None:
    if path is None:
        return None
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return str(path)
