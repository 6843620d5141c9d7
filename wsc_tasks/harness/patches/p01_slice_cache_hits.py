"""lm-eval patch 1, ``slice_cache_hits``: what it changes and why, then the change."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

from wsc_tasks.harness.patches.base import (
    GITHUB,
    TESTED,
    Patch,
    _replace,
    bigram_hflm,
    log,
    original,
)


# lm-eval's HFLM (``logits_cache=True``, its default) computes one forward pass for all requests
# whose ``context + continuation[:-1]`` tokens are equal, and the ``Collator`` hands each of them
# the logits of the longest continuation (the representative since PR #2987, which fixed the crash
# of issue #2984 and trims the greedy check to each continuation, ``greedy_tokens[:, -n:]``). The
# log-likelihood itself is still gathered from the *first* positions of those logits, so a shorter
# continuation gets a wrong value. The same sentence split at two places is exactly what partial
# scoring of a problem and of its inversion send (``wsc266`` and ``wsc266_inverted`` fill the same
# sentence): without the fix, scores in a run depend on which other tasks share it. The fix trims
# each cache hit's logits to its own continuation, a no-op for every request already scored right.
# Upstream, the one-line fix is the same trailing slice on the gather in
# ``HFLM._loglikelihood_tokens``.
def _slice_cache_hits() -> bool:
    from lm_eval.models.utils import Collator

    get_cache_original = Collator.get_cache

    def get_cache(
        self: object, *args: object, **kwargs: object
    ) -> Iterator[tuple[tuple[str, str], list[int], torch.Tensor]]:
        for request_str, cont_toks, logits in get_cache_original(self, *args, **kwargs):
            # logits: [1, positions of the longest continuation, vocab]; keep this request's own
            yield request_str, cont_toks, logits[:, -len(cont_toks) :, :]

    patched = _replace(Collator, "get_cache", get_cache)
    if patched:
        log.debug("wsc_tasks: lm-eval Collator.get_cache now slices each cache hit to its own")
    return patched


def lm_eval_scores_a_shorter_cache_hit_wrongly() -> bool:
    """lm-eval's own loop and ``get_cache`` (section 18 off): a request whose
    ``context + continuation[:-1]`` equals a longer one's scores otherwise beside it than alone."""
    from unittest import mock

    from lm_eval.models.huggingface import HFLM
    from lm_eval.models.utils import Collator

    lm = bigram_hflm()
    loop = original(HFLM, "_loglikelihood_tokens")
    short = (("a b c d", " e"), [1, 2, 3, 4], [5])
    longer = (("a b c", " d e"), [1, 2, 3], [4, 5])  # the same tokens, split one earlier
    with mock.patch.object(Collator, "get_cache", original(Collator, "get_cache")):
        alone = loop(lm, [short], disable_tqdm=True)
        beside = loop(lm, [short, longer], disable_tqdm=True)
    return bool(beside[0] != alone[0])


PATCH = Patch(
    "slice_cache_hits",
    "lm_eval.models.utils.Collator.get_cache",
    TESTED,
    (f"{GITHUB}/issues/2984", f"{GITHUB}/pull/2987"),
    still_needed=lm_eval_scores_a_shorter_cache_hit_wrongly,
)
