"""The leaderboard of a sweep: the conclusion first, then models ranked by schema accuracy.

In every format (``leaderboard.md``, ``.html``, ``.csv``) and in the same order: the findings (one
sentence per model by the rules of ``reporting.findings``), the notes a reader must see before a
number (a ``--limit``, incomplete samples, failed models), then the tables. The ranking is
compact: schema accuracy *A* and problem accuracy *a* of the ranking task with 95% intervals and
p against chance (two-sided, with the side), the paired difference with the next model down, how
many control baselines the model is above chance on, its lowest schema consistency and its
GPU-hours. Chance models (``wsc-chance``) are the calibration check, in a table of their own, not
ranked. The control baselines (problem accuracy without what a reader needs) and the schema
consistency under each perturbation have their own tables; the models' metadata (parameters,
precision, revision, fingerprint, date, versions, links to their files) too; then the pairwise
matrix of paired differences and the models without a result. Everything is recomputed from the
saved samples with a fixed seed; the CSV has one row per model with every number of every table.
"""

from __future__ import annotations

import argparse
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from wsc_tasks.data import catalog
from wsc_tasks.metrics import ratios, stats
from wsc_tasks.metrics.registry import TaskKind
from wsc_tasks.paths import CHANCE_MODEL, SWEEP_DONE, SWEEP_ERROR, SWEEP_RESULTS, read_done
from wsc_tasks.reporting import findings, html_report
from wsc_tasks.reporting.estimates import chance
from wsc_tasks.reporting.runs import Run, RunError, load_run
from wsc_tasks.reporting.tables import (
    Delta,
    Interval,
    Links,
    Table,
    markdown,
    numeric,
)

log = logging.getLogger(f"lm_eval.{__name__}")

DEFAULT_TASK = "wsc266"
# every control baseline of the catalog: those generated from whole datasets, then hand-made ones
CONTROLS = tuple(
    sorted(catalog.datasets(catalog.CONTROL), key=lambda name: not catalog.role_of(name).generated)
)
COST = "GPU-h"
REPORT = Path("report") / "report.html"  # a report written beside the leaderboard, if any
HOW_TO_READ = (
    "A: schema accuracy (every problem of a schema right), a: problem accuracy, each with a 95% "
    "percentile interval of a bootstrap over schemas (R = {iters}, seed {seed}); p against chance "
    "(0.5 for a, 0.25 for A on pairs), two-sided, with the side of chance the value lies on; "
    "`A − next`: paired difference with the next model down (its sign is its side). In the "
    "findings p is one-sided (the rules: `wsc_tasks/reporting/findings.py`)."
)


def _outcomes(run: Run, task: str, metric: str) -> list | None:
    found = run.tasks.get(task)
    if found is None or metric not in found.forms:
        return None
    return found.values[metric]


def _keyed(run: Run, task: str, metric: str) -> dict | None:
    values = _outcomes(run, task, metric)
    if values is None:
        return None
    uids = [d.get("schema_uid") for d in run.tasks[task].docs]
    return dict(zip(uids, values, strict=True))


def is_chance_model(run: Run) -> bool:
    return run.model == CHANCE_MODEL


def rank(runs: Sequence[Run], task: str) -> list[Run]:
    """Schema accuracy, then problem accuracy, descending; then name."""

    def key(run: Run) -> tuple[float, float, str]:
        big_a = _outcomes(run, task, "schema_acc")
        a = _outcomes(run, task, "acc")
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
    consistency: dict[str, Interval] = field(default_factory=dict)  # consistency task -> C
    model: findings.Model | None = None

    @property
    def label(self) -> str:
        return self.run.label


class Board:
    """The estimates of a sweep's leaderboard, each bootstrap run once."""

    def __init__(self, task: str, iters: int, seed: int) -> None:
        self.task, self.iters, self.seed = task, iters, seed

    def estimate(self, values: list, form: ratios.Ratio, against_chance: bool) -> Interval:
        null = chance(values, form) if against_chance else None
        found = stats.bootstrap(values, form, null=null, iters=self.iters, seed=self.seed)
        return Interval(found, against_chance)

    def paired(self, first: Run, second: Run) -> Delta | None:
        a, b = _keyed(first, self.task, "schema_acc"), _keyed(second, self.task, "schema_acc")
        if not a or not b:
            return None
        x, y = stats.align(a, b)
        if not x:
            return None
        form = ratios.SCHEMA_ACCURACY
        return Delta(stats.paired_difference(x, y, form, iters=self.iters, seed=self.seed))

    def entry(self, run: Run, folder: Path, done: dict[str, Any]) -> Entry:
        found = Entry(run, folder, done)
        big_a = _outcomes(run, self.task, "schema_acc")
        a = _outcomes(run, self.task, "acc")
        found.A = self.estimate(big_a, ratios.SCHEMA_ACCURACY, True) if big_a else None
        found.a = self.estimate(a, ratios.PROBLEM_ACCURACY, True) if a else None
        for control in CONTROLS:
            values = _outcomes(run, control, "acc")
            if values:
                found.controls[control] = self.estimate(values, ratios.PROBLEM_ACCURACY, True)
        for name, task in run.tasks.items():
            if task.kind is TaskKind.CONSISTENCY and "schema_consistency" in task.forms:
                values = task.values["schema_consistency"]
                form = task.forms["schema_consistency"]
                found.consistency[name] = Interval(
                    stats.bootstrap(values, form, iters=self.iters, seed=self.seed)
                )
        found.model = self.findings_model(found)
        return found

    def findings_model(self, entry: Entry) -> findings.Model:
        controls = []
        for name, cell in entry.controls.items():
            role = catalog.role_of(name)
            change = catalog.CHANGES.get(role.change, role.change)
            controls.append(findings.Control(name, change, role.of or name, cell.estimate))
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
        )


def _perturbation(run_task: str, entries: Sequence[Entry]) -> str:
    """A consistency task's column: the dataset paired with its original (``wsc266_switched``)."""
    for entry in entries:
        found = entry.run.tasks.get(run_task)
        if found is not None and found.dataset:
            return found.dataset
    return run_task


def _controls_above(entry: Entry) -> str | None:
    if not entry.controls or entry.model is None:
        return None
    above = sum(findings.verdict(c.a) == findings.ABOVE for c in entry.model.controls)
    return f"{above} of {len(entry.controls)}"


def _lowest(entry: Entry) -> float | None:
    values = [cell.estimate.value for cell in entry.consistency.values()]
    return min(values) if values else None


def gpu_hours(done: dict[str, Any]) -> float | None:
    """The GPU-hours a model's ``done.json`` records (None from a sweep that did not)."""
    value = (done.get("cost") or {}).get("gpu_hours")
    return float(value) if isinstance(value, int | float) else None


# -- the model's metadata ------------------------------------------------------------------------
QUANTISED = re.compile(r"\.((?:I?Q\d[\w]*)|F16|BF16|F32)\.gguf\b", re.IGNORECASE)


def precision(run: Run) -> str | None:
    """The weights as run: lm-eval's dtype, and a GGUF quantisation or 4/8-bit loading."""
    if is_chance_model(run):
        return None  # random scores: no weights (a tokenizer at most)
    args = run.model_args
    quantised = QUANTISED.search(args)
    extra = f"{quantised[1]} GGUF" if quantised else None
    for bits in ("4", "8"):
        if re.search(rf"load_in_{bits}bit\W+(true|True)", args):
            extra = f"{bits}-bit"
    dtype = run.info.dtype
    if dtype and extra:
        return f"{dtype} ({extra})"
    return dtype or extra


def parameters(count: int | None) -> str | None:
    if count is None:
        return None
    for size, unit in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if count >= size:
            return f"{count / size:.1f}{unit}"
    return str(count)


def _date(run: Run) -> str | None:
    if run.info.date is None:
        return None
    return datetime.fromtimestamp(run.info.date, UTC).strftime("%Y-%m-%d")


def _versions(run: Run, done: dict[str, Any]) -> str | None:
    found = done.get("versions") or {}
    parts = [f"lm-eval {run.info.lm_eval or found.get('lm_eval') or '?'}"]
    if found.get("wsc-tasks"):
        parts.append(f"wsc-tasks {found['wsc-tasks']}")
    return ", ".join(parts)


def _commit(done: dict[str, Any]) -> str | None:
    """A swept Hub model's commit, linked to its files on the Hub (``done.json``'s ``hub``)."""
    hub = done.get("hub") or {}
    if not hub.get("commit"):
        return None
    return f"[{hub['commit'][:10]}]({hub['url']})" if hub.get("url") else hub["commit"]


def _revision(run: Run, done: dict[str, Any] | None = None) -> str | None:
    if (done or {}).get("hub"):
        return str(done["hub"].get("revision")) if done else None  # the revision asked
    info = run.info
    if info.sha:
        return f"{info.revision or ''}@{info.sha[:12]}".lstrip("@")
    return info.revision


def _files(entry: Entry, out: Path) -> Links:
    """Links, relative to the leaderboard, to the model's results file, samples, log and the
    report written beside the leaderboard (``report/report.html``), where they exist."""
    found: list[tuple[str, str]] = []
    results = entry.run.info.results
    if results is not None:
        found.append(("results", _relative(results, out)))
        found.append(("samples", _relative(results.parent, out) + "/"))
    if (entry.folder / "log.txt").is_file():
        found.append(("log", _relative(entry.folder / "log.txt", out)))
    if (out / REPORT).is_file():
        found.append(("report", REPORT.as_posix()))
    return Links(tuple(found))


def _relative(path: Path, out: Path) -> str:
    try:
        return path.resolve().relative_to(out.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


# -- the tables ------------------------------------------------------------------------------------
@dataclass
class Tables:
    ranking: Table
    chance_models: Table
    controls: Table
    consistency: Table
    models: Table
    matrix: Table
    status: Table

    def shown(self) -> list[Table]:
        """The tables with rows, in reading order (the matrix only for two or more models)."""
        out = [self.ranking, self.chance_models, self.controls, self.consistency, self.models]
        out += [self.matrix] if len(self.matrix.rows) > 1 else []
        return [t for t in [*out, self.status] if t.rows]


def tables(board: Board, ranked: list[Entry], checks: list[Entry], out: Path) -> Tables:
    """Every table of the leaderboard; ``ranked`` models in rank order, ``checks`` the chance
    models."""
    task = board.task
    everyone = [*ranked, *checks]
    headline = ["model", "rank", "A", "a", "A − next", "controls above chance", "lowest C", COST]
    ranking = Table("leaderboard", f"Models ranked by schema accuracy A on {task}", headline)
    chance_models = Table(
        "leaderboard_chance",
        f"Chance models on {task}: random log-likelihoods, the calibration check of the "
        "intervals and p-values, not ranked",
        headline,
    )
    for table, entries in ((ranking, ranked), (chance_models, checks)):
        for position, entry in enumerate(entries):
            following = entries[position + 1] if position + 1 < len(entries) else None
            table.rows.append([
                entry.label,
                position + 1 if table is ranking else "–",
                entry.A,
                entry.a,
                board.paired(entry.run, following.run) if following and table is ranking else None,
                _controls_above(entry),
                _lowest(entry),
                gpu_hours(entry.done),
            ])  # fmt: skip
    controls = [c for c in CONTROLS if any(c in e.controls for e in everyone)]
    control_table = Table(
        "leaderboard_controls",
        "Control baselines: problem accuracy a without what a reader needs to resolve the pronoun "
        "(the candidates removed, or only the clause around it kept); a model that reads the "
        "sentence should be at chance (0.5), above chance an artifact can explain its score",
        ["model", *[f"a {c}" for c in controls]],
    )
    perturbations = sorted({name for e in everyone for name in e.consistency})
    consistency_table = Table(
        "leaderboard_consistency",
        "Schema consistency C under each perturbation: the share of schemas whose number of "
        "problems answered right stays the same",
        ["model", *[f"C {_perturbation(p, everyone)}" for p in perturbations]],
    )
    models = Table(
        "leaderboard_models",
        "The models: as lm-eval ran them, and their files",
        ["model", "kind", "lm-eval model", "parameters", "precision", "revision",
         "fingerprint", "run date", "versions", COST, "files"],
    )  # fmt: skip
    hub = any(e.done.get("hub") for e in everyone)  # a Hub sweep: each model's commit, linked
    if hub:
        models.columns.insert(models.columns.index("fingerprint"), "commit")
    for entry in everyone:
        if controls:
            control_table.rows.append([entry.label, *[entry.controls.get(c) for c in controls]])
        if perturbations:
            consistency_table.rows.append(
                [entry.label, *[entry.consistency.get(p) for p in perturbations]]
            )
        run, done = entry.run, entry.done
        fingerprint = done.get("fingerprint")
        models.rows.append([
            entry.label,
            "chance model" if is_chance_model(run) else "model",
            run.model,
            parameters(run.info.parameters),
            precision(run),
            _revision(run, done),
            *([_commit(done)] if hub else []),
            fingerprint[:12] if isinstance(fingerprint, str) else None,
            _date(run),
            _versions(run, done),
            gpu_hours(entry.done),
            _files(entry, out),
        ])  # fmt: skip
    matrix = Table(
        "leaderboard_pairwise",
        f"Paired difference in A on {task}, row − column, with p",
        ["model", *[e.label for e in everyone]],
    )
    for entry in everyone:
        matrix.rows.append([
            entry.label,
            *[None if other is entry else board.paired(entry.run, other.run) for other in everyone],
        ])  # fmt: skip
    status = Table("leaderboard_status", "Models without a result", ["model", "status"])
    return Tables(ranking, chance_models, control_table, consistency_table, models, matrix, status)


# -- the page --------------------------------------------------------------------------------------
@dataclass
class Leaderboard:
    """What every format of the leaderboard says, in the order it says it."""

    intro: str
    overview: str
    findings: list[tuple[str, str]]  # (model, its sentence)
    notes: list[str]
    cost: str
    tables: Tables
    entries: list[Entry]
    problems: list[tuple[str, str]]


def build(names: Sequence[str], out: Path, task: str, iters: int, seed: int) -> Leaderboard:
    """The leaderboard of the models of a sweep (their folder names under ``out``)."""
    board = Board(task, iters, seed)
    entries, problems = [], []
    for name in names:
        folder = out / name
        if (folder / SWEEP_DONE).is_file():
            run = load_run(folder / SWEEP_RESULTS, name)
            entries.append(board.entry(run, folder, read_done(folder) or {}))
        elif (folder / SWEEP_ERROR).is_file():
            first = (folder / SWEEP_ERROR).read_text(encoding="utf-8").strip().splitlines()
            why = first[0] if first else "no message"
            problems.append((name, f"failed ({name}/{SWEEP_ERROR}): {why}"))
        else:
            problems.append((name, "not run (interrupted?)"))
    problems += [(e.label, f"no samples of {task}") for e in entries if e.A is None]
    scored = [e for e in entries if e.A is not None]
    order = {run.label: i for i, run in enumerate(rank([e.run for e in scored], task))}
    scored.sort(key=lambda e: order[e.label])
    ranked = [e for e in scored if not is_chance_model(e.run)]
    checks = [e for e in scored if is_chance_model(e.run)]
    found = tables(board, ranked, checks, out)
    found.status.rows = [[name, why] for name, why in problems]
    cost = _cost(found.ranking, found.chance_models)
    models = [e.model for e in [*ranked, *checks] if e.model is not None]
    notes = [note for e in entries for note in e.run.notes()]
    failed = [name for name, why in problems if why.startswith("failed")]
    if failed:
        notes.append(
            f"{len(failed)} model(s) failed and are not in the ranking: {', '.join(failed)} "
            "(their errors: the last table; `--retry-failed` runs them again)"
        )
    return Leaderboard(
        intro=HOW_TO_READ.format(iters=iters, seed=seed),
        overview=findings.overview(models),
        findings=[(m.label, findings.brief(m)) for m in models],
        notes=notes,
        cost=cost,
        tables=found,
        entries=[*ranked, *checks],
        problems=problems,
    )


def _cost(*tables: Table) -> str:
    """The sweep's GPU-hours, from the cost column of the ranked and the chance models."""
    hours = [row[-1] for table in tables for row in table.rows]
    known = [float(h) for h in hours if isinstance(h, int | float)]
    unknown = len(hours) - len(known)
    models = f"{len(known)} finished model" + ("" if len(known) == 1 else "s")
    total = f"**Cost:** {sum(known):.3f} GPU-hours in total over {models}"
    return total + (f" ({unknown} without a recorded cost)." if unknown else ".")


def markdown_text(board: Leaderboard) -> str:
    lines = ["# Leaderboard", "", "## Findings", ""]
    lines += [board.overview, ""] if board.overview else []
    lines += [f"- **{label}**: {said}" for label, said in board.findings]
    lines += ["", *(f"**Note:** {note}." for note in board.notes)]
    lines += ["", board.intro, ""]
    for table in board.tables.shown():
        lines += [markdown(table)]
        if table is board.tables.ranking or (
            table is board.tables.chance_models and not board.tables.ranking.rows
        ):
            lines += [board.cost, ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def html_text(board: Leaderboard) -> str:
    body = ["<h1>Leaderboard</h1>", "<h2>Findings</h2>"]
    body += [f"<p>{html_report.inline(board.overview)}</p>"] if board.overview else []
    items = "".join(
        f"<li><b>{html_report.esc(label)}</b>: {html_report.inline(said)}</li>"
        for label, said in board.findings
    )
    body += [f'<ul class="findings">{items}</ul>'] if items else []
    body += [html_report.notes_html(board.notes)] if board.notes else []
    body += [f"<p>{html_report.inline(board.intro)}</p>"]
    for table in board.tables.shown():
        body.append(html_report.table_html(table))
        if table is board.tables.ranking or (
            table is board.tables.chance_models and not board.tables.ranking.rows
        ):
            body.append(f"<p>{html_report.inline(board.cost)}</p>")
    return html_report.page("Leaderboard", "\n".join(body))


def csv_frame(board: Leaderboard) -> pd.DataFrame:
    """One row per model: every number of every table (the matrix aside), its findings sentence
    and notes; then the models without a result, with their status."""
    found = board.tables
    frame = pd.concat([numeric(found.ranking), numeric(found.chance_models)], ignore_index=True)
    if frame.empty:
        frame = pd.DataFrame(columns=["model", "rank"])
    for table in (found.controls, found.consistency, found.models):
        if table.rows:
            extra = numeric(table).drop(columns=[COST], errors="ignore")
            frame = frame.merge(extra, on="model", how="left")
    if "commit" in frame:  # the whole commit, not the link
        commits = {e.label: (e.done.get("hub") or {}).get("commit") for e in board.entries}
        frame["commit"] = [commits.get(str(m)) for m in frame["model"]]
    said = dict(board.findings)
    frame["finding"] = [said.get(str(m), "") for m in frame["model"]]
    notes = {e.label: "; ".join(e.run.notes()) for e in board.entries}
    frame["notes"] = [notes.get(str(m), "") for m in frame["model"]]
    frame["status"] = ""
    for name, why in board.problems:
        if name in set(frame["model"]):
            frame.loc[frame["model"] == name, "status"] = why.splitlines()[0]
        else:
            frame.loc[len(frame), ["model", "status"]] = [name, why.splitlines()[0]]
    frame["rank"] = frame["rank"].map(lambda r: "" if r in ("–", None) or pd.isna(r) else int(r))
    return frame


def save(board: Leaderboard, out: Path) -> list[Path]:
    """``<out>/leaderboard.md``, ``.csv`` and ``.html``."""
    md, csv, page = (out / f"leaderboard.{kind}" for kind in ("md", "csv", "html"))
    md.write_text(markdown_text(board), encoding="utf-8")
    csv_frame(board).to_csv(csv, index=False, lineterminator="\n")
    page.write_text(html_text(board), encoding="utf-8")
    return [md, csv, page]


def write(names: Sequence[str], out: Path, task: str, iters: int, seed: int) -> list[Path]:
    """The leaderboard of the models of a sweep, written (``save``)."""
    return save(build(names, out, task, iters, seed), out)


def printed(board: Leaderboard) -> list[str]:
    """What a sweep prints at its end: the findings and the notes, as the leaderboard opens."""
    lines = [board.overview] if board.overview else []
    lines += [f"- {label}: {said}" for label, said in board.findings]
    lines += [f"Note: {note}." for note in board.notes]
    return [line.replace("`", "") for line in lines]


def model_folders(out: Path) -> list[str]:
    """The models of a sweep folder: its subfolders a model's run wrote to (its request, its
    ``done.json`` or its ``error.txt``)."""
    marks = ("spec.json", SWEEP_DONE, SWEEP_ERROR)
    return sorted({p.parent.name for mark in marks for p in out.glob(f"*/{mark}")})


def main(argv: list[str] | None = None) -> int:
    """``wsc-tasks leaderboard OUT``: the leaderboard of the models a sweep left in ``OUT``,
    running none (a sweep submitted with ``--no-wait`` is collected by ``wsc-tasks sweep``)."""
    parser = argparse.ArgumentParser(
        prog="wsc-tasks leaderboard",
        description="Write OUT/leaderboard.md, .csv and .html from the model folders a sweep "
        "left in OUT (those with done.json are ranked, those with error.txt listed), running "
        "no model.",
    )
    parser.add_argument("out", help="the sweep's --out folder")
    parser.add_argument("--rank-task", default=DEFAULT_TASK, help=f"default {DEFAULT_TASK}")
    parser.add_argument("--iters", type=int, default=stats.DEFAULT_ITERS, help="bootstrap R")
    parser.add_argument("--seed", type=int, default=stats.DEFAULT_SEED)
    args = parser.parse_args(argv)
    out = Path(args.out)
    names = model_folders(out)
    if not names:
        raise RunError(f"{out}: no model folder of a wsc-tasks sweep (<name>/{SWEEP_DONE}) in it")
    board = build(names, out, args.rank_task, args.iters, args.seed)
    paths = save(board, out)
    print("\n".join([*printed(board), *map(str, paths)]))
    return 0
