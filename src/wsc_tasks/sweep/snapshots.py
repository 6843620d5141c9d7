"""The Hub snapshots a sweep folder downloaded: ``<out>/.sweep/snapshots/<commit>.json``.

A record is written (aside, then renamed into place) before the download starts and marked
``complete`` once it ended, so a sweep stopped at any moment (Ctrl-C, ``kill -9``, a scheduler's
cancel) leaves the list of what it put in the cache: a resume removes those snapshots after
their run, or at once when no run it is about to start needs them, and throws away a download
that never completed rather than trusting it. A snapshot in the cache without a record was there
before the sweep folder's first download, and is the user's: it is kept. One file per snapshot,
so that the jobs of a Slurm or Ray sweep each write their own without a lock.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from wsc_tasks.paths import write_text_aside
from wsc_tasks.sweep.folder import bookkeeping

FOLDER = "snapshots"  # under <out>/.sweep/
DOWNLOADING, COMPLETE = "downloading", "complete"


def _path(out: Path, commit: str) -> Path:
    return bookkeeping(out, FOLDER, f"{commit}.json")


def _write(path: Path, record: dict[str, Any]) -> None:
    write_text_aside(path, json.dumps(record, sort_keys=True) + "\n")


def read(out: Path, commit: str) -> dict[str, Any] | None:
    """The record of ``commit``'s snapshot, if this sweep folder downloaded it."""
    try:
        found = json.loads(_path(out, commit).read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def records(out: Path) -> list[dict[str, Any]]:
    """Every snapshot this sweep folder downloaded and has not removed, oldest first."""
    folder = out / ".sweep" / FOLDER
    found = [read(out, path.stem) for path in sorted(folder.glob("*.json"))]
    return sorted((r for r in found if r), key=lambda r: float(r.get("time", 0)))


def claim(out: Path, repo: str, commit: str, model: str) -> None:
    """Before a download: the snapshot is this folder's (a complete record stays complete)."""
    old = read(out, commit)
    models = sorted({*(old or {}).get("models", []), model})
    state = (old or {}).get("state", DOWNLOADING)
    _write(_path(out, commit), {"repo": repo, "commit": commit, "models": models,
                                "state": state, "time": time.time()})  # fmt: skip


def complete(out: Path, commit: str) -> None:
    """After a download that ended well: the snapshot can be trusted."""
    old = read(out, commit)
    if old is not None:
        _write(_path(out, commit), {**old, "state": COMPLETE})


def forget(out: Path, commit: str) -> None:
    """The snapshot is gone, or is the user's now (``--keep-weights``)."""
    _path(out, commit).unlink(missing_ok=True)
