"""What every lm-eval task of this package does for lm-eval beyond its own scoring.

- **The model.** A task whose metadata names no tokenizer plans provisionally and settles its plan
  (family, tokenizer, methods) when lm-eval hands it the model (``meet_model``, called by
  ``patches`` before any request is built; ``model_facts`` says what is learned), so the CLI and
  ``simple_evaluate``/``evaluate`` give a model the same methods and headline. Requests built with
  no model and no named tokenizer stop with one line saying what to pass.
- **Metadata keys.** Every key is checked once the run's model arguments are known
  (``metadata_keys``): a misspelt key is an error naming the closest one, not ignored.
- **--predict_only.** lm-eval asks a task to replace its metrics by ``bypass``; these tasks do so
  (samples with every request's log-likelihood, no metric), as lm-eval's own tasks.
- **The loggers.** lm-eval's W&B logger reads each task config's ``metric_list``; the config
  written with the results lists the aggregated metrics with their direction.
- **Undefined metrics.** A metric with no value on the documents evaluated (a ratio with nothing
  to count, e.g. non-associative schemas among the first 5) is left out of the results with a
  note saying why (``patches`` section 2), never printed as NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

from wsc_tasks.harness import metadata_keys, notes
from wsc_tasks.harness.model_facts import PASS_TOKENIZER, facts_of
from wsc_tasks.metrics import ratios, registry
from wsc_tasks.scoring.families import ModelFacts
from wsc_tasks.scoring.methods import ScoringError
from wsc_tasks.scoring.tokens import TokenCounter, named_tokenizer

PART_LIMIT = (
    "--limit {limit}: the figures are of the first {limit} documents (schemas), not of the whole "
    "dataset; do not compare them with a full run"
)
PART_SAMPLES = (
    "--samples: the figures are of the documents chosen, not of the whole dataset; do not compare "
    "them with a full run"
)
PREDICT_ONLY = "--predict_only: no metric computed; the samples files hold every request's score"

if TYPE_CHECKING:

    class LmEvalTask:
        """What this package's mixins use of lm-eval's ``Task``, which every class that mixes
        them in also derives from (after them); lm-eval itself has no type information."""

        config: Any
        eval_docs: Sequence[Any]

        def build_all_requests(self, **kwargs: Any) -> None: ...
        def override_metric(self, metric_name: str) -> None: ...
        def dump_config(self) -> dict: ...
        def process_results(self, doc: dict, results: list[Any]) -> dict[str, Any]: ...
        def aggregation(self) -> dict[str, Callable[..., Any]]: ...
        def higher_is_better(self) -> dict[str, bool | None]: ...

else:
    LmEvalTask = object


class TaskConventions(LmEvalTask):
    """Mixin of this package's lm-eval tasks; see the module docstring. A task sets
    ``_requested`` (its metadata as given, before its plan writes to it) and implements
    ``_settle(facts)``, its plan from what it learned of the model."""

    _requested: dict[str, Any]
    _met = False  # lm-eval handed the task its model (``meet_model``)
    _chosen_documents = False  # the run picked documents with --samples, not the first ones

    @property
    def _name(self) -> str:
        return str(self.config.task)

    # -- the model ---------------------------------------------------------------------------
    @property
    def awaits_model(self) -> bool:
        """The metadata names no tokenizer and the model has not been met: the plan is
        provisional."""
        return named_tokenizer(self._requested) is None and not self._met

    def meet_model(
        self, lm: object, model_arguments: Collection[str] = (), shared: bool = False
    ) -> None:
        """lm-eval is about to build this task's requests for ``lm``; ``model_arguments``: the
        keys lm-eval merged into the metadata from the run's model arguments; ``shared``: other
        packages' tasks run beside, and may read keys this package does not."""
        where = f"task {self._name}: metadata"
        metadata_keys.check(where, self._requested, model_arguments, shared=shared)
        if named_tokenizer(self._requested) is None:  # settled for this model, again if another
            facts = facts_of(lm, self._name)
            self._settle(facts)
            # the results config names the tokenizer used, as from the CLI (and lm-eval's
            # --cache_requests file name follows it, patches section 11)
            self.config.metadata = {**self.config.metadata, **facts.named}
        self._met = True

    def _settle(self, facts: ModelFacts) -> None:
        raise NotImplementedError

    def token_counter(self) -> TokenCounter | None:
        """The counter the task counts tokens with (its encodings spare lm-eval's requests a
        tokenizer call, patches section 4); None: it counts none."""
        return None

    def build_all_requests(self, **kwargs: Any) -> None:
        self._chosen_documents = kwargs.get("samples") is not None
        if not self._met:  # built outside lm-eval's evaluate: no model, no model arguments
            metadata_keys.check(f"task {self._name}: metadata", self._requested)
            if self.awaits_model:
                raise ScoringError(
                    f"task {self._name}: no tokenizer to count tokens with: the task metadata "
                    f"names none and lm-eval built the requests without handing the task a "
                    f"model; {PASS_TOKENIZER}"
                )
        super().build_all_requests(**kwargs)
        self._note_part(kwargs.get("limit"), kwargs.get("samples"))

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
        directions = self.higher_is_better()
        self.config.metric_list = [
            {"metric": name, "higher_is_better": directions.get(name)}
            for name in self.aggregation()
        ]
        return super().dump_config()

    # -- undefined metrics -------------------------------------------------------------------------
    def why_undefined(self, metric: str, items: Sequence[Any]) -> str:
        """What leaves ``metric`` without a value on these per-document values."""
        aggregation = self.aggregation().get(metric)
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
