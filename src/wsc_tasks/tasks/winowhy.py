"""WinoWhy (Zhang et al. 2020 §3–5): does the model know *why* a WSC answer is right?

Each of the 273 WSC273 questions comes with 15 candidate reasons for its correct answer; the
clearly plausible and clearly implausible ones are kept (``wsc_tasks.data.winowhy``), and the
metrics are those of ``wsc_tasks.metrics.plausibility`` (aggregations: ``metrics.winowhy``).

One lm-eval document is one question with its kept reasons, so ``question_group_acc`` (every
positive reason of a question above every negative one) stays exact under multi-process runs.
Every reason is scored in the text the paper's annotators and GPT-2 saw (§3.2, Table 2), the
question followed by its answer and "because", then the reason:

    The city councilmen refused the demonstrators a permit because they feared violence. The
    'they' refers to the city councilmen because | city councilmen are administrative …

and the score is the log-likelihood of the reason given that text, by the model family:
causal — lm-eval ``loglikelihood(text, " " + reason)`` (the paper's "partial" GPT-2 setting);
seq2seq (T5) — the reason as the span of a sentinel: ``text <extra_id_0>`` →
``<extra_id_0> reason <extra_id_1>`` (thesis §3.1.3); masked — the pseudo-log-likelihood of the
reason's tokens, each masked in turn with the rest of the text visible (``hf-mlm``, thesis answer
scoring, eq. 3.24).

Reasons differ in length (negatives are longer on average: 11.5 words vs 10.4), and a summed
log-likelihood favours short reasons whatever they say, so the headline score is length-fair: the
mean log-likelihood per token of the reason (``mean``). It needs the model's tokenizer (from
``pretrained`` or ``tokenizer`` in the metadata, or from the model itself) for causal and seq2seq
models; without one (the chance model without ``tokenizer=``) the headline is the mean per UTF-8
byte of the reason (``per_byte``), which needs no tokenizer and is comparable across tokenizers,
and the run's notes say so. The summed score (``sum``) is reported too, for comparison.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from wsc_tasks.data.winowhy import load_winowhy
from wsc_tasks.metrics import registry
from wsc_tasks.metrics.registry import Key, TaskKind
from wsc_tasks.metrics.winowhy import SCORES, ReasonOutcome, make_aggregations
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import Request, ScoringError
from wsc_tasks.scoring.tokens import TokenCounter
from wsc_tasks.tasks.request_task import RequestTask

log = logging.getLogger(f"lm_eval.{__name__}")


# -- requests and scores per model family --------------------------------------------------------


def reason_request(
    family: str, context: str, reason: str, tokens: TokenCounter | None = None
) -> Request:
    """The lm-eval request whose result scores ``reason`` after ``context`` (the family's
    ``continuation``, ``wsc_tasks.scoring.families``)."""
    return families.get(family).continuation.request(context, reason, tokens)


def reason_scores(
    family: str, request: Request, result: Any, tokens: TokenCounter | None, reason: str
) -> dict[str, float]:
    """``sum``, ``per_byte`` (of the reason) and, when tokens can be counted, ``mean`` per token.

    The per-token count is what the model predicted: causal, the continuation's tokens as lm-eval
    splits them; seq2seq, the target's (reason and its two sentinels); masked, the reason's.
    """
    total, n = families.get(family).continuation.total(request, result, tokens)
    scores = {"sum": total, "per_byte": total / max(len(reason.encode("utf-8")), 1)}
    if n:
        scores["mean"] = total / n
    return scores


class WinoWhyTask(RequestTask):
    """One document per WSC273 question with its kept reasons; see the module docstring.

    Metadata: ``reason_score`` — the score behind the unsuffixed metrics: ``mean`` (default when
    tokens can be counted), ``per_byte`` (default otherwise) or ``sum`` (a key of its own, not
    ``headline``, so that one ``--metadata`` can serve schema tasks in the same run);
    ``tokenizer`` and ``metrics`` — as for ``SchemaTask``.
    """

    # printed by default; ``--metadata '{"metrics": "all"}'`` for the rest
    HEADLINE_METRICS = registry.headline(TaskKind.WINOWHY)

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(config, **kwargs)
        self.family, self.tokens, self.headline = self._plan()
        counted = families.get(self.family).model_counts_tokens or self.tokens is not None
        self.scores = SCORES if counted else tuple(s for s in SCORES if s != "mean")
        self._aggregations = make_aggregations(self.headline, self.scores)

    def token_counter(self) -> TokenCounter | None:
        return self.tokens

    def planned_family(self) -> families.Family:
        return families.get(self.family)

    def token_free_note(self, why: str) -> str | None:
        if families.get(self.family).model_counts_tokens:
            return None
        return f"headline score {self.headline} (no *_mean scores without a tokenizer): {why}"

    def _plan(self) -> tuple[str, TokenCounter | None, str]:
        """Family and tokenizer (``families.plan``, from the metadata) and the headline score."""
        task, meta = self.config.task, self._requested
        plan = families.plan(task, meta, continuation=True)
        family, tokens = plan.family.name, plan.tokens
        has_counts = plan.family.model_counts_tokens or tokens is not None
        headline = meta.get("reason_score") or ("mean" if has_counts else "per_byte")
        if headline not in SCORES:
            raise ScoringError(f"task {task}: reason_score {headline!r} is not one of {SCORES}")
        if headline == "mean" and not has_counts:
            raise ScoringError(
                f"task {task}: the per-token mean needs the model's tokenizer: pass "
                '--metadata \'{"tokenizer": "<name or path>"}\' or reason_score per_byte'
            )
        self.config.metadata = {**self._meta, "reason_score": headline}
        log.info(f"wsc_tasks: {task}: {family} model, headline score {headline}")
        return family, tokens, headline

    def documents(self) -> list[dict[str, Any]]:
        return [question.to_doc() for question in load_winowhy()]

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> list[int]:
        return list(doc["labels"])

    def doc_requests(self, doc: dict) -> list[Request]:
        return [reason_request(self.family, doc["context"], r, self.tokens) for r in doc["reasons"]]

    def construct_requests(self, doc: dict, ctx: str, **kwargs: object) -> list[Any]:
        """The requests, their per-token counts encoded now (kept with lm-eval's request cache
        beside them, so that a run reading the requests back encodes nothing either)."""
        continuation = families.get(self.family).continuation
        for request in self.doc_requests(doc):
            continuation.count(request, self.tokens)
        return super().construct_requests(doc, ctx, **kwargs)

    def document_values(self, doc: dict, results: list[Any]) -> dict[str, ReasonOutcome]:
        requests = self.doc_requests(doc)
        if len(results) != len(requests):
            raise RuntimeError(
                f"task {self.config.task}: {len(results)} results for {len(requests)} reasons"
            )
        per_reason = [
            reason_scores(self.family, req, res, self.tokens, reason)
            for req, res, reason in zip(requests, results, doc["reasons"], strict=True)
        ]
        value: ReasonOutcome = {
            "scores": {s: [r[s] for r in per_reason] for s in self.scores},
            "labels": [int(y) for y in doc["labels"]],
            "categories": list(doc["categories"]),
        }
        return {name: value for name in self._aggregations}

    def all_aggregations(self) -> dict[str, Any]:
        return self._aggregations

    def why_undefined(self, metric: str, items: Sequence[Any]) -> str:
        """A category's metrics on no question of it, or a ROC-AUC with reasons of one label."""
        key = Key.parse(metric)
        category = key.category if key is not None else ""
        chosen = [i for i in items if not category or category in i["categories"]]
        where = f" of knowledge category {category}" if category else ""
        labels = {y for i in chosen for y in i["labels"]}
        if not chosen:
            return f"no question{where}"
        if len(labels) == 1:
            return f"no {'negative' if labels == {1} else 'positive'} reason{where}"
        return super().why_undefined(metric, items)
