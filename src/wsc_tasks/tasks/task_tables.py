"""The table of tasks each task family's README shows, written from the YAMLs and the data catalog.

A row per task of the family's folder: what it evaluates (the catalog's own description of its
dataset, ``DatasetSpec.origin``) and its size as the task builds it (documents, problems, schemas;
a consistency task's schema pairs; a contamination check's shards), so that no size in a README is
written by hand. ``tests/regenerate.py`` writes the tables; ``--check`` fails when one is stale.
"""

from __future__ import annotations

from collections.abc import Callable

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import count
from wsc_tasks.tasks.configs import TaskConfig, configs

HEADER = ("| task | what | documents | problems | schemas |", "|---|---|---:|---:|---:|")
QUESTIONS = "QuestionTask"  # the class of the tasks asked as questions: a table of their own
QUESTION_HEADER = (
    "| task | asked as questions | documents | questions (both orders) | schemas |",
    "|---|---|---:|---:|---:|",
)


def _n(value: int) -> str:
    return f"{value:,}"


def _description(dataset: str) -> str:
    spec = catalog.SPECS.get(dataset)
    if spec is not None:
        return spec.origin
    if dataset.startswith(catalog.DYADS_PREFIX):
        _, base, grouping, wrapper = dataset.split(":", 3)
        return f"dyads of `{base}`, {grouping.replace('_', ' ')}, wrapper *{wrapper}*"
    return dataset


def _schemas(found: TaskConfig) -> list[str]:
    dataset = str(found.metadata["dataset"])
    schemas = catalog.load(dataset)
    problems, groups = count(schemas)
    return [_description(dataset), _n(len(schemas)), _n(problems), _n(groups)]


def _pairs(found: TaskConfig) -> list[str]:
    spec = catalog.PAIR_SPECS[str(found.metadata["dataset"])]
    pairs = catalog.load_pairs(spec.name)
    kind = "problem" if spec.problem_level else "schema"
    changed = " + ".join(f"`{name}`" for name in spec.transformed)
    what = f"consistency of `{spec.original}` → {changed} ({kind} transformation)"
    return [what, f"{_n(len(pairs))} pairs", "", ""]


def _shards(found: TaskConfig) -> list[str]:
    dataset = str(found.metadata["dataset"])
    problems, groups = count(catalog.load(dataset))
    shards = int(found.metadata["shards"])
    return [f"contamination check of `{dataset}`", f"{shards} shards", _n(problems), _n(groups)]


def _winowhy(found: TaskConfig) -> list[str]:
    from wsc_tasks.data.winowhy import load_winowhy

    questions = load_winowhy()
    reasons = sum(len(q.reasons) for q in questions)
    return ["WinoWhy: the reasons for WSC273's answers", f"{_n(len(questions))} questions",
            f"{_n(reasons)} reasons", ""]  # fmt: skip


ROWS: dict[str, Callable[[TaskConfig], list[str]]] = {
    "SchemaTask": _schemas,
    "CategorizedSchemaTask": _schemas,
    "ConsistencyTask": _pairs,
    "AssociativityTask": _pairs,
    "ContaminationTask": _shards,
    "WinoWhyTask": _winowhy,
}


def table(family: str) -> str:
    """The tasks of ``family`` (its folder under the include path) as a Markdown table; those
    asked as questions have theirs (``questions``)."""
    lines = list(HEADER)
    for found in _in_order(family):
        if found.class_name == QUESTIONS:
            continue
        row = ROWS.get(found.class_name)
        if row is None:
            raise ValueError(f"{found.path}: no table row for task class {found.class_name!r}")
        lines.append("| " + " | ".join([f"`{found.name}`", *row(found)]) + " |")
    return "\n".join(lines)


def questions(family: str) -> str:
    """The tasks of ``family`` asked as questions (``tasks.questions``) as a Markdown table: the
    dataset, its schemas and the questions asked (every problem in both orders of its options)."""
    lines = list(QUESTION_HEADER)
    for found in _in_order(family):
        if found.class_name != QUESTIONS:
            continue
        dataset = str(found.metadata["dataset"])
        schemas = catalog.load(dataset)
        problems, groups = count(schemas)
        cells = [f"`{found.name}`", f"`{dataset}`", _n(len(schemas)), _n(2 * problems), _n(groups)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _in_order(family: str) -> list[TaskConfig]:
    """The family's tasks in the order the groups list them (from the groups no group lists,
    ``wsc_group`` first), then any other, by name."""
    every = configs()
    ordered: dict[str, TaskConfig] = {}

    def walk(name: str) -> None:
        found = every.get(name)
        if found is None:
            return
        if found.group:
            for member in found.config.get("task", []):
                walk(member)
        elif found.family == family:
            ordered.setdefault(name, found)

    listed = {m for f in every.values() if f.group for m in f.config.get("task", [])}
    roots = [n for n, f in every.items() if f.group and n not in listed]
    for name in sorted(roots, key=lambda n: (n != "wsc_group", n)):
        walk(name)
    rest = sorted(n for n, f in every.items() if f.family == family and not f.group)
    return [*ordered.values(), *(every[n] for n in rest if n not in ordered)]


def groups(family: str) -> str:
    """The groups of ``family`` and their members, as a Markdown list."""
    lines = []
    for found in configs().values():
        if found.family == family and found.group:
            members = ", ".join(f"`{m}`" for m in found.config.get("task", []))
            aggregate = [m["metric"] for m in found.config.get("aggregate_metric_list") or []]
            rows = f"; aggregate rows: {', '.join(aggregate)}" if aggregate else ""
            lines.append(f"- `{found.name}`: {members}{rows}")
    return "\n".join(lines)
