"""Avoided: lm-eval's ``--use_cache`` serves one model's answers to another.

lm-eval's ``--use_cache PATH`` (``CachingLM``, a SQLite file ``PATH_rank<r>.db``) keys each answer
by the request alone (``hash_args``: request type and arguments), not by the model: a second model,
or new weights saved at the same path, run with the same PATH reads the first one's
log-likelihoods as its own, and the log only says ``Cached requests: N, Requests remaining: 0``.
``wsc-tasks run`` (and the sweep) add the model's fingerprint (``fingerprint.cache_key``) to PATH;
a plain ``lm_eval --use_cache`` run of this package's tasks gets one warning
(``serving.route``). Upstream, ``CachingLM`` could hash the model's identity into every key.
"""

from __future__ import annotations

from wsc_tasks.lm_eval_fixes.base import AVOIDED, GITHUB, Fix


def lm_eval_keys_its_request_cache_by_the_request_only() -> bool:
    """lm-eval's ``CachingLM``: a second model on the same cache file reads the first one's
    answer as its own."""
    import tempfile
    from pathlib import Path

    from lm_eval.api.instance import Instance
    from lm_eval.api.model import LM, CachingLM

    def constant(value: float) -> LM:
        methods = {
            "loglikelihood": lambda self, requests, **kwargs: [(value, False) for _ in requests],
            "loglikelihood_rolling": None,
            "generate_until": None,
        }
        return type("Constant", (LM,), methods)()

    request = Instance("loglikelihood", {}, ("a b", " c"), 0)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder, "shared.db"))
        first = CachingLM(constant(-1.0), path).loglikelihood([request])
        second = CachingLM(constant(-2.0), path).loglikelihood([request])
    return bool(first == second == [(-1.0, False)])


FIX = Fix(
    "unkeyed_cache",
    AVOIDED,
    "--use_cache keys each answer by the request alone, so another model on the same path reads "
    "it as its own",
    "wsc-tasks run and the sweep key the path by the model's fingerprint; a plain lm_eval run "
    "of these tasks with --use_cache is warned",
    (f"{GITHUB}/issues/2715", f"{GITHUB}/issues/4063"),
    still_needed=lm_eval_keys_its_request_cache_by_the_request_only,
)
