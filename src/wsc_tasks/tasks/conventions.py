"""What every lm-eval task of this package does for lm-eval beyond its own scoring.

- **The model.** A task plans its requests (family, tokenizer, methods) from its metadata, as
  lm-eval's tokenizer-dependent tasks do (lm-eval's CLI merges ``--model_args`` into it). Before
  they reach the model, ``serving`` has the task meet it (``meet_model``): the model must be the
  one the requests were built for, else one line says what to pass; a model without tokenizer by
  design (``wsc-chance``) runs the token-free method, with a note.
- **Metadata keys.** A key that neither these tasks nor lm-eval read is warned of with the
  closest known key (it may be a model argument lm-eval merged in); ``wsc-tasks run``, which
  knows ``--metadata`` apart from ``--model_args``, refuses it before the model loads.
- **--predict_only.** lm-eval asks a task to replace its metrics by ``bypass``; these tasks do so
  (samples with every request's log-likelihood, no metric), as lm-eval's own tasks.
- **--cache_requests.** The requests are saved under a name that says what they follow and the
  documents chosen (``request_cache``), and checked against the documents when read back.
- **The loggers.** lm-eval's W&B logger reads each task config's ``metric_list``; the config
  written with the results lists the aggregated metrics with their direction.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from wsc_tasks.lm_eval_fixes.base import installed_lm_eval
from wsc_tasks.metrics import ratios, registry
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import ScoringError
from wsc_tasks.scoring.tokens import TokenCounter, agrees, same_encoding
from wsc_tasks.serving.model_facts import PASS_TOKENIZER, ModelSide, side_of
from wsc_tasks.tasks import notes, request_cache

log = logging.getLogger(f"lm_eval.{__name__}")

PART_LIMIT = (
    "--limit {limit}: the figures are of the first {limit} documents (schemas), not of the whole "
    "dataset; do not compare them with a full run"
)
PART_SAMPLES = (
    "--samples: the figures are of the documents chosen, not of the whole dataset; do not compare "
    "them with a full run"
)
PREDICT_ONLY = "--predict_only: no metric computed; the samples files hold every request's score"
WITHHELD = (
    "lm-eval {release} gives a task with a class of its own none of the run's metadata "
    "(--metadata, --model_args: the tokenizer), so the task ran with its defaults; for every "
    "scoring method run it with `wsc-tasks run`, or lm-eval 0.4.12 or later"
)

if TYPE_CHECKING:

    class LmEvalTask:
        """What this package's mixins use of lm-eval's ``Task``, which every class that mixes
        them in also derives from (after them); lm-eval itself has no type information."""

        config: Any
        eval_docs: Sequence[Any]
        _instances: list[Any]

        def doc_iterator(self, **kwargs: Any) -> Any: ...

        def build_all_requests(self, **kwargs: Any) -> None: ...
        def override_metric(self, metric_name: str) -> None: ...
        def dump_config(self) -> dict: ...
        def process_results(self, doc: dict, results: list[Any]) -> dict[str, Any]: ...
        def aggregation(self) -> dict[str, Callable[..., Any]]: ...
        def all_aggregations(self) -> dict[str, Any]: ...
        def higher_is_better(self) -> dict[str, bool | None]: ...

else:
    LmEvalTask = object


class TaskConventions(LmEvalTask):
    """Mixin of this package's lm-eval tasks; see the module docstring. A task sets
    ``_requested`` (its metadata as given, before its plan writes to it) and says what its plan
    is (``token_counter``, ``planned_family``, ``token_free_note``)."""

    _requested: dict[str, Any]
    _chosen_documents = False  # the run picked documents with --samples, not the first ones
    caches_requests = False  # built with lm-eval's --cache_requests (its encodings kept too)

    @property
    def _name(self) -> str:
        return str(self.config.task)

    # -- what serving reads (``serving.requests.Requester``) ---------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def metadata(self) -> Mapping[str, object]:
        return dict(self.config.metadata or {})

    def token_counter(self) -> TokenCounter | None:
        """The counter the task counts tokens with (its encodings spare the model's tokenizer
        calls, ``serving.encoding``); None: it counts none."""
        return None

    def planned_family(self) -> families.Family | None:
        """The model family the task's requests were planned for; None: any."""
        return None

    def token_free_note(self, why: str) -> str | None:
        """What the run's notes say when the task plans without tokens for a model without a
        tokenizer (``why``); None when the task needs no tokenizer."""
        return None

    def record_served_check(self, outcome: Mapping[str, object]) -> None:
        """Keep a served model's log-probability check in the results config."""
        from wsc_tasks.serving.served import RESULTS_KEY

        notes.results_metadata(self)[RESULTS_KEY] = dict(outcome)

    # -- the model -------------------------------------------------------------------------------
    def meet_model(self, lm: object) -> None:
        """lm-eval is about to send this task's requests to ``lm``: it must be the model they
        were planned for (family, tokenizer), else one line says what to pass. Once per model."""
        met = self.__dict__.setdefault("_met_models", weakref.WeakSet())
        if lm in met:
            return
        side = side_of(lm)
        self._check_family(side)
        counter = self.token_counter()
        withheld = getattr(self, "metadata_withheld", False)  # lm-eval 0.4.10, 0.4.11
        why = WITHHELD.format(release=installed_lm_eval()) if withheld else side.why
        note = self.token_free_note(why)
        if counter is None and note is not None and withheld:
            notes.add(self, note)
        elif counter is None and note is not None:
            if side.counts_tokens:
                raise ScoringError(
                    f"task {self._name}: its requests were planned without a tokenizer (its "
                    f"metadata names none), but the model ({side.label}) has one; "
                    f"{PASS_TOKENIZER}"
                )
            if not side.token_free:
                raise ScoringError(
                    f"task {self._name}: the model ({side.label}) has no Hugging Face tokenizer "
                    f"to count tokens with, and the task metadata names none; {PASS_TOKENIZER}"
                )
            notes.add(self, note)
        elif counter is not None and side.tokenizer is not None:
            self._check_tokens(counter, side)
        met.add(lm)

    def _check_family(self, side: ModelSide) -> None:
        planned = self.planned_family()
        if planned is None or side.family is None or side.family.name == planned.name:
            return
        raise ScoringError(
            f"task {self._name}: its requests were planned for a {planned.name} model, but the "
            f"model ({side.label}) is a {side.family.name} model; {PASS_TOKENIZER}"
        )

    def _check_tokens(self, counter: TokenCounter, side: ModelSide) -> None:
        """The counter's tokenizer must encode as the model's, with the same special tokens."""
        assert side.tokenizer is not None
        same = same_encoding(counter.tokenizer, side.tokenizer)
        if not same:
            texts = sorted({text for text, _ in counter.memo()["ids"]})[::97][:32] or ["a b"]
            ids = [counter.encode(text, add_special_tokens=False) for text in texts]
            same = agrees(side.tokenizer, texts, ids, False, f"task {self._name}'s tokenizer")
        bos = side.add_bos_token
        if same and (bos is None or counter.add_special_tokens in (None, bos)):
            return
        raise ScoringError(
            f"task {self._name}: its requests were counted in the tokens of "
            f"{getattr(counter.tokenizer, 'name_or_path', 'another tokenizer')!r}, which the "
            f"model ({side.label}) encodes otherwise; {PASS_TOKENIZER}"
        )

    def build_all_requests(self, **kwargs: Any) -> None:
        """lm-eval's; with ``--cache_requests``, every document's requests kept and read back by
        this package (``request_cache``: named by what they follow, read back only for the
        documents they were built from); then each request knows its task, and a run of some
        documents says so."""
        self._chosen_documents = kwargs.get("samples") is not None
        self.caches_requests = bool(kwargs.get("cache_requests"))
        if self.caches_requests:
            self._instances = self._cached_requests(kwargs)
        else:
            super().build_all_requests(**kwargs)
        for request in self._instances:
            request.task = self  # the request cache keeps requests without their task
        self._note_part(kwargs.get("limit"), kwargs.get("samples"))

    def _cached_requests(self, kwargs: dict[str, Any]) -> list[Any]:
        """The run's requests from the request cache, or built (every document's, as lm-eval
        builds its own to keep them) and kept."""
        limit = kwargs.get("limit")
        kept = request_cache.load(self, kwargs)
        if kept is not None:
            self._instances = request_cache.first(kept, limit)
            if request_cache.matches(self, kwargs):
                return self._instances
            log.warning(
                f"wsc_tasks: {self._name}: the requests lm-eval's request cache held were built "
                "for other documents; built again"
            )
        own = {**kwargs, "cache_requests": False, "rewrite_requests_cache": False}
        super().build_all_requests(**{**own, "limit": None})
        documents = request_cache.by_document(self._instances)
        request_cache.save(self, kwargs, documents)
        return request_cache.first(documents, limit)

    def _note_part(self, limit: int | None, samples: Sequence[int] | None) -> None:
        """A run of some documents only (``--limit``, ``--samples``) says so under the table: its
        figures are not the dataset's (one text for every task, so the footer lists them once)."""
        total = len(self.eval_docs)
        if samples is not None and len(samples) < total:
            notes.add(self, PART_SAMPLES)
        elif limit is not None and limit < total:
            notes.add(self, PART_LIMIT.format(limit=limit))

    # -- --predict_only --------------------------------------------------------------------------
    def override_metric(self, metric_name: str) -> None:
        """lm-eval's ``--predict_only`` (``bypass``): samples and no metric, as its own tasks."""
        if metric_name != "bypass":
            raise ValueError(f"task {self._name}: its metrics cannot be replaced by {metric_name}")
        super().override_metric(metric_name)
        from lm_eval.api.metrics import bypass_agg

        self.process_results = lambda doc, results: {"bypass": None}  # type: ignore[method-assign]
        self.aggregation = lambda: {"bypass": bypass_agg}  # type: ignore[method-assign]
        self.higher_is_better = lambda: {"bypass": None}  # type: ignore[method-assign]
        notes.add(self, PREDICT_ONLY)

    # -- what lm-eval's loggers read ------------------------------------------------------------
    def dump_config(self) -> dict:
        """lm-eval's dump of the config, its ``metric_list`` naming the metrics the task reports,
        and its ``metadata`` the task's own dict, not a copy: lm-eval 0.4.10 and 0.4.11 dump a
        task's config before it runs, so what the task records while it runs (notes, a served
        model's check) reaches the results file through this dict alone
        (``lm_eval_fixes.early_config_dump``)."""
        directions = self.higher_is_better()
        self.config.metric_list = [
            {"metric": name, "higher_is_better": directions.get(name)}
            for name in self.aggregation()
            if not registry.is_stderr_name(name)
        ]
        found = dict(super().dump_config())
        found["metadata"] = notes.results_metadata(self)
        return found

    # -- undefined metrics -------------------------------------------------------------------------
    def why_undefined(self, metric: str, items: Sequence[Any]) -> str:
        """What leaves ``metric`` without a value on these per-document values."""
        aggregation = self.all_aggregations().get(metric)
        form = registry.form(aggregation) if aggregation is not None else None
        found = ratios.why_undefined(form, items) if form is not None else None
        return found or "it has no value on them"

    def documents_evaluated(self, n: int) -> str:
        """Which documents ``n`` per-document values came from, in words."""
        if self._chosen_documents:
            return f"the {n} documents chosen by --samples"
        total = len(self.eval_docs)
        if n >= total:
            return f"its {n} documents"
        return f"the first {'' if n == 1 else f'{n} '}of its {total} documents (--limit)"
