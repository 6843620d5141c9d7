"""The schema tasks asked as questions, for models that give no log-probabilities (chat APIs).

One lm-eval document is one schema, as in ``SchemaTask``; each of its problems is asked twice
(``scoring.questions``: the sentence with its blank, the options labelled A and B, in the order
the dataset gives them and swapped), as ``generate_until`` requests that lm-eval builds with its
own prompt machinery: ``--apply_chat_template``, ``--system_instruction``, ``--num_fewshot`` (the
examples drawn from the other schemas of the task, each answered with its letter) and
``--fewshot_as_multiturn`` work as for any lm-eval task. The YAML's ``generation_kwargs`` ask for
a greedy answer of a few tokens; the parser (``scoring.questions.read``) reads the letter each
answer names.

Per document: the ``SchemaOutcome`` of the accuracies over the questions (a question answered
with the other option, or with none, is wrong; a schema counts once per order, so chance is
a = 0.5, A = 0.25 for pairs), and the ``metrics.questions.Answers`` of the unanswered share, the
share answered with the first option (a model that answers by position shows here) and the
consistency between the two orders. A note under lm-eval's table counts the unanswered
questions by reason.

The questions of a document are listed from a place fixed by its schema's id
(``rotation``), so that the question a few-shot example shows, its first, is not always the
first problem in the given order (whose answer in WSC266 is A for all 133 schemas: examples
answered A only would teach a position).

Metadata: ``dataset`` (a catalog dataset, or a ``dyads:`` recipe) and ``metrics`` (``headline`` or
``all``).
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

from lm_eval.api.task import ConfigurableTask

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Schema
from wsc_tasks.metrics import registry
from wsc_tasks.metrics.accuracy import SchemaOutcome, outcome
from wsc_tasks.metrics.questions import Answers, answers, forms, n_asked, n_unanswered
from wsc_tasks.metrics.registry import Key, TaskKind
from wsc_tasks.scoring import questions
from wsc_tasks.serving.generation import GENERATION_TYPE, LM_EVAL_GENERATION, failed
from wsc_tasks.serving.requests import TaskRequest
from wsc_tasks.tasks import notes
from wsc_tasks.tasks.request_task import RequestTask

# the records of a question task: the accuracies of its questions and the answers' own shares
ACCURACIES = tuple(
    Key(m.name) for m in registry.select(value=registry.OUTCOME, kind="accuracy") if m.reported
)
ANSWERED = tuple(Key(m.name) for m in registry.select(value=registry.ANSWERS))
CHOICES = "questions"  # lm-eval's doc_to_choice: any value; the task's own method answers
Asked = tuple[int, int]  # (problem, order) of one question


def check_dataset(task: str, meta: Mapping[str, Any]) -> None:
    """``dataset``: a dataset of the catalog (or a recipe of dyads), else one line naming the
    task and the fix."""
    name = meta.get("dataset")
    if not isinstance(name, str) or not (
        name in catalog.SPECS or name.startswith(catalog.DYADS_PREFIX)
    ):
        raise ValueError(
            f"task {task}: metadata dataset={name!r} is invalid; allowed: one of "
            f"{', '.join(sorted(catalog.SPECS))}, or {catalog.DYADS_PREFIX}<base>:<grouping>:"
            "<wrapper>"
        )


def rotation(schema_uid: str, n: int) -> int:
    """Where a document's list of questions starts (its first: what a few-shot example shows)."""
    return zlib.crc32(schema_uid.encode("utf-8")) % n if n else 0


def asked(schema: Schema) -> list[Asked]:
    """The document's questions, as they are listed: every problem in each order, rotated."""
    canonical = [(p, order) for order in (0, 1) for p in range(len(schema.problems))]
    start = rotation(schema.uid, len(canonical))
    return canonical[start:] + canonical[:start]


class QuestionTask(RequestTask):
    """A schema task asked as questions; see the module docstring."""

    HEADLINE_METRICS = registry.headline(TaskKind.QUESTION)
    PROMPTED = True  # chat template, system instruction and few-shot examples apply

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.setdefault("output_type", LM_EVAL_GENERATION)
        config.setdefault("doc_to_choice", CHOICES)
        config.setdefault("fewshot_split", "test")  # examples from the other schemas
        super().__init__(config, **kwargs)
        if self.OUTPUT_TYPE == LM_EVAL_GENERATION:  # lm-eval pads each rank's requests of this type
            self.OUTPUT_TYPE = GENERATION_TYPE

    @classmethod
    def validate_metadata(cls, task: Any, meta: dict[str, Any]) -> None:
        check_dataset(str(task), meta)
        super().validate_metadata(task, meta)

    # -- data and prompts (lm-eval's multiple-input form: one context per question) -------------
    def documents(self) -> list[dict[str, Any]]:
        return [schema.to_doc() for schema in catalog.load(self._meta["dataset"])]

    def _questions(self, doc: dict) -> tuple[Schema, list[Asked]]:
        schema = Schema.from_doc(doc)
        return schema, asked(schema)

    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> int:  # type: ignore[override]
        return 0  # the question a few-shot example shows: the first listed

    def doc_to_choice(self, doc: dict, doc_to_choice: Any = None) -> list[str]:
        schema, listed = self._questions(doc)
        return [questions.prompt(schema.problems[p], order) for p, order in listed]

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> list[str]:
        """The right letter of each question, as listed (a few-shot example's answer: the
        first)."""
        schema, listed = self._questions(doc)
        return [
            questions.LETTERS[questions.shown(order).index(schema.problems[p].label)]
            for p, order in listed
        ]

    def fewshot_context(self, doc: dict, num_fewshot: int = 0, **kwargs: Any) -> Any:
        """lm-eval's own: system instruction, description, examples, chat template."""
        return ConfigurableTask.fewshot_context(self, doc=doc, num_fewshot=num_fewshot, **kwargs)

    # -- requests and answers -------------------------------------------------------------------
    def construct_requests(self, doc: dict, ctx: Any, **kwargs: Any) -> list[TaskRequest]:
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        contexts = list(ctx) if isinstance(ctx, list) else [ctx]
        expected = len(self._questions(doc)[1])
        if len(contexts) != expected:
            raise RuntimeError(
                f"task {self.config.task}: {len(contexts)} prompts for {expected} questions"
            )
        generation = dict(self.config.generation_kwargs or {})
        return [
            TaskRequest(
                request_type=GENERATION_TYPE,
                doc=doc,
                arguments=(context, dict(generation)),
                idx=i,
                task=self,
                **kwargs,
            )
            for i, context in enumerate(contexts)
        ]

    def read(self, doc: dict, results: list[Any]) -> tuple[SchemaOutcome, Answers]:
        """The document's outcome and answers, in canonical order (every problem as given,
        then every problem swapped), from its answers as listed."""
        schema, listed = self._questions(doc)
        if len(results) != len(listed):
            raise RuntimeError(
                f"task {self.config.task}: {len(results)} answers for {len(listed)} questions"
            )
        found: dict[Asked, tuple[int | None, str]] = {}
        for (p, order), result in zip(listed, results, strict=True):
            problem = schema.problems[p]
            shown = questions.shown(order)
            if failed(result) is not None:
                found[p, order] = (None, questions.ERROR)
                continue
            texts = [questions.option_text(problem, option) for option in shown]
            reading = questions.read(str(result), texts)
            found[p, order] = (
                shown[reading.letter] if reading.letter is not None else None,
                reading.form,
            )
        n = len(schema.problems)
        order_of = [(p, order) for order in (0, 1) for p in range(n)]
        chosen = [found[key][0] for key in order_of]
        labels = [schema.problems[p].label for p, _ in order_of]
        groups = [[i + order * n for i in group] for order in (0, 1) for group in schema.groups]
        right = [c is not None and c == label for c, label in zip(chosen, labels, strict=True)]
        value = answers(
            chosen,
            labels,
            [order for _, order in order_of],
            [p for p, _ in order_of],
            [found[key][1] for key in order_of],
        )
        return outcome(right, groups), value

    # -- metrics --------------------------------------------------------------------------------
    def all_aggregations(self) -> dict[str, Any]:
        return {**registry.aggregations(ACCURACIES), **registry.aggregations(ANSWERED)}

    def document_values(self, doc: dict, results: list[Any]) -> dict[str, Any]:
        solved, value = self.read(doc, results)
        out: dict[str, Any] = {key.name: solved for key in ACCURACIES}
        out.update((key.name, value) for key in ANSWERED)
        return out

    def aggregation(self) -> dict[str, Any]:
        """lm-eval's aggregations; the share of unanswered questions (always shown) also notes
        their number and reasons."""
        found = super().aggregation()
        name = Key("unanswered").name
        if name in found:
            share = found[name]

            def noted(items: Any) -> Any:
                self._note_unanswered(items)
                return share(items)

            noted.__name__ = name
            found[name] = noted
        return found

    def _note_unanswered(self, items: Any) -> None:
        """One note: how many questions were unanswered (counted wrong), and why."""
        missing = n_unanswered(items)
        if not missing:
            return
        by_form = forms(items)
        why = questions.reasons(by_form)
        asked = n_asked(items)
        text = f"{missing} of {asked} questions unanswered, counted wrong in a and A ({why})"
        if by_form.get(questions.ERROR):
            text += "; the log and the samples name the server's error"
        notes.add(self, text)
