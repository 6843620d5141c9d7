"""The lm-eval task class behind every schema-structured task of this package.

One lm-eval document is one schema (or twin pair, or single problem when it has no twin). The task
sends, per problem, the union of the requests of its scoring methods, then reduces the results of a
document to one ``SchemaOutcome`` per method; the aggregations of ``metrics`` turn those into
problem and schema figures. Because a schema never straddles two documents, the figures are exact
under any split of the documents over processes (``accelerate launch``).

Keys read from ``metadata`` (YAML, or lm-eval's ``--metadata``; lm-eval's CLI also merges the
``--model_args`` in, which is how the task finds the model's tokenizer and family; from Python,
``TaskManager(metadata={"pretrained": ...})``; the model is checked against them, see
``conventions``):
``dataset`` — a name from ``wsc_tasks.data.catalog``; ``scoring`` — ``all`` (every method of the
model's family) or a list of method names (default: each method where it runs by default,
``ScoringMethod.runs_on``); ``headline`` — the method behind ``acc`` and
``schema_acc`` (default: the family's best, causal ``smart``), or a mapping family → method, e.g.
``{seq2seq: masked_mean}``; ``smart_limit`` — n of smart scoring (default 1); ``tokenizer`` —
the tokenizer to count tokens with, when ``pretrained`` is not given (e.g. a model object with
no Hugging Face tokenizer); ``metrics`` — ``headline`` (default: lm-eval aggregates and prints the
few metrics that define the task) or ``all`` (every per-method and method-consistency metric
too). Every per-document value is logged with ``--log_samples`` either way, so ``wsc-tasks
report`` recomputes the rest from the samples.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Problem, Schema
from wsc_tasks.kept import Latest
from wsc_tasks.metrics import associativity, registry
from wsc_tasks.metrics.accuracy import SchemaOutcome, outcome, restrict
from wsc_tasks.metrics.consistency import pair_outcome
from wsc_tasks.metrics.registry import ACC, BLANK_AT_END, EQUAL_LEN, SCHEMA_ACC, Key, TaskKind, bind
from wsc_tasks.scoring import causal, families
from wsc_tasks.scoring.causal import shifted_splits
from wsc_tasks.scoring.methods import Answered, Request, ScoringError, ScoringMethod, Setup
from wsc_tasks.scoring.tokens import TokenCounter
from wsc_tasks.tasks.request_task import RequestTask

log = logging.getLogger(f"lm_eval.{__name__}")

PER_METHOD = (ACC, SCHEMA_ACC)  # reported per scoring method, ``Key(<record>, method=…)``
BASE_METRICS = tuple(Key(m.name) for m in registry.select(value=registry.OUTCOME, reported=True))


@dataclass(frozen=True)
class _ValueNames:
    """The metric names a schema task's ``document_values`` fills, per group of values."""

    base: tuple[str, ...]
    equal_len: tuple[str, ...]
    share_equal_len: str
    share_blank_at_end: str
    per_method: dict[str, tuple[str, ...]]
    per_pair: tuple[tuple[str, str, tuple[str, ...]], ...]


# the headline method on the problems with equal-length answers, and the token facts' shares
TOKEN_METRICS = (
    *(Key(record, subset=EQUAL_LEN) for record in (ACC, SCHEMA_ACC, "share")),
    Key("share", subset=BLANK_AT_END),
)
# restricted to the problems whose two answers have the same number of tokens
EQUAL_LENGTH = frozenset(Key(record, subset=EQUAL_LEN).name for record in (ACC, SCHEMA_ACC))


def check_metadata(task: str, meta: dict[str, Any], datasets: Any) -> None:
    """One-line errors naming the key, the task and the allowed values, before any model work:
    a wrong setting must stop the run, never be read as another one."""

    def fail(key: str, allowed: str) -> None:
        raise ScoringError(f"task {task}: metadata {key}={meta[key]!r} is invalid; {allowed}")

    if "dataset" not in meta:
        raise ScoringError(f"task {task}: metadata.dataset is required")
    name = meta["dataset"]
    if not isinstance(name, str) or not (name in datasets or name.startswith("dyads:")):
        fail("dataset", f"allowed: one of {', '.join(sorted(datasets))}")
    limit = meta.get("smart_limit", 1)
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        fail("smart_limit", "allowed: an integer ≥ 1 (tokens after the blank smart scoring adds)")
    scoring = meta.get("scoring", "all")
    listed = isinstance(scoring, list) and scoring and all(isinstance(n, str) for n in scoring)
    if not (isinstance(scoring, str) and scoring.strip() or listed):
        fail("scoring", 'allowed: "all", "name,name", or a list of scoring-method names')
    headline = meta.get("headline")
    by_family = isinstance(headline, dict) and all(
        family in families.FAMILIES and isinstance(method, str)
        for family, method in headline.items()
    )
    if not (headline is None or isinstance(headline, str) or by_family):
        fail(
            "headline", f"allowed: a method name or a mapping {'|'.join(families.FAMILIES)} → name"
        )
    for key in ("tokenizer", "pretrained"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            fail(key, "allowed: a Hub id or a local path")


# a run of wsc_group has a few per tokenizer
_SHARED: Latest[tuple[tuple[ScoringMethod, ...], Setup], dict[Problem, list[Request]]] = Latest(32)


def shared_requests(
    methods: tuple[ScoringMethod, ...], setup: Setup
) -> dict[Problem, list[Request]]:
    """The requests of each problem under ``methods`` and ``setup`` (a function of the three),
    one dict for every task and run of this process that has them: a sweep's worker computes
    them once per tokenizer (whose counter the models share), not once per model. The latest
    few kept."""
    return _SHARED.use((methods, setup), {})


_FACTS: Latest[Setup, dict[Problem, tuple[bool, bool]]] = Latest(32)


def shared_token_facts(setup: Setup) -> dict[Problem, tuple[bool, bool]]:
    """Each problem's token facts under ``setup`` (equal-length answers, blank at the end: a
    function of its tokenizer and the problem), one dict for every task and run of this process
    that has the setup. The latest few kept."""
    return _FACTS.use(setup, {})


class SchemaTask(RequestTask):
    """A task whose documents are schemas; see the module docstring."""

    DATASETS: Mapping[str, object] = catalog.SPECS  # what ``metadata.dataset`` may name
    HEADLINE_METRICS = registry.headline(TaskKind.SCHEMA)

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.setup, self.methods = self._plan()

    @classmethod
    def validate_metadata(cls, task: Any, meta: dict[str, Any]) -> None:
        check_metadata(task, meta, cls.DATASETS)
        super().validate_metadata(task, meta)

    # -- configuration -------------------------------------------------------------------------
    def _plan(self) -> tuple[Setup, list[ScoringMethod]]:
        """Family, tokenizer and methods (``families.plan``) from the metadata, before any model
        work; the model is checked against them before it gets a request (``conventions``)."""
        task = self.config.task
        plan = families.plan(task, self._requested)
        prior = plan.setup.prior
        self.config.metadata = {**self._meta, "first_token_prior": prior, "headline": plan.headline}
        self.family = plan.family.name
        self.family_record = plan.family
        self.method_pairs = list(plan.method_pairs)
        log.info(
            f"wsc_tasks: {task}: {self.family} model, headline {plan.headline}, methods "
            f"{', '.join(m.name for m in plan.methods)}; first-token prior {prior}"
        )
        return plan.setup, list(plan.methods)

    def token_counter(self) -> TokenCounter | None:
        return self.setup.tokens

    def planned_family(self) -> families.Family:
        return self.family_record

    def token_free_note(self, why: str) -> str | None:
        if self.family_record.model_counts_tokens:
            return None
        return (
            f"headline {self.methods[0].name}, the token-free method, is the only scoring "
            f"method run: {why}"
        )

    def why_undefined(self, metric: str, items: Sequence[Any]) -> str:
        reason = super().why_undefined(metric, items)
        if metric in EQUAL_LENGTH:
            reason += " whose two answers have the same number of tokens"
        return reason

    # -- data -----------------------------------------------------------------------------------
    def documents(self) -> list[dict[str, Any]]:
        return [schema.to_doc() for schema in catalog.load(self._meta["dataset"])]

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> list[int]:
        return [int(p["label"]) for p in doc["problems"]]

    # -- requests and results --------------------------------------------------------------------
    @cached_property
    def _requests_of(self) -> dict[Problem, list[Request]]:
        return shared_requests(tuple(self.methods), self.setup)

    @cached_property
    def _facts_of(self) -> dict[Problem, tuple[bool, bool]]:
        return shared_token_facts(self.setup)

    def _problem_requests(self, problem: Problem) -> list[Request]:
        """The union of all methods' requests for one problem, in first-seen order (built once
        per problem: requests are built, then counted, then matched with their results; and
        once per methods and setup in a process, ``shared_requests``)."""
        cache = self._requests_of
        if problem not in cache:
            seen: dict[Request, None] = {}
            for method in self.methods:
                for per_option in method.requests(problem, self.setup):
                    for request in per_option:
                        seen.setdefault(request, None)
            cache[problem] = list(seen)
        return cache[problem]

    def schemas(self, doc: dict) -> list[Schema]:
        """The schemas of one document, in the order their requests are sent."""
        return [Schema.from_doc(doc)]

    def doc_requests(self, doc: dict) -> list[Request]:
        if self.setup.tokens is not None and not self.__dict__.get("_primed"):
            self._primed = True  # every text the task will count, encoded in batch calls
            causal.prime(
                self.setup.tokens,
                (p for d in self.documents() for s in self.schemas(d) for p in s.problems),
            )
        problems = [p for schema in self.schemas(doc) for p in schema.problems]
        return [request for problem in problems for request in self._problem_requests(problem)]

    def document_outcomes(
        self, doc: dict, results: list[Any]
    ) -> list[tuple[Schema, dict[str, SchemaOutcome]]]:
        """Each schema of the document with its outcome per scoring method."""
        out, position = [], 0
        for schema in self.schemas(doc):
            n = sum(len(self._problem_requests(p)) for p in schema.problems)
            out.append((schema, self.outcomes(schema, results[position : position + n])))
            position += n
        if position != len(results):
            raise RuntimeError(
                f"task {self.config.task}: {len(results)} results for {position} requests"
            )
        return out

    def outcomes(self, schema: Schema, results: list[Any]) -> dict[str, SchemaOutcome]:
        """Per scoring method, which problems of the schema it answered correctly."""
        position = 0
        per_method: dict[str, list[bool]] = {m.name: [] for m in self.methods}
        for problem in schema.problems:
            keys = self._problem_requests(problem)
            found = Answered(zip(keys, results[position : position + len(keys)], strict=True))
            position += len(keys)
            for method in self.methods:
                chosen = method.predict(problem, found, self.setup)
                per_method[method.name].append(chosen == problem.label)
        if position != len(results):
            raise RuntimeError(
                f"task {self.config.task}: {len(results)} results for {position} requests"
            )
        return {name: outcome(correct, schema.groups) for name, correct in per_method.items()}

    def _token_facts(self, schema: Schema) -> tuple[list[bool], list[bool]]:
        """Per problem: equal-length answers in context; blank followed by ≤ n tokens (each
        problem's once per setup in a process, ``shared_token_facts``)."""
        known = self._facts_of
        for problem in schema.problems:
            if problem not in known:
                known[problem] = self._problem_token_facts(problem)
        facts = [known[problem] for problem in schema.problems]
        return [equal for equal, _ in facts], [at_end for _, at_end in facts]

    def _problem_token_facts(self, problem: Problem) -> tuple[bool, bool]:
        tokens = self.setup.tokens
        assert tokens is not None
        if problem.n_blanks == 1:
            lengths: tuple[int, ...] = tokens.answer_lengths(problem)
        else:
            lengths = tuple(len(tokens.encode(problem.fill(i), False)) for i in (0, 1))
        at_end = tokens.tokens_after_blank(problem, 0) <= self.setup.smart_limit
        return lengths[0] == lengths[1], at_end

    def document_values(self, doc: dict, results: list[Any]) -> dict[str, Any]:
        [(schema, by_method)] = self.document_outcomes(doc, results)
        names = self._value_names
        headline = by_method[self.methods[0].name]
        values: dict[str, Any] = dict.fromkeys(names.base, headline)
        if self.setup.tokens is not None:
            equal, at_end = self._token_facts(schema)
            values.update(dict.fromkeys(names.equal_len, restrict(headline, equal)))
            values[names.share_equal_len] = outcome(equal, [])
            values[names.share_blank_at_end] = outcome(at_end, [])
        if self._counts_splits:
            values["n_shifted_splits"] = sum(shifted_splits(p, self.setup) for p in schema.problems)
        for method_name, value in by_method.items():
            values.update(dict.fromkeys(names.per_method[method_name], value))
        for first, second, pair_names in names.per_pair:
            values.update(
                dict.fromkeys(pair_names, pair_outcome(by_method[first], by_method[second]))
            )
        return values

    @cached_property
    def _value_names(self) -> _ValueNames:
        """The metric names ``document_values`` fills, built once: naming them per document took
        a registry scan and some 40 ``Key`` names for each of the tens of thousands of documents
        of a run."""
        consistency = registry.select(value=registry.PAIR, kind="consistency")
        return _ValueNames(
            base=tuple(key.name for key in BASE_METRICS),
            equal_len=tuple(Key(n, subset=EQUAL_LEN).name for n in (ACC, SCHEMA_ACC)),
            share_equal_len=Key("share", subset=EQUAL_LEN).name,
            share_blank_at_end=Key("share", subset=BLANK_AT_END).name,
            per_method={
                m.name: tuple(Key(metric, method=m.name).name for metric in PER_METHOD)
                for m in self.methods
            },
            per_pair=tuple(
                (first, second, tuple(Key(r.name, pair=(first, second)).name for r in consistency))
                for first, second in self.method_pairs
            ),
        )

    def all_aggregations(self) -> dict[str, Any]:
        """Every metric ``document_values`` gives a per-document value for."""
        functions = registry.aggregations(BASE_METRICS)
        if self.setup.tokens is not None:
            functions.update(registry.aggregations(TOKEN_METRICS))
        if self._counts_splits:
            functions["n_shifted_splits"] = bind("n_shifted_splits")
        for method in self.methods:
            functions.update(registry.aggregations(Key(m, method=method.name) for m in PER_METHOD))
        for first, second in self.method_pairs:
            consistency_metrics = registry.select(value=registry.PAIR, kind="consistency")
            keys = (Key(m.name, pair=(first, second)) for m in consistency_metrics)
            functions.update(registry.aggregations(keys))
        return functions

    @property
    def _counts_splits(self) -> bool:
        """Methods that may split sentences after their first token(s) are active (causal)."""
        return self.family_record.shifted_splits and any(m.needs_tokens for m in self.methods)


class ConsistencyTask(SchemaTask):
    """One document = an original schema and its transformed schema (thesis §3.7.2–3.7.3).

    ``metadata.dataset`` names a pair dataset of ``catalog.PAIR_SPECS``. Both schemas are scored
    with the task's methods; the headline method's outcomes give the consistency metrics that
    apply to the transformation (Table 3.6), the accuracies of each side and their difference.
    Because the pair travels in one document, the metrics are exact under multi-process runs.
    """

    DATASETS = catalog.PAIR_SPECS
    HEADLINE_METRICS = registry.headline(TaskKind.CONSISTENCY)

    def documents(self) -> list[dict[str, Any]]:
        return [self.pair_doc(o, t) for o, t in catalog.load_pairs(self._meta["dataset"])]

    def pair_doc(self, original: Schema, transformed: Schema) -> dict[str, Any]:
        return {
            "schema_uid": transformed.uid,
            "original": original.to_doc(),
            "transformed": transformed.to_doc(),
        }

    @cached_property
    def _aggregations(self) -> dict[str, Any]:
        """The metrics that apply to the transformation (Table 3.6), built once per task."""
        problem_level = catalog.PAIR_SPECS[self._meta["dataset"]].problem_level
        return registry.pair_aggregations(problem_level)

    def schemas(self, doc: dict) -> list[Schema]:
        return [Schema.from_doc(doc["original"]), Schema.from_doc(doc["transformed"])]

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> list[int]:
        return [p.label for s in self.schemas(doc) for p in s.problems]

    def pair_item(self, doc: dict, results: list[Any]) -> dict[str, Any]:
        """The document's value for every metric: both sides' headline outcomes."""
        (_, before), (_, after) = self.document_outcomes(doc, results)
        headline = self.methods[0].name
        return dict(pair_outcome(before[headline], after[headline]))

    def document_values(self, doc: dict, results: list[Any]) -> dict[str, Any]:
        item = self.pair_item(doc, results)
        return {name: item for name in self._aggregations}

    def all_aggregations(self) -> dict[str, Any]:
        return dict(self._aggregations)


class AssociativityTask(ConsistencyTask):
    """WSC266 against its no-candidates perturbation, split into associative and non-associative
    schemas (thesis §4.4); metrics in ``wsc_tasks.metrics.associativity``."""

    HEADLINE_METRICS = registry.headline(TaskKind.ASSOCIATIVITY)

    def pair_doc(self, original: Schema, transformed: Schema) -> dict[str, Any]:
        return {**super().pair_doc(original, transformed), "subset": associativity.subset(original)}

    def pair_item(self, doc: dict, results: list[Any]) -> dict[str, Any]:
        return {**super().pair_item(doc, results), "subset": doc["subset"]}

    @cached_property
    def _aggregations(self) -> dict[str, Any]:
        records = registry.select(value=registry.TAGGED_PAIR)
        return {**registry.aggregations(Key(m.name) for m in records), "n_pairs": bind("n_pairs")}
