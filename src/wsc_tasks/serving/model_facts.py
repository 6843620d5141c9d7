"""What the model lm-eval evaluates says about the tokens and family this package's requests need.

The tasks plan their requests from their metadata, as lm-eval's tokenizer-dependent tasks do:
lm-eval's CLI merges ``--model_args`` into every task's metadata (``pretrained=``, ``tokenizer=``),
and from Python ``TaskManager(include_path=..., metadata={"pretrained": ...})`` does the same.
Before the requests reach the model, each task checks it against that plan
(``tasks.conventions.TaskConventions.meet_model``) with what is read here:

- lm-eval's ``hf`` (and this package's ``hf-mlm``): the model's own tokenizer, its
  ``add_bos_token`` and its transformers config (the family);
- an API model (``local-completions``…) with ``tokenizer_backend=huggingface``: its tokenizer;
- ``wsc-chance``: the tokenizer its model arguments name (``tokenizer_metadata``); without one it
  counts no tokens by design, and the tasks run their family's token-free method with a note;
- any other model: nothing; the plan's tokenizer, if the metadata names one, is taken as given.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TypeGuard

from wsc_tasks.scoring import families
from wsc_tasks.scoring.tokens import Tokenizer, named_tokenizer

log = logging.getLogger(f"lm_eval.{__name__}")

PASS_TOKENIZER = (
    "pass the model's tokenizer as task metadata, as lm-eval's CLI does from --model_args: "
    'from Python TaskManager(include_path=..., metadata={"pretrained": "<name or path>"}) '
    '(or {"tokenizer": ...}); on the command line --metadata \'{"tokenizer": "<name or path>"}\''
)


@dataclass(frozen=True)
class ModelSide:
    """What the model says: its name, the tokenizer it encodes with (None: none known), its
    family (None: not known), and whether it counts no tokens by design (``wsc-chance`` without
    a tokenizer)."""

    label: str
    tokenizer: Tokenizer | None = None
    add_bos_token: bool | None = None
    family: families.Family | None = None
    token_free: bool = False
    why: str = ""  # why it has no tokenizer, for the run's notes
    named: str | None = None  # the tokenizer its arguments name (``wsc-chance``), not loaded

    @property
    def counts_tokens(self) -> bool:
        """It has a tokenizer, or its arguments name one."""
        return self.tokenizer is not None or self.named is not None


def unwrapped(lm: object) -> object:
    """The model behind lm-eval's request cache (``--use_cache`` wraps it in a ``CachingLM``)."""
    from lm_eval.api.model import CachingLM

    while isinstance(lm, CachingLM):
        lm = lm.lm
    return lm


def _is_hf_tokenizer(tokenizer: object) -> TypeGuard[Tokenizer]:
    from transformers import PreTrainedTokenizerBase

    return isinstance(tokenizer, PreTrainedTokenizerBase)


def side_of(lm: object) -> ModelSide:
    """What ``lm`` says; see the module docstring."""
    model = unwrapped(lm)
    label = str(getattr(model, "LABEL", type(model).__name__))
    described = getattr(model, "tokenizer_metadata", None)  # wsc-chance: what its arguments name
    if isinstance(described, dict):
        if named_tokenizer(described) is None:
            why = (
                f"{label} was given no tokenizer (add tokenizer=<name or path> to its model "
                "arguments for every scoring method)"
            )
            return ModelSide(label, token_free=True, why=why)
        return ModelSide(label, named=named_tokenizer(described))
    try:
        tokenizer = getattr(model, "tokenizer", None)
    except Exception as error:  # a property that loads one and fails (lm-eval's dummy, offline)
        log.info(
            f"wsc_tasks: {label}'s tokenizer could not be read ({type(error).__name__}: "
            f"{str(error)[:200]}); the tokenizer the task metadata names is taken as given"
        )
        tokenizer = None
    if not _is_hf_tokenizer(tokenizer):
        return ModelSide(label)
    config = getattr(model, "config", None)
    if config is None:  # hf-mlm keeps its transformers model as ``model``
        config = getattr(getattr(model, "model", None), "config", None)
    family = families.family_of_config(config) if config is not None else None
    add_bos = getattr(model, "add_bos_token", None)
    return ModelSide(label, tokenizer, None if add_bos is None else bool(add_bos), family)
