"""``wsc273_schemas`` with accuracy per knowledge category (Zhang et al. 2020, Tables 4 and 5).

A ``SchemaTask`` whose problems carry WSC273 numbers, reporting besides every ``SchemaTask``
metric the headline method's problem accuracy on the problems of each knowledge category
(``acc_cat_<category>``, a problem in several categories counts in each, as Table 4 does) and on
those with a single or several major knowledge types (``acc_cat_single``, ``acc_cat_multiple``,
Table 5), each with its problem count (``n_cat_<name>``). The per-document values are the
headline outcome restricted to those problems, so the figures stay exact under multi-process runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wsc_tasks.data.knowledge import CATEGORIES, knowledge_count, wsc273_categories
from wsc_tasks.data.problems import Problem, Schema
from wsc_tasks.metrics.accuracy import SchemaOutcome, restrict
from wsc_tasks.metrics.registry import ACC, Aggregation, Key, bind
from wsc_tasks.tasks.schema_tasks import SchemaTask

GROUPS = (*CATEGORIES, "single", "multiple")


def problem_groups(problem: Problem, task: str = "") -> set[str]:
    """The knowledge categories and the single/multiple type of a WSC273-numbered problem."""
    if problem.number is None:
        raise ValueError(
            f"task {task}: problem {problem.uid} ({problem.source}) has no WSC273 number, so no "
            "knowledge category: use CategorizedSchemaTask only on WSC273-numbered datasets"
        )
    return {*wsc273_categories(problem.number), knowledge_count(problem.number)}


class CategorizedSchemaTask(SchemaTask):
    """``SchemaTask`` plus ``acc_cat_<name>`` and ``n_cat_<name>`` for every name of ``GROUPS``."""

    def document_values(self, doc: dict, results: list[Any]) -> dict[str, SchemaOutcome]:
        values = super().document_values(doc, results)
        schema = Schema.from_doc(doc)
        memberships = [problem_groups(p, self.config.task) for p in schema.problems]
        headline = values[Key(ACC).name]
        for name in GROUPS:
            subset = restrict(headline, [name in m for m in memberships])
            values[Key(ACC, category=name).name] = subset
            values[Key("n_problems", category=name).name] = subset
        return values

    def why_undefined(self, metric: str, items: Sequence[Any]) -> str:
        reason = super().why_undefined(metric, items)
        key = Key.parse(metric)
        category = key.category if key is not None else ""
        return f"{reason} of knowledge category {category}" if category else reason

    def all_aggregations(self) -> dict[str, Aggregation]:
        functions = super().all_aggregations()
        for name in GROUPS:
            for key in (Key(ACC, category=name), Key("n_problems", category=name)):
                functions[key.name] = bind(key)
        return functions
