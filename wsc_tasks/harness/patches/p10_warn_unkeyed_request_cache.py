"""lm-eval patch 10, ``warn_unkeyed_request_cache``: what it changes and why, then the change."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lm_eval.api.model import LM

from wsc_tasks.harness.patches.base import (
    GITHUB,
    TESTED,
    Patch,
    is_our_task,
    log,
)

# lm-eval's ``--use_cache PATH`` (``CachingLM``, a SQLite file ``PATH_rank<r>.db``) keys each answer
# by the request alone (``hash_args``: request type and arguments), not by the model (upstream
# issues #2715 and #4063): a second model, or new weights saved at the same path, run with the
# same PATH reads the first one's log-likelihoods as its own, and the log only says
# ``Cached requests: N, Requests remaining: 0``. ``wsc-tasks run`` (and the sweep) add the model's
# fingerprint (``harness.fingerprint.cache_key``) to PATH and mark that path here; a plain
# ``lm_eval --use_cache`` run of this package's tasks gets one warning. Upstream, ``CachingLM``
# could hash the model's identity into every key.
_KEYED_CACHES: set[str] = set()
_warned_caches: set[str] = set()


def mark_cache_keyed(prefix: str) -> None:
    """``--use_cache`` paths under ``prefix`` are keyed by the model: no warning for them."""
    _KEYED_CACHES.add(prefix)


def _tasks_of(task_dict: object) -> Iterator[object]:
    """The tasks of lm-eval's ``task_dict`` (groups' tasks included), as lm-eval nests them."""
    for value in (task_dict or {}).values() if isinstance(task_dict, dict) else ():
        yield from _tasks_of(value) if isinstance(value, dict) else (value,)


def warn_unkeyed_request_cache(lm: object, task_dict: object) -> None:
    """Warn once per cache file when ``lm`` is lm-eval's request cache, not keyed by the model,
    and one of this package's tasks is about to read it."""
    from lm_eval.api.model import CachingLM

    if not isinstance(lm, CachingLM) or not any(map(is_our_task, _tasks_of(task_dict))):
        return
    db = str(lm.cache_db)
    if db in _warned_caches or any(db.startswith(prefix) for prefix in _KEYED_CACHES):
        return
    _warned_caches.add(db)
    line = (
        f"wsc_tasks: lm-eval's request cache {db} (--use_cache) is keyed by the request alone, "
        "not by the model: another model, or new weights at the same path, run with the same "
        "--use_cache reads these answers as its own; give each model its own --use_cache path, "
        "or run `wsc-tasks run`, which keys the path by the model"
    )
    log.warning(line)


def constant_lm(value: float) -> LM:
    """An lm-eval LM that answers every log-likelihood request with ``value``."""
    from lm_eval.api.model import LM

    methods = {
        "loglikelihood": lambda self, requests, **kwargs: [(value, False) for _ in requests],
        "loglikelihood_rolling": None,
        "generate_until": None,
    }
    return type("Constant", (LM,), methods)()


def lm_eval_keys_its_request_cache_by_the_request_only() -> bool:
    """lm-eval's ``CachingLM``: a second model on the same cache file reads the first one's
    answer as its own."""
    import tempfile
    from pathlib import Path

    from lm_eval.api.instance import Instance
    from lm_eval.api.model import CachingLM

    request = Instance("loglikelihood", {}, ("a b", " c"), 0)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder, "shared.db"))
        first = CachingLM(constant_lm(-1.0), path).loglikelihood([request])
        second = CachingLM(constant_lm(-2.0), path).loglikelihood([request])
    return bool(first == second == [(-1.0, False)])


PATCH = Patch(
    "warn_unkeyed_request_cache",
    "lm_eval.api.model.CachingLM (a warning)",
    TESTED,
    (f"{GITHUB}/issues/2715", f"{GITHUB}/issues/4063"),
    still_needed=lm_eval_keys_its_request_cache_by_the_request_only,
)
