"""The schemas behind the numbers, from lm-eval's logged samples: what a paper's discussion shows.

Per task and model: a few schemas the headline method solves, half-solves and anti-solves; for a
``*_consistency`` (or associativity) task, the problems whose answer flips under the perturbation,
original and perturbed side by side; for every pair of scoring methods, how many problems they
answer differently, with a few problems of the pair that disagrees most. Option scores are read
back from the logged requests: the partial score log P(text after the blank | text up to it) and,
when the run asked for it, the full-sentence log-likelihood; the option a method chose follows
from its logged correctness and the label. Everything is in document order, so it is
reproducible.
"""

from __future__ import annotations

import gzip
import json
import math
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Problem, Schema
from wsc_tasks.metrics import registry
from wsc_tasks.metrics.registry import ACC, Key, TaskKind
from wsc_tasks.runs.folders import TaskRun
from wsc_tasks.runs.output_files import RunError
from wsc_tasks.scoring.causal import partial_request
from wsc_tasks.scoring.methods import ScoringError

PER_KIND = 3  # examples shown per category
CATEGORIES = ("solved", "half-solved", "anti-solved")


@dataclass(frozen=True)
class ProblemView:
    """One problem as shown: the text with its blank, both options and their scores."""

    uid: str
    text: str  # blanks shown as ___
    options: tuple[str, str]
    label: int
    partial: tuple[float, float] | None  # log P(continuation | context with option)
    full: tuple[float, float] | None  # log P(sentence), when the run asked for it
    chosen: dict[str, int]  # method (or "headline") -> chosen option


@dataclass
class TaskExamples:
    task: str
    model: str
    categories: dict[str, list[list[ProblemView]]] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    flips: list[tuple[list[ProblemView], list[ProblemView]]] = field(default_factory=list)
    n_flips: int = 0
    n_pairs: int = 0
    schema_level: bool = False  # flips compared schema by schema (inversion), not problem-wise
    disagreements: list[tuple[str, str, int, int]] = field(default_factory=list)  # a, b, n, of
    disagreement_examples: list[ProblemView] = field(default_factory=list)


def request_scores(row: dict[str, Any]) -> dict[tuple[str, str], float]:
    """(context, continuation) → log-likelihood of every request of one logged document."""
    out = {}
    arguments = row.get("arguments") or {}
    for key, args in arguments.items():
        index = int(str(key).rsplit("_", 1)[-1])
        if not isinstance(args, dict) or index >= len(row.get("resps", [])):
            continue
        try:
            value = float(row["resps"][index][0][0])
        except (TypeError, ValueError, IndexError):
            continue
        out[(str(args.get("arg_0", "")), str(args.get("arg_1", "")))] = value
    return out


def _pair(scores: dict[tuple[str, str], float], keys: list[tuple[str, str]]):
    found = [scores.get(k) for k in keys]
    return None if any(v is None for v in found) else (found[0], found[1])


def _partial_keys(problem: Problem) -> list[tuple[str, str]] | None:
    try:
        return [partial_request(problem, i)[1] for i in (0, 1)]
    except ScoringError:
        return None


def view(
    problem: Problem, scores: dict[tuple[str, str], float], chosen: dict[str, int]
) -> ProblemView:
    keys = _partial_keys(problem)
    return ProblemView(
        uid=problem.uid,
        text="___".join(problem.segments),
        options=(" / ".join(problem.options[0]), " / ".join(problem.options[1])),
        label=problem.label,
        partial=_pair(scores, keys) if keys else None,
        full=_pair(scores, [("", problem.fill(i)) for i in (0, 1)]),
        chosen=chosen,
    )


def _choice(label: int, correct: int) -> int:
    return label if correct else 1 - label


def methods(row: dict[str, Any]) -> list[str]:
    """Scoring methods with per-problem outcomes in a logged document, headline first."""
    return registry.methods(registry.parse_all(registry.logged(row)).values())


Scores = dict[tuple[str, str], float]
Fetch = Callable[[set[int]], dict[int, Scores]]


def _schema_examples(
    found: TaskExamples,
    docs: list[Any],
    values: dict[str, list[Any]],
    keys: list[Key],
    fetch: Fetch,
) -> None:
    counts = dict.fromkeys(CATEGORIES, 0)
    picked_groups: dict[str, list[tuple[int, list[int], list[int]]]] = {c: [] for c in CATEGORIES}
    all_methods = registry.methods(keys)
    pairs = [(a, b) for i, a in enumerate(all_methods) for b in all_methods[i + 1 :]]
    differ = dict.fromkeys(pairs, 0)
    outcomes = values.get(Key(ACC).name, [])
    kept: list[int] = []  # the documents with per-problem outcomes, in order
    for index, outcome in enumerate(outcomes[: len(docs)]):
        if not isinstance(outcome, dict) or "correct" not in outcome:
            continue
        kept.append(index)
        for group in outcome["groups"]:
            right = sum(outcome["correct"][i] for i in group)
            kind = CATEGORIES[0 if right == len(group) else 2 if right == 0 else 1]
            counts[kind] += 1
            if len(picked_groups[kind]) < PER_KIND:
                picked_groups[kind].append((index, group, outcome["correct"]))
    # every problem of those documents, in order, with each method's correctness on it
    where = [(i, j) for i in kept for j in range(len(docs[i]["problems"]))]
    n_problems = len(where)
    columns = [values[Key(ACC, method=m).name] for m in all_methods]
    answers = np.array(
        [[column[i]["correct"][j] for i, j in where] for column in columns], dtype=np.int64
    ).reshape(len(all_methods), n_problems)
    first_examples: dict[tuple[str, str], list[tuple[int, int, dict[str, int]]]] = {}
    for a, b in pairs:
        differs = np.flatnonzero(answers[all_methods.index(a)] != answers[all_methods.index(b)])
        differ[(a, b)] = len(differs)
        first_examples[(a, b)] = [
            (*where[at], {m: int(answers[k, at]) for k, m in enumerate(all_methods)})
            for at in map(int, differs[:PER_KIND])
        ]
    ranked = sorted(pairs, key=lambda p: (-differ[p], all_methods.index(p[0])))
    top = ranked[0] if ranked and differ[ranked[0]] else None
    needed = {index for shown in picked_groups.values() for index, _, _ in shown}
    needed |= {index for index, _, _ in first_examples[top]} if top else set()
    schemas = {index: Schema.from_doc(docs[index]) for index in sorted(needed)}
    scores = fetch(needed)
    for kind, shown in picked_groups.items():
        for index, group, correct in shown:
            problems = schemas[index].problems
            found.categories.setdefault(kind, []).append(
                [
                    view(problems[i], scores[index], {"headline": _choice(problems[i].label, c)})
                    for i, c in ((i, correct[i]) for i in group)
                ]
            )
    found.categories = {c: found.categories.get(c, []) for c in CATEGORIES}
    found.counts = counts
    found.disagreements = [(a, b, differ[(a, b)], n_problems) for a, b in ranked]
    if top:
        for index, j, flags in first_examples[top]:
            problem = schemas[index].problems[j]
            chosen = {m: _choice(problem.label, flags[m]) for m in top}
            found.disagreement_examples.append(view(problem, scores[index], chosen))


def _pair_examples(
    found: TaskExamples,
    docs: list[Any],
    values: dict[str, list[Any]],
    problem_level: bool,
    fetch: Fetch,
) -> None:
    shown: list[tuple[int, Schema, Schema, list[int], list[int], list[int], Any]] = []
    columns = list(values.values())
    for index, doc in enumerate(docs):
        items = [column[index] for column in columns]
        item = next((i for i in items if isinstance(i, dict) and "before" in i), None)
        if item is None:
            continue
        before, after = item["before"]["correct"], item["after"]["correct"]
        found.n_pairs += 1
        found.schema_level = not problem_level
        if len(before) == len(after) and not found.schema_level:
            changed = [i for i, (x, y) in enumerate(zip(before, after, strict=True)) if x != y]
        else:
            found.schema_level = True
            changed = list(range(len(before))) if sum(before) != sum(after) else []
        if not changed:
            continue
        found.n_flips += len(changed) if not found.schema_level else 1
        if len(shown) >= PER_KIND:
            continue
        right_index = changed if not found.schema_level else range(len(after))
        original, perturbed = (Schema.from_doc(doc[side]) for side in ("original", "transformed"))
        shown.append((index, original, perturbed, before, after, changed, right_index))
    scores = fetch({index for index, *_ in shown})
    for index, original, perturbed, before, after, changed, right_index in shown:
        left = _side(original, before, changed, scores[index])
        right = _side(perturbed, after, right_index, scores[index])
        found.flips.append((left, right))


def _side(schema: Schema, flags, indexes, scores) -> list[ProblemView]:
    return [
        view(schema.problems[i], scores, {"headline": _choice(schema.problems[i].label, flags[i])})
        for i in indexes
    ]


_DOC_ID = re.compile(rb'\{\s*"doc_id"\s*:\s*(-?\d+)\s*[,}]')


def shown_scores(
    path: Path, indexes: set[int], places: list[int] | None = None
) -> dict[int, Scores]:
    """The request scores of the documents at ``indexes`` (in doc_id order, as the run's
    documents are kept) of a samples file. With the documents' lines (``places``, as the run
    was read), the file is read up to the last line wanted; else every line's doc_id is read
    from its start (lm-eval writes it first). Only the lines of those documents are decoded."""
    if not indexes:
        return {}
    opener = gzip.open if path.suffix == ".gz" else open
    if places is not None:
        return _scores_at(path, opener, {places[i]: i for i in indexes})
    try:
        with opener(path, "rb") as handle:
            lines = [line for line in handle.read().split(b"\n") if line.strip()]
    except (EOFError, OSError, zlib.error) as error:
        raise RunError(f"samples file {path.name} cannot be read to its end ({error})") from None
    ids = []
    for number, line in enumerate(lines):
        named = _DOC_ID.match(line)
        ids.append((int(named.group(1)) if named else json.loads(line)["doc_id"], number))
    ids.sort()  # stable as the run's own order: by doc_id, then the file's order
    found = {}
    for index in indexes:
        found[index] = request_scores(json.loads(lines[ids[index][1]]))
    return found


def task_examples(task: TaskRun, model: str) -> TaskExamples | None:
    """The examples of one task of one model; None when it has no schema samples. The outcomes
    come from the documents and values the run was read with (its summary); the samples file is
    opened for the shown documents' request scores only."""
    if task.samples is None or not task.docs or task.origin is not None:
        return None  # a foreign run's file holds its problems, not this package's documents
    samples = task.samples

    def fetch(indexes: set[int]) -> dict[int, Scores]:
        return shown_scores(samples, indexes, task.lines)

    found = TaskExamples(task.task, model)
    if task.kind in (TaskKind.CONSISTENCY, TaskKind.ASSOCIATIVITY):
        spec = catalog.PAIR_SPECS.get(task.dataset) if task.dataset else None
        _pair_examples(found, task.docs, task.values, spec is None or spec.problem_level, fetch)
    elif task.kind is TaskKind.SCHEMA:
        _schema_examples(found, task.docs, task.values, task.keys, fetch)
    else:
        return None
    return found


def fmt(value: float | None) -> str:
    return "–" if value is None or math.isnan(value) else f"{value:.2f}"


def _scores_at(path: Path, opener: Callable, wanted: dict[int, int]) -> dict[int, Scores]:
    """``shown_scores`` of the documents at lines ``wanted`` (line -> index)."""
    found: dict[int, Scores] = {}
    last, number = max(wanted), -1
    try:
        with opener(path, "rb") as handle:
            for line in handle:
                if not line.strip():
                    continue
                number += 1
                if number in wanted:
                    found[wanted[number]] = request_scores(json.loads(line))
                if number == last:
                    return found
    except (EOFError, OSError, zlib.error) as error:
        raise RunError(f"samples file {path.name} cannot be read to its end ({error})") from None
    raise RunError(f"samples file {path.name} has {number + 1} lines, fewer than when it was read")
