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
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from wsc_tasks.data import catalog, parsers, sources
from wsc_tasks.data.problems import Schema
from wsc_tasks.data.winowhy import WINOWHY
from wsc_tasks.metrics import ratios, registry
from wsc_tasks.metrics.accuracy import outcome
from wsc_tasks.metrics.registry import ACC, SCHEMA_ACC
from wsc_tasks.runs.foreign.origin import Origin
from wsc_tasks.runs.output_files import RunError
from wsc_tasks.runs.task_run import TaskRun

WINOGRANDE, WSC273 = "winogrande", "wsc273"  # the foreign tasks: lm-eval's names
SCORING = "partial"  # the method of both (the text after the blank, given the option)
TWINS = "twin pairs"  # the name of a Winogrande run's task on its twin pairs: "winogrande (…)"
# the per-document values a task of this package logs for its headline and partial scoring
RECORDS = tuple(
    registry.Key(record).name for record in (ACC, SCHEMA_ACC, "half_solved", "anti_solved")
)
EXAMPLES = 3  # documents quoted in an error
# a row's own verdict in lm-eval's samples and in the leaderboard's details (their ``metrics``
# struct): the other harness's name, which happens to be this package's record's too
VERDICT = "acc"


class ForeignError(RunError):
    """A foreign run that does not match its pinned dataset: nothing of it is read."""


def normal(text: str) -> str:
    return " ".join(str(text).split())


class Scored(NamedTuple):
    """One problem as a foreign run scored it (a tuple: a board reads a million of them)."""

    key: tuple[str, ...]  # its content, as the run writes it (``Pinned.find`` normalises it)
    lls: tuple[float, ...]  # each option's log-likelihood, in the run's option order
    where: str  # "line 12", "row 7": where the file holds it
    gold: int | None = None  # the answer's index as the run has it (None: not recorded)
    options: tuple[str, ...] | None = None  # the options as the run has them, if it has them
    acc: float | None = None  # the run's own verdict, if it recorded one
    pick: int = -1  # the option lm-eval picks (``picked``), -1: not worked out yet

    def predicted(self) -> int:
        return self.pick if self.pick >= 0 else picked(self.lls)


def picked(lls: Sequence[float]) -> int:
    """The option lm-eval picks: the first of the largest log-likelihoods (``np.argmax``)."""
    best = 0
    for i in range(1, len(lls)):
        if lls[i] > lls[best]:
            best = i
    return best


@dataclass(frozen=True)
class Place:
    schema: int  # index in the dataset's schemas
    problem: int  # index in the schema's problems
    at: int  # index among all the dataset's problems, schema after schema
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
    places: dict[tuple[str, ...], Place] = field(default_factory=dict)  # by normalised content
    exact: dict[tuple[str, ...], Place] = field(default_factory=dict)  # as the dataset writes it
    # per (schema, its problems in the run): the document and the values every run shares
    _docs: dict[tuple[int, tuple[int, ...]], dict[str, Any]] = field(default_factory=dict)
    _outcomes: dict[tuple[tuple[int, ...], tuple[tuple[int, ...], ...]], Any] = field(
        default_factory=dict
    )
    members: list[tuple[int, ...]] = field(default_factory=list)  # each schema's problems (``at``)

    @property
    def size(self) -> int:
        return sum(len(m) for m in self.members)

    def key(self, *parts: str) -> tuple[str, ...]:
        return tuple(normal(p) for p in parts)

    def add(self, raw: tuple[str, ...], place: Place) -> None:
        self.exact[raw] = place
        self.places[self.key(*raw)] = place

    def find(self, key: tuple[str, ...]) -> Place | None:
        """The problem of a run's content: as written, else with its whitespace normalised."""
        found = self.exact.get(key)
        return found if found is not None else self.places.get(self.key(*key))

    def document(self, s: int, problems: tuple[int, ...], groups: list[list[int]]) -> Any:
        """Schema ``s`` with ``problems`` of it (and its ``groups`` among them) as an lm-eval
        document, one object for every run (read-only, as a summary's values are)."""
        at = (s, problems)
        if at not in self._docs:
            schema = self.schemas[s]
            if problems == tuple(range(len(schema.problems))) and len(groups) == len(schema.groups):
                part = schema
            elif groups:
                chosen = tuple(schema.problems[p] for p in problems)
                part = replace(schema, problems=chosen, groups=tuple(map(tuple, groups)))
            else:  # a problem alone: its own document, out of every schema metric
                problem = schema.problems[problems[0]]
                part = Schema(f"{schema.uid}/{problem.uid}", (problem,), schema.kind, schema.number)
            self._docs[at] = part.to_doc()
        return self._docs[at]

    def outcome(self, correct: tuple[int, ...], groups: list[list[int]]) -> Any:
        """The per-document outcome (``accuracy.outcome``), one object per distinct value: a
        ratio's parts are then computed once per value, not per document and run."""
        at = (correct, tuple(map(tuple, groups)))
        if at not in self._outcomes:
            self._outcomes[at] = outcome([bool(c) for c in correct], groups)
        return self._outcomes[at]


@functools.cache
def pinned(task: str) -> Pinned:
    """The pinned dataset of a foreign task (loaded and indexed once per process)."""
    if task == WINOGRANDE:
        schemas = catalog.load("winogrande_dev")
        found = Pinned(task, "winogrande_dev", "winogrande_twins", catalog.WINOGRANDE_DEV, schemas)
        _number(found)
        for s, schema in enumerate(schemas):
            for p, problem in enumerate(schema.problems):
                sentence = "_".join(problem.segments)
                options = tuple(o[0] for o in problem.options)
                place = Place(s, p, found.members[s][p], problem.uid, problem.label, options)
                found.add((sentence,), place)
        return found
    if task == WSC273:
        schemas = catalog.load("wsc273_schemas")
        found = Pinned(task, "wsc273_schemas", None, WINOWHY, schemas)
        _number(found)
        numbers = {
            problem.number: (s, p)
            for s, schema in enumerate(schemas)
            for p, problem in enumerate(schema.problems)
        }
        for question in parsers.read_wsc273_json(sources.resolve(WINOWHY)):
            s, p = numbers[question.number]
            at = found.members[s][p]
            place = Place(s, p, at, str(question.number), question.correct, question.answers)
            found.add((question.before, question.pronoun, question.after), place)
        return found
    raise KeyError(f"no pinned dataset for task {task!r} (known: {WINOGRANDE}, {WSC273})")


def _number(found: Pinned) -> None:
    at = 0
    for schema in found.schemas:
        found.members.append(tuple(range(at, at + len(schema.problems))))
        at += len(schema.problems)


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


UNDEFINED = -2  # ``match``: a problem in the run whose log-likelihoods include a NaN


def match(found: Pinned, scored: Sequence[Scored], file: str) -> list[int]:
    """Per problem of the dataset (``Place.at``): 1 answered right, 0 wrong, -1 not in the run,
    ``UNDEFINED`` in it with a NaN log-likelihood (no verdict: a NaN is no score, whichever option
    lm-eval's argmax then picks); ``ForeignError`` when the run does not match the pinned dataset
    (module docstring)."""
    unknown, answers, verdicts = [], [], []
    right = [-1] * found.size
    seen: dict[int, str] = {}
    for item in scored:
        place = found.find(item.key)
        if place is None:
            unknown.append(f"{item.where}: {' … '.join(item.key)[:80]!r}")
            continue
        if right[place.at] != -1 or place.at in seen:
            first = seen.get(place.at, "")
            raise ForeignError(
                f"{file}: problem {place.uid} of {found.source} appears twice ({first} and "
                f"{item.where}): duplicated documents; nothing read"
            )
        seen[place.at] = item.where
        if (item.gold is not None and item.gold != place.label) or (
            item.options is not None and not _same_options(item.options, place.options)
        ):
            answers.append(f"{item.where} ({place.uid})")
            continue
        if any(math.isnan(ll) for ll in item.lls):
            right[place.at] = UNDEFINED
            continue
        correct = item.predicted() == place.label
        if item.acc is not None and bool(item.acc) != correct:
            verdicts.append(f"{item.where} ({place.uid}: acc {item.acc:g})")
        right[place.at] = int(correct)
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
    found: Pinned, right: list[int], origin: Origin, samples: Path | None = None
) -> dict[str, TaskRun]:
    """The run's tasks on the pinned schemas: the whole dataset (named as the run's task), and
    for Winogrande its twin pairs (``winogrande (twin pairs)``), as this package's tasks on the
    same datasets would have them (``samples``: the file they were read from)."""
    docs, outcomes, apart, pairs, pair_outcomes = [], [], [], [], []
    undefined = tuple(
        schema.problems[p].uid
        for schema, members in zip(found.schemas, found.members, strict=True)
        for p, at in enumerate(members)
        if right[at] == UNDEFINED
    )
    right = [-1 if c == UNDEFINED else c for c in right]  # no verdict: out of a and A
    for s, (schema, members) in enumerate(zip(found.schemas, found.members, strict=True)):
        correct = tuple(right[i] for i in members)
        if -1 not in correct:  # the whole schema: its document and groups as they are
            groups = [list(g) for g in schema.groups]
            docs.append(found.document(s, tuple(range(len(members))), groups))
            outcomes.append(found.outcome(correct, groups))
            if found.twins and len(members) == 2:
                pairs.append(docs[-1])
                pair_outcomes.append(outcomes[-1])
            continue
        present = [p for p, c in enumerate(correct) if c >= 0]
        if not present:
            continue
        whole = [g for g in schema.groups if all(p in present for p in g)]
        grouped = tuple(sorted({p for g in whole for p in g}))
        if grouped:
            index = {p: i for i, p in enumerate(grouped)}
            kept = [[index[p] for p in g] for g in whole]
            docs.append(found.document(s, grouped, kept))
            outcomes.append(found.outcome(tuple(correct[p] for p in grouped), kept))
        for p in present:
            if p in grouped:
                continue
            if schema.groups:  # its partner is not in the run
                apart.append(schema.problems[p].uid)
            docs.append(found.document(s, (p,), []))
            outcomes.append(found.outcome((correct[p],), []))
    read = sum(1 for c in right if c >= 0)
    origin = replace(
        origin, problems=found.size, read=read, apart=tuple(apart), undefined=undefined
    )
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
    """A ``TaskRun`` as ``folders.read_task`` builds one from this package's samples: per-document
    outcomes of the headline and the partial method, the figures recomputed from them."""
    found = TaskRun(name, {}, docs=docs, dataset=dataset, origin=origin, samples=samples)
    found.scored = (origin.read, origin.problems)  # ``partial`` when the run lacks problems
    names = [*RECORDS, registry.Key(ACC, method=SCORING).name,
             registry.Key(SCHEMA_ACC, method=SCORING).name]  # fmt: skip
    distinct = {id(v): v for v in values}  # the few distinct outcomes, and how often each is
    counts: dict[int, int] = {}
    for value in values:
        counts[id(value)] = counts.get(id(value), 0) + 1
    figures: dict[Any, float] = {}
    for metric in names:
        form = registry.by_name(metric, values[0]) if values else None
        if not isinstance(form, ratios.Ratio):
            continue
        if form not in figures:  # Σ numerator / Σ denominator, each distinct value once
            parts = [(form.parts(v), counts[k]) for k, v in distinct.items()]
            total = sum(d * n for (_, d), n in parts)
            figures[form] = sum(u * n for (u, _), n in parts) / total if total else math.nan
        found.values[metric] = values
        found.forms[metric] = form
        found.row[registry.column(metric)] = figures[form]
    return found
