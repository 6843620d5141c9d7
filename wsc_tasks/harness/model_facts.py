"""What a task learns from the model lm-eval evaluates: the tokenizer to count tokens with and the
model's family, so that every entry point gives a model the same methods and headline.

lm-eval's CLI merges ``--model_args`` into every task's metadata, which is where a task built
before the model finds its tokenizer (``pretrained=``, ``tokenizer=``). From Python it does not
when a ``TaskManager`` is given (``simple_evaluate(model="hf", model_args=...,
task_manager=TaskManager(include_path=...))``, lm-eval's documented way to run external tasks),
nor in ``evaluate(lm, task_dict)``: there the model object is the only source. A task whose
metadata names no tokenizer therefore plans provisionally and settles its plan when lm-eval hands
it the model (``conventions.TaskConventions.meet_model``, called by ``patches`` before any request
is built):

- lm-eval's ``hf`` (and this package's ``hf-mlm``): the model's own tokenizer, its
  ``add_bos_token`` and its transformers config (the family);
- an API model (``local-completions``…) with ``tokenizer_backend=huggingface``: its tokenizer,
  encoded without special tokens unless ``add_bos_token``, as lm-eval sends it;
- ``wsc-chance``: the tokenizer its model arguments name; without one it is token-free by design,
  and the tasks run their family's token-free method with a note saying so;
- any other model without a Hugging Face tokenizer: the run stops with one line saying what to
  pass (``metadata={"tokenizer": ...}``); never a silent fallback to fewer methods.
"""

from __future__ import annotations

from typing import TypeGuard

from wsc_tasks.scoring import families
from wsc_tasks.scoring.families import ModelFacts
from wsc_tasks.scoring.methods import ScoringError
from wsc_tasks.scoring.tokens import TokenCounter, Tokenizer, named_tokenizer

PASS_TOKENIZER = (
    'pass the tokenizer as task metadata: --metadata \'{"tokenizer": "<name or path>"}\', or '
    'from Python TaskManager(include_path=..., metadata={"tokenizer": "<name or path>"})'
)


def unwrapped(lm: object) -> object:
    """The model behind lm-eval's request cache (``--use_cache`` wraps it in a ``CachingLM``)."""
    from lm_eval.api.model import CachingLM

    while isinstance(lm, CachingLM):
        lm = lm.lm
    return lm


def _is_hf_tokenizer(tokenizer: object) -> TypeGuard[Tokenizer]:
    from transformers import PreTrainedTokenizerBase

    return isinstance(tokenizer, PreTrainedTokenizerBase)


def _counter(
    lm: object, tokenizer: Tokenizer, add_bos: object, family: families.Family
) -> TokenCounter:
    """One counter per model object, shared by all its tasks (their encodings are memoised);
    lm-eval encodes an encoder–decoder's contexts alone."""
    key = "_wsc_tasks_token_counter"
    found = vars(lm).get(key)
    if not isinstance(found, TokenCounter) or found.tokenizer is not tokenizer:
        add_special = None if add_bos is None else bool(add_bos)
        found = TokenCounter(tokenizer, add_special, family.context_alone)
        setattr(lm, key, found)
    return found


def facts_of(lm: object, task: str) -> ModelFacts:
    """The tokenizer and family of the model lm-eval evaluates; see the module docstring."""
    model = unwrapped(lm)
    name = getattr(model, "LABEL", type(model).__name__)
    described = getattr(model, "tokenizer_metadata", None)  # wsc-chance: what its arguments name
    if isinstance(described, dict):
        family = families.detect(described)
        if named_tokenizer(described) is None:
            why = (
                f"{name} was given no tokenizer (add tokenizer=<name or path> to its model "
                "arguments for every scoring method)"
            )
            return ModelFacts(None, family, why)
        tokens = families.load_tokens(task, described, family)
        return ModelFacts(tokens, family, named=dict(described))
    tokenizer = getattr(model, "tokenizer", None)
    if _is_hf_tokenizer(tokenizer):
        config = getattr(model, "config", None)
        if config is None:  # hf-mlm keeps its transformers model as ``model``
            config = getattr(getattr(model, "model", None), "config", None)
        family = families.family_of_config(config)
        add_bos = getattr(model, "add_bos_token", None)
        path = getattr(tokenizer, "name_or_path", None)
        named: dict[str, object] = {"tokenizer": path} if path else {}
        if add_bos is not None:
            named["add_bos_token"] = add_bos
        return ModelFacts(_counter(model, tokenizer, add_bos, family), family, named=named)
    raise ScoringError(
        f"task {task}: the model ({name}) has no Hugging Face tokenizer to count tokens with, "
        f"and the task metadata names none; {PASS_TOKENIZER}"
    )
