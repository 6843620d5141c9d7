"""This package's requests in lm-eval's request cache (``--cache_requests``): named by what they
follow, kept with Python's own pickler, and used only for the documents they were built from.

lm-eval names a task's saved requests by the task, few-shot count, rank, world size, chat
template, system prompt and ``tokenizer_name`` (``Task.build_all_requests``), neither by the
task's metadata nor by the documents chosen (``lm_eval_fixes.request_cache_names``). The tasks
name theirs (``path``) with, as ``tokenizer_name``, a tag (``name``) that changes with the
metadata, the package's source (``fingerprint.package_fingerprint``), the documents chosen with
``--samples`` and, for a task that counts tokens with a fast tokenizer, that tokenizer's
encodings (``TokenCounter.identity``) and the model's family instead of the model's files: the
models of a sweep that share a tokenizer share the file, and new weights at the same path do not
rebuild it. Without such a tokenizer the files the metadata names (weights included) stand in.
``--limit`` is left out: every document's requests are saved, and the first N read back, as
lm-eval does with its own.

The tasks keep the file themselves (``load``, ``save``), in lm-eval's folder and under the name
lm-eval would give it, with Python's own pickler rather than lm-eval's ``dill`` (whose pickler
and reader, written in Python, took most of a first run's request building and seconds of each
later one's), written aside and renamed (the workers of a sweep share the folder). What is read
back is checked against the documents the run will score (``matches``): each document the run
iterates must have requests built from that very document. A process that runs several models
(a sweep's worker) keeps the latest files' requests in memory (``_FILES``), each file's by its
size and modification time, and hands them to the next run with their responses emptied, as
read from the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from wsc_tasks.kept import PickledFiles


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


def path(task: Any, kwargs: Mapping[str, Any]) -> Path:
    """The file of ``task``'s saved requests: in lm-eval's request-cache folder, named as lm-eval
    names its own (no few-shot context, chat template or system prompt: the tasks refuse them)."""
    from lm_eval.caching import cache

    key = (
        f"requests-{task.config.task}-0shot-rank{kwargs.get('rank', 0)}"
        f"-world_size{kwargs.get('world_size', 1)}-tokenizer{name(task, kwargs)}"
    )
    return Path(cache.PATH) / f"{key}{cache.FILE_SUFFIX}"


def load(task: Any, kwargs: Mapping[str, Any]) -> list[list[Any]] | None:
    """The requests saved for ``task``, each document's in a list, or None (none, unreadable,
    or ``--rewrite_requests_cache``)."""
    if kwargs.get("rewrite_requests_cache"):
        return None
    try:
        found, kept = _FILES.read(path(task, kwargs))  # lm-eval's folder, as its own
    except Exception:  # noqa: BLE001 - a missing or unreadable file is built again
        return None
    if not isinstance(found, list):
        return None
    return _emptied(found) if kept else found


def save(task: Any, kwargs: Mapping[str, Any], documents: list[list[Any]]) -> None:
    """Keep every document's requests (written aside, then renamed into place)."""
    target = path(task, kwargs)
    target.parent.mkdir(parents=True, exist_ok=True)
    aside = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    aside.write_bytes(pickle.dumps(documents, protocol=pickle.HIGHEST_PROTOCOL))
    aside.replace(target)
    _FILES.wrote(target, documents)


_FILES = PickledFiles(64)  # more than one run's tasks: a whole wsc_group


def _emptied(documents: list[list[Any]]) -> list[list[Any]]:
    """Requests kept from an earlier run, as unpickled: no responses, none filtered."""
    for requests in documents:
        for request in requests:
            request.resps = []
            request.filtered_resps = {}
    return documents


def by_document(requests: Sequence[Any]) -> list[list[Any]]:
    """Requests in lm-eval's order grouped by their document (each document's are together)."""
    found: list[list[Any]] = []
    for request in requests:
        if found and found[-1][0].doc_id == request.doc_id:
            found[-1].append(request)
        else:
            found.append([request])
    return found


def first(documents: list[list[Any]], limit: int | None) -> list[Any]:
    """The requests of the first ``limit`` documents (all: None), as lm-eval reads back its own."""
    return [request for requests in documents[:limit] for request in requests]
