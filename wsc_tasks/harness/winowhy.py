"""WinoWhy (Zhang et al. 2020 §3–5): does the model know *why* a WSC answer is right?

Each of the 273 WSC273 questions comes with 15 candidate reasons for its correct answer, each
rated by five annotators. The task keeps the clearly plausible (plausibility ≥ 0.8, positive,
1,270) and clearly implausible ones (≤ 0.2, negative, 1,595): 2,865 reasons; the 1,230
"acceptable" ones in between are left out, as in the paper (§3.4), and counted in the log.

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
``pretrained`` or ``tokenizer`` in the metadata) for causal and seq2seq models; without one the
headline is the mean per UTF-8 byte of the reason (``per_byte``), which needs no tokenizer and is
comparable across tokenizers. The summed score (``sum``) is reported too, for comparison.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np
from lm_eval.api.instance import Instance
from lm_eval.api.task import ConfigurableTask

from wsc_tasks.data import sources
from wsc_tasks.data.knowledge import CATEGORIES, wsc273_categories
from wsc_tasks.harness import flags, patches
from wsc_tasks.harness.task import metric_choice, request_task_config, select_metrics
from wsc_tasks.metrics import registry, stats
from wsc_tasks.metrics.plausibility import (
    ReasonSet,
    accuracy_at,
    best_threshold,
    group_ranking_accuracy,
    majority_baseline,
    roc_auc,
)
from wsc_tasks.metrics.registry import Key, TaskKind
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import ScoringError
from wsc_tasks.scoring.tokens import TokenCounter

patches.apply()

log = logging.getLogger(f"lm_eval.{__name__}")

WINOWHY = "winowhy/winowhy.json"
POSITIVE, NEGATIVE = 0.8, 0.2  # plausibility thresholds of the paper (§3.4)
EXPECTED = (1270, 1595)
SCORES = ("mean", "per_byte", "sum")
_ARTICLES = {"The", "A", "An"}


@dataclass(frozen=True)
class Reason:
    text: str
    label: int  # 1 positive, 0 negative
    plausibility: float
    source: str  # human, reverse (a reason given for the twin question) or gpt (GPT-2)


@dataclass(frozen=True)
class WhyQuestion:
    number: int  # WSC273 problem number
    context: str  # question, answer, "because"
    reasons: tuple[Reason, ...]


def _clean(text: str) -> str:
    return " ".join(text.split())


def question_context(before: str, pronoun: str, after: str, answer: str) -> str:
    """The text a reason continues: the sentence, "The 'pronoun' refers to answer because"."""
    before, pronoun, after, answer = (_clean(t) for t in (before, pronoun, after, answer))
    joiner = "" if after[:1] in ".,;:!?'" else " "
    sentence = f"{before} {pronoun}{joiner}{after}" if before else f"{pronoun}{joiner}{after}"
    head, _, rest = answer.partition(" ")
    if head in _ARTICLES and rest:
        answer = f"{head.lower()} {rest}"
    return f"{sentence} The '{pronoun}' refers to {answer} because"


def parse_winowhy(path: str | Path) -> tuple[list[WhyQuestion], Counter[str]]:
    """The questions with their kept reasons, and how many reasons were left out, by why."""
    path = Path(path)
    try:
        rows = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from error
    questions, left_out = [], Counter()
    for index, row in enumerate(rows):
        where = f"{path}: question {index + 1}"
        try:
            text, answers = row["text"], row["answers"]
            correct = "AB".index(row["correctAnswer"].strip().rstrip(".").upper())
            context = question_context(text["txt1"], text["pron"], text["txt2"], answers[correct])
            raw_reasons = row["reasons"]
        except (KeyError, TypeError, ValueError, IndexError, AttributeError) as error:
            raise ValueError(f"{where}: malformed question ({error!r})") from error
        reasons = []
        for k, item in enumerate(raw_reasons):
            if not (isinstance(item, list) and len(item) == 4 and isinstance(item[2], int | float)):
                raise ValueError(f"{where}, reason {k + 1}: expected [text, source, score, label]")
            reason, source, plausibility = _clean(str(item[0])), str(item[1]), float(item[2])
            if not reason:
                raise ValueError(f"{where}, reason {k + 1}: empty reason")
            if plausibility >= POSITIVE or plausibility <= NEGATIVE:
                label = int(plausibility >= POSITIVE)
                reasons.append(Reason(reason, label, plausibility, source))
            else:
                left_out[f"acceptable (plausibility {plausibility:.1f})"] += 1
        if reasons:
            questions.append(WhyQuestion(index + 1, context, tuple(reasons)))
        else:
            left_out["question without a kept reason"] += 1
    return questions, left_out


def load_winowhy() -> list[WhyQuestion]:
    """The pinned WinoWhy questions, size-checked against the paper (1,270 + 1,595)."""
    path = sources.resolve(WINOWHY)
    questions, left_out = parse_winowhy(path)
    labels = [r.label for q in questions for r in q.reasons]
    counts = (sum(labels), len(labels) - sum(labels))
    for why, n in sorted(left_out.items()):
        log.info(f"wsc_tasks: winowhy: left out {n} reason(s): {why}")
    if counts != EXPECTED:
        raise ValueError(
            f"{path}: {counts[0]} positive and {counts[1]} negative reasons, expected "
            f"{EXPECTED[0]} and {EXPECTED[1]} (Zhang et al. 2020 §3.4). Is it the pinned file?"
        )
    log.info(
        f"wsc_tasks: winowhy: {len(questions)} questions, {len(labels)} reasons "
        f"({counts[0]} positive, {counts[1]} negative)"
    )
    return questions


def to_doc(question: WhyQuestion) -> dict[str, Any]:
    return {
        "number": question.number,
        "context": question.context,
        "reasons": [r.text for r in question.reasons],
        "labels": [r.label for r in question.reasons],
        "plausibility": [r.plausibility for r in question.reasons],
        "sources": [r.source for r in question.reasons],
        "categories": list(wsc273_categories(question.number)),
    }


# -- requests and scores per model family --------------------------------------------------------


def reason_request(
    family: str, context: str, reason: str, tokens: TokenCounter | None = None
) -> tuple[str, tuple[Any, ...]]:
    """The lm-eval request whose result scores ``reason`` after ``context`` (the family's
    ``continuation``, ``wsc_tasks.scoring.families``)."""
    return families.get(family).continuation.request(context, reason, tokens)


def reason_scores(
    family: str, request: tuple[str, tuple[Any, ...]], result: Any, tokens: TokenCounter | None,
    reason: str,
) -> dict[str, float]:  # fmt: skip
    """``sum``, ``per_byte`` (of the reason) and, when tokens can be counted, ``mean`` per token.

    The per-token count is what the model predicted: causal, the continuation's tokens as lm-eval
    splits them; seq2seq, the target's (reason and its two sentinels); masked, the reason's.
    """
    total, n = families.get(family).continuation.total(request, result, tokens)
    scores = {"sum": total, "per_byte": total / max(len(reason.encode("utf-8")), 1)}
    if n:
        scores["mean"] = total / n
    return scores


# -- aggregations: each gets the per-document values of every question ---------------------------

ReasonOutcome = dict[str, Any]  # {"scores": {score: [...]}, "labels": [...], "categories": [...]}


def _flat(items: Sequence[ReasonOutcome], score: str, category: str | None = None):
    chosen = [i for i in items if category is None or category in i["categories"]]
    scores = [s for i in chosen for s in i["scores"][score]]
    labels = [y for i in chosen for y in i["labels"]]
    return scores, labels


def _reason_set(items: Sequence[ReasonOutcome], score: str, category: str | None = None):
    """Every question's reasons; a question outside ``category`` keeps its place, with none."""
    return ReasonSet(
        [
            (i["scores"][score], i["labels"]) if category is None or category in i["categories"]
            else ((), ())
            for i in items
        ]
    )  # fmt: skip


Replicates = Callable[[Sequence[ReasonOutcome], np.ndarray], np.ndarray]


def _with_replicates(function: Callable, replicates: Replicates) -> Callable:
    """``function`` with the vectorised bootstrap ``stats.replicates`` uses (same values):
    ``replicates(items, counts)``, counts = how often each question is in each resample."""
    function.replicates = lambda items, indexes: replicates(  # type: ignore[attr-defined]
        items, stats.resample_counts(indexes, len(items))
    )
    return function


def make_aggregations(
    headline: str, scores: Sequence[str] = SCORES
) -> dict[str, Callable[[Sequence[ReasonOutcome]], float]]:
    """Metric name -> aggregation over the per-question outcomes (see docs for definitions)."""

    def threshold_acc(score: str) -> Callable[[Sequence[ReasonOutcome]], float]:
        return _with_replicates(
            lambda items: best_threshold(*_flat(items, score))[0],
            lambda items, c: _reason_set(items, score).best_threshold(c)[0],
        )

    def auc(score: str, category: str | None = None):
        return _with_replicates(
            lambda items: roc_auc(*_flat(items, score, category)),
            lambda items, c: _reason_set(items, score, category).roc_auc(c),
        )

    def group(score: str):
        def replicates(items: Sequence[ReasonOutcome], c: np.ndarray) -> np.ndarray:
            solved, counted = _reason_set(items, score).group_ranking_parts()
            totals = c @ counted
            with np.errstate(invalid="ignore", divide="ignore"):
                return np.where(totals > 0, (c @ solved) / totals, np.nan)

        return _with_replicates(
            lambda items: group_ranking_accuracy(
                [(i["scores"][score], i["labels"]) for i in items]
            ),
            replicates,
        )

    def category_acc(category: str):
        def aggregate(items: Sequence[ReasonOutcome]) -> float:
            threshold = best_threshold(*_flat(items, headline))[1]  # the overall best threshold
            return accuracy_at(*_flat(items, headline, category), threshold)

        def replicates(items: Sequence[ReasonOutcome], c: np.ndarray) -> np.ndarray:
            thresholds = _reason_set(items, headline).best_threshold(c)[1]
            return _reason_set(items, headline, category).accuracy_at(c, thresholds)

        return _with_replicates(aggregate, replicates)

    def count(category: str | None = None):
        def replicates(items: Sequence[ReasonOutcome], c: np.ndarray) -> np.ndarray:
            reasons = _reason_set(items, headline, category)
            return c @ reasons.per_question(np.ones_like(reasons.labels))

        return _with_replicates(lambda items: len(_flat(items, headline, category)[1]), replicates)

    def n_positive(items: Sequence[ReasonOutcome], c: np.ndarray) -> np.ndarray:
        reasons = _reason_set(items, headline)
        return c @ reasons.per_question(reasons.labels)

    functions: dict[str, Callable[[Sequence[ReasonOutcome]], float]] = {
        "acc_best_threshold": threshold_acc(headline),
        "roc_auc": auc(headline),
        "question_group_acc": group(headline),
        "best_threshold": _with_replicates(
            lambda items: best_threshold(*_flat(items, headline))[1],
            lambda items, c: _reason_set(items, headline).best_threshold(c)[1],
        ),
        "majority_baseline": _with_replicates(
            lambda items: majority_baseline(_flat(items, headline)[1]),
            lambda items, c: _reason_set(items, headline).majority_baseline(c),
        ),
        "n_reasons": count(),
        "n_positive": _with_replicates(lambda items: sum(_flat(items, headline)[1]), n_positive),
        "n_questions": len,
    }
    keys = {Key(name): function for name, function in functions.items()}
    for score in scores:
        keys[Key("acc_best_threshold", score=score)] = threshold_acc(score)
        keys[Key("roc_auc", score=score)] = auc(score)
        keys[Key("question_group_acc", score=score)] = group(score)
    for category in CATEGORIES:
        keys[Key("acc_best_threshold", category=category)] = category_acc(category)
        keys[Key("roc_auc", category=category)] = auc(headline, category)
        keys[Key("n_reasons", category=category)] = count(category)
    return {key.name: registry.bind(key, f) for key, f in keys.items()}


# printed by default; ``--metadata '{"metrics": "all"}'`` for the rest
HEADLINE_METRICS = registry.headline(TaskKind.WINOWHY)


class WinoWhyTask(flags.RefusesUnmeasuredFlags, ConfigurableTask):
    """One document per WSC273 question with its kept reasons; see the module docstring.

    Metadata: ``reason_score`` — the score behind the unsuffixed metrics: ``mean`` (default when
    tokens can be counted), ``per_byte`` (default otherwise) or ``sum`` (a key of its own, not
    ``headline``, so that one ``--metadata`` can serve schema tasks in the same run);
    ``tokenizer`` and ``metrics`` — as for ``SchemaTask``.
    """

    VERSION = 1.0

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = request_task_config(config)
        metric_choice(str(config.get("task")), config.get("metadata") or {})
        super().__init__(config=config, **kwargs)
        self.family, self.tokens, self.headline = self._plan()
        counted = families.get(self.family).model_counts_tokens or self.tokens is not None
        self.scores = SCORES if counted else tuple(s for s in SCORES if s != "mean")
        self._aggregations = make_aggregations(self.headline, self.scores)

    def _plan(self) -> tuple[str, TokenCounter | None, str]:
        """Family and tokenizer (``families.plan``) and the headline score."""
        task, meta = self.config.task, self.config.metadata or {}
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
        if not has_counts:
            log.warning(
                f"wsc_tasks: {task}: no tokenizer in the task metadata: headline score is the "
                "mean log-likelihood per byte of the reason, and no *_mean metrics"
            )
        self.config.metadata = {**meta, "reason_score": headline}
        log.info(f"wsc_tasks: {task}: {family} model, headline score {headline}")
        return family, tokens, headline

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        docs = [to_doc(q) for q in load_winowhy()]
        self.dataset = datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})

    def doc_to_text(self, doc: dict, doc_to_text: Any = None) -> str:
        return ""

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> list[int]:
        return list(doc["labels"])

    def fewshot_context(self, doc: dict, num_fewshot: int = 0, **kwargs: Any) -> str:
        if num_fewshot:
            raise ValueError(f"task {self.config.task}: zero-shot only; run with --num_fewshot 0")
        return ""

    def _requests(self, doc: dict) -> list[tuple[str, tuple[Any, ...]]]:
        return [reason_request(self.family, doc["context"], r, self.tokens) for r in doc["reasons"]]

    def construct_requests(self, doc: dict, ctx: str, **kwargs: Any) -> list[Instance]:
        kwargs.pop("apply_chat_template", None)
        kwargs.pop("chat_template", None)
        return [
            Instance(request_type=kind, doc=doc, arguments=arguments, idx=i, **kwargs)
            for i, (kind, arguments) in enumerate(self._requests(doc))
        ]

    def process_results(self, doc: dict, results: list[Any]) -> dict[str, ReasonOutcome]:
        requests = self._requests(doc)
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

    def aggregation(self) -> dict[str, Any]:
        meta = self.config.metadata or {}
        return select_metrics(self.config.task, meta, self._aggregations, HEADLINE_METRICS)

    def higher_is_better(self) -> dict[str, bool]:
        return registry.higher_is_better(self.aggregation())
