"""Avoided: lm-eval's logits cache scores a shorter continuation from a longer one's positions.

lm-eval's HFLM (``logits_cache=True``, its default) computes one forward pass for all requests whose
``context + continuation[:-1]`` tokens are equal, and hands each of them the logits of the longest
continuation (the representative since PR #2987, which fixed the crash of issue #2984 and trims the
greedy check to each continuation). The log-likelihood is still gathered from the *first*
positions of those logits, so a shorter continuation gets a wrong value. The same sentence split
at two places is exactly what partial scoring of a problem and of its inversion send (``wsc266``
and ``wsc266_inverted`` fill the same sentence): scores would depend on which other tasks share
the run. This package's requests never meet it: they are scored as tries (``serving.tries``),
each continuation from its own positions, and where that route is refused, lm-eval's own loop
runs on a view of the model with its logits cache off (``serving.route``). Upstream, the fix is a
trailing slice of the cached logits to each continuation's own length.
"""

from __future__ import annotations

from wsc_tasks.lm_eval_fixes.base import AVOIDED, GITHUB, Fix, bigram_hflm


def lm_eval_scores_a_shorter_cache_hit_wrongly() -> bool:
    """lm-eval's own loop: a request whose ``context + continuation[:-1]`` equals a longer one's
    scores otherwise beside it than alone."""
    from lm_eval.models.huggingface import HFLM

    lm = bigram_hflm()
    short = (("a b c d", " e"), [1, 2, 3, 4], [5])
    longer = (("a b c", " d e"), [1, 2, 3], [4, 5])  # the same tokens, split one earlier
    alone = HFLM._loglikelihood_tokens(lm, [short], disable_tqdm=True)
    beside = HFLM._loglikelihood_tokens(lm, [short, longer], disable_tqdm=True)
    return bool(beside[0] != alone[0])


FIX = Fix(
    "cache_hits",
    AVOIDED,
    "HFLM's logits cache gathers a shorter continuation's log-likelihood from the positions of a "
    "longer continuation that shares its tokens",
    "this package's requests are scored as tries, each from its own positions, or by lm-eval's "
    "loop with the logits cache off",
    (f"{GITHUB}/issues/2984", f"{GITHUB}/pull/2987"),
    still_needed=lm_eval_scores_a_shorter_cache_hit_wrongly,
)
