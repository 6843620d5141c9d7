"""``wsc-chance``: an lm-eval model that scores at random, to calibrate intervals and p-values.

Every log-likelihood request gets a score drawn from a uniform distribution by a generator seeded
with the model's ``seed`` and the request itself (SHA-256 of its arguments), so a run's results do
not depend on batching, order, caching or the number of processes, and two seeds are two
independent random models. Expected figures: problem accuracy 0.5, schema accuracy 0.25 on
two-problem schemas.

``wsc-tasks run --model wsc-chance --model_args seed=1`` has no tokenizer, so the tasks score with
their token-free method (causal ``partial``) and say so in the run's notes; add
``tokenizer=<name or path>`` (or a real model's ``pretrained=``/``gguf_file=``) to the model
arguments to run every causal method with that model's tokens: the tasks read them from the
metadata (or from ``tokenizer_metadata`` here, from Python), this model ignores them.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import logging
import math

# lm-eval loads its own models only while its registry is empty: fill it before adding ours.
import lm_eval.models  # noqa: F401
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from wsc_tasks.lm_eval_types import Answer, Request
from wsc_tasks.paths import CHANCE_MODEL

log = logging.getLogger(f"lm_eval.{__name__}")

# what the tasks read to count tokens (``tokenizer_metadata``), and lm-eval's own settings
TOKENIZER_ARGS = ("pretrained", "tokenizer", "gguf_file", "revision", "trust_remote_code",
                  "add_bos_token")  # fmt: skip
IGNORED = {"batch_size", "max_batch_size", "device", *TOKENIZER_ARGS}


def random_score(seed: int, arguments: tuple[object, ...]) -> float:
    """A log-probability in (−∞, 0): log of a uniform draw keyed by ``seed`` and the request."""
    key = json.dumps([seed, list(arguments)], ensure_ascii=False).encode("utf-8")
    digest = hashlib.sha256(key).digest()
    uniform = (int.from_bytes(digest[:8], "big") + 0.5) / 2**64
    return math.log(uniform)


def check_seed(seed: object) -> int:
    """The seed as an integer; anything else (``abc``, ``1.5``) is an error, not another seed:
    ``int(1.5)`` would make two "different" baselines the same run."""
    if isinstance(seed, str) and seed.strip().lstrip("+-").isdigit():
        return int(seed)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(
            f"wsc-chance: model argument seed={seed!r} is invalid; allowed: an integer"
        )
    return seed


@register_model(CHANCE_MODEL)
class ChanceLM(LM):
    """Random log-likelihoods; no generation. See the module docstring."""

    LABEL = "wsc-chance"
    ARGUMENTS = "seed=<int> (and tokenizer= or pretrained=, read by the tasks to count tokens)"

    def __init__(self, seed: int = 0, **kwargs: object) -> None:
        super().__init__()
        unknown = sorted(set(kwargs) - IGNORED)
        if unknown:
            near = difflib.get_close_matches(unknown[0], ["seed", *sorted(IGNORED)], n=1)
            hint = f"did you mean {near[0]}? " if near else ""
            raise ValueError(
                f"wsc-chance: unknown model argument(s) {', '.join(unknown)}; {hint}it takes "
                f"{self.ARGUMENTS}"
            )
        self.seed = check_seed(seed)
        # the tasks learn the tokenizer from here when lm-eval did not merge the model
        # arguments into their metadata (``model_facts``); this model itself never reads it
        self.tokenizer_metadata = {k: v for k, v in kwargs.items() if k in TOKENIZER_ARGS}
        log.info(f"wsc_tasks: wsc-chance model, seed {self.seed}")

    def loglikelihood(self, requests: list[Request], disable_tqdm: bool = False) -> list[Answer]:
        return [(random_score(self.seed, tuple(r.args)), False) for r in requests]

    def loglikelihood_rolling(self, requests: list[Request], disable_tqdm: bool = False) -> list:
        raise NotImplementedError("wsc-chance answers loglikelihood requests only")

    def generate_until(self, requests: list[Request], disable_tqdm: bool = False) -> list:
        raise NotImplementedError("wsc-chance answers loglikelihood requests only")
