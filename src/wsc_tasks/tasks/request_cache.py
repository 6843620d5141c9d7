"""This package's requests in lm-eval's request cache (``--cache_requests``): named by what they
follow, and used only for the documents they were built from.

lm-eval names a task's saved requests by the task, few-shot count, rank, world size, chat
template, system prompt and ``tokenizer_name`` (``Task.build_all_requests``), neither by the
task's metadata nor by the documents chosen (``lm_eval_fixes.request_cache_names``). The tasks
pass, as ``tokenizer_name``, a tag (``name``) that changes with the metadata, the package's
source (``fingerprint.package_fingerprint``), the documents chosen with ``--samples`` and, for a
task that counts tokens with a fast tokenizer, that tokenizer's encodings
(``TokenCounter.identity``) and the model's family instead of the model's files: the models of a
sweep that share a tokenizer share the file, and new weights at the same path do not rebuild it.
Without such a tokenizer the files the metadata names (weights included) stand in. ``--limit``
is left out: lm-eval saves every document's requests then and reads back the first N.

What lm-eval reads back is checked against the documents the run will score (``matches``): each
document the run iterates must have requests built from that very document.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any


def tag(
    metadata: Mapping[str, object] | None,
    identity: str | None = None,
    family: str | None = None,
    samples: list[int] | None = None,
) -> str:
    """16 hex digits that change with the metadata, the package's source, the documents chosen,
    and the tokenizer's encodings and the model's family (``identity``; else the model files
    the metadata names)."""
    from wsc_tasks.fingerprint import model_fingerprint, package_fingerprint
    from wsc_tasks.paths import MODEL_FILE_ARGS

    meta = dict(metadata or {})
    model: object
    if identity is not None:  # the requests follow the tokenizer, not the weights or paths
        model = {"tokens": identity, "family": family}
        meta = {key: value for key, value in meta.items() if key not in MODEL_FILE_ARGS}
    else:
        named = ",".join(f"{key}={meta[key]}" for key in MODEL_FILE_ARGS if meta.get(key))
        model = model_fingerprint(named)
    key = {
        "metadata": meta,
        "model": model,
        "samples": list(samples) if samples is not None else None,
        "wsc_tasks": package_fingerprint(),
    }
    text = json.dumps(key, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def name(task: Any, kwargs: Mapping[str, Any]) -> str:
    """The ``tokenizer_name`` lm-eval puts in the file name of ``task``'s saved requests."""
    counter = task.token_counter()
    family = getattr(task, "family", None)
    found = tag(
        task.config.metadata,
        counter.identity if counter is not None else None,
        family,
        kwargs.get("samples"),
    )
    return f"{kwargs.get('tokenizer_name', '')}-wsc_tasks{found}"


def matches(task: Any, kwargs: Mapping[str, Any]) -> bool:
    """Whether every document the run will score (lm-eval's ``doc_iterator`` with the run's
    arguments, as its results loop calls it) has requests, built from that very document."""
    built: dict[int, Any] = {}
    for request in task._instances:
        built.setdefault(request.doc_id, request.doc)
    scored = 0
    for doc_id, doc in task.doc_iterator(
        rank=kwargs.get("rank", 0),
        limit=kwargs.get("limit"),
        world_size=kwargs.get("world_size", 1),
        samples=kwargs.get("samples"),
    ):
        if doc_id not in built or built[doc_id] != doc:
            return False
        scored += 1
    return scored == len(built)
