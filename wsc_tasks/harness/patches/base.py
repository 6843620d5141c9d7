"""What every lm-eval patch of this package shares: its record (``Patch``: the lm-eval versions it
is for, the upstream report, the check that lm-eval still needs it), the replacement that keeps
lm-eval's original (``_replace``, ``original``), the test of a task being ours, and the stand-ins
those checks run lm-eval's own code on (``bigram_hflm``, ``records_of``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from lm_eval.models.huggingface import HFLM

from wsc_tasks.harness.lm_eval_types import AggregatingTask, Answer, Request

__all__ = ["AggregatingTask", "Answer", "Request"]  # for the patches

log = logging.getLogger("lm_eval.wsc_tasks.harness.patches")

_MARK = "_wsc_tasks_patch"
_ORIGINALS: dict[tuple[int, str], object] = {}


@dataclass(frozen=True)
class Patch:
    """What one section patches, for which lm-eval versions, where upstream discusses it, and
    the check that the installed lm-eval still behaves as the section says.

    ``still_needed`` runs lm-eval's own code, unpatched (``original``), on a small case of the
    behaviour the section changes, and returns True while lm-eval still behaves that way:
    ``tests/test_patch_checks.py`` runs it for every patch, and fails (asking for the patch to be
    dropped) the day lm-eval fixes or changes it."""

    name: str
    target: str  # the lm-eval attribute replaced (or the logger filtered)
    lm_eval: tuple[str, str]  # (lowest version checked, first version not allowed)
    upstream: tuple[str, ...] = ()
    still_needed: Callable[[], bool] = field(kw_only=True)


# lm-eval 0.4.13 is the release every section was written and tested against (the newest on PyPI
# when written); pyproject allows < 0.5, which is where internals may move.
TESTED = ("0.4.13", "0.5")
GITHUB = "https://github.com/EleutherAI/lm-evaluation-harness"


def is_our_task(task: object) -> bool:
    return type(task).__module__.startswith("wsc_tasks.")


def _replace(owner: object, name: str, new: Callable[..., object], mark: str = _MARK) -> bool:
    """Set ``owner.name = new`` unless already patched; keep the original for ``original``.

    A second section wrapping the same function passes its own ``mark`` (its wrapper copies the
    marks of what it wraps with ``functools.wraps``, so each section still applies once)."""
    current = getattr(owner, name)
    if getattr(current, mark, False):
        return False
    _ORIGINALS.setdefault((id(owner), name), current)
    setattr(new, mark, True)
    if getattr(current, "__doc__", None) and not getattr(new, "__doc__", None):
        new.__doc__ = current.__doc__
    setattr(owner, name, new)
    return True


def original(owner: object, name: str) -> Any:  # lm-eval's own function, whatever its signature
    """lm-eval's own ``owner.name``, as it was before this module patched it."""
    return _ORIGINALS.get((id(owner), name), getattr(owner, name))


# -- what the checks run lm-eval's code on -------------------------------------------------------
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


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def records_of(logger_name: str) -> Iterator[list[logging.LogRecord]]:
    """The records ``logger_name`` logs while the block runs, with this package's filters taken
    off it (lm-eval's own message, as it logs it); the filters are back when the block ends."""
    logger = logging.getLogger(logger_name)
    filters = list(logger.filters)
    handler = _Kept()
    records = handler.records
    logger.filters = []
    logger.addHandler(handler)
    try:
        yield records
    finally:
        logger.removeHandler(handler)
        logger.filters = filters
