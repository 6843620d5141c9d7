"""The leaderboard of a sweep assembled: its model folders read, ranked, tabled, with the
findings, the notes and the cost, in the order every format says them (``writing`` writes them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from wsc_tasks.claims import findings, wording
from wsc_tasks.leaderboard.entries import Board, Entry, is_chance_model
from wsc_tasks.leaderboard.layout import MATRIX_MAX, Tables, origin, tables
from wsc_tasks.metrics import ranks
from wsc_tasks.paths import SWEEP_DONE, SWEEP_ERROR, error_summary, read_done, verdict
from wsc_tasks.report.tables import Table
from wsc_tasks.runs.folders import RunError
from wsc_tasks.runs.foreign.origin import Origin
from wsc_tasks.runs.foreign.sources import holds_run

HOW_TO_READ = (
    "A: schema accuracy (every problem of a schema right), a: problem accuracy, each with a 95% "
    f"interval ({wording.how_intervals()}; bootstrap: R = {{iters}}, seed {{seed}}); p against "
    f"chance (0.5 for a, 0.25 for A on pairs), {wording.sides()}, {wording.how_p()}, with the "
    "side of chance the value lies on; `A − next`: paired difference with the next model down "
    "(its sign is its side). "
    f"The findings quote the same p. {wording.claim_rule()}; `controls above chance` counts by "
    "that rule (the rules: `wsc_tasks/claims/findings.py`). `lowest C`: the lowest schema "
    "consistency under the perturbations of the ranking task, the ones whose lowest C the report's "
    "findings name (every perturbation's C: the consistency table). `rank (point estimate)`: 1 "
    "+ the models with a higher A; `rank, 95% simultaneous`: a confidence set for each model's "
    "rank that covers the true ranks of all ranked models at once with probability 95%; `rank, "
    "95% marginal`: one that covers that model's rank alone (Mogstad, Romano, Shaikh & Wilhelm "
    "2024, with their stepdown, from the same bootstrap's joint replicates{rank_iters}; unlike "
    "theirs, each pair's studentised difference t is first read on Student's t scale, with the "
    "schemas the two models differ on, less one, as its degrees of freedom, and mapped to the "
    "normal scale before it meets the bootstrap's critical value, which keeps the simultaneous "
    "sets' coverage at 95% or more on simulated boards of tied models "
    "(`python -m benchmarks ranks`): `wsc_tasks/metrics/ranks.py`)."
)


# how a model with an error.txt ended (``paths.verdict``) and what brings it to the board
UNRANKED = {
    "failed": "--retry-failed runs them again",
    "refused": "the next sweep checks them again",
    "not fetched": "the next sweep downloads them again",
}


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
    ranks: ranks.RankSets | None = None  # of the ranked models, in the ranking's order
    ranked: list[str] = field(default_factory=list)  # their labels
    task: str = ""  # the ranking task


def build(
    names: Sequence[str],
    out: Path,
    task: str,
    iters: int,
    seed: int,
    above: Sequence[str] = (),
    unread: Sequence[tuple[str, str]] = (),
) -> Leaderboard:
    """The leaderboard of the models of a sweep (their folder names under ``out``); for each
    model named in ``above``, the findings say which models rank above it with 95% confidence;
    ``unread``: (model, why) of those that could not be read at all (a details repository not
    fetched), listed with the models without a result."""
    board = Board(task, iters, seed)
    folders, problems = [], list(unread)
    for name in names:
        folder = out / name
        if (folder / SWEEP_DONE).is_file():
            folders.append((name, folder, read_done(folder) or {}))
        elif (folder / SWEEP_ERROR).is_file():
            ended = verdict(folder)
            problems.append((name, f"{ended} ({name}/{SWEEP_ERROR}): {error_summary(folder)}"))
        elif not (folder / "spec.json").is_file() and holds_run(folder):
            folders.append((name, folder, {}))  # a run made elsewhere
        else:
            problems.append((name, "not run (interrupted?)"))
    entries = board.load_all(folders)
    problems += [(e.label, f"no samples of {task}") for e in entries if e.A is None]
    scored = [e for e in entries if e.A is not None]
    scored.sort(key=_rank_key)
    ranked = [e for e in scored if not is_chance_model(e.run)]
    checks = [e for e in scored if is_chance_model(e.run)]
    sets, joint, unranked = _rank_sets(board, ranked)
    found = tables(board, ranked, checks, out, sets, [e for e in entries if e.A is None])
    found.status.rows = [[name, why] for name, why in problems]
    cost = _cost(found.ranking, found.chance_models)
    models = [e.model for e in [*ranked, *checks] if e.model is not None]
    tested = findings.headline_tests(models)  # Holm over the ranked models
    power = findings.detectable(models)
    notes = [note for e in entries for note in e.run.notes()]
    foreign = {e.label: [o] for e in [*ranked, *checks] if (o := origin(e, task)) is not None}
    if len(ranked) + len(checks) > MATRIX_MAX:
        notes.append(
            f"the pairwise matrix of paired differences is left out for more than {MATRIX_MAX} "
            f"models ({len(ranked) + len(checks)} here); the ranking has each model's difference "
            "with the next"
        )
    if unranked:
        notes.append(f"no confidence sets for ranks: {unranked}")
    ranking = findings.best_models([e.label for e in ranked], sets)
    labels = [e.label for e in ranked]
    for label in above:
        if label not in labels:
            raise RunError(
                f"--above {label}: not a ranked model of this leaderboard "
                f"(ranked: {', '.join(labels[:5])}{', …' if len(labels) > 5 else ''})"
            )
        if sets is not None and joint is not None:
            values, replicates, df = joint
            shown = ranks.above(values, replicates, labels.index(label), sets.confidence, df)
            ranking.append(findings.ranked_above(label, [labels[k] for k in shown], len(labels)))
    for ended, then in UNRANKED.items():
        which = [name for name, why in problems if why.startswith(f"{ended} (")]
        if which:
            notes.append(
                f"{len(which)} model{'' if len(which) == 1 else 's'} {ended}, not in the "
                f"ranking: {', '.join(which)} (their errors: the last table; {then})"
            )
    rank_iters = ""
    if sets is not None and sets.iters < iters:
        rank_iters = f", the first {sets.iters:,} of them for {len(ranked):,} models"
    return Leaderboard(
        intro=HOW_TO_READ.format(iters=iters, seed=seed, rank_iters=rank_iters),
        overview=" ".join(x for x in (findings.overview(models, tested), *ranking, power) if x),
        findings=[(m.label, _brief(m, tested.get(m.label), foreign)) for m in models],
        notes=notes,
        cost=cost,
        tables=found,
        entries=[*ranked, *checks],
        problems=problems,
        ranks=sets,
        ranked=labels,
        task=task,
    )


def _rank_sets(
    board: Board, ranked: Sequence[Entry]
) -> tuple[ranks.RankSets | None, tuple[np.ndarray, np.ndarray, np.ndarray] | None, str]:
    """The confidence sets for the ranks of the ranked models (in their order), the estimates
    and replicates they came from, or why there are none."""
    if not ranked:
        return None, None, ""
    found = board.joint([e.run for e in ranked])
    if isinstance(found, str):
        return None, None, found
    values, replicates, per_schema = found
    replicates = replicates[: ranks.iters_for(len(ranked), len(replicates))]
    df = ranks.pair_df(per_schema)
    sets = ranks.rank_sets(values, replicates, df=df)
    return sets, (values, replicates, df), ""


def _cost(*tables: Table) -> str:
    """The sweep's GPU-hours, from the cost column of the ranked and the chance models."""
    hours = [row[-1] for table in tables for row in table.rows]
    known = [float(h) for h in hours if isinstance(h, int | float)]
    unknown = len(hours) - len(known)
    models = f"{len(known)} finished model" + ("" if len(known) == 1 else "s")
    total = f"**Cost:** {sum(known):.3f} GPU-hours in total over {models}"
    return total + (f" ({unknown} without a recorded cost)." if unknown else ".")


def _brief(
    model: findings.Model, found: findings.Test | None, foreign: dict[str, list[Origin]]
) -> str:
    """A model's sentence (``findings.brief``); a foreign run's says what it cannot say
    (``Origin.brief``: its controls, perturbations and consistency absent, who scored it)."""
    said = findings.brief(model, found)
    origins = foreign.get(model.label)
    if not origins:
        return said
    return f"{said.removesuffix('.')}; {'; '.join(o.brief() for o in origins)}."


def _rank_key(entry: Entry) -> tuple[float, float, str]:
    """``entries.rank``'s order (A, then a, descending; then the name) from the figures' values,
    which are those ratios of the same outcomes, without going over the outcomes again."""
    assert entry.A is not None
    a = -entry.a.estimate.value if entry.a is not None else 1.0
    return (-entry.A.estimate.value, a, entry.label)
