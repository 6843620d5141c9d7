"""What a process that runs several models (a sweep's worker) keeps from one model to the next.

``Latest``: a mapping of the few entries used last (the token counter of a tokenizer, each
problem's requests under a scoring setup), the oldest dropped past its limit, so that a worker
going through many tokenizers does not grow without end. ``PickledFiles``: the objects of
pickled files in lm-eval's request-cache folder, each unpickled once while its size and
modification time stay (another worker that rewrites a file has it read again).
"""

from __future__ import annotations

import pickle
from collections import OrderedDict
from pathlib import Path
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Latest(OrderedDict[K, V], Generic[K, V]):
    """The ``limit`` entries used last."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def use(self, key: K, default: V) -> V:
        """``key``'s value (``default``, put there, if none), marked used last."""
        found = self.setdefault(key, default)
        self.put(key, found)
        return found

    def put(self, key: K, value: V) -> None:
        """``key``'s value, marked used last; the oldest dropped past the limit."""
        self[key] = value
        self.move_to_end(key)
        while len(self) > self.limit:
            self.popitem(last=False)


def _stat(path: Path) -> tuple[int, int]:
    found = path.stat()
    return found.st_size, found.st_mtime_ns


class PickledFiles:
    """The objects of the ``limit`` pickled files read or written last, by path and the file's
    size and modification time."""

    def __init__(self, limit: int) -> None:
        self._kept: Latest[Path, tuple[tuple[int, int], Any]] = Latest(limit)

    def read(self, path: Path) -> tuple[Any, bool]:
        """(the object in ``path``, whether it was kept from an earlier read or write rather than
        unpickled now); raises what reading or unpickling the file raises."""
        stat = _stat(path)
        known = self._kept.get(path)
        if known is not None and known[0] == stat:
            self._kept.put(path, known)
            return known[1], True
        found = pickle.loads(path.read_bytes())
        self._kept.put(path, (stat, found))
        return found, False

    def wrote(self, path: Path, value: Any) -> None:
        """``value`` is what ``path`` now holds (just written from it)."""
        try:
            self._kept.put(path, (_stat(path), value))
        except OSError:  # gone already: nothing kept
            self._kept.pop(path, None)
