"""lm-eval patch 11, ``request_cache_tag``: what it changes and why, then the change."""

from __future__ import annotations

from collections.abc import Mapping

from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
)
from wsc_tasks.scoring.tokens import TokenCounter


# lm-eval's ``--cache_requests`` saves each task's built requests in a file named by the task,
# few-shot count, rank, world size, chat template, system prompt and the model's tokenizer name
# (``Task.build_all_requests``), not by the task's metadata. This package's requests depend on it
# (``scoring``, ``headline``, the tokenizer named by ``pretrained=``/``tokenizer=``): a run with
# other ``--metadata`` read the requests of the first, sent them all to the model, then failed in
# ``zip()`` (fewer requests than its methods need), or scored the wrong ones. This package's tasks
# pass ``tokenizer_name`` with a tag (``tokenizer_name`` is used for that file name only), so each
# setup has its own file. The tag follows what the requests follow: the metadata, the package's
# source (``fingerprint.package_fingerprint``) and, for a task that counts tokens with a fast
# tokenizer, that tokenizer's encodings (``TokenCounter.identity``) and the model's family instead
# of the model's files: the models of a sweep that share a tokenizer share the file, and new
# weights at the same path do not rebuild it. Without such a tokenizer, the files the metadata
# names (weights included) stand in. No upstream issue found; upstream, the cache name could
# include the task config's metadata.
def request_cache_tag(
    task_metadata: Mapping[str, object] | None,
    tokens: TokenCounter | None = None,
    family: str | None = None,
) -> str:
    """16 hex digits that change with the metadata, the package's source, and the tokenizer's
    encodings and the model's family (else the model files the metadata names)."""
    import hashlib
    import json

    from wsc_tasks.harness.fingerprint import model_fingerprint, package_fingerprint
    from wsc_tasks.paths import MODEL_FILE_ARGS

    meta = dict(task_metadata or {})
    identity = tokens.identity if tokens is not None else None
    model: object
    if identity is not None:  # the requests follow the tokenizer, not the weights or paths
        model = {"tokens": identity, "family": family}
        meta = {key: value for key, value in meta.items() if key not in MODEL_FILE_ARGS}
    else:
        named = ",".join(f"{key}={meta[key]}" for key in MODEL_FILE_ARGS if meta.get(key))
        model = model_fingerprint(named)
    key = {"metadata": meta, "model": model, "wsc_tasks": package_fingerprint()}
    text = json.dumps(key, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def lm_eval_names_its_request_cache_without_the_metadata() -> bool:
    """lm-eval's ``Task.build_all_requests`` names the same request-cache file for two setups of a
    task that differ only in its metadata."""
    from types import SimpleNamespace
    from unittest import mock

    from lm_eval.api import task as lm_task

    class Named(Exception):
        pass

    names: list[str] = []

    def load_from_cache(file_name: str, cache: bool) -> None:
        names.append(file_name)
        raise Named  # the name is all this check needs: no document is read

    for scoring in ("partial", "all"):
        config = SimpleNamespace(task="t", num_fewshot=0, metadata={"scoring": scoring})
        task = SimpleNamespace(_config=config, config=config)
        with mock.patch.object(lm_task, "load_from_cache", load_from_cache):
            try:
                lm_task.Task.build_all_requests(task, cache_requests=True)
            except Named:
                pass
    return len(names) == 2 and names[0] == names[1]


PATCH = Patch(
    "request_cache_tag",
    "lm_eval.api.task.Task.build_all_requests(tokenizer_name=)",
    TESTED,
    still_needed=lm_eval_names_its_request_cache_without_the_metadata,
)
