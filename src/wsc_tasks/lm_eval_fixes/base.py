"""The record every entry of ``lm_eval_fixes`` keeps, and what their checks run lm-eval's code on.

An entry is a behaviour of lm-eval this package must not inherit, and what it does about it:
``PATCH`` (lm-eval's code is changed when the package loads), or ``AVOIDED`` (no code of lm-eval
is changed: this package's own code, or how it calls lm-eval, keeps the behaviour away from its
results). Each names the lm-eval releases that behave so (``lm_eval``: every release supported,
``SUPPORTED``, unless it is an old release's), the upstream report where one exists, and its
check, ``still_needed``: lm-eval's own code, unchanged, on a small case of the behaviour, True
while lm-eval still behaves so. ``tests/test_lm_eval_fixes.py`` runs every check against the
installed release: the day one fails, lm-eval has fixed or changed it and the entry can
probably go.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING, Final, Literal

if TYPE_CHECKING:
    from lm_eval.models.huggingface import HFLM

PATCH: Final = "patch"
AVOIDED: Final = "avoided"
GITHUB = "https://github.com/EleutherAI/lm-evaluation-harness"
# the lm-eval releases this package supports and every entry was checked on (pyproject allows the
# same range)
SUPPORTED = ("0.4.10", "0.5")


@dataclass(frozen=True)
class Fix:
    """One lm-eval behaviour this package keeps from its results; see the module docstring."""

    name: str
    kind: Literal["patch", "avoided"]
    behaviour: str  # what lm-eval does, in a sentence
    remedy: str  # what this package does about it, in a sentence
    upstream: tuple[str, ...] = ()
    lm_eval: tuple[str, str] = SUPPORTED  # (first release that behaves so, first that does not)
    still_needed: Callable[[], bool] = field(kw_only=True)


def _version(text: str) -> tuple[int, ...]:
    """``0.4.9.2`` → (0, 4, 9, 2); a pre-release or local suffix is ignored."""
    return tuple(int(part) for part in re.findall(r"\d+", text.split("+")[0])[:4])


def installed_lm_eval() -> str:
    return metadata.version("lm_eval")


def within(installed: str, releases: tuple[str, str]) -> bool:
    """Whether release ``installed`` is among ``releases`` (first in, first out)."""
    low, below = releases
    return _version(low) <= _version(installed) < _version(below)


def bigram_hflm(vocab: int = 16, seed: int = 0) -> HFLM:
    """An lm-eval ``HFLM`` (causal, logits cache on, batches of 4, on the CPU) without weights or
    tokenizer: its logits at a position are a fixed random function of the token there, so each
    position of a sequence scores differently. Enough for lm-eval's ``_loglikelihood_tokens``."""
    import torch
    from lm_eval.api.model import CacheHook
    from lm_eval.models.huggingface import HFLM

    table = torch.randn(vocab, vocab, generator=torch.Generator().manual_seed(seed))

    class Bigram(HFLM):
        backend = "causal"
        logits_cache = True
        batch_size = 4
        max_length = 64
        device = torch.device("cpu")
        rank = 0
        softmax_dtype = torch.float32

        def __init__(self) -> None:  # no weights, no tokenizer: none of HFLM's loading
            self.cache_hook = CacheHook(None)

        def _model_call(self, inps: torch.Tensor, *args: object, **kwargs: object) -> torch.Tensor:
            return table[inps]

    return Bigram()
