"""Each model of a sweep as the leaderboard sees it: its run read back, its figures, its rank.

One ``Entry`` per model folder: schema accuracy *A* and problem accuracy *a* of the ranking task
with 95% intervals and p against chance, the control baselines, the schema consistency under each
perturbation and the findings' view of it (``findings.Model``), each bootstrap run once with a
fixed seed (``Board``); ``rank`` orders the models, ``Board.paired`` compares two of them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import wsc_tasks.leaderboard.cache as cache
from wsc_tasks.claims import findings
from wsc_tasks.data import catalog
from wsc_tasks.metrics import questions, ratios, stats
from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC, Key, TaskKind
from wsc_tasks.paths import CHANCE_MODEL, SWEEP_DONE, SWEEP_ERROR, SWEEP_RESULTS
from wsc_tasks.report.estimates import chance
from wsc_tasks.report.sections import contamination as contamination_check
from wsc_tasks.report.tables import Delta, Interval
from wsc_tasks.runs.folders import Run, load_run
from wsc_tasks.scoring import questions as asking

log = logging.getLogger(f"lm_eval.{__name__}")

DEFAULT_TASK = "wsc266"
# a board of runs made elsewhere only (lm-eval's winogrande, the leaderboard archive) ranks on
# the Winogrande twin pairs: A of a foreign winogrande run
FOREIGN_TASK = "winogrande_twins"
# every control baseline of the catalog: those generated from whole datasets, then hand-made ones
CONTROLS = tuple(
    sorted(catalog.datasets(catalog.CONTROL), key=lambda name: not catalog.role_of(name).generated)
)
COST = "GPU-h"
# what the board shows of the ranking dataset asked as questions: figure -> metric
QUESTION_FIGURES = {
    "a": Key(ACC).name,
    "A": Key(SCHEMA_ACC).name,
    "u": Key("unanswered").name,
    "first": Key("first_option").name,
    "same": Key("order_consistency").name,
}
BATCH = 256  # models whose replicates one matrix product computes (iters × 2·BATCH floats)


def _outcomes(run: Run, task: str, metric: str) -> list | None:
    found = run.task_for(task)
    if found is None or metric not in found.forms:
        return None
    return found.values[metric]


def _keyed(run: Run, task: str, metric: str) -> dict | None:
    values = _outcomes(run, task, metric)
    found = run.task_for(task)
    if values is None or found is None:
        return None
    uids = [d.get("schema_uid") for d in found.docs]
    return dict(zip(uids, values, strict=True))


def is_chance_model(run: Run) -> bool:
    return run.model == CHANCE_MODEL


def rank(runs: Sequence[Run], task: str) -> list[Run]:
    """Schema accuracy, then problem accuracy, descending; then name."""

    def key(run: Run) -> tuple[float, float, str]:
        big_a = _outcomes(run, task, SCHEMA_ACC)
        a = _outcomes(run, task, ACC)
        return (
            -ratios.SCHEMA_ACCURACY(big_a) if big_a else 1.0,
            -ratios.PROBLEM_ACCURACY(a) if a else 1.0,
            run.label,
        )

    return sorted(runs, key=key)


# -- what each model's row says --------------------------------------------------------------------
@dataclass
class Entry:
    """One model of the sweep with what the leaderboard says of it."""

    run: Run
    folder: Path  # <out>/<name>
    done: dict[str, Any]  # its done.json
    A: Interval | None = None
    a: Interval | None = None
    controls: dict[str, Interval] = field(default_factory=dict)  # control task -> a
    originals: dict[str, Interval] = field(default_factory=dict)  # dataset a control is of -> a
    consistency: dict[str, Interval] = field(default_factory=dict)  # consistency task -> C
    # the ranking dataset asked as questions (``QUESTION_FIGURES``), a different formulation
    questions: dict[str, Any] = field(default_factory=dict)
    model: findings.Model | None = None

    @property
    def label(self) -> str:
        return self.run.label


class Board:
    """The estimates of a sweep's leaderboard, each bootstrap run once."""

    def __init__(self, task: str, iters: int, seed: int) -> None:
        self.task, self.iters, self.seed = task, iters, seed
        # per model: its schemas in ``stats.align``'s order, A on them and A's replicates on the
        # resamples every paired difference over those schemas shares (``_replicates``)
        self._models: dict[int, tuple[list[Any], float, Any]] = {}
        self._resamples: dict[int, stats.Resamples] = {}  # per number of schemas
        self._keys: dict[int, tuple[Run, dict | None]] = {}  # ``_keyed`` per run (kept alive)

    def estimate(
        self,
        values: list,
        form: Callable[..., Any],
        against_chance: bool,
        null: float | None = None,
    ) -> Interval:
        """The figure with its interval and p (against chance, or ``null``): the board's
        resamples of that many documents (drawn once per size with the board's seed: the
        numbers of a draw of their own)."""
        null = chance(values, form) if against_chance else null
        against_chance = against_chance or null is not None
        shared = self._shared(len(values))
        found = stats.bootstrap(values, form, null=null, iters=self.iters, seed=self.seed,
                                resamples=shared)  # fmt: skip
        return Interval(found, against_chance)

    def _keyed(self, run: Run) -> dict | None:
        """schema → A's per-schema value of the ranking task, once per run (``paired`` asks for
        it twice per row)."""
        if id(run) not in self._keys:
            self._keys[id(run)] = (run, _keyed(run, self.task, SCHEMA_ACC))
        return self._keys[id(run)][1]

    def _shared(self, n: int) -> stats.Resamples:
        """The resamples of ``n`` documents, counted at once: every replicate sum is then one
        exact product (``stats.Resamples``), not a gather per figure."""
        if n not in self._resamples:
            self._resamples[n] = stats.Resamples.kept(n, self.iters, self.seed)
            _ = self._resamples[n].counts
        return self._resamples[n]

    def paired(self, first: Run, second: Run) -> Delta | None:
        """A(first) − A(second) on the schemas both were run on, with p against 0. Two models run
        on the same schemas (the usual case) share the resamples, so each model's replicates are
        computed once for the whole board: the same numbers as ``stats.paired_difference``."""
        a, b = self._keyed(first), self._keyed(second)
        if not a or not b:
            return None
        form = ratios.SCHEMA_ACCURACY
        if a.keys() == b.keys():
            (x, value_a, reps_a), (y, value_b, reps_b) = (
                self._replicates(first, a),
                self._replicates(second, b),
            )
            found = stats.paired_replicated(x, y, form, form, value_a - value_b, reps_a - reps_b)
            return Delta(stats.summarise([found])[0])
        x, y = stats.align(a, b)
        if not x:
            return None
        return Delta(stats.paired_difference(x, y, form, iters=self.iters, seed=self.seed))

    def prepare(self, runs: Sequence[Run]) -> None:
        """A's replicates of every model in ``runs`` at once (what ``paired`` compares): the
        shared resamples of each number of schemas (``stats.Resamples``), their sums for
        ``BATCH`` models at a time."""
        todo: dict[int, list[tuple[Run, list[Any]]]] = {}
        for run in runs:
            keyed = self._keyed(run)
            if id(run) not in self._models and keyed:
                x, _ = stats.align(keyed, keyed)
                todo.setdefault(len(x), []).append((run, x))
        form = ratios.SCHEMA_ACCURACY
        for n, group in todo.items():
            resamples = self._shared(n)
            for start in range(0, len(group), BATCH):
                chunk = group[start : start + BATCH]
                resamples.forget()
                resamples.prefetch([(x, form) for _, x in chunk])
                for run, x in chunk:
                    reps = stats.replicates(x, form, resamples)
                    self._models[id(run)] = (x, form.of_arrays(*resamples.parts(x, form)), reps)

    def joint(self, runs: Sequence[Run]) -> tuple[Any, Any, Any] | str:
        """A of ``runs``, their R × p joint replicates (the same resamples of the same schemas
        for every model: what the confidence sets for ranks need) and the n × p per-schema
        values of A, or why there are none: models run on different schemas are not resampled
        together."""
        found_keys = [self._keyed(run) for run in runs]
        keyed = [k for k in found_keys if k]
        if not runs or len(keyed) < len(runs):
            return f"a model without samples of {self.task}"
        first = keyed[0].keys()
        differ = [run.label for run, k in zip(runs, keyed, strict=True) if k.keys() != first]
        if differ:
            return (
                f"{len(differ)} model(s) ran on other schemas of {self.task} than "
                f"{runs[0].label} (--limit?), e.g. {differ[0]}"
            )
        self.prepare(runs)  # ``BATCH`` models' replicates a product, not one model's each
        found = [self._replicates(run, k) for run, k in zip(runs, keyed, strict=True)]
        values = np.array([value for _, value, _ in found], dtype=float)
        form = ratios.SCHEMA_ACCURACY
        per_schema = []
        for x, _, _ in found:  # the parts ``prepare`` took of the same list
            num, den = (
                np.asarray(part, dtype=float) for part in self._shared(len(x)).parts(x, form)
            )
            per_schema.append(np.divide(num, den, out=np.zeros_like(num), where=den > 0))
        replicates = np.column_stack([reps for _, _, reps in found])
        return values, replicates, np.column_stack(per_schema)

    def _replicates(self, run: Run, keyed: dict) -> tuple[list[Any], float, Any]:
        if id(run) not in self._models:
            self.prepare([run])
        return self._models[id(run)]

    def load(self, name: str, folder: Path, done: dict[str, Any]) -> Entry:
        """The model of ``folder``: its figures from its cache file when they were computed from
        its run as it is now, else computed from the run (and the cache written). A folder no
        sweep made (no ``done.json``) is read by ``foreign.sources``: details files, or lm-eval
        output in it or in its ``lm_eval/``."""
        found = self._cached(name, folder, done)
        if isinstance(found, Entry):
            return found
        return self._computed(found, folder, done)

    def load_all(self, models: Sequence[tuple[str, Path, dict[str, Any]]]) -> list[Entry]:
        """``load`` of every (name, folder, done.json), in their order; the figures of the runs
        read ``BATCH`` at a time, the ranking task's A and a of each batch in one product per
        number of schemas (``stats.Resamples.prefetch``: the same floats as one at a time)."""
        out: list[Entry | None] = []
        waiting: list[tuple[int, Run, Path, dict[str, Any], Path, dict[str, Any]]] = []

        def flush() -> None:
            self._prefetch([run for _, run, *_ in waiting])
            for at, run, folder, done, path, key in waiting:
                out[at] = self._computed((run, path, key), folder, done)
            waiting.clear()

        for name, folder, done in models:
            found = self._cached(name, folder, done)
            out.append(found if isinstance(found, Entry) else None)
            if not isinstance(found, Entry):
                run, path, key = found
                waiting.append((len(out) - 1, run, folder, done, path, key))
                if len(waiting) == BATCH:
                    flush()
        flush()
        return [entry for entry in out if entry is not None]

    def _prefetch(self, runs: Sequence[Run]) -> None:
        """The replicate sums of the ranking task's A and a of ``runs``, a product per size."""
        wanted: dict[int, list[tuple[list[Any], ratios.Ratio]]] = {}
        for run in runs:
            for metric, form in ((SCHEMA_ACC, ratios.SCHEMA_ACCURACY),
                                 (ACC, ratios.PROBLEM_ACCURACY)):  # fmt: skip
                values = _outcomes(run, self.task, metric)
                if values:
                    wanted.setdefault(len(values), []).append((values, form))
        for n, pairs in wanted.items():
            resamples = self._shared(n)
            resamples.forget()
            resamples.prefetch(pairs)

    def _cached(
        self, name: str, folder: Path, done: dict[str, Any]
    ) -> Entry | tuple[Run, Path, dict[str, Any]]:
        """The model's entry from its cache file, or its run read (with the cache's path and
        key) when the cache was not computed from the run as it is now."""
        path = cache.cache_path(folder, self.task, self.iters, self.seed)
        source = run_folder(folder, done)
        key = cache.run_key(source, self.task, self.iters, self.seed)
        data = cache.read(path, key)
        if data is not None and not data.get("whole_run"):
            try:
                run, figures = cache.load(data, name, folder, self.task)
            except (KeyError, TypeError, ValueError) as error:
                log.warning(f"wsc_tasks: {path}: not a leaderboard cache ({error}); recomputed")
            else:
                found = Entry(run, folder, done, **figures)
                found.model = self.findings_model(found)
                return found
        if (folder / SWEEP_DONE).is_file():
            run = load_run(source, name)
        else:
            from wsc_tasks.runs.foreign import sources

            run = sources.load_folder(source, name)
        return run, path, key

    def _computed(
        self, read: tuple[Run, Path, dict[str, Any]], folder: Path, done: dict[str, Any]
    ) -> Entry:
        """The entry of a run read from its files, its cache file written."""
        run, path, key = read
        found = self.entry(run, folder, done)
        figures = {
            "A": found.A,
            "a": found.a,
            "controls": found.controls,
            "originals": found.originals,
            "consistency": found.consistency,
            "questions": found.questions,
        }
        data = cache.dump(found.run, folder, key, figures, self.task)
        # a contamination check reads the whole run when the board is rendered: read it again
        data["whole_run"] = bool(contamination_check.tasks(found.run))
        cache.write(path, data)
        return found

    def entry(self, run: Run, folder: Path, done: dict[str, Any]) -> Entry:
        found = Entry(run, folder, done)
        big_a = _outcomes(run, self.task, SCHEMA_ACC)
        a = _outcomes(run, self.task, ACC)
        found.A = self.estimate(big_a, ratios.SCHEMA_ACCURACY, True) if big_a else None
        found.a = self.estimate(a, ratios.PROBLEM_ACCURACY, True) if a else None
        for control in CONTROLS:
            values = _outcomes(run, control, ACC)
            if values:
                found.controls[control] = self.estimate(values, ratios.PROBLEM_ACCURACY, True)
                of = catalog.role_of(control).of
                original = _outcomes(run, of, ACC) if of else None
                if of and original and of not in found.originals:
                    found.originals[of] = self.estimate(original, ratios.PROBLEM_ACCURACY, True)
        for name, task in run.tasks.items():
            if task.kind is TaskKind.CONSISTENCY and "schema_consistency" in task.forms:
                values = task.values["schema_consistency"]
                form = task.forms["schema_consistency"]
                found.consistency[name] = Interval(
                    stats.bootstrap(values, form, iters=self.iters, seed=self.seed)
                )
        found.questions = self.questions(run)
        found.model = self.findings_model(found)
        return found

    def questions(self, run: Run) -> dict[str, Any]:
        """The ranking dataset asked as questions (its task of kind ``QUESTION``): a and A
        against chance, the share unanswered and why, f_A against 0.5 and c_o; empty without."""
        task = run.task_on(self.task, TaskKind.QUESTION)
        if task is None:
            return {}
        values = {name: task.values.get(name) or [] for name in QUESTION_FIGURES.values()}
        if any(not v or name not in task.forms for name, v in values.items()):
            return {}
        found: dict[str, Any] = {"task": task.task}
        for figure, name in QUESTION_FIGURES.items():
            against = figure in ("a", "A")
            null = 0.5 if figure == "first" else None
            found[figure] = self.estimate(values[name], task.forms[name], against, null)
        answers = values[QUESTION_FIGURES["u"]]
        found["missing"] = questions.n_unanswered(answers)
        found["asked"] = questions.n_asked(answers)
        found["reasons"] = asking.reasons(questions.forms(answers))
        return found

    def findings_model(self, entry: Entry) -> findings.Model:
        controls = []
        for name, cell in entry.controls.items():
            role = catalog.role_of(name)
            change = catalog.CHANGES.get(role.change, role.change)
            original = entry.originals.get(role.of) if role.of else None
            controls.append(
                findings.Control(
                    name,
                    change,
                    role.of or name,
                    cell.estimate,
                    original.estimate if original else None,
                )
            )
        ranking = findings.Accuracy(
            self.task,
            entry.a.estimate if entry.a else None,
            entry.A.estimate if entry.A else None,
        )
        return findings.Model(
            entry.label,
            chance_model=is_chance_model(entry.run),
            limit=entry.run.limit,
            ranking=ranking if entry.A or entry.a else None,
            controls=tuple(controls),
            contamination=contamination_check.checks(entry.run),
        )


def gpu_hours(done: dict[str, Any]) -> float | None:
    """The GPU-hours a model's ``done.json`` records (None from a sweep that did not)."""
    value = (done.get("cost") or {}).get("gpu_hours")
    return float(value) if isinstance(value, int | float) else None


def model_folders(out: Path) -> list[str]:
    """The models of a sweep folder: its subfolders a model's run wrote to (its request, its
    ``done.json`` or its ``error.txt``), and those holding a run made elsewhere
    (``foreign.sources.holds_run``: winogrande details files, lm-eval output)."""
    from wsc_tasks.runs.foreign.sources import holds_run

    marks = ("spec.json", SWEEP_DONE, SWEEP_ERROR)
    found = {p.parent.name for mark in marks for p in out.glob(f"*/{mark}")}
    others = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")] if (
        out.is_dir()
    ) else []  # fmt: skip
    found |= {p.name for p in others if p.name not in found and holds_run(p)}
    return sorted(found)


def made_elsewhere(out: Path, names: Sequence[str] = ()) -> list[str]:
    """The model folders of ``out`` no sweep made (no ``spec.json``, ``done.json`` or
    ``error.txt``) and not in ``names``: runs made elsewhere, ranked beside a sweep's."""
    marks = ("spec.json", SWEEP_DONE, SWEEP_ERROR)
    return [
        name
        for name in model_folders(out)
        if name not in names and not any((out / name / mark).is_file() for mark in marks)
    ]


def default_task(out: Path, names: Sequence[str]) -> str:
    """The ranking task when none is asked: ``DEFAULT_TASK``, or ``FOREIGN_TASK`` on a board
    whose models no sweep ran (none has a ``spec.json``, ``done.json`` or ``error.txt``)."""
    marks = ("spec.json", SWEEP_DONE, SWEEP_ERROR)
    swept = any((out / name / mark).is_file() for name in names for mark in marks)
    return DEFAULT_TASK if swept or not names else FOREIGN_TASK


def run_folder(folder: Path, done: dict[str, Any] | None = None) -> Path:
    """Where a model folder's run is: a sweep's ``<name>/lm_eval``; a folder no sweep made,
    itself (or its ``lm_eval/``, where lm-eval output was put as a sweep puts it)."""
    results = folder / SWEEP_RESULTS
    return results if (folder / SWEEP_DONE).is_file() or results.is_dir() else folder
