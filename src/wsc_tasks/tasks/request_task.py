"""The lm-eval task class every task of this package builds on (``SchemaTask``, WinoWhy).

The tasks build their own documents (``documents``) and requests (``doc_requests``): there is no
prompt template, no few-shot context and no chat template (``flags``). Their log-likelihood
requests go to lm-eval under this package's own request type (``serving.requests``), which
lm-eval hands to ``serving`` apart from every other task's. Each task gives lm-eval the
aggregations of every metric it reports (``all_aggregations``, bound to their records in
``wsc_tasks.metrics.registry``); ``metadata.metrics`` says which of them lm-eval computes and
prints: ``headline`` (default: the task's ``HEADLINE_METRICS``, the few metrics that define it) or
``all``. Every per-document value is logged with ``--log_samples`` either way (the others carried
by the first standard error's value, ``registry.lm_eval_values``, so that no table row counts
them), and ``wsc-tasks report`` recomputes the rest from the samples; each printed metric's
schema-bootstrap error comes as ``<metric>_stderr`` (``stderr``).
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

import datasets
from lm_eval.api.task import ConfigurableTask

from wsc_tasks import lm_eval_fixes
from wsc_tasks.kept import Latest
from wsc_tasks.lm_eval_fixes import class_task_metadata
from wsc_tasks.metrics import registry
from wsc_tasks.metrics.registry import Aggregation
from wsc_tasks.scoring.methods import Request
from wsc_tasks.serving.requests import LM_EVAL_TYPE, REQUEST_TYPE, TaskRequest
from wsc_tasks.tasks import flags, metadata_keys, notes, stderr
from wsc_tasks.tasks.conventions import TaskConventions

lm_eval_fixes.apply()  # lm-eval's LM serves this package's request types (the one patch)

METRIC_CHOICES = ("headline", "all")
F = TypeVar("F")  # an aggregation, or whatever a task keeps per metric name


def undefined_note(metrics: list[str], reason: str) -> str:
    """The note of metrics without a value, all for one ``reason``."""
    return f"{', '.join(metrics)} not reported (N/A): {reason}"


def request_task_config(config: dict[str, Any] | None) -> dict[str, Any]:
    """lm-eval config defaults for a task that builds its own requests (no prompt template)."""
    config = dict(config or {})
    config.setdefault("output_type", "loglikelihood")
    config.setdefault("test_split", "test")
    config.setdefault("doc_to_text", "")
    config.setdefault("doc_to_target", "")
    config.pop("class", None)
    return config


def metric_choice(task: str, metadata: Mapping[str, object]) -> str:
    """``metadata.metrics``: which aggregations lm-eval computes and prints (see the docstring)."""
    choice = metadata.get("metrics", "headline")
    if choice not in METRIC_CHOICES:
        raise ValueError(
            f"task {task}: metadata.metrics is {choice!r}; use 'headline' (the default: the "
            "metrics that define the task) or 'all' (--metadata '{\"metrics\": \"all\"}')"
        )
    return str(choice)


def select_metrics(
    task: str, metadata: Mapping[str, object], functions: dict[str, F], headline: Collection[str]
) -> dict[str, F]:
    """``functions`` restricted to the names in ``headline`` unless ``metrics`` is ``all``.

    The other metrics' per-document values are still logged (``registry.lm_eval_values``).
    """
    if metric_choice(task, metadata) == "all":
        return functions
    return {name: fn for name, fn in functions.items() if name in headline}


# each test split's Arrow table and features, by the digest of its documents: a process that runs
# several models (a sweep's worker) converts a task's documents and hashes them (``datasets``'
# fingerprint, 0.7 s a model over ``wsc_group``'s 47 tasks) once
_SPLITS: Latest[str, datasets.Dataset] = Latest(128)


def test_split(documents: list[dict[str, Any]]) -> datasets.Dataset:
    """``documents`` as a ``datasets`` split of its own: a new ``Dataset`` over the Arrow table
    (immutable) of the first split made from equal documents in this process, with its features
    and the digest of the documents' JSON text as its fingerprint; none shares another's object
    state (``set_format`` and the like change one ``Dataset`` in place). Documents that are not
    JSON (a user's task with other values) are converted each time, as ``datasets`` does."""
    try:
        text = json.dumps(documents)
    except (TypeError, ValueError):
        return datasets.Dataset.from_list(documents)
    digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
    made = _SPLITS.get(digest)
    if made is None:
        made = datasets.Dataset.from_list(documents)
    _SPLITS.put(digest, made)
    return datasets.Dataset(made.data, info=made.info.copy(), fingerprint=digest)


class Rows(list):
    """A test split's rows as ``datasets`` gives them (the same values: its Arrow table converted
    once), in a list, with the ``features`` lm-eval reads when it builds the task."""

    def __init__(self, split: datasets.Dataset) -> None:
        super().__init__(split.to_list())
        self.features = split.features


class RequestTask(flags.RefusesUnmeasuredFlags, TaskConventions, ConfigurableTask):
    """A task that builds its own documents and requests; see the module docstring (and
    ``conventions``: the model, metadata keys, --predict_only, the loggers, undefined metrics)."""

    VERSION = 1.0
    HEADLINE_METRICS: frozenset[str] = frozenset()
    OUTPUT_TYPE: str | None  # lm-eval's, from the config; this package's own for log-likelihoods

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = request_task_config(config)
        offered = class_task_metadata.offered()  # the TaskManager's, where lm-eval gives none
        if offered:
            config["metadata"] = {**(config.get("metadata") or {}), **offered}
        self.metadata_withheld = class_task_metadata.withheld()
        self.validate_metadata(config.get("task"), config.get("metadata") or {})
        super().__init__(config=config, **kwargs)
        self._requested = dict(self._meta)  # as given, before a plan writes to it
        metadata_keys.check(f"task {self.config.task}: metadata", self._requested, strict=False)
        if self.OUTPUT_TYPE == LM_EVAL_TYPE:  # lm-eval pads each rank's requests of this type
            self.OUTPUT_TYPE = REQUEST_TYPE

    @classmethod
    def validate_metadata(cls, task: Any, meta: dict[str, Any]) -> None:
        """One-line errors for metadata the task cannot honour, before lm-eval builds it."""
        metadata_keys.check_values(f"task {task}: metadata", meta)
        metric_choice(str(task), meta)

    @property
    def _meta(self) -> dict[str, Any]:
        return self.config.metadata or {}

    # -- data -----------------------------------------------------------------------------------
    def documents(self) -> list[dict[str, Any]]:
        """The task's lm-eval documents, in order."""
        raise NotImplementedError

    def download(
        self, dataset_kwargs: Mapping[str, object] | None = None, **kwargs: object
    ) -> None:
        documents = self.documents()
        keys = set(documents[0]) if documents else set()
        for number, document in enumerate(documents):
            if set(document) != keys:  # ``from_list`` keeps the first document's keys alone
                raise ValueError(
                    f"task {self.config.task}: document {number} has the keys "
                    f"{sorted(document)}, document 0 {sorted(keys)}: every document of a task "
                    "needs the same keys (give a missing one as None)"
                )
        test = test_split(documents)
        self.dataset = datasets.DatasetDict({"test": test})
        self._rows = Rows(test)

    def test_docs(self) -> Any:
        """The documents as ``Rows``: lm-eval passes over them three times (building the task,
        its requests, then their results), and a ``Dataset`` formats every row anew each time."""
        if self.config.process_docs is not None:
            return super().test_docs()
        return self._rows

    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        return ""

    def fewshot_context(self, doc: dict, num_fewshot: int = 0, **kwargs: object) -> str:
        if num_fewshot:
            raise ValueError(
                f"task {self.config.task}: few-shot prompting is not part of log-likelihood "
                "scoring; run it with --num_fewshot 0"
            )
        return ""

    # -- requests -------------------------------------------------------------------------------
    def doc_requests(self, doc: dict) -> list[Request]:
        """Every request of one document, in the order its results come back."""
        raise NotImplementedError

    def construct_requests(self, doc: dict, ctx: str, **kwargs: object) -> list[TaskRequest]:
        """Each request of ``doc``; a log-likelihood request under this package's own request
        type, so that lm-eval hands it to ``serving`` and no other task's request goes there."""
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        return [
            TaskRequest(
                request_type=REQUEST_TYPE if kind == LM_EVAL_TYPE else kind,
                doc=doc,
                arguments=arguments,
                idx=i,
                task=self,
                **kwargs,
            )
            for i, (kind, arguments) in enumerate(self.doc_requests(doc))
        ]

    # -- metrics --------------------------------------------------------------------------------
    def all_aggregations(self) -> dict[str, Aggregation]:
        """Every metric ``document_values`` gives a per-document value for."""
        raise NotImplementedError

    def document_values(self, doc: dict, results: list[Any]) -> dict[str, Any]:
        """Every metric's per-document value of ``doc``, from its requests' ``results``."""
        raise NotImplementedError

    def shown(self) -> dict[str, Aggregation]:
        """The metrics lm-eval computes and prints (``metadata.metrics``), chosen once: a task's
        metrics are fixed when it is built (its plan), and choosing them again for each of a
        run's documents was most of its result processing."""
        found: dict[str, Aggregation] | None = self.__dict__.get("_shown")
        if found is None:
            found = self._shown = select_metrics(
                self.config.task, self._meta, self.all_aggregations(), self.HEADLINE_METRICS
            )
        return found

    def _with_stderr(self) -> list[str]:
        found: list[str] | None = self.__dict__.get("_stderr_names")
        if found is None:
            shown = self.shown().items()
            found = self._stderr_names = [n for n, f in shown if stderr.has_stderr(f)]
        return found

    def process_results(self, doc: dict, results: list[Any]) -> dict[str, Any]:
        """The shown metrics' values and each shown metric's value again for its standard error,
        the first of which carries the others' (``registry.lm_eval_values``)."""
        values = self.document_values(doc, results)
        return registry.lm_eval_values(values, self.shown(), self._with_stderr())

    def aggregation(self) -> dict[str, Any]:
        """What lm-eval aggregates: the shown metrics (``N/A`` where one has no value on the
        documents evaluated, with a note saying why) and each shown metric's schema-bootstrap
        standard error (``stderr``)."""
        shown = self.shown()
        found: dict[str, Any] = {name: self._noting(name, f) for name, f in shown.items()}
        for name in self._with_stderr():
            found[registry.stderr_name(name)] = stderr.stderr_of(shown[name])
        return found

    def _noting(self, name: str, function: Any) -> Any:
        """``function`` (metric ``name``'s aggregation), ``N/A`` where it has no value: lm-eval's
        word for a missing figure, printed as it is, equal to itself (a NaN would print as
        ``nan`` and make two runs' equal results compare unequal)."""

        def aggregate(items: Any) -> Any:
            value = function(items)
            if not (isinstance(value, float) and math.isnan(value)):
                return value
            reason = f"{self.why_undefined(name, items)} in {self.documents_evaluated(len(items))}"
            said = self.__dict__.setdefault("_undefined", {})
            earlier = said.get(reason, [])
            said[reason] = [*earlier, name]
            replaced = undefined_note(earlier, reason) if earlier else None
            notes.add(self, undefined_note(said[reason], reason), replaced)
            return registry.NOT_AVAILABLE

        aggregate.__name__ = name
        return aggregate

    def higher_is_better(self) -> dict[str, bool | None]:
        directions = registry.higher_is_better(self.shown())
        directions.update((registry.stderr_name(name), None) for name in self._with_stderr())
        return directions
