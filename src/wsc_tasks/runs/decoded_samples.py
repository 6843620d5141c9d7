"""A run's per-document outcomes kept beside it, so each samples file is decoded once.

lm-eval's samples files hold, per document, its prompt arguments, the model's responses, hashes
and the per-document metric values; the tables and the bootstrap need only the document and the
values. The first read of a results file's samples writes them to ``wsc_summary_<stamp>.parquet``
beside it: one row per distinct value (a document, or one document's value of a metric, as JSON);
per task, each column (the documents or one metric) is a list of row numbers, its values in
document order, and equal lists are kept once (a task's metrics mostly share one outcome per
document). A read so decodes a few thousand small values, not one per document and metric;
equal values come back as one shared object, read-only as every per-document value is. The
file's metadata holds the lists and records what they were computed from: each
samples file's name, size and modification time, the package's version and this format's number;
and, per task, each metric's figure recomputed from its values (or why it could not be), so that
a read checks lm-eval's figures without recomputing them (``computed``/``remember``).
A task whose samples file changed (or is new) is read again from its samples and the file
rewritten; a summary that cannot be read to its end (truncated, corrupt, foreign) is rebuilt,
never trusted. A folder that cannot be written to is read from its samples every time.
"""

from __future__ import annotations

import functools
import json
import logging
import os
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import orjson

from wsc_tasks.garbage_collection import paused
from wsc_tasks.metrics import registry
from wsc_tasks.runs.output_files import LINE

log = logging.getLogger(f"lm_eval.{__name__}")

FORMAT = 3  # bumped when what a summary holds, or how the samples are read into it, changes
PREFIX = "wsc_summary_"
DOCS = "__docs__"  # the column of the documents themselves
LINES = "__lines__"  # the column of each document's line in the samples file (``LINE``)
KEY = b"wsc_tasks_summary"  # the Parquet metadata entry holding the key


@functools.cache
def package_version() -> str:
    try:
        return version("wsc-tasks")
    except PackageNotFoundError:  # run from a source tree
        return "unknown"


def stat_key(path: Path) -> list[Any]:
    """What a samples file's summary was computed from: its name, size and modification time."""
    found = path.stat()
    return [path.name, found.st_size, found.st_mtime_ns]


def summary_path(results: Path, stamp: str) -> Path:
    return results.with_name(f"{PREFIX}{stamp}.parquet")


class Summary:
    """The summary of one results file's samples: tasks read from it, or from their samples."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tasks: dict[str, dict[str, Any]] = {}  # task -> {"key", "columns": {name: list}}
        self.changed = False
        self._load()

    def _load(self) -> None:
        if not self.path.is_file():
            return
        try:
            import pyarrow.parquet as pq

            table = pq.ParquetFile(self.path).read()  # read_table sets up datasets: 0.5 s more
            meta = json.loads((table.schema.metadata or {})[KEY])
            if meta.get("format") != FORMAT or meta.get("version") != package_version():
                log.info(f"wsc_tasks: {self.path.name}: made by another version; rebuilt")
                self.changed = True
                return
            keys, computed, rows = meta["tasks"], meta["computed"], meta["rows"]
            pool = decode(table.column("value").to_pylist())
            lists = [[pool[i] for i in at] for at in meta["lists"]]
            found: dict[str, dict[str, Any]] = {
                t: {
                    "key": keys[t],
                    "columns": {c: list(lists[n]) for c, n in rows[t].items()},
                    "computed": dict(computed[t]),
                }
                for t in keys
            }
        except Exception as error:  # truncated, corrupt or foreign: rebuilt, never trusted
            log.warning(f"wsc_tasks: {self.path}: unreadable summary ({error}); rebuilt")
            self.changed = True
            return
        self.tasks = found

    def read(
        self, task: str, samples: Path, reader: Any
    ) -> tuple[list[Any], list[int], dict[str, list]]:
        """The documents, their lines in the samples file and the per-metric values of
        ``task``: from the summary when it was made from this very samples file, else from
        ``reader(samples)`` (lm-eval's rows, in document order, with their ``LINE``), kept for
        ``save``."""
        key = stat_key(samples)
        cached = self.tasks.get(task)
        if cached is not None and cached["key"] == key and {DOCS, LINES} <= set(cached["columns"]):
            columns = dict(cached["columns"])
            return columns.pop(DOCS), columns.pop(LINES), columns
        rows = reader(samples)
        logged = [{DOCS: r["doc"], LINES: r[LINE], **registry.logged(r)} for r in rows]
        names = list(logged[0]) if logged else [DOCS, LINES]
        # each column as its texts, then as the values a summary read gives back (equal values
        # one object), so that a metric is computed once per distinct value, not per document
        with paused():  # texts and decoded JSON: no cycle for a collection to find
            del rows  # the samples' prompts and responses, not kept
            texts = {c: encode([r[c] for r in logged]) for c in names}
            del logged
            columns = {c: decode(column) for c, column in texts.items()}
        self.tasks[task] = {"key": key, "columns": columns, "computed": {}, "texts": texts}
        self.changed = True
        columns = dict(columns)
        return columns.pop(DOCS), columns.pop(LINES), columns

    def computed(self, task: str, name: str) -> list[Any] | None:
        """``["value", figure]`` or ``["error", why]``: metric ``name`` of ``task`` recomputed
        from the values ``read`` gave, as ``remember`` kept it; None when not kept."""
        found = self.tasks.get(task)
        return None if found is None else found["computed"].get(name)

    def remember(self, task: str, name: str, outcome: list[Any]) -> None:
        """Keep what recomputing metric ``name`` of ``task`` gave (see ``computed``)."""
        self.tasks[task]["computed"][name] = outcome
        self.changed = True

    def keep_only(self, tasks: set[str]) -> None:
        """Drop tasks that were not read this time (set aside, or no longer in the results)."""
        for task in set(self.tasks) - tasks:
            del self.tasks[task]
            self.changed = True

    def save(self) -> None:
        """Write the summary if anything was read from samples; atomically (a reader never sees
        half a file), and silently not where the folder is read-only."""
        if not self.changed:
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        index: dict[str, int] = {}  # a value's JSON text -> its row
        lists: dict[tuple[int, ...], int] = {}  # a column's rows -> its place in "lists"
        rows: dict[str, dict[str, int]] = {}
        for task, found in sorted(self.tasks.items()):
            rows[task] = {}
            texts = found.get("texts") or {}
            for column, values in found["columns"].items():
                encoded = texts[column] if column in texts else encode(values)
                at = tuple(index.setdefault(text, len(index)) for text in encoded)
                rows[task][column] = lists.setdefault(at, len(lists))
        meta = {
            "format": FORMAT,
            "version": package_version(),
            "tasks": {t: found["key"] for t, found in self.tasks.items()},
            "computed": {t: found["computed"] for t, found in self.tasks.items()},
            "rows": rows,
            "lists": list(lists),
        }
        table = pa.table({"value": list(index)})  # a dict keeps its keys in insertion order
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            # the metadata once, in the file's footer (not also inside a stored Arrow schema)
            text = json.dumps(meta, separators=(",", ":")).encode()
            options = {"compression": "zstd", "store_schema": False}
            with pq.ParquetWriter(partial, table.schema, **options) as writer:
                writer.write_table(table)
                writer.add_key_value_metadata({KEY: text})
            os.replace(partial, self.path)
        except OSError as error:
            log.info(f"wsc_tasks: {self.path}: summary not written ({error})")
            partial.unlink(missing_ok=True)
            return
        self.changed = False


_DECODED: dict[str, Any] = {}  # a value's JSON text -> the object every summary read gives
_DECODED_MAX = 500_000  # texts kept at most (a report of many models reads each text once)


_ENCODER = json.JSONEncoder(separators=(",", ":"))  # one for every value orjson leaves


def encode(values: list[Any]) -> list[str]:
    """Each value as its own compact JSON text, for ``decode``: equal values, equal texts.

    orjson writes them (a few times faster than ``json``), but a value it refuses (an integer
    beyond 64 bits, a key that is not a string) or writes with a ``null`` (orjson writes ``NaN``
    and infinities as ``null``, which would read back as ``None``) is written by ``json``,
    which keeps them: which of the two writes a value depends on the value alone."""
    texts = []
    for value in values:
        try:
            text = orjson.dumps(value)
        except TypeError:  # orjson.JSONEncodeError is one
            texts.append(_ENCODER.encode(value))
            continue
        texts.append(text.decode() if b"null" not in text else _ENCODER.encode(value))
    return texts


def decode(texts: list[str]) -> list[Any]:
    """The values of ``texts`` (JSON), one object per distinct text across every summary (and
    leaderboard cache) this process reads: the runs of a report share their documents and most
    outcomes, so each model adds little memory and decoding, and a computation kept per value
    object (``Ratio.arrays``) is done once per distinct value."""
    new = [text for text in dict.fromkeys(texts) if text not in _DECODED]
    if len(_DECODED) + len(new) > _DECODED_MAX:
        _DECODED.clear()
        new = list(dict.fromkeys(texts))
    _DECODED.update(zip(new, json.loads("[" + ",".join(new) + "]"), strict=True))
    return [_DECODED[text] for text in texts]


LATER = "WSC_TASKS_SUMMARY_LATER"  # set by a sweep for its runs: it summarises after compressing
