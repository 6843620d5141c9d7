"""A run's per-document outcomes kept beside it, so each samples file is decoded once.

lm-eval's samples files hold, per document, its prompt arguments, the model's responses, hashes
and the per-document metric values; the tables and the bootstrap need only the document and the
values. The first read of a results file's samples writes them to ``wsc_summary_<stamp>.parquet``
beside it: one row per (task, column), the column being the documents or one metric, its values
as one JSON list, in document order. The file's metadata records what it was computed from: each
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

log = logging.getLogger(f"lm_eval.{__name__}")

FORMAT = 2  # bumped when what a summary holds, or how the samples are read into it, changes
PREFIX = "wsc_summary_"
DOCS = "__docs__"  # the column of the documents themselves
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

            table = pq.read_table(self.path)
            meta = json.loads((table.schema.metadata or {})[KEY])
            if meta.get("format") != FORMAT or meta.get("version") != package_version():
                log.info(f"wsc_tasks: {self.path.name}: made by another version; rebuilt")
                self.changed = True
                return
            keys, computed = meta["tasks"], meta["computed"]
            tasks, columns, data = (table.column(n).to_pylist() for n in ("task", "column", "data"))
            found: dict[str, dict[str, Any]] = {
                t: {"key": keys[t], "columns": {}, "computed": dict(computed[t])} for t in keys
            }
            for task, column, text in zip(tasks, columns, data, strict=True):
                found[task]["columns"][column] = json.loads(text)
        except Exception as error:  # truncated, corrupt or foreign: rebuilt, never trusted
            log.warning(f"wsc_tasks: {self.path}: unreadable summary ({error}); rebuilt")
            self.changed = True
            return
        self.tasks = found

    def read(self, task: str, samples: Path, reader: Any) -> tuple[list[Any], dict[str, list]]:
        """The documents and per-metric values of ``task``: from the summary when it was made
        from this very samples file, else from ``reader(samples)`` (lm-eval's rows, in document
        order), kept for ``save``."""
        key = stat_key(samples)
        cached = self.tasks.get(task)
        if cached is not None and cached["key"] == key and DOCS in cached["columns"]:
            columns = dict(cached["columns"])
            return columns.pop(DOCS), columns
        rows = reader(samples)
        docs = [r["doc"] for r in rows]
        values = {name: [r[name] for r in rows] for name in (rows[0]["metrics"] if rows else [])}
        self.tasks[task] = {"key": key, "columns": {DOCS: docs, **values}, "computed": {}}
        self.changed = True
        return docs, values

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

        names, columns, data = [], [], []
        for task, found in sorted(self.tasks.items()):
            for column, values in found["columns"].items():
                names.append(task)
                columns.append(column)
                data.append(json.dumps(values, separators=(",", ":")))
        meta = {
            "format": FORMAT,
            "version": package_version(),
            "tasks": {t: found["key"] for t, found in self.tasks.items()},
            "computed": {t: found["computed"] for t, found in self.tasks.items()},
        }
        table = pa.table({"task": names, "column": columns, "data": data})
        table = table.replace_schema_metadata({KEY: json.dumps(meta).encode()})
        partial = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            pq.write_table(table, partial, compression="zstd")
            os.replace(partial, self.path)
        except OSError as error:
            log.info(f"wsc_tasks: {self.path}: summary not written ({error})")
            partial.unlink(missing_ok=True)
            return
        self.changed = False


LATER = "WSC_TASKS_SUMMARY_LATER"  # set by a sweep for its runs: it summarises after compressing
