"""Which models the package's faster routes may score, and which answer through their own
``loglikelihood``, as lm-eval's evaluator calls it.

The shared-prefix route (``tries``) and the remembered encodings (``encoding``) stand in for
parts of lm-eval's ``HFLM``: its ``_loglikelihood_tokens`` (and with it ``_model_call`` and
``_select_cont_toks``) and the tokenizer calls behind ``tok_encode``. They give lm-eval's own
answers only where those parts are lm-eval's own. A subclass that overrides one of them (lm-eval's
``SteeredModel`` adds its steering in ``_model_call``; research code changes a score in
``_loglikelihood_tokens`` or the tokens in ``tok_encode``) would be bypassed by them, so such a
model answers through its own methods, and the run says so once. Any other model (an ``LM``
written to lm-eval's model guide, an API model, ``dummy``) is called as lm-eval's evaluator calls
it: ``loglikelihood(requests)``, with no other argument.
"""

from __future__ import annotations

import inspect
import logging

log = logging.getLogger(f"lm_eval.{__name__}")

# HFLM's methods that the faster routes stand in for, or call on their own terms
STOOD_IN_FOR = (
    "loglikelihood",
    "_encode_pair",
    "tok_encode",
    "_loglikelihood_tokens",
    "_model_call",
    "_select_cont_toks",
)

_SAID: set[str] = set()  # classes whose route was logged in this process


def overridden(lm: object) -> list[str]:
    """The methods of ``STOOD_IN_FOR`` that ``lm``'s class defines otherwise than lm-eval's
    ``HFLM`` (empty for ``HFLM`` itself and for subclasses that keep them)."""
    from lm_eval.models.huggingface import HFLM

    return [
        name
        for name in STOOD_IN_FOR
        if inspect.getattr_static(type(lm), name, None) is not inspect.getattr_static(HFLM, name)
    ]


def hf_own(lm: object) -> bool:
    """Whether ``lm`` is lm-eval's Hugging Face causal model with every method the faster routes
    stand in for its own: those routes give it lm-eval's answers."""
    from lm_eval.models.huggingface import HFLM

    causal = isinstance(lm, HFLM) and getattr(lm, "backend", None) == "causal"
    return causal and not overridden(lm)


def say_own_route(lm: object) -> None:
    """One line per class: why its requests go through its own methods."""
    name = type(lm).__name__
    if name in _SAID:
        return
    _SAID.add(name)
    from lm_eval.models.huggingface import HFLM

    if isinstance(lm, HFLM) and overridden(lm):
        why = f"{name} defines its own {', '.join(overridden(lm))}"
    else:
        why = f"{name} is not HFLM" if not isinstance(lm, HFLM) else f"{name} is not causal"
    log.info(
        f"wsc_tasks: {why}: its requests go through its own loglikelihood, not the shared-prefix "
        "route (which stands in for lm-eval's HFLM methods)"
    )
