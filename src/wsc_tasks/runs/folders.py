"""lm-eval output folders read back: per task, the reported figures and the per-document values.

A folder is one model's ``--output_path`` (lm-eval nests a sub-folder per model name): every
``results_<time>.json`` in it and the ``samples_<task>_<time>.jsonl`` written beside it with
``--log_samples``. A task run twice keeps its newest run. Each per-document value is read with
the ratio form of its metric (``registry.by_name``), and the form is checked to reproduce the
figure lm-eval reported before any interval is computed from it; a metric that was logged but not
aggregated (the per-method metrics of a run without ``metrics: all``) gets its figure from the
samples. Each task also keeps the catalog dataset it ran on (its config's ``metadata.dataset``), so
readers find tasks by their dataset's role, and its kind (``registry.task_kind``).
``--output_path X.json`` names the results file ``X_<time>.json``.
"""

from __future__ import annotations

import json
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wsc_tasks.data.pairing import PairingError, pair_schemas
from wsc_tasks.garbage_collection import survivors_frozen
from wsc_tasks.lm_eval_types import groups_of
from wsc_tasks.metrics import registry
from wsc_tasks.metrics.registry import TaskKind
from wsc_tasks.paths import SWEEP_RESULTS, hide_model_paths, portable
from wsc_tasks.runs.decoded_samples import Summary, summary_path
from wsc_tasks.runs.foreign.origin import Origin
from wsc_tasks.runs.output_files import (
    LINE,
    RESULTS_FILE,
    IncompleteSamples,
    RunError,
    read_results,
    read_samples,
    results_files,
    samples_file,
    stamp_of,
)
from wsc_tasks.runs.task_run import TaskRun

__all__ = [
    "LOGPROB_CHECK", "RESULTS_FILE", "TOLERANCE", "IncompleteSamples", "ModelInfo", "Run",
    "RunError", "TaskRun", "default_label", "load_run", "pair_documents",
    "parse_folder_argument", "read_results", "read_samples", "read_task", "results_files",
    "samples_file", "stamp_of", "try_pair_documents",
]  # fmt: skip

log = logging.getLogger(f"lm_eval.{__name__}")

TOLERANCE = 1e-9
# where a served model's log-probability check is recorded: a key of each task's config metadata
# (``wsc_tasks.serving.served.RESULTS_KEY``), a top-level entry of older results files
LOGPROB_CHECK = "logprob_check"


@dataclass(frozen=True)
class ModelInfo:
    """What lm-eval recorded about a run's model and the run (its newest results file): the
    leaderboard's model metadata."""

    parameters: int | None = None  # lm-eval's model_num_parameters
    dtype: str | None = None  # the weights' dtype as loaded ("float32")
    revision: str | None = None  # the Hub revision asked for ("main")
    sha: str | None = None  # the Hub commit it resolved to, when lm-eval could tell
    date: float | None = None  # when the run started, seconds since the epoch
    lm_eval: str | None = None  # lm-eval's version
    results: Path | None = None  # the newest results file

    @classmethod
    def of(cls, data: dict[str, Any], path: Path) -> ModelInfo:
        config = data.get("config") or {}
        parameters = config.get("model_num_parameters")
        dtype = config.get("model_dtype")
        date = data.get("date")
        return cls(
            parameters=parameters if isinstance(parameters, int) and parameters > 0 else None,
            dtype=str(dtype).removeprefix("torch.") if dtype else None,
            revision=str(config.get("model_revision") or "") or None,
            sha=str(config.get("model_sha") or "") or None,
            date=float(date) if isinstance(date, int | float) else None,
            lm_eval=str(data.get("lm_eval_version") or "") or None,
            results=path,
        )


@dataclass
class Run:
    """Every task one model was run on."""

    label: str
    model: str
    model_args: str
    tasks: dict[str, TaskRun]
    limit: float | None = None  # lm-eval's --limit, when the run used one
    incomplete: dict[str, str] = field(default_factory=dict)  # task -> why it was set aside
    logprob_check: dict[str, Any] | None = None  # a served model's check, as its results say
    info: ModelInfo = field(default_factory=ModelInfo)  # the model and run, as lm-eval recorded

    def task_for(self, name: str) -> TaskRun | None:
        """Its task ``name``, or its foreign task on the catalog dataset of that name (lm-eval's
        ``winogrande`` read back stands for ``winogrande_dev``; its twin pairs for
        ``winogrande_twins``): what a leaderboard ranks on."""
        found = self.tasks.get(name)
        if found is not None:
            return found
        foreign = (t for t in self.tasks.values() if t.origin is not None and t.dataset == name)
        return next(foreign, None)

    def foreign(self) -> list[Origin]:
        """Who scored its foreign tasks, each once (none for a run of this package)."""
        found = {t.origin.file: t.origin for t in self.tasks.values() if t.origin is not None}
        return list(found.values())

    def task_on(self, dataset: str, kind: TaskKind = TaskKind.SCHEMA) -> TaskRun | None:
        """Its task of ``kind`` on catalog dataset ``dataset`` (the first by name; one of this
        package's before a foreign one), if any."""
        found = [t for t in self.tasks.values() if t.dataset == dataset and t.kind is kind]
        return min(found, key=lambda t: t.origin is not None, default=None)

    def notes(self) -> list[str]:
        """What a reader of its tables must know: a --limit or --samples, tasks without samples or
        with incomplete ones, figures the samples do not reproduce, how a served model's
        log-probabilities were checked."""
        notes = []
        if self.limit is not None:
            notes.append(
                f"{self.label} was run with --limit {self.limit:g}: its figures come from the "
                "first documents of each task, not the whole dataset"
            )
        else:
            part = [
                f"{t.task} {t.scored[0]} of {t.scored[1]}"
                for t in self.tasks.values()
                if t.scored and t.scored[0] < t.scored[1] and t.origin is None
            ]
            if part:
                notes.append(
                    f"{self.label}: {len(part)} task(s) were scored on some of their documents "
                    f"only (lm-eval's --samples), not the whole dataset: {', '.join(part)}"
                )
        missing = [t.task for t in self.tasks.values() if t.samples is None]
        if missing and len(missing) == len(self.tasks):
            notes.append(
                f"{self.label}: no samples file at all (lm-eval was run without --log_samples): "
                "no table or finding has its figures; lm-eval's own are in its results file"
            )
        elif missing:
            notes.append(
                f"{self.label}: {len(missing)} of {len(self.tasks)} task(s) have no samples file "
                f"(a run stopped while writing them?), so no table has their figures: "
                f"{', '.join(missing)}"
            )
        check = self.logprob_check
        if check:
            model, url = check.get("model"), check.get("base_url")
            served = f"{self.label} was scored by a served model ({model} at {url})"
            if check.get("outcome") == "passed":
                notes.append(
                    f"{served}; before the run its echoed prompt log-probabilities were checked "
                    "against its generation path and agreed (largest difference "
                    f"{check.get('largest_difference')} over {check.get('positions_compared')} "
                    "probe positions)"
                )
            else:
                notes.append(f"{served}; its log-probability check was {check.get('outcome')}")
        notes += [f"{self.label}, {task}: {why}" for task, why in self.incomplete.items()]
        for task in self.tasks.values():
            notes += [f"{self.label}, {task.task}: {why}" for why in task.problems]
        said = set()
        for task in self.tasks.values():  # a foreign file's notes once, under its first task
            if task.origin is not None and task.origin.file not in said:
                said.add(task.origin.file)
                notes += task.origin.notes(self.label, task.task)
        return notes


def _model_of(data: dict[str, Any], keep_paths: bool = False) -> tuple[str, str]:
    config = data.get("config", {})
    args = config.get("model_args")
    text = portable(json.dumps(args, sort_keys=True) if isinstance(args, dict) else str(args or ""))
    return str(config.get("model")), text if keep_paths else hide_model_paths(text)


def read_task(
    task: str,
    row: dict[str, Any],
    samples: Path | None,
    expected: int | None = None,
    dataset: str | None = None,
    summary: Summary | None = None,
) -> TaskRun:
    """One task from its results row and samples file (``expected``: documents lm-eval scored),
    through the run's ``summary`` when given; a metric logged but not aggregated gets its figure
    from the samples."""
    run = TaskRun(task, row, samples=samples, dataset=dataset)
    if samples is None:  # said once per folder (``load_run``), not once per task
        return run
    if summary is not None:
        run.docs, run.lines, values = summary.read(task, samples, read_samples)
    else:
        rows = read_samples(samples)
        run.docs, run.lines = [r["doc"] for r in rows], [r[LINE] for r in rows]
        logged = [registry.logged(r) for r in rows]
        values = {name: [v[name] for v in logged] for name in (logged[0] if logged else [])}
    if expected is not None and len(run.docs) != expected:
        raise IncompleteSamples(samples, len(run.docs), expected)
    for name, column in values.items():
        run.values[name] = column
        found = registry.by_name(name, column[0]) if column else None
        if found is None:
            continue
        outcome = summary.computed(task, name) if summary is not None else None
        if outcome is None:  # recomputed once per samples file: the summary keeps it
            try:
                figure = found(run.values[name])
                # a NumPy float as the float a summary gives back, whichever path read it
                outcome = ["value", float(figure) if isinstance(figure, float) else figure]
            except (ValueError, KeyError, TypeError) as error:
                outcome = ["error", str(error)]
            if summary is not None:
                summary.remember(task, name, outcome)
        if outcome[0] == "error":
            run.problems.append(
                f"{name}: not recomputable from the samples ({outcome[1]}); no interval"
            )
            log.warning(f"wsc_tasks: {task}: {run.problems[-1]}")
            continue
        value = outcome[1]
        if registry.column(name) not in run.row:  # logged, not aggregated (metrics: headline)
            run.row[registry.column(name)] = value
            run.forms[name] = found
            continue
        reported = run.reported(name)
        same = reported is not None and (
            (math.isnan(value) and math.isnan(reported)) or abs(value - reported) <= TOLERANCE
        )
        if same:
            run.forms[name] = found
        else:
            run.problems.append(
                f"{name}: the samples give {value}, lm-eval reported {reported}; no interval for it"
            )
            log.warning(f"wsc_tasks: {task}: {run.problems[-1]}")
    return run


def load_run(folder: str | Path, label: str | None = None, keep_paths: bool = False) -> Run:
    """One model's runs under ``folder``; ``label`` defaults to the folder's name; an absolute
    model path in its arguments reads ``<last component>`` unless ``keep_paths``."""
    # a run read from its samples makes millions of objects: each full collection of the cyclic
    # collector would walk them all again (half the CPU of a first read, profiled)
    with survivors_frozen():
        return _load_run(Path(folder), label, keep_paths)


def _load_run(folder: Path, label: str | None, keep_paths: bool) -> Run:
    files = results_files(folder)
    if not files:
        raise RunError(f"{folder}: no lm-eval results_*.json (run lm-eval with --output_path)")
    tasks: dict[str, TaskRun] = {}
    models: dict[tuple[str, str], Path] = {}
    incomplete: dict[str, str] = {}
    limits: list[float] = []
    checks: list[dict[str, Any]] = []
    info = ModelInfo()
    for path in files:
        data = read_results(path)
        named = RESULTS_FILE.match(path.name)
        summary = Summary(summary_path(path, named["stamp"])) if named else None
        read: set[str] = set()
        info = ModelInfo.of(data, path)  # the newest file's, in the end
        models.setdefault(_model_of(data, keep_paths), path)
        checks += [data[LOGPROB_CHECK]] if isinstance(data.get(LOGPROB_CHECK), dict) else []
        configs = data.get("configs", {}).values()
        recorded = [(c.get("metadata") or {}).get(LOGPROB_CHECK) for c in configs]
        checks += [c for c in recorded if isinstance(c, dict)][:1]  # one check a run
        if data.get("config", {}).get("limit") is not None:
            limits.append(float(data["config"]["limit"]))
        groups = groups_of(data)
        for task, row in data.get("results", {}).items():
            if task in groups:
                continue
            samples = samples_file(path, task)
            counts = data.get("n-samples", {}).get(task, {})
            expected = counts.get("effective")
            metadata = data.get("configs", {}).get(task, {}).get("metadata") or {}
            incomplete.pop(task, None)
            if samples is not None and not metadata.get("dataset") and _builtin(samples):
                from wsc_tasks.runs.foreign import lm_eval_samples

                for name in [n for n, t in tasks.items() if t.origin and t.origin.task == task]:
                    del tasks[name]  # an earlier run of the same task: the newest is kept
                found = lm_eval_samples.read(task, samples, data, path.name, expected)
                tasks.update(found)
                continue
            try:
                dataset = metadata.get("dataset")
                tasks[task] = read_task(task, row, samples, expected, dataset, summary)
                read.add(task)
                if isinstance(expected, int) and isinstance(counts.get("original"), int):
                    tasks[task].scored = (expected, counts["original"])
            except IncompleteSamples as error:
                error.expected = expected if error.expected is None else error.expected
                log.warning(f"wsc_tasks: {folder}: {task}: {error}")
                tasks.pop(task, None)
                incomplete[task] = str(error)
        if summary is not None:
            summary.keep_only(read)
            summary.save()
    if len(models) > 1:
        listing = "; ".join(f"{p} ({m} {a})" for (m, a), p in models.items())
        raise RunError(
            f"{folder}: results of different models ({listing}); give each model its own folder"
        )
    (model, args), _ = next(iter(models.items()))
    missing = [t.task for t in tasks.values() if t.samples is None]
    if missing and len(missing) < len(tasks):  # none at all: the report's one error says so
        log.warning(
            f"wsc_tasks: {folder}: {len(missing)} of its {len(tasks)} task(s) have no samples "
            f"file, so no intervals: {', '.join(missing)}"
        )
    log.info(f"wsc_tasks: {folder}: {len(tasks)} task(s) of {model} from {len(files)} file(s)")
    name, limit = label or default_label(folder), max(limits, default=None)
    skipped = [c for c in checks if c.get("outcome") != "passed"]  # noted before any passed one
    check = next(reversed(skipped or checks), None)
    return Run(name, model, args, dict(sorted(tasks.items())), limit, incomplete, check, info)


def _builtin(samples: Path) -> bool:
    """The samples file is of lm-eval's built-in ``winogrande`` or ``wsc273`` (by its first
    document's fields), read as a foreign run of this package's datasets."""
    from wsc_tasks.runs.foreign import lm_eval_samples

    return lm_eval_samples.peek(samples) is not None


def default_label(folder: Path) -> str:
    """A folder's model label: its name, or for a sweep's ``<name>/lm_eval`` the model's name."""
    found = folder.resolve()
    return found.parent.name if found.name == SWEEP_RESULTS else found.name


def parse_folder_argument(text: str) -> tuple[str | None, str]:
    """``LABEL=FOLDER`` or ``FOLDER``."""
    if "=" in text and not Path(text).exists():
        label, folder = text.split("=", 1)
        return label, folder
    return None, text


# -- matching documents between tasks ------------------------------------------------------------
def pair_documents(
    original: TaskRun, transformed: TaskRun, metric: str, problem_level: bool
) -> tuple[list[Any], list[Any]]:
    """Per-document values of ``metric`` of both tasks on the schemas they share, aligned.

    Uses the same matching as the consistency tasks (``pairing``: original problem numbers, or
    schema ids); an original schema nothing was made from is left out, as the thesis compares a
    perturbation with "the corresponding subset" of the original.
    """
    by_uid = {s.uid: i for i, s in enumerate(original.schemas())}
    position = {s.uid: i for i, s in enumerate(transformed.schemas())}
    some = original.partial or transformed.partial  # a run of the first documents of each
    pairs = pair_schemas(original.schemas(), transformed.schemas(), problem_level, some)
    first = [original.values[metric][by_uid[o.uid]] for o, _ in pairs]
    second = [transformed.values[metric][position[t.uid]] for _, t in pairs]
    return first, second


def try_pair_documents(
    original: TaskRun, transformed: TaskRun, metric: str, problem_level: bool
) -> tuple[list[Any], list[Any]] | None:
    try:
        found = pair_documents(original, transformed, metric, problem_level)
    except PairingError as error:
        log.warning(
            f"wsc_tasks: {transformed.task} cannot be matched with {original.task}: {error}"
        )
        return None
    return found if found[0] else None  # a run of the first documents may match none


def write_summaries(folder: Path) -> None:
    """At the end of a run: its summaries written now (``folder``: its lm-eval output folder),
    so that no leaderboard or report decodes its samples. A folder that cannot be read is left
    as it is, with a warning: the first leaderboard or report that reads it says why."""
    try:
        load_run(folder)  # reading a run writes its summaries
    except Exception as error:  # noqa: BLE001 - a finished run is not failed by its summary
        log.warning(f"wsc_tasks: {folder}: no summary written ({error})")
