"""Has the model seen the test? The sharded exchangeability test of Oren et al. (ICLR 2024) on a
published dataset, as an lm-eval task.

One lm-eval document is one shard of the dataset in its published order
(``wsc_tasks.data.canonical``: contiguous runs of schemas, one problem a line); its requests are
``loglikelihood_rolling`` of the shard as published and of ``permutations`` seeded shuffles of its
schemas. lm-eval's rolling log-likelihood scores every token of a text (the first after the
model's prefix token, windows of the model's length), so the shard's orders are scored on the same
tokens and differ only by order. The metrics (``wsc_tasks.metrics.contamination``) are the
one-sided p-value of the published order being more likely than shuffles (a t-test across
shards, the paper's sharded test; why a t-test is in that module), the effect in nats per token
with its 95% interval, and the shard and token-position counts.

Metadata: ``shards`` (contiguous runs of schemas; each needs two), ``permutations`` (shuffles per
shard), ``shuffle_seed`` (the orders; a shard's orders depend on the seed and its index only, so a
``--limit`` run scores the full run's first shards), ``dataset`` (a published one). The per-token
count is the model's tokenizer's (from the metadata or the model, as every task here); without one
(a served model named by no tokenizer) the effect is per UTF-8 byte and the run's notes say so.

Cost: each shard is scored 1 + ``permutations`` times, so the check sends (1 + permutations) times
the dataset's tokens (``n_positions`` in the results; ``task_configs/README.md`` gives them for
SmolLM2's tokenizer). The model must answer ``loglikelihood_rolling``: causal models (``hf``,
GGUF, served completions); masked and encoder–decoder models have no likelihood of a whole text
here and the task stops with one line saying so.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from wsc_tasks.data import canonical
from wsc_tasks.metrics import registry
from wsc_tasks.metrics.contamination import ShardOutcome
from wsc_tasks.metrics.registry import Key, TaskKind
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import Request, ScoringError
from wsc_tasks.scoring.tokens import TokenCounter, counter_from_metadata
from wsc_tasks.tasks import notes
from wsc_tasks.tasks.request_task import RequestTask

log = logging.getLogger(f"lm_eval.{__name__}")

DEFAULTS = {"permutations": 10, "shuffle_seed": 1234}
PER_BYTE = (
    "contamination effect per UTF-8 byte, not per token: no tokenizer to count tokens with "
    '({why}); pass --metadata \'{{"tokenizer": "<name or path>"}}\' for a per-token effect'
)


def _positive_int(task: str, meta: dict[str, Any], key: str) -> int:
    value = meta.get(key, DEFAULTS.get(key))
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(
            f"task {task}: metadata {key}={value!r}; give a positive integer "
            f"(--metadata '{{\"{key}\": 10}}')"
        )
    return value


class ContaminationTask(RequestTask):
    """The sharded exchangeability test on one published dataset; see the module docstring."""

    OUTPUT_TYPE = "loglikelihood_rolling"
    HEADLINE_METRICS = registry.headline(TaskKind.CONTAMINATION)

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        config = dict(config or {})
        config["output_type"] = "loglikelihood_rolling"
        super().__init__(config, **kwargs)
        self.tokens: TokenCounter | None = None
        self.why_no_tokens = ""
        self._settle()

    @classmethod
    def validate_metadata(cls, task: Any, meta: dict[str, Any]) -> None:
        super().validate_metadata(task, meta)
        name = meta.get("dataset")
        if name not in canonical.published():
            raise ValueError(
                f"task {task}: metadata dataset={name!r}; the contamination check runs on a "
                f"published dataset: {', '.join(canonical.published())}"
            )
        for key in ("shards", "permutations"):
            _positive_int(str(task), meta, key)
        seed = meta.get("shuffle_seed", DEFAULTS["shuffle_seed"])
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"task {task}: metadata shuffle_seed={seed!r}; give an integer")

    def _settle(self) -> None:
        """The tokenizer that counts a shard's tokens: the metadata's (per byte without one)."""
        family = families.detect(self._requested) if "pretrained" in self._requested else None
        if family is not None and family.name != "causal":
            raise ScoringError(self._not_causal(family.name))
        self.tokens = counter_from_metadata(self._requested)
        if self.tokens is None:
            self.why_no_tokens = "the metadata names no tokenizer"
            notes.add(self, PER_BYTE.format(why=self.why_no_tokens))
        task = str(self.config.task)
        log.info(f"wsc_tasks: {task}: effect per {'token' if self.tokens else 'byte'}")

    def _not_causal(self, family: str) -> str:
        return (
            f"task {self.config.task}: the contamination check needs the log-likelihood of a whole "
            f"text (loglikelihood_rolling), which a {family} model does not give; run it on "
            "causal models only"
        )

    # -- data -----------------------------------------------------------------------------------
    def documents(self) -> list[dict[str, Any]]:
        meta, task = self._meta, str(self.config.task)
        shards = canonical.shards(
            meta["dataset"],
            _positive_int(task, meta, "shards"),
            _positive_int(task, meta, "permutations"),
            int(meta.get("shuffle_seed", DEFAULTS["shuffle_seed"])),
        )
        log.info(
            f"wsc_tasks: {task}: {len(shards)} shards of {meta['dataset']} "
            f"({sum(len(s.units) for s in shards)} schemas), "
            f"{len(shards[0].orders)} shuffles each"
        )
        return [
            {"dataset": s.dataset, "shard": s.index, "schemas": len(s.units),
             "canonical": s.canonical, "shuffled": s.shuffled()}
            for s in shards
        ]  # fmt: skip

    def doc_to_target(self, doc: dict, doc_to_target: Any = None) -> str:
        return ""

    # -- requests -------------------------------------------------------------------------------
    def doc_requests(self, doc: dict) -> list[Request]:
        return [("loglikelihood_rolling", (text,)) for text in [doc["canonical"], *doc["shuffled"]]]

    def size(self, text: str) -> int:
        """A shard's tokens as the model's tokenizer splits it (bytes without one)."""
        if self.tokens is None:
            return len(text.encode("utf-8"))
        return len(self.tokens.encode(text, add_special_tokens=False))

    def document_values(self, doc: dict, results: list[Any]) -> dict[str, ShardOutcome]:
        expected = 1 + len(doc["shuffled"])
        if len(results) != expected:
            raise RuntimeError(
                f"task {self.config.task}: {len(results)} results for {expected} orders of "
                f"shard {doc['shard']}"
            )
        scores = [float(r[0] if isinstance(r, tuple | list) else r) for r in results]
        value: ShardOutcome = {
            "canonical": scores[0],
            "shuffled": scores[1:],
            "n": self.size(doc["canonical"]),
        }
        return {name: value for name in self.all_aggregations()}

    # -- metrics --------------------------------------------------------------------------------
    def all_aggregations(self) -> dict[str, Any]:
        return registry.aggregations(
            Key(m.name) for m in registry.REGISTRY if m.value == registry.SHARDS
        )

    def why_undefined(self, metric: str, items: Sequence[Any]) -> str:
        if len(items) < 2:
            return f"{len(items)} shard(s): the test compares at least 2"
        return super().why_undefined(metric, items)
