"""A correction to lm-eval's HF log-likelihood cache that this package's tasks depend on.

lm-eval's ``HFLM`` (``logits_cache=True``, its default) computes one forward pass for all requests
whose ``context + continuation[:-1]`` tokens are equal, then scores each with the logits of the
longest continuation. It gathers a shorter continuation's tokens from the *first* positions of those
logits instead of the last, so such a request gets a wrong log-likelihood. The same sentence split
at two places is exactly what partial scoring of a problem and of its inversion send
(``wsc266`` and ``wsc266_inverted`` fill the same sentence): without the correction, scores in a
run depend on which other tasks share it. The correction trims each cache hit's logits to its own
continuation, which is a no-op for every request that was already scored correctly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(f"lm_eval.{__name__}")

_MARK = "_wsc_tasks_trailing_slice"


def apply() -> bool:
    """Patch ``Collator.get_cache`` once per process; True if it was patched now."""
    from lm_eval.models.utils import Collator

    original = Collator.get_cache
    if getattr(original, _MARK, False):
        return False

    def get_cache(self: Any, *args: Any, **kwargs: Any) -> Iterator[tuple[Any, Any, Any]]:
        for request_str, cont_toks, logits in original(self, *args, **kwargs):
            # logits: [1, positions of the longest continuation, vocab]; keep this request's own
            yield request_str, cont_toks, logits[:, -len(cont_toks) :, :]

    setattr(get_cache, _MARK, True)
    get_cache.__doc__ = original.__doc__
    Collator.get_cache = get_cache  # type: ignore[method-assign]
    log.debug("wsc_tasks: lm-eval Collator.get_cache now slices each cache hit to its continuation")
    return True
