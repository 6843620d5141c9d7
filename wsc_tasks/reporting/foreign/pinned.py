"""The pinned datasets a foreign run is matched against, by content, and its tasks built from them.

Each problem a foreign run scored is found in the pinned dataset by what it says, never by its
position in the file (the Open LLM Leaderboard's details keep their own row order): a Winogrande
problem by its sentence (blank included, whitespace runs as one space; unique in the dev file),
its options and answer checked where the run holds them; a WSC273 problem by the text before its
pronoun, the pronoun and the text after it (two questions share a sentence and differ in which
pronoun is asked about), as the raw WSC273 (``winowhy/winowhy.json``) writes them, then by its
WSC273 number in ``wsc273_schemas``. A problem the dataset does not hold, an answer that differs,
a problem met twice, or a run's own verdict that its log-likelihoods do not give against the
pinned answer stops the reading with one line naming the file and what does not match.

The matched problems become the tasks a run of this package would have on the same schemas
(``catalog`` datasets: ``winogrande_dev`` and its twin pairs ``winogrande_twins``;
``wsc273_schemas``): per schema, which problems were answered right (``accuracy.outcome``),
every schema-metric group of the dataset whose problems are all in the run. A problem whose
partner is not in the run stays in a (a document of its own) and out of A, and is named
(``Origin.apart``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from wsc_tasks.data import catalog, parsers, sources
from wsc_tasks.data.problems import Schema
from wsc_tasks.data.winowhy import WINOWHY
from wsc_tasks.metrics import registry
from wsc_tasks.metrics.accuracy import outcome
from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC
from wsc_tasks.reporting.foreign.origin import Origin
from wsc_tasks.reporting.output_files import RunError
from wsc_tasks.reporting.runs import TaskRun

WINOGRANDE, WSC273 = "winogrande", "wsc273"  # the foreign tasks: lm-eval's names
SCORING = "partial"  # the method of both (the text after the blank, given the option)
TWINS = "twin pairs"  # the name of a Winogrande run's task on its twin pairs: "winogrande (…)"
# the per-document values a task of this package logs for its headline and partial scoring
RECORDS = ("acc", "schema_acc", "half_solved", "anti_solved")
EXAMPLES = 3  # documents quoted in an error


class ForeignError(RunError):
    """A foreign run that does not match its pinned dataset: nothing of it is read."""


def normal(text: str) -> str:
    return " ".join(str(text).split())


@dataclass(frozen=True)
class Scored:
    """One problem as a foreign run scored it."""

    key: tuple[str, ...]  # its content, as ``Pinned.key`` writes it
    lls: tuple[float, ...]  # each option's log-likelihood, in the run's option order
    where: str  # "line 12", "row 7": where the file holds it
    gold: int | None = None  # the answer's index as the run has it (None: not recorded)
    options: tuple[str, ...] | None = None  # the options as the run has them, if it has them
    acc: float | None = None  # the run's own verdict, if it recorded one

    def predicted(self) -> int:
        """The option lm-eval picks: the first of the largest log-likelihoods (``np.argmax``)."""
        return max(range(len(self.lls)), key=lambda i: (self.lls[i], -i))


@dataclass(frozen=True)
class Place:
    schema: int  # index in the dataset's schemas
    problem: int  # index in the schema's problems
    uid: str  # the problem's id (Winogrande's qID, WSC273's number in wsc273_schemas)
    label: int  # the pinned answer, in the run's option order
    options: tuple[str, ...]  # the pinned options, as the run writes them (for the check)


@dataclass
class Pinned:
    """A pinned dataset: its schemas, and where each problem is by its content."""

    task: str  # WINOGRANDE or WSC273
    dataset: str  # the catalog dataset of the whole set
    twins: str | None  # the catalog dataset of its twin pairs, if a task of its own
    source: str  # the file problems are matched against (for errors)
    schemas: list[Schema]
    places: dict[tuple[str, ...], Place] = field(default_factory=dict)

    def key(self, *parts: str) -> tuple[str, ...]:
        return tuple(normal(p) for p in parts)


@functools.cache
def pinned(task: str) -> Pinned:
    """The pinned dataset of a foreign task (loaded and indexed once per process)."""
    if task == WINOGRANDE:
        schemas = catalog.load("winogrande_dev")
        found = Pinned(task, "winogrande_dev", "winogrande_twins", catalog.WINOGRANDE_DEV, schemas)
        for s, schema in enumerate(schemas):
            for p, problem in enumerate(schema.problems):
                sentence = "_".join(problem.segments)
                options = tuple(o[0] for o in problem.options)
                place = Place(s, p, problem.uid, problem.label, options)
                found.places[found.key(sentence)] = place
        return found
    if task == WSC273:
        schemas = catalog.load("wsc273_schemas")
        found = Pinned(task, "wsc273_schemas", None, WINOWHY, schemas)
        numbers = {
            problem.number: (s, p)
            for s, schema in enumerate(schemas)
            for p, problem in enumerate(schema.problems)
        }
        for question in parsers.read_wsc273_json(sources.resolve(WINOWHY)):
            s, p = numbers[question.number]
            place = Place(s, p, str(question.number), question.correct, question.answers)
            found.places[found.key(question.before, question.pronoun, question.after)] = place
        return found
    raise KeyError(f"no pinned dataset for task {task!r} (known: {WINOGRANDE}, {WSC273})")


def _examples(items: Sequence[str]) -> str:
    return "; ".join(items[:EXAMPLES]) + (f"; … ({len(items)} in all)" if len(items) > 1 else "")


def _same_options(ours: Sequence[str], theirs: Sequence[str]) -> bool:
    """The run's options are the pinned ones: equal, up to case and lm-eval's ``'s`` (its
    ``wsc273`` lower-cases a leading article and makes options possessive after his/her)."""

    def bare(text: str) -> str:
        return normal(text).lower().removesuffix("'s")

    return len(ours) == len(theirs) and all(
        bare(a) == bare(b) for a, b in zip(ours, theirs, strict=True)
    )


def match(found: Pinned, scored: Sequence[Scored], file: str) -> dict[tuple[int, int], bool]:
    """(schema, problem) → answered right, for every problem of the run; ``ForeignError`` when
    the run does not match the pinned dataset (see the module docstring)."""
    unknown, answers, verdicts = [], [], []
    seen: dict[tuple[int, int], str] = {}
    right: dict[tuple[int, int], bool] = {}
    for item in scored:
        place = found.places.get(item.key)
        if place is None:
            unknown.append(f"{item.where}: {' … '.join(item.key)[:80]!r}")
            continue
        at = (place.schema, place.problem)
        if at in seen:
            raise ForeignError(
                f"{file}: problem {place.uid} of {found.source} appears twice ({seen[at]} and "
                f"{item.where}): duplicated documents; nothing read"
            )
        seen[at] = item.where
        if (item.gold is not None and item.gold != place.label) or (
            item.options is not None and not _same_options(item.options, place.options)
        ):
            answers.append(f"{item.where} ({place.uid})")
            continue
        correct = item.predicted() == place.label
        if item.acc is not None and bool(item.acc) != correct:
            verdicts.append(f"{item.where} ({place.uid}: acc {item.acc:g})")
        right[at] = correct
    if unknown:
        raise ForeignError(
            f"{file}: {len(unknown)} of its {len(scored)} documents are not problems of the "
            f"pinned {found.source} (another version of the dataset?): {_examples(unknown)}; "
            "nothing read"
        )
    if answers:
        raise ForeignError(
            f"{file}: {len(answers)} problem(s) have other options or another answer than in the "
            f"pinned {found.source} (another version of the dataset?): {_examples(answers)}; "
            "nothing read"
        )
    if verdicts:
        raise ForeignError(
            f"{file}: the recorded verdict of {len(verdicts)} problem(s) is not what their "
            f"log-likelihoods give against the answers of the pinned {found.source} (the rows do "
            f"not match the dev file): {_examples(verdicts)}; nothing read"
        )
    return right


def tasks(
    found: Pinned, right: dict[tuple[int, int], bool], origin: Origin, samples: Path | None = None
) -> dict[str, TaskRun]:
    """The run's tasks on the pinned schemas: the whole dataset (named as the run's task), and
    for Winogrande its twin pairs (``winogrande (twin pairs)``), as this package's tasks on the
    same datasets would have them (``samples``: the file they were read from)."""
    docs, outcomes, apart, pairs, pair_outcomes = [], [], [], [], []
    for s, schema in enumerate(found.schemas):
        present = [p for p in range(len(schema.problems)) if (s, p) in right]
        if not present:
            continue
        whole = [g for g in schema.groups if all(p in present for p in g)]
        grouped = sorted({p for g in whole for p in g})
        if grouped:
            index = {p: i for i, p in enumerate(grouped)}
            kept = [[index[p] for p in g] for g in whole]
            part = replace(
                schema,
                problems=tuple(schema.problems[p] for p in grouped),
                groups=tuple(tuple(g) for g in kept),
            )
            docs.append(part.to_doc())
            outcomes.append(outcome([right[(s, p)] for p in grouped], kept))
            if found.twins and len(schema.problems) == 2 and len(grouped) == 2:
                pairs.append(docs[-1])
                pair_outcomes.append(outcomes[-1])
        for p in present:
            if p in grouped:
                continue
            if schema.groups:  # its partner is not in the run
                apart.append(schema.problems[p].uid)
            alone = Schema(f"{schema.uid}/{schema.problems[p].uid}", (schema.problems[p],),
                           schema.kind, schema.number)  # fmt: skip
            docs.append(alone.to_doc())
            outcomes.append(outcome([right[(s, p)]], []))
    total = sum(len(s.problems) for s in found.schemas)
    origin = replace(origin, problems=total, read=len(right), apart=tuple(apart))
    out = {origin.task: _task(origin.task, found.dataset, docs, outcomes, origin, samples)}
    if found.twins and pairs:
        name = f"{origin.task} ({TWINS})"
        out[name] = _task(name, found.twins, pairs, pair_outcomes, origin, samples)
    return out


def _task(
    name: str,
    dataset: str,
    docs: list[dict[str, Any]],
    values: list[Any],
    origin: Origin,
    samples: Path | None,
) -> TaskRun:
    """A ``TaskRun`` as ``runs.read_task`` builds one from this package's samples: per-document
    outcomes of the headline and the partial method, the figures recomputed from them."""
    found = TaskRun(name, {}, docs=docs, dataset=dataset, origin=origin, samples=samples)
    found.scored = (origin.read, origin.problems)  # ``partial`` when the run lacks problems
    names = [*RECORDS, registry.Key(ACC, method=SCORING).name,
             registry.Key(SCHEMA_ACC, method=SCORING).name]  # fmt: skip
    for metric in names:
        form = registry.by_name(metric, values[0]) if values else None
        if form is None:
            continue
        found.values[metric] = values
        found.forms[metric] = form
        found.row[registry.column(metric)] = form(values)
    return found
