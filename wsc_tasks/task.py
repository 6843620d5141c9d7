"""The lm-eval task class behind every schema-structured task of this package.

One lm-eval document is one schema (or twin pair, or single problem when it has no twin). The task
sends, per problem, the union of the requests of its scoring methods, then reduces the results of a
document to one ``SchemaOutcome`` per method; the aggregations of ``metrics`` turn those into
problem and schema figures. Because a schema never straddles two documents, the figures are exact
under any split of the documents over processes (``accelerate launch``).

YAML keys read from ``metadata`` (overridable with lm-eval's ``--metadata``):
``dataset`` — a name from ``wsc_tasks.catalog``; ``scoring`` — list of method names, the first
is the headline (``acc``, ``schema_acc``…); every method also reports ``acc_<method>`` and
``schema_acc_<method>``.
"""

from __future__ import annotations

import logging
from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from . import catalog, lm_eval_fixes
from .metrics import SCHEMA_METRICS, SchemaOutcome, outcome, problem_accuracy, schema_accuracy
from .problems import Problem, Schema
from .scoring import Request, ScoringMethod, get_methods

log = logging.getLogger(f"lm_eval.{__name__}")

lm_eval_fixes.apply()  # our tasks send one sentence split at two places; see that module

DEFAULT_SCORING = ["partial"]
PER_METHOD = {"acc": problem_accuracy, "schema_acc": schema_accuracy}


class SchemaTask(ConfigurableTask):
    """A task whose documents are schemas; see the module docstring."""

    VERSION = 1.0

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config.setdefault("output_type", "loglikelihood")
        config.setdefault("test_split", "test")
        config.setdefault("doc_to_text", "")
        config.setdefault("doc_to_target", "")
        config.pop("class", None)
        meta = config.get("metadata") or {}
        if "dataset" not in meta:
            raise ValueError(f"task {config.get('task')}: metadata.dataset is required")
        super().__init__(config=config, **kwargs)

    # -- configuration -------------------------------------------------------------------------
    @property
    def _meta(self) -> dict[str, Any]:
        return self.config.metadata or {}

    @property
    def methods(self) -> list[ScoringMethod]:
        names = self._meta.get("scoring") or DEFAULT_SCORING
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        return get_methods(list(names))

    # -- data -----------------------------------------------------------------------------------
    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        name = self._meta["dataset"]
        docs = [schema.to_doc() for schema in catalog.load(name)]
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})

    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        return ""

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> list[int]:
        return [int(p["label"]) for p in doc["problems"]]

    def fewshot_context(self, doc: dict, num_fewshot: int = 0, **kwargs: Any) -> str:
        if num_fewshot:
            raise ValueError(
                f"task {self.config.task}: few-shot prompting is not part of fill-in-the-blank "
                f"scoring; run it with --num_fewshot 0"
            )
        return ""

    # -- requests and results --------------------------------------------------------------------
    def _problem_requests(self, problem: Problem) -> list[Request]:
        """The union of all methods' requests for one problem, in first-seen order."""
        seen: dict[Request, None] = {}
        for method in self.methods:
            for per_option in method.requests(problem):
                for request in per_option:
                    seen.setdefault(request, None)
        return list(seen)

    def construct_requests(self, doc: dict, ctx: str, **kwargs: Any) -> list[Instance]:
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        schema = Schema.from_doc(doc)
        instances = []
        for problem in schema.problems:
            for request_type, arguments in self._problem_requests(problem):
                instances.append(
                    Instance(
                        request_type=request_type,
                        doc=doc,
                        arguments=arguments,
                        idx=len(instances),
                        **kwargs,
                    )
                )
        return instances

    def outcomes(self, doc: dict, results: list[Any]) -> dict[str, SchemaOutcome]:
        """Per scoring method, which problems of the schema it answered correctly."""
        schema = Schema.from_doc(doc)
        position = 0
        per_method: dict[str, list[bool]] = {m.name: [] for m in self.methods}
        for problem in schema.problems:
            keys = self._problem_requests(problem)
            found = dict(zip(keys, results[position : position + len(keys)], strict=True))
            position += len(keys)
            for method in self.methods:
                per_method[method.name].append(method.predict(problem, found) == problem.label)
        if position != len(results):
            raise RuntimeError(
                f"task {self.config.task}: {len(results)} results for {position} requests"
            )
        return {name: outcome(correct, schema.groups) for name, correct in per_method.items()}

    def process_results(self, doc: dict, results: list[Any]) -> dict[str, SchemaOutcome]:
        by_method = self.outcomes(doc, results)
        headline = by_method[self.methods[0].name]
        values: dict[str, SchemaOutcome] = {name: headline for name in SCHEMA_METRICS}
        for method_name, value in by_method.items():
            for metric in PER_METHOD:
                values[f"{metric}_{method_name}"] = value
        return values

    def aggregation(self) -> dict[str, Any]:
        functions = {name: fn for name, (fn, _) in SCHEMA_METRICS.items()}
        for method in self.methods:
            for metric, fn in PER_METHOD.items():
                functions[f"{metric}_{method.name}"] = fn
        return functions

    def higher_is_better(self) -> dict[str, bool]:
        return {name: SCHEMA_METRICS.get(name, (None, True))[1] for name in self.aggregation()}
