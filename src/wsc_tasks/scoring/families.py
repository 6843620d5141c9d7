"""Model families: one record per family, and the one planner every task builds requests with.

A family (causal, seq2seq, masked) says how a model is recognised from its transformers config, the
scoring methods it serves (each family's module: ``causal``, ``seq2seq``, ``masked``), its headline
and token-free methods, the method pairs whose consistency is reported, how it scores a free
continuation (WinoWhy), and which lm-eval model serves its requests. ``plan`` reads the registry
for every task (``SchemaTask`` and its subclasses, WinoWhy), so a new family is one ``Family``
record plus a module of its methods.

Which model *serves* the requests is checked where lm-eval hands them to it, not when a task is
built: lm-eval may build the tasks before the model or after it, but it always calls the model's
method named by the request type. A family whose request type is no method of lm-eval's ``LM``
(masked: ``mlm_score``) gets a refusing default on ``LM`` (section 9 of
``wsc_tasks.lm_eval_fixes``), so a masked LM given to ``--model hf`` (or ``wsc-chance``) stops
with the command to use instead, before any forward pass, while ``hf-mlm`` overrides it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol

from wsc_tasks.scoring import causal, causal_methods, masked, seq2seq
from wsc_tasks.scoring.methods import (
    Continuation,
    RequestType,
    ScoringError,
    ScoringMethod,
    Setup,
)
from wsc_tasks.scoring.tokens import TokenCounter, counter_from_metadata, gguf_parsed_once

log = logging.getLogger(f"lm_eval.{__name__}")

MASKED_TYPES = {"bert", "roberta", "xlm-roberta", "albert", "deberta", "deberta-v2", "distilbert",
                "electra", "camembert", "mpnet", "modernbert"}  # fmt: skip


class ModelConfig(Protocol):
    """A transformers model config, as far as telling the family goes."""

    model_type: str


def _is_encoder_decoder(config: ModelConfig) -> bool:
    return bool(getattr(config, "is_encoder_decoder", False))


def _is_masked(config: ModelConfig) -> bool:
    architectures = " ".join(getattr(config, "architectures", None) or [])
    return config.model_type in MASKED_TYPES or "MaskedLM" in architectures


@dataclass(frozen=True)
class Family:
    """Everything the tasks need to know about a model family."""

    name: str
    # recognises the family from the model's transformers config; None: the family of every
    # model no other family claims (and of a run whose metadata names no model)
    detects: Callable[[ModelConfig], bool] | None
    methods: Mapping[str, ScoringMethod]
    headline: str  # behind ``acc``/``schema_acc`` unless ``metadata.headline`` says otherwise
    token_free: str  # the method that runs when no tokenizer is known
    # scoring-method consistency (thesis Tables 4.6, 4.10, 4.14): the second method of each pair
    # seen as a transformation of the first, ``<consistency metric>_<first>_to_<second>``
    method_pairs: tuple[tuple[str, str], ...]
    continuation: Continuation  # a free text after a context (WinoWhy's reasons)
    request_type: RequestType = "loglikelihood"  # what its methods send
    model: str = "hf"  # the lm-eval model (``--model``) that serves its requests
    model_counts_tokens: bool = False  # results carry their token counts: no tokenizer needed
    context_alone: bool = False  # lm-eval encodes the context on its own (encoder–decoder)
    shifted_splits: bool = False  # token-counting methods may split after the first tokens


# Thesis standard setup: causal smart at limit 1; T5 mean with prefix on Winograd data (§4.5.3);
# masked statement mean, the thesis's best for RoBERTa (Table 4.7). Detection in this order.
FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family(
            name="causal",
            detects=None,
            methods=causal_methods.METHODS,  # the thesis's and every registered one
            headline="smart",
            token_free="partial",
            method_pairs=(("full", "partial"), ("partial", "smart")),
            continuation=causal.CausalContinuation(),
            shifted_splits=True,
        ),
        Family(
            name="seq2seq",
            detects=_is_encoder_decoder,
            methods=seq2seq.METHODS,
            headline="masked_prefix_mean",
            token_free="masked_prefix_noeos",
            method_pairs=(("loss_prefix", "masked_prefix_mean"),),
            continuation=seq2seq.T5Continuation(),
            context_alone=True,
        ),
        Family(
            name="masked",
            detects=_is_masked,
            methods=masked.METHODS,
            headline="statement_mean",
            token_free="statement_mean",
            method_pairs=(("multi_mask_mean", "statement_mean"),),
            continuation=masked.MaskedContinuation(),
            request_type="mlm_score",
            model="hf-mlm",
            model_counts_tokens=True,
        ),
    )
}


def get(name: str) -> Family:
    if name not in FAMILIES:
        raise ScoringError(f"no model family {name!r}; known: {', '.join(FAMILIES)}")
    return FAMILIES[name]


def get_methods(names: Sequence[str], family: str = "causal") -> list[ScoringMethod]:
    available = FAMILIES[family].methods if family in FAMILIES else {}
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ScoringError(
            f"scoring method(s) {unknown} not available for {family} models; "
            f"available: {', '.join(available) or 'none'}"
        )
    return [available[n] for n in names]


def family_of_config(config: ModelConfig | None) -> Family:
    """The first family whose test recognises the config, else (or with no config) the default
    family."""
    for family in FAMILIES.values():
        if config is not None and family.detects is not None and family.detects(config):
            return family
    return next(f for f in FAMILIES.values() if f.detects is None)


@lru_cache(maxsize=8)
def _detect(
    pretrained: str, gguf_file: str | None, trust: bool, revision: str | None = None
) -> Family:
    from transformers import AutoConfig

    kwargs: dict[str, bool | str] = {"trust_remote_code": trust}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    if revision:  # the config of the revision that runs (a sweep's pinned commit), not main's
        kwargs["revision"] = revision
    with gguf_parsed_once():  # the tokenizer is read from the same file
        config = AutoConfig.from_pretrained(pretrained, **kwargs)
    return family_of_config(config)


def detect(metadata: Mapping[str, object]) -> Family:
    """The family of the model named in the metadata (lm-eval merges ``--model_args`` in); the
    default family (causal) when none is named."""
    pretrained = metadata.get("pretrained")
    if not isinstance(pretrained, str):
        return family_of_config(None)
    revision = metadata.get("revision")
    gguf_file = metadata.get("gguf_file")
    return _detect(
        pretrained,
        str(gguf_file) if gguf_file else None,
        bool(metadata.get("trust_remote_code", False)),
        str(revision) if revision else None,
    )


@dataclass(frozen=True)
class Plan:
    """What a task sends, settled before any model work."""

    family: Family
    setup: Setup
    methods: tuple[ScoringMethod, ...] = ()  # headline first; empty for continuation tasks
    method_pairs: tuple[tuple[str, str], ...] = ()

    @property
    def tokens(self) -> TokenCounter | None:
        return self.setup.tokens

    @property
    def headline(self) -> str | None:
        return self.methods[0].name if self.methods else None


def load_tokens(task: str, meta: Mapping[str, Any], family: Family) -> TokenCounter | None:
    """The counter of the tokenizer the metadata names; None if it names none."""
    try:
        # lm-eval encodes an encoder–decoder's context alone
        return counter_from_metadata(meta, seq2seq=family.context_alone)
    except Exception as error:  # noqa: BLE001 - any loading failure gets the same advice
        name = meta.get("tokenizer") or meta.get("pretrained")
        raise ScoringError(
            f"task {task}: could not load the tokenizer of {name!r} "
            f'to count tokens ({error}); pass --metadata \'{{"tokenizer": "<name or path>"}}\''
        ) from error


def _method_names(task: str, meta: Mapping[str, Any], family: Family, counted: bool) -> list[str]:
    """``metadata.scoring`` and ``headline`` as method names, the headline first and once."""
    requested = meta.get("scoring")
    if requested is None:  # each method's own default (``ScoringMethod.runs_on``)
        dataset = meta.get("dataset")
        names = [n for n, m in family.methods.items() if m.runs_by_default(dataset)]
        names = names if counted else [family.token_free]  # the run's notes say why
    elif requested == "all":
        names = list(family.methods) if counted else [family.token_free]
    elif isinstance(requested, str):
        names = [n.strip() for n in requested.split(",")]
    else:
        names = list(requested)
    headline = meta.get("headline")
    if isinstance(headline, dict):  # per family, e.g. {seq2seq: masked_mean} (thesis §4.5.4)
        headline = headline.get(family.name) if counted else None
    headline = headline or (family.headline if counted else family.token_free)
    return [headline, *(n for n in names if n != headline)]


def plan(task: str, meta: Mapping[str, Any], *, continuation: bool = False) -> Plan:
    """The family, tokens and methods of a task, from its metadata; errors name the task.

    Schema tasks get the methods of ``metadata.scoring`` (``all``: every method of the family;
    default: those that run on the task's dataset by default) with the headline first; a
    ``continuation`` task (WinoWhy) scores with the family's continuation and loads no
    tokenizer when the model counts tokens itself.
    """
    family = detect(meta)

    def tokens_of() -> TokenCounter | None:
        return load_tokens(task, meta, family)

    if continuation:
        tokens = None if family.model_counts_tokens else tokens_of()
        try:
            family.continuation.validate(tokens)
        except ScoringError as error:
            raise ScoringError(f"task {task}, {family.name} model: {error}") from error
        return Plan(family, Setup(tokens))
    tokens = tokens_of()
    names = _method_names(task, meta, family, tokens is not None)
    try:
        methods = get_methods(names, family.name)
        gpt2 = tokens is not None and causal.is_gpt2_tokenizer(tokens)
        setup = Setup(tokens, "webtext" if gpt2 else "bos", int(meta.get("smart_limit", 1)))
        for method in methods:
            method.validate(setup)
    except ScoringError as error:
        raise ScoringError(f"task {task}, {family.name} model: {error}") from error
    pairs = tuple(p for p in family.method_pairs if all(name in names for name in p))
    return Plan(family, setup, tuple(methods), pairs)
