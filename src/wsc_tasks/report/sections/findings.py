"""The findings first: per model, the sentences of ``claims.findings``, and the notes.

This module only gathers each run's estimates into a ``findings.Model`` (the bootstraps are the
ones the tables below show: asking again is free); the rules that turn them into sentences are
``claims.findings``. A foreign run's findings open with who scored it and what it cannot say
(``runs.foreign.origin``), then a line for each of its datasets. What a reader must know
about the inputs (``Run.notes``: a --limit, missing or incomplete samples…) follows the
findings, so it is read before any table.
"""

from __future__ import annotations

from wsc_tasks.claims import findings, wording
from wsc_tasks.data import catalog
from wsc_tasks.metrics.registry import ACC, Key, TaskKind
from wsc_tasks.paths import CHANCE_MODEL
from wsc_tasks.report.estimates import form, outcomes
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import ACCURACIES, Context, Figure, Section, questions
from wsc_tasks.report.sections.contamination import checks
from wsc_tasks.report.sections.perturbations import pair
from wsc_tasks.report.sections.reid250 import REID250
from wsc_tasks.report.tables import Interval, Table
from wsc_tasks.runs.folders import Run

# the records this section reads, through the registry (a misspelt record fails on import)
HALF_SOLVED = Key("half_solved").name
SCHEMA_CONSISTENCY = Key("schema_consistency").name

ORDER = 0
WINOGRANDE = "winogrande_dev"  # the Winogrande line: the whole dev set, as lm-eval's winogrande
CONTROLS = tuple(catalog.datasets(catalog.CONTROL))
PERTURBATIONS = tuple(catalog.datasets(catalog.PERTURBATION, of=catalog.RANKING))
HOW_TO_READ = (
    "Each sentence applies a stated rule to the estimates of the tables below (the rules: the "
    "docstring of `wsc_tasks/claims/findings.py`; the decision rule and its measured error "
    f"rates: the method section below). Intervals: 95%; p: {wording.sides()}, the same p as in "
    "the tables, against chance for an accuracy and against 0 for a change. "
    f"{wording.claim_rule()}."
)


def accuracy(context: Context, run: Run, dataset: str) -> findings.Accuracy | None:
    """a and A of a run's schema task on ``dataset``, if it has one with samples."""
    task = run.task_on(dataset)
    cells = context.accuracy(task) if task is not None else None
    if task is None or cells is None:
        return None
    a, big_a = cells
    return findings.Accuracy(task.task, a.estimate, big_a.estimate if big_a else None)


def model(context: Context, run: Run) -> tuple[findings.Model, Interval | None]:
    """The run's ``findings.Model``, and its A′ on the ranking task for the table."""
    chance_model = run.model == CHANCE_MODEL
    ranking = accuracy(context, run, catalog.RANKING)
    half = None
    task = run.task_on(catalog.RANKING)
    if task is not None and ranking is not None:
        half = context.estimates.interval(outcomes(task, ACC), form(HALF_SOLVED))
    controls = []
    for name in CONTROLS:
        found = accuracy(context, run, name)
        if found is not None and found.a is not None:
            role = catalog.role_of(name)
            change = catalog.CHANGES.get(role.change, role.change)
            original = accuracy(context, run, role.of) if role.of else None
            controls.append(
                findings.Control(
                    found.task, change, role.of or name, found.a, original.a if original else None
                )
            )
    perturbations = []
    for name in PERTURBATIONS:
        change = catalog.CHANGES.get(catalog.role_of(name).change, name)
        consistency = run.task_on(name, TaskKind.CONSISTENCY)
        cell = None
        if consistency is not None and SCHEMA_CONSISTENCY in consistency.forms:
            values = consistency.values[SCHEMA_CONSISTENCY]
            cell = context.estimates.interval(values, consistency.forms[SCHEMA_CONSISTENCY])
        matched = pair(run, task, name)
        delta = None
        if matched is not None:
            before, after = matched["A"]
            delta = context.estimates.paired(after, before, ACCURACIES["A"])
        if cell is not None or delta is not None:
            perturbations.append(
                findings.Perturbation(
                    name, change, cell.estimate if cell else None, delta.estimate if delta else None
                )
            )
    every = []
    if chance_model:
        for name, each in run.tasks.items():
            if each.kind is TaskKind.QUESTION:  # no chance model answers questions
                continue
            cells = context.accuracy(each)
            if cells is not None:
                a, big_a = cells
                every.append(findings.Accuracy(name, a.estimate, big_a.estimate if big_a else None))
    built = findings.Model(
        run.label,
        chance_model=chance_model,
        limit=run.limit,
        ranking=ranking,
        half_solved=half.estimate if half else None,
        controls=tuple(controls),
        perturbations=tuple(perturbations),
        reid250=accuracy(context, run, REID250),
        winogrande=accuracy(context, run, WINOGRANDE),
        tasks=tuple(every),
        contamination=checks(run),
        questions=questions.of_run(context, run),
    )
    return built, half


# a foreign run's whole-dataset tasks said in a line of their own (Winogrande has its line)
FOREIGN_LINES = {"wsc273_schemas": "WSC273"}


def foreign(context: Context, run: Run) -> list[str]:
    """What a foreign run's findings open with: who scored it and what it cannot say
    (``Origin.absent``), then a line for each of its datasets the findings have no line of."""
    out = [origin.absent() for origin in run.foreign()]
    for dataset, title in FOREIGN_LINES.items():
        task = run.task_on(dataset)
        if task is not None and task.origin is not None:
            out.append(findings.one_line(title, accuracy(context, run, dataset)) or "")
    return [line for line in out if line]


def _ordered(models: list[tuple[findings.Model, str]]) -> list[tuple[findings.Model, str]]:
    """The models, then the chance models."""
    return [(m, k) for m, k in models if not m.chance_model] + [
        (m, k) for m, k in models if m.chance_model
    ]


def text(
    models: list[tuple[findings.Model, str]],
    with_overview: bool = True,
    said_first: dict[str, list[str]] | None = None,
) -> str:
    """The overview line, then each model's sentences as a list under its name (``said_first``:
    per model, the sentences before them: a foreign run's ``foreign``)."""
    chosen = [m for m, _ in models]
    tested = findings.headline_tests(chosen)
    overview = findings.overview(chosen, tested) if with_overview else None
    power = findings.detectable(chosen)
    lines = [line for line in (overview, power) if line]
    lines += [""] if lines else []
    for found, kind in _ordered(models):
        said = findings.sentences(found, tested.get(found.label), catalog.RANKING)
        said = [*(said_first or {}).get(found.label, []), *said]
        lines += [f"**{findings.name(found.label)}** ({findings.code(kind)})", ""]
        lines += [f"- {s}" for s in said] if said else ["- No task with samples to say it from."]
        lines.append("")
    return "\n".join([*lines, HOW_TO_READ])


def lead(
    models: list[tuple[findings.Model, str]], said_first: dict[str, list[str]] | None = None
) -> tuple[str, str]:
    """What the page opens with: the overview line, then each model's conclusion in one
    sentence (``findings.brief``, as its leaderboard row says it; a foreign run's ``foreign``
    sentences instead where it has no ranking task); and the rest of the findings (``text``
    without the overview), shown after the report's method paragraph and contents."""
    chosen = [m for m, _ in models]
    tested = findings.headline_tests(chosen)
    overview = findings.overview(chosen, tested)
    first_said = said_first or {}
    items = []
    for m, kind in _ordered(models):
        said = findings.brief(m, tested.get(m.label))
        if m.label in first_said:
            lines = first_said[m.label]
            said = " ".join(lines if m.ranking is None else [*lines[:1], said])
        items.append(f"- **{findings.name(m.label)}** ({findings.code(kind)}): {said}")
    first = "\n\n".join(part for part in (overview, "\n".join(items)) if part)
    return first, text(models, with_overview=False, said_first=said_first)


BEGIN = "<!-- the findings of report/report.md, written by wsc-tasks report --readme -->"
END = "<!-- end of the findings -->"
TITLE = "## Findings: what the numbers say, per model"


def block(report_md: str) -> str:
    """The findings of a written ``report.md``: its findings section's text, from the overview
    to how to read it (the tables after it aside)."""
    if TITLE not in report_md:
        raise ValueError(f"report.md has no section {TITLE!r}: was it run on a ranking task?")
    text = report_md.split(TITLE, 1)[1]
    end = text.index(HOW_TO_READ) + len(HOW_TO_READ)
    return text[:end].strip()


def splice(readme: str, report_md: str, where: str = "README") -> str:
    """``readme`` with the text between its ``BEGIN`` and ``END`` lines replaced by the
    findings of ``report_md``: prose about the figures that no rule wrote cannot drift."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"{where}: add the lines {BEGIN} and {END} where the findings go")
    head, rest = readme.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{BEGIN}\n\n{block(report_md)}\n\n{END}{tail}"


def build(context: Context) -> Section:
    section = Section("Findings: what the numbers say, per model")
    section.notes = [note for run in context.runs for note in run.notes()]
    table = Table(
        "findings",
        f"The ranking task, {catalog.RANKING}: schema accuracy A, problem accuracy a and the "
        "share of half-solved schemas A′ (95% intervals; p against chance: the next section)",
        ["model", "kind", "A", "a", "A′"],
    )
    models = []
    bars: list[Bar] = []
    foreign_runs = [run for run in context.runs if run.foreign()]
    for run in context.runs:
        found, half = model(context, run)
        models.append((found, run.model))
        if found.ranking is not None:
            task = run.task_on(catalog.RANKING)
            cells = context.accuracy(task) if task is not None else None
            if cells is not None:
                a, big_a = cells
                kind = "chance model" if found.chance_model else "model"
                shown = [Interval(c.estimate) if c else None for c in (big_a, a, half)]
                table.rows.append([run.label, kind, *shown])
                group = "chance models" if found.chance_model else "models"
                for panel, cell in (("A", big_a), ("a", a)):
                    if cell is not None:
                        bars.append(Bar(panel, run.label, run.label, cell.estimate, group))
    if bars:  # the headline figure: the models first, then the chance models
        bars.sort(key=lambda bar: bar.group == "chance models")
        section.figures.append(
            Figure(
                "findings",
                bars,
                f"Schema accuracy A and problem accuracy a on {catalog.RANKING}, per model",
                f"The ranking task, {catalog.RANKING}: A and a of each model (95% intervals)",
            )
        )
    found_any = (m.ranking or m.tasks or m.contamination or m.questions for m, _ in models)
    if not any(found_any) and not foreign_runs:
        section.skipped = (
            f"needs {catalog.RANKING} (or a chance model's tasks, or lm-eval's winogrande or "
            "wsc273 read back) with samples"
        )
        return section
    section.tables = [table] if table.rows else []

    def said_first() -> dict[str, list[str]]:  # quotes estimates: called once they are computed
        return {run.label: foreign(context, run) for run in foreign_runs}

    section.text = lambda: text(models, said_first=said_first())
    section.lead = lambda: lead(models, said_first())
    return section
