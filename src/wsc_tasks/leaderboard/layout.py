"""The tables of the leaderboard, laid out from its entries: the ranking (with the paired
difference with the next model down), the chance models, the control baselines, the schema
consistency, the ranking dataset asked as questions (a different formulation, not ranked), the
models' metadata (for a Hub sweep each model's Hub id, linked to its files at the commit that
ran, the commit and the query that found it; parameters, precision, revision, fingerprint, date,
versions, links to their files), the pairwise matrix and the models without a result."""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from wsc_tasks import markup
from wsc_tasks.claims import findings
from wsc_tasks.data import catalog
from wsc_tasks.leaderboard.entries import CONTROLS, COST, Board, Entry, gpu_hours, is_chance_model
from wsc_tasks.metrics import ranks
from wsc_tasks.paths import SWEEP_HUB_MODELS
from wsc_tasks.report.sections import contamination as contamination_check
from wsc_tasks.report.tables import Links, RankSet, Table
from wsc_tasks.runs.folders import Run
from wsc_tasks.runs.foreign.origin import CELL, Origin

log = logging.getLogger(f"lm_eval.{__name__}")

REPORT = Path("report") / "report.html"  # a report written beside the leaderboard, if any
MATRIX_MAX = 30  # the pairwise matrix for boards of at most this many models (N² cells)


def _perturbation(run_task: str, entries: Sequence[Entry]) -> str:
    """A consistency task's column: the dataset paired with its original (``wsc266_switched``)."""
    for entry in entries:
        found = entry.run.tasks.get(run_task)
        if found is not None and found.dataset:
            return found.dataset
    return run_task


def origin(entry: Entry, task: str) -> Origin | None:
    """Who scored the ranking task when a run made elsewhere did (``runs.foreign``): such
    a run's controls and consistency are absent."""
    found = entry.run.task_for(task)
    return found.origin if found is not None else None


def scoring(entry: Entry, task: str) -> str:
    """Who scored the ranking task, shown beside the model: a foreign run's harness, method and
    num_fewshot (``Origin.describe``); this package's headline method."""
    found = origin(entry, task)
    return found.describe() if found is not None else "wsc-tasks"


def _controls_above(entry: Entry, task: str) -> str | None:
    if origin(entry, task) is not None and not entry.controls:
        return CELL
    if not entry.controls or entry.model is None:
        return None
    above = len(findings.controls_above(entry.model))  # Holm over the model's controls
    return f"{above} of {len(entry.controls)}"


def _lowest(entry: Entry, task: str) -> float | str | None:
    """The lowest schema consistency under the perturbations of the ranking task ``task``: the
    family whose lowest C the findings name (the consistency table has every perturbation); a
    run made elsewhere has none (absent, not zero)."""
    ranking = entry.run.tasks.get(task)
    family = catalog.datasets(catalog.PERTURBATION, of=ranking.dataset if ranking else task)
    values = [
        cell.estimate.value
        for name, cell in entry.consistency.items()
        if _perturbation(name, [entry]) in family
    ]
    if not values and origin(entry, task) is not None:
        return CELL
    return min(values) if values else None


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
    foreign = run.foreign()
    if foreign and not (run.info.lm_eval or found.get("lm_eval")):
        return foreign[0].harness()  # a details file records no version
    parts = [f"lm-eval {run.info.lm_eval or found.get('lm_eval') or '?'}"]
    if found.get("wsc-tasks"):
        parts.append(f"wsc-tasks {found['wsc-tasks']}")
    return ", ".join(parts)


SHORT_COMMIT = 12  # a commit's characters shown (the whole one is in its Hub page's address)


def _hub_id(done: dict[str, Any]) -> Links | str | None:
    """A swept Hub model's repository id, linked to its files at the commit that ran on an
    https Hub (``done.json``'s ``hub``); as text on another Hub (``markup.safe_href``)."""
    hub = done.get("hub") or {}
    repo, url = hub.get("repo"), hub.get("url")
    if not repo:
        return None
    if url and markup.safe_href(str(url)):
        return Links(((markup.name(repo), str(url)),))
    return str(repo)


def _commit(done: dict[str, Any]) -> str | None:
    """The commit that ran, shortened (the Hub id links to its page)."""
    commit = (done.get("hub") or {}).get("commit")
    return str(commit)[:SHORT_COMMIT] if commit else None


def hub_queries(out: Path) -> dict[str, str]:
    """Each model a Hub query found (by name) and that query, as ``--hub-query`` writes it,
    from the sweep folder's ``hub-models.yaml``; none without one (or one that cannot be read:
    its models then show no query, and the log says why)."""
    path = out / SWEEP_HUB_MODELS
    if not path.is_file():
        return {}
    try:
        found = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        query = ", ".join(f"{k}={'+'.join(map(str, v)) if isinstance(v, list) else v}"
                          for k, v in (found.get("hub") or {}).items())  # fmt: skip
        return {str(model["name"]): query for model in found.get("models") or []}
    except (OSError, yaml.YAMLError, AttributeError, KeyError, TypeError) as error:
        log.warning(f"wsc_tasks: {path}: unreadable ({error}); no model shows its Hub query")
        return {}


def _revision(run: Run, done: dict[str, Any] | None = None) -> str | None:
    if done and done.get("hub"):
        return str(done["hub"].get("revision"))  # the revision asked; its commit has a column
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
    elif entry.run.foreign():  # a details file (or a samples file read by itself)
        read = {t.samples for t in entry.run.tasks.values() if t.origin and t.samples}
        found += [("details", _relative(path, out)) for path in sorted(read)]
    if (entry.folder / "log.txt").is_file():
        found.append(("log", _relative(entry.folder / "log.txt", out)))
    if (out / REPORT).is_file():
        found.append(("report", REPORT.as_posix()))
    return Links(tuple((name, href) for name, href in found if markup.safe_href(href)))


def _relative(path: Path, out: Path) -> str:
    """The path relative to the leaderboard's folder; outside it (a link that resolves
    elsewhere) the absolute path, which is not linked (``markup.safe_href``)."""
    try:
        return path.resolve().relative_to(_resolved(out)).as_posix()
    except ValueError:
        return path.as_posix()


@functools.lru_cache(maxsize=8)
def _resolved(out: Path) -> Path:
    """The leaderboard's folder resolved once, not once per link of a thousand models."""
    return out.resolve()


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
    contamination: Table = field(default_factory=lambda: contamination_table([]))
    controls_above: int = 0  # the control table's first columns: some model is above chance on them
    questions: Table = field(default_factory=lambda: questions_table("", []))

    def shown(self) -> list[Table]:
        """The tables with rows, in reading order (the matrix only for two or more models)."""
        out = [self.ranking, self.chance_models, self.controls, self.consistency, self.questions]
        out += [self.contamination, self.models]
        out += [self.matrix] if len(self.matrix.rows) > 1 else []
        return [t for t in [*out, self.status] if t.rows]


RANK = "rank (point estimate)"
SCORED = "scored by"  # the ranking's column of who scored each model, when a run was foreign
SIMULTANEOUS = "rank, 95% simultaneous"
MARGINAL = "rank, 95% marginal"


def tables(
    board: Board,
    ranked: list[Entry],
    checks: list[Entry],
    out: Path,
    sets: ranks.RankSets | None = None,
    unranked: Sequence[Entry] = (),
) -> Tables:
    """Every table of the leaderboard; ``ranked`` models in rank order, ``checks`` the chance
    models; ``sets`` the confidence sets for the ranked models' ranks, in that order;
    ``unranked`` the models without the ranking task (asked it as questions only, say)."""
    task = board.task
    everyone = [*ranked, *checks]
    board.prepare([entry.run for entry in everyone])  # the paired differences' replicates
    headline = ["model", RANK, SIMULTANEOUS, MARGINAL, "A", "a", "A − next",
                "controls above chance", "lowest C", COST]  # fmt: skip
    foreign = any(origin(entry, task) for entry in [*ranked, *checks])
    if foreign:  # who scored each model, beside it: a foreign run's method and num_fewshot
        headline.insert(1, SCORED)
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
            own = sets if table is ranking else None
            table.rows.append([
                entry.label,
                *([scoring(entry, task)] if foreign else []),
                (int(own.rank[position]) if own else position + 1) if table is ranking else "–",
                RankSet(*map(int, own.simultaneous[position])) if own else None,
                RankSet(*map(int, own.marginal[position])) if own else None,
                entry.A,
                entry.a,
                board.paired(entry.run, following.run) if following and table is ranking else None,
                _controls_above(entry, task),
                _lowest(entry, task),
                gpu_hours(entry.done),
            ])  # fmt: skip
    controls = [c for c in CONTROLS if any(c in e.controls for e in everyone)]
    above = {c.task for e in everyone if e.model for c in findings.controls_above(e.model)}
    controls = [c for c in controls if c in above] + [c for c in controls if c not in above]
    control_table = Table(
        "leaderboard_controls",
        "Control baselines: problem accuracy a without what a reader needs to resolve the pronoun "
        "(the candidates removed, or only the clause around it kept); a model that reads the "
        "sentence is expected not to be above chance (0.5); one above chance (Holm over the "
        "model's controls) has an artifact that can explain part of its score on the dataset "
        "the control was made from, where that score is above chance",
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
    hub = any(e.done.get("hub") for e in everyone)  # a Hub sweep: each model's Hub id and commit
    queries = hub_queries(out) if hub else {}
    if hub:
        models.columns.insert(1, "Hub id")
        at = models.columns.index("fingerprint")
        models.columns[at:at] = ["commit", "Hub query"]
    for entry in everyone:
        # a foreign run has no control or perturbation: each cell says it is absent
        missing = CELL if origin(entry, task) is not None else None
        if controls:
            control_table.rows.append(
                [entry.label, *[entry.controls.get(c, missing) for c in controls]]
            )
        if perturbations:
            consistency_table.rows.append(
                [entry.label, *[entry.consistency.get(p, missing) for p in perturbations]]
            )
        run, done = entry.run, entry.done
        fingerprint = done.get("fingerprint")
        models.rows.append([
            entry.label,
            *([_hub_id(done)] if hub else []),
            "chance model" if is_chance_model(run) else "model",
            run.model,
            parameters(run.info.parameters),
            precision(run),
            _revision(run, done),
            *([_commit(done), queries.get(entry.label)] if hub else []),
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
    for entry in everyone if len(everyone) <= MATRIX_MAX else []:
        matrix.rows.append([
            entry.label,
            *[None if other is entry else board.paired(entry.run, other.run) for other in everyone],
        ])  # fmt: skip
    status = Table("leaderboard_status", "Models without a result", ["model", "status"])
    return Tables(ranking, chance_models, control_table, consistency_table, models, matrix, status,
                  contamination_table(everyone), len(above & set(controls)),
                  questions_table(task, [*everyone, *unranked]))  # fmt: skip


QUESTION_COLUMNS = ["model", "task (questions)", "a (questions)", "A (questions)", "u",
                    "unanswered", "f_A", "c_o"]  # fmt: skip


def questions_table(task: str, entries: Sequence[Entry]) -> Table:
    """The ranking dataset asked as questions, one row per model that was: a different
    formulation, shown beside the ranking and never ranked with it (``Board.questions``)."""
    found = Table(
        "leaderboard_questions",
        f"{task} asked as questions (answers generated and parsed): a different formulation, "
        "not ranked and not the ranking's task scored another way; a and A with p against "
        "chance (unanswered questions count as wrong), the share unanswered u and why, the "
        "share of answers naming the option shown first f_A (p against 0.5: a model that "
        "answers by position is far from it) and the share of problems answered alike in both "
        "orders of the options c_o",
        list(QUESTION_COLUMNS),
    )
    for entry in entries:
        q = entry.questions
        if not q:
            continue
        missing = f"{q['missing']} of {q['asked']}" + (f": {q['reasons']}" if q["reasons"] else "")
        found.rows.append(
            [entry.label, q["task"], q["a"], q["A"], q["u"], missing, q["first"], q["same"]]
        )
    return found


def contamination_table(entries: Sequence[Entry]) -> Table:
    """The contamination check of every model that ran it: one row per model and published file
    (``sections.contamination``: the report's table, with the same figures)."""
    found = contamination_check.table(
        [row for entry in entries for row in contamination_check.rows(entry.run)]
    )
    found.name = "leaderboard_contamination"
    return found
