"""The schemas asked as questions (``tasks.questions``: the ``<dataset>_chat`` tasks): a different
formulation, shown beside the same model's log-likelihood figures on the same dataset and never
ranked with them; the share unanswered; whether the answers follow the position of the options.

A report of runs without a question task leaves the section out (``Section.absent``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wsc_tasks.claims import findings
from wsc_tasks.data import catalog
from wsc_tasks.metrics import questions
from wsc_tasks.metrics.consistency import pair_outcome
from wsc_tasks.metrics.registry import ACC, Key, TaskKind
from wsc_tasks.report.estimates import form, outcomes
from wsc_tasks.report.figures import Bar
from wsc_tasks.report.sections import ACCURACIES, Context, Figure, Section
from wsc_tasks.report.sections.headline import OTHER, order
from wsc_tasks.report.sections.perturbations import pair
from wsc_tasks.report.tables import Interval, Table
from wsc_tasks.runs.folders import Run, TaskRun
from wsc_tasks.scoring import questions as asking

ORDER = 15
# the consistency under a perturbation, its problems (c) and its schemas (C), by their records
CONSISTENCY = tuple(form(name) for name in ("consistency", "schema_consistency"))
UNANSWERED, FIRST, SAME = (Key(n).name for n in ("unanswered", "first_option", "order_consistency"))
EVEN = 0.5  # f_A of answers that follow the options, not their order
TITLE = "Asked as questions: the same schemas, a different formulation (answers generated)"


@dataclass(frozen=True)
class Cells:
    """One question task's figures, as the table shows them."""

    a: Interval
    A: Interval | None
    unanswered: Interval | None
    missing: int
    asked: int
    reasons: str  # the unanswered questions by reason, in words
    first: Interval | None  # f_A, p against 0.5
    same: Interval | None  # c_o


def role(task: TaskRun) -> str:
    """The catalog role of the dataset asked (its question form is ranked nowhere)."""
    try:
        return catalog.role_of(task.dataset).kind if task.dataset else OTHER
    except KeyError:
        return OTHER


def tasks(run: Run) -> list[TaskRun]:
    """A run's question tasks, the ranking dataset's first, then by role in catalog order."""
    found = [t for t in run.tasks.values() if t.kind is TaskKind.QUESTION]
    return sorted(found, key=order)


def cells(context: Context, task: TaskRun) -> Cells | None:
    """A question task's figures (one bootstrap each, however many sections ask); None without
    its samples."""
    accuracy = context.accuracy(task)
    if accuracy is None:
        return None
    a, big_a = accuracy
    estimates = context.estimates
    values: list[Any] = list(outcomes(task, UNANSWERED) or [])
    first = outcomes(task, FIRST)
    same = outcomes(task, SAME)
    first_cell = (
        Interval(estimates.estimate(first, task.forms[FIRST], EVEN), show_p=True) if first else None
    )
    return Cells(
        a,
        big_a,
        estimates.interval(values, task.forms[UNANSWERED]) if values else None,
        questions.n_unanswered(values),
        questions.n_asked(values),
        asking.reasons(questions.forms(values)),
        first_cell,
        estimates.interval(same, task.forms[SAME]) if same else None,
    )


def of_run(context: Context, run: Run) -> tuple[findings.Question, ...]:
    """The run's question tasks as the findings read them, the ranking dataset's first."""
    out = []
    for task in tasks(run):
        found = cells(context, task)
        if found is None:
            continue
        out.append(
            findings.Question(
                task.task,
                task.dataset,
                found.a.estimate,
                found.A.estimate if found.A else None,
                found.unanswered.estimate if found.unanswered else None,
                found.missing,
                found.asked,
                found.first.estimate if found.first else None,
                found.same.estimate if found.same else None,
            )
        )
    return tuple(out)


def _missing(found: Cells) -> str:
    return f"{found.missing} of {found.asked}" + (f": {found.reasons}" if found.reasons else "")


def build(context: Context) -> Section:
    section = Section(TITLE)
    if not any(tasks(run) for run in context.runs):
        section.skipped, section.absent = "needs a question task (<dataset>_chat)", True
        return section
    table = Table(
        "questions",
        "Each problem asked as a question with two labelled options, once in each order: a and "
        "A (unanswered questions count as wrong; p against chance), the share unanswered u and "
        "why, the share of answers naming the option shown first f_A (p against 0.5) and the "
        "share of problems answered alike in both orders c_o; beside them the same model's "
        "log-likelihood figures on the same dataset, a different formulation",
        ["model", "task", "role", "schemas", "a", "A", "u", "unanswered", "f_A", "c_o",
         "a (log-likelihood)", "A (log-likelihood)"],
    )  # fmt: skip
    changed = Table(
        "questions_perturbations",
        "Asked as questions: each perturbation against the schemas it was made from (the same "
        "schemas), Δ = perturbation − original (paired), with p; the consistency c (problems "
        "right both times or wrong both times, problem transformations only) and C (schemas "
        "with as many problems right)",
        ["model", "perturbation", "schemas", "A original", "A", "ΔA", "c", "C"],
    )
    estimates = context.estimates
    bars = []
    for run in context.runs:
        for task in tasks(run):
            found = cells(context, task)
            if found is None:
                continue
            scored = run.task_on(task.dataset) if task.dataset else None
            logged = context.accuracy(scored) if scored is not None else None
            table.rows.append([
                run.label, task.task, role(task), len(outcomes(task, ACC) or []), found.a,
                found.A, found.unanswered, _missing(found), found.first, found.same,
                *(logged if logged is not None else (None, None)),
            ])  # fmt: skip
            for panel, cell in (("a", found.a), ("A", found.A)):
                if cell is not None:
                    bars.append(Bar(panel, task.task, run.label, cell.estimate, role(task)))
            spec = catalog.SPECS.get(task.dataset or "")
            if spec is None or spec.role.kind != catalog.PERTURBATION or spec.role.of is None:
                continue
            original = run.task_on(spec.role.of, TaskKind.QUESTION)
            matched = pair(run, original, task.dataset or "", TaskKind.QUESTION)
            if matched is None:
                continue
            before, after = matched["A"]
            chosen = ACCURACIES["A"]
            pairs = [pair_outcome(b, a) for b, a in zip(before, after, strict=True)]
            both = CONSISTENCY if spec.role.problem_level else (None, CONSISTENCY[1])
            changed.rows.append([
                run.label, task.task, len(before), estimates.interval(before, chosen),
                estimates.interval(after, chosen), estimates.paired(after, before, chosen),
                *(estimates.interval(pairs, form) if form else None for form in both),
            ])  # fmt: skip
    section.tables = [t for t in (table, changed) if t.rows]
    if not table.rows:
        section.skipped = "needs a question task with its samples file (lm-eval's --log_samples)"
        section.tables = []
        return section
    if bars:
        section.figures.append(
            Figure(
                "questions",
                bars,
                "Asked as questions: accuracy by task",
                "Accuracy of every task asked as questions (95% intervals)",
            )
        )
    section.text = (
        "The tasks named `<dataset>_chat` ask each problem as a question: its sentence with the "
        "blank, its two candidates as options A and B, once in the order the dataset gives them "
        "and once swapped; the model's answer, a few generated tokens, is read by a parser "
        "(docs/chat.md) and an answer naming no option is unanswered, counted wrong. This is a "
        "different formulation from the log-likelihood tasks, not the same task scored another "
        "way: the two are shown side by side, never ranked together. Answers that follow the "
        "options name A half the time (f_A = 0.5); a model that answers by position has f_A "
        "near 1 or 0 and answers few problems alike in both orders (c_o)."
    )
    return section
