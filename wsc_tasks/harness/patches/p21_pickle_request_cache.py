"""lm-eval patch 21, ``pickle_request_cache``: what it changes and why, then the change."""

from __future__ import annotations

import pickle
from typing import Any

from wsc_tasks.harness.patches.base import TESTED, Patch, _replace, original

# lm-eval's request cache (``--cache_requests``, ``lm_eval.caching.cache``) writes and reads its
# files with dill, whose pure-Python pickler is slow: for ``wsc_group``'s 137,119 requests about
# 7 s to write and 2 s to read on a 2-core CPU (measured on ``wsc266``'s 2,128: dill 0.120 s to
# write and 0.039 s to read, the standard pickler 0.009 s and 0.008 s, the same bytes' worth), so
# that the first model of a sweep paid more for the cache than the others saved. Files are now
# written with the standard pickler when it can pickle the object (dill where it cannot: what dill
# reads either way) and read with it, dill reading what it cannot; a file is written aside and
# renamed into place, so the runs of a sweep that share the folder never read a half-written one.
# The same files, lm-eval's own tasks' included. No upstream issue found; upstream,
# ``save_to_cache`` could try pickle first.


def dumps(obj: object) -> bytes:
    """``obj`` pickled by the standard pickler, or by dill when that cannot."""
    try:
        return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        import dill

        return bytes(dill.dumps(obj))


def loads(data: bytes) -> Any:
    """What ``dumps`` wrote, or what lm-eval's dill wrote."""
    try:
        return pickle.loads(data)  # noqa: S301 - lm-eval's own cache files, as lm-eval reads them
    except Exception:  # noqa: BLE001 - a dill-only object: dill reads it
        import dill

        return dill.loads(data)  # noqa: S301


def pickle_request_cache() -> bool:
    """Section 21; True if lm-eval's cache functions were replaced now."""
    import os

    from lm_eval.api import task as lm_task
    from lm_eval.caching import cache as lm_cache

    def load_from_cache(file_name: str, cache: bool = False) -> Any:
        if not cache:
            return None
        try:
            with open(lm_cache._cache_file_path(file_name), "rb") as file:
                return loads(file.read())
        except Exception:  # noqa: BLE001 - as lm-eval: a missing or broken file is built again
            lm_cache.eval_logger.debug("%s is not cached, generating...", file_name)
            return None

    def save_to_cache(file_name: str, obj: object) -> None:
        import tempfile

        os.makedirs(lm_cache.PATH, exist_ok=True)
        path = lm_cache._cache_file_path(file_name)
        lm_cache.eval_logger.debug("Saving %s to cache...", path)
        # written aside, then renamed: a sweep's runs sharing the folder never read half a file
        handle, temporary = tempfile.mkstemp(dir=lm_cache.PATH, suffix=".partial")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(dumps(obj))
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise

    replaced = _replace(lm_cache, "load_from_cache", load_from_cache)
    replaced = _replace(lm_cache, "save_to_cache", save_to_cache) or replaced
    _replace(lm_task, "load_from_cache", lm_cache.load_from_cache)
    _replace(lm_task, "save_to_cache", lm_cache.save_to_cache)
    return replaced


def lm_eval_pickles_its_request_cache_with_dill() -> bool:
    """lm-eval's ``save_to_cache`` writes with dill's pickler (``dill.dumps``)."""
    from unittest import mock

    import dill
    from lm_eval.caching import cache

    calls: list[object] = []
    dumps = dill.dumps

    def counting(obj: object, *args: object, **kwargs: object) -> bytes:
        calls.append(obj)
        return bytes(dumps(obj, *args, **kwargs))

    with (
        mock.patch.object(dill, "dumps", counting),
        mock.patch("builtins.open", mock.mock_open()),
        mock.patch("os.makedirs"),
    ):
        original(cache, "save_to_cache")("wsc_tasks-check", [1, 2])
    return calls == [[1, 2]]


PATCH = Patch(
    "pickle_request_cache",
    "lm_eval.caching.cache.save_to_cache, load_from_cache",
    TESTED,
    still_needed=lm_eval_pickles_its_request_cache_with_dill,
)
