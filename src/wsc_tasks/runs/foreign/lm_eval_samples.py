"""lm-eval's ``--log_samples`` files of its built-in ``winogrande`` and ``wsc273``, in every 0.4.x
layout.

What each release wrote, per document (read from each release's ``evaluator.py`` and
``loggers/evaluation_tracker.py``):

- 0.4.0 to 0.4.2: one JSON array (``json.dumps(…, indent=2)``) in ``<model_args>_<task>.jsonl``
  beside ``results.json``; ``arguments`` a list of ``[context, continuation]``, ``resps`` and
  ``filtered_resps`` the model's numbers as numbers (``[[[ll, is_greedy]], …]``), the metric
  values (``acc``) at the top level.
- 0.4.3 to 0.4.13: JSON lines in ``samples_<task>_<date>.jsonl`` beside
  ``results_<date>.json``; ``arguments`` a mapping ``{"gen_args_0": {"arg_0": context, "arg_1":
  continuation}, …}``, ``resps`` and ``filtered_resps`` every number as its ``str()``
  (``sanitize_list``), ``target`` a string from 0.4.9; ``filter``, ``metrics`` (the names),
  ``doc_hash``, ``prompt_hash``, ``target_hash`` added along the way.
- ``simple_evaluate(log_samples=True)``'s own ``samples``, dumped by a user's script: 0.4.0's
  per-document layout as JSON lines or an array.

Any of them, plain or gzipped, is read the same way: each document's options' log-likelihoods
from ``filtered_resps`` (what lm-eval's ``process_results`` scored; ``resps`` where a dump has no
filtered ones), its content from ``doc`` (``sentence``, ``option1``, ``option2``, ``answer`` of
Winogrande; ``text``, ``pronoun``, ``pronoun_loc``, ``options``, ``label`` of WSC273), its verdict
from ``acc``. The results file beside it says how the run was made: a ``--limit`` or
``--samples`` run is refused (its documents are the first of the dataset, or some of them, not
schemas), its ``num_fewshot`` is shown.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path
from typing import Any

from wsc_tasks.runs.foreign.origin import LM_EVAL, Origin
from wsc_tasks.runs.foreign.pinned import (
    VERDICT,
    WINOGRANDE,
    WSC273,
    ForeignError,
    Scored,
    match,
    pinned,
    tasks,
)
from wsc_tasks.runs.task_run import TaskRun

WINOGRANDE_FIELDS = frozenset({"sentence", "option1", "option2", "answer"})
WSC273_FIELDS = frozenset({"text", "pronoun", "pronoun_loc", "options", "label"})
NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?inf|nan")


def kind_of(doc: Any) -> str | None:
    """WINOGRANDE, WSC273 or None: which built-in task a logged document is of, by its fields."""
    if not isinstance(doc, dict):
        return None
    if WINOGRANDE_FIELDS <= doc.keys():
        return WINOGRANDE
    if WSC273_FIELDS <= doc.keys():
        return WSC273
    return None


def _open(path: Path) -> Any:
    return gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")


def peek(path: Path) -> str | None:
    """The built-in task of a samples file, from its first document (None: not one of them, or
    not readable as samples: the reader of this package's tasks says why)."""
    try:
        with _open(path) as handle:
            head = handle.read(1 << 16)
    except (OSError, EOFError, zlib.error):
        return None
    text = head.lstrip()
    if text.startswith(b"["):  # 0.4.0-0.4.2: an array; the first document is near its start
        try:
            return kind_of((rows(path) or [("", {})])[0][1].get("doc"))
        except ForeignError:
            return None
    line = text.split(b"\n", 1)[0]
    try:
        return kind_of(json.loads(line).get("doc"))
    except (ValueError, AttributeError):
        return None


def rows(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(where, document's row) of every document of a samples file, in the file's order."""
    try:
        with _open(path) as handle:
            data = handle.read()
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise ForeignError(f"{path}: cannot be read to its end ({error}): truncated or corrupt; "
                           "nothing read") from None  # fmt: skip
    text = data.decode("utf-8", errors="strict") if data else ""
    if text.lstrip().startswith("["):
        try:
            found = json.loads(text)
        except ValueError as error:
            raise ForeignError(f"{path}: not a complete JSON array of samples ({error}): "
                               "truncated?; nothing read") from None  # fmt: skip
        return [(f"document {i + 1}", row) for i, row in enumerate(found)]
    out = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            out.append((f"line {number}", json.loads(line)))
        except ValueError as error:
            cut = number == len(lines)  # the last line without its newline: a run stopped
            why = "an incomplete last line: truncated" if cut else f"not a JSON line ({error})"
            raise ForeignError(f"{path}:{number}: {why}; nothing read") from None
    return out


def _number(value: Any) -> float:
    """A log-likelihood as any layout wrote it: a number, its ``str()``, or the ``str()`` of a
    ``(ll, is_greedy)`` pair."""
    while isinstance(value, list | tuple) and value:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"not a log-likelihood: {value!r}")
    if isinstance(value, str):
        found = NUMBER.search(value)
        if found is None:
            raise ValueError(f"not a log-likelihood: {value!r}")
        return float(found.group())
    return float(value)


def _lls(row: dict[str, Any]) -> tuple[float, ...]:
    filtered = row.get("filtered_resps")
    found = filtered if isinstance(filtered, list) and filtered else row.get("resps")
    if not isinstance(found, list) or not found:
        raise ValueError("no filtered_resps or resps")
    return tuple(_number(item) for item in found)


def _acc(value: Any) -> float | None:
    if value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def scored(kind: str, found: list[tuple[str, dict[str, Any]]], path: Path) -> list[Scored]:
    """Each document as ``pinned.Scored``: its content, options, answer, log-likelihoods and
    lm-eval's verdict."""
    out = []
    for where, row in found:
        doc = row.get("doc") if isinstance(row, dict) else None
        if kind_of(doc) != kind:
            fields = sorted(doc) if isinstance(doc, dict) else doc
            raise ForeignError(f"{path}, {where}: not a document of lm-eval's {kind} (its fields: "
                               f"{fields!r}); nothing read")  # fmt: skip
        assert isinstance(doc, dict)
        try:
            lls = _lls(row)
        except ValueError as error:
            raise ForeignError(f"{path}, {where}: {error}; nothing read") from None
        key: tuple[str, ...]
        options: tuple[str, ...]
        if kind == WINOGRANDE:
            answer = str(doc["answer"]).strip()
            key = (str(doc["sentence"]),)
            options = (str(doc["option1"]), str(doc["option2"]))
            gold = int(answer) - 1 if answer in ("1", "2") else None
        else:
            text, at, pronoun = str(doc["text"]), int(doc["pronoun_loc"]), str(doc["pronoun"])
            key = (text[:at], pronoun, text[at + len(pronoun) :])
            options = tuple(str(o) for o in doc["options"])
            gold = int(doc["label"])
        if len(lls) != len(options):
            raise ForeignError(f"{path}, {where}: {len(lls)} log-likelihoods for "
                               f"{len(options)} options; nothing read")  # fmt: skip
        out.append(Scored(key, lls, where, gold, options, _acc(row.get(VERDICT))))
    return out


def how_run(task: str, results: dict[str, Any] | None, path: Path, name: str) -> int | None:
    """The run's num_fewshot (None: not recorded); ``ForeignError`` for a ``--limit`` or
    ``--samples`` run, which scored some documents of the dataset, not its schemas."""
    if results is None:
        return None
    limit = (results.get("config") or {}).get("limit")
    if limit is not None:
        raise ForeignError(
            f"{path}: lm-eval's {task} was run with --limit {limit:g} ({name}): its documents "
            "are the first of the dataset, not whole schemas; run it again without --limit"
        )
    counts = (results.get("n-samples") or {}).get(task) or {}
    effective, original = counts.get("effective"), counts.get("original")
    if isinstance(effective, int) and isinstance(original, int) and effective < original:
        raise ForeignError(
            f"{path}: lm-eval's {task} was run on {effective} of its {original} documents "
            f"(--samples; {name}): some documents, not the dataset's schemas; run it again "
            "without --samples"
        )
    shots = (results.get("n-shot") or {}).get(task)
    if shots is None:
        shots = ((results.get("configs") or {}).get(task) or {}).get("num_fewshot")
    return int(shots) if isinstance(shots, int | float) and not isinstance(shots, bool) else None


def read(
    task: str,
    path: Path,
    results: dict[str, Any] | None = None,
    results_name: str = "",
    expected: int | None = None,
) -> dict[str, TaskRun]:
    """The tasks of one samples file of lm-eval's built-in ``task`` (``results``: the results
    file's JSON beside it, named ``results_name``; ``expected``: the documents lm-eval scored)."""
    shots = how_run(task, results, path, results_name)
    found = rows(path)
    kind = kind_of(found[0][1].get("doc")) if found else None
    if kind is None:
        raise ForeignError(f"{path}: no document of lm-eval's winogrande or wsc273 in it")
    data = pinned(kind)
    items = scored(kind, found, path)
    right = match(data, items, str(path))  # first: a document twice is said as such
    if expected is not None and len(found) != expected:
        raise ForeignError(
            f"{path}: {len(found)} documents, but lm-eval scored {expected} ({results_name}): "
            "incomplete (a run stopped while writing it?); nothing read"
        )
    origin = Origin(LM_EVAL, task, path.name, shots)
    return tasks(data, right, origin, path)
