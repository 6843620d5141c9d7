"""lm-eval's answer cache (``--use_cache``) read in one query and written a batch at a time, in
lm-eval's own format.

lm-eval's ``CachingLM`` keeps the answers in a ``SqliteDict`` that commits every write, and its
cache hook writes one answer at a time: for this package's tens of thousands of distinct requests
each lookup and each write is a round trip to the dictionary's thread and a transaction of its
own (on a 2-core machine, longer than a tiny model's forward of ``wsc_group``'s 43,895). Here the
answers asked for are read in a few queries (``read``), and the model's answers are written
through ``Batch``, the hook the model's view writes through: they are kept and written in one
transaction every ``FLUSH_S`` seconds and at the end (an interrupted run keeps what was written),
each through a connection of its own to the same file and with the dictionary's own encoding of
keys and values, so lm-eval and a later run read them as their own.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import closing
from types import TracebackType
from typing import Any

FLUSH_S = 10.0  # a batch is written at least this often
CHUNK = 500  # keys per query


def _table(db: Any) -> str:
    return '"' + str(db.tablename).replace('"', '""') + '"'


def _connect(db: Any) -> sqlite3.Connection:
    return sqlite3.connect(str(db.filename), timeout=60)


def read(db: Any, keys: Sequence[str]) -> dict[str, Any]:
    """The answers ``db`` (lm-eval's ``SqliteDict``) holds under ``keys``."""
    found: dict[str, Any] = {}
    wanted = [db.encode_key(key) for key in dict.fromkeys(keys)]
    with closing(_connect(db)) as connection:
        for start in range(0, len(wanted), CHUNK):
            chunk = wanted[start : start + CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT key, value FROM {_table(db)} WHERE key IN ({marks})"
            for key, value in connection.execute(query, chunk):
                found[db.decode_key(key)] = db.decode(value)
    return found


class Batch:
    """lm-eval's cache hook (``add_partial``) for ``db``, writing a batch at a time; a context
    manager that writes what is left when it closes."""

    def __init__(self, db: Any) -> None:
        self.dbdict = db  # as lm-eval's own hook names it
        self.kept: list[tuple[Any, Any]] = []
        self.written = 0
        self._last = time.monotonic()

    def add_partial(self, attr: str, req: Iterable[Any], res: Any) -> None:
        from lm_eval.api.model import hash_args

        self.kept.append((hash_args(attr, req), res))
        if time.monotonic() - self._last >= FLUSH_S:
            self.flush()

    def flush(self) -> None:
        self._last = time.monotonic()
        if not self.kept:
            return
        db = self.dbdict
        rows = [(db.encode_key(key), db.encode(value)) for key, value in self.kept]
        with closing(_connect(db)) as connection, connection:  # one transaction, committed
            connection.executemany(f"REPLACE INTO {_table(db)} (key, value) VALUES (?, ?)", rows)
        self.written += len(rows)
        self.kept = []

    def __enter__(self) -> Batch:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.flush()
