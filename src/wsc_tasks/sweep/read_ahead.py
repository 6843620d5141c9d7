"""The next model's weights read into memory while the current one computes.

While a worker evaluates one model it reads the weight files of the model it will take next
(``queue.following``), once a Hub model's download has ended: each file read through once, so
that the kernel holds it in its page cache and the next model's load copies it from memory
instead of reading the disk. One model ahead, in a thread (a read releases the GIL), and only
when the files fit in half the memory the kernel reports available (``MemAvailable``): a read
that would push out the memory of the model computing now is left out, and its reason recorded.
What was read, in how long, and whether it ended before the model's own run began is recorded
in the worker's line of that model (``queue``), so a sweep shows what overlapped.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from wsc_tasks.paths import MODEL_PATH_ARGS
from wsc_tasks.sweep.models import ModelSpec, resolved_args

log = logging.getLogger(f"lm_eval.{__name__}")

WEIGHTS = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".ckpt", ".msgpack", ".h5")
CHUNK = 16 << 20  # bytes per read


def _args(spec: ModelSpec) -> dict[str, str]:
    items = [item for item in resolved_args(spec).split(",") if "=" in item]
    return dict(item.split("=", 1) for item in items)


def _hub_snapshot(spec: ModelSpec) -> Path | None:
    from huggingface_hub import constants

    repo, commit = spec.hub.get("repo"), spec.hub.get("commit")
    if not repo or not commit:
        return None
    folder = Path(constants.HF_HUB_CACHE) / f"models--{repo.replace('/', '--')}"
    return folder / "snapshots" / commit


def weight_files(spec: ModelSpec) -> list[Path]:
    """The files of the model's weights on this machine: a local folder's weight files (only
    ``gguf_file`` of a GGUF folder), those of a Hub model's snapshot, and of its adapters."""
    try:
        args = _args(spec)
    except SystemExit:  # the default model is not installed: its run says so
        return []
    folders = [_hub_snapshot(spec)] if spec.hub else []
    folders += [Path(args[key]).expanduser() for key in MODEL_PATH_ARGS if args.get(key)]
    found: dict[Path, None] = {}
    for folder in folders:
        if folder is None or not folder.exists():
            continue
        if folder.is_file():
            found[folder] = None
            continue
        gguf = args.get("gguf_file")
        names = [folder / gguf] if gguf else sorted(folder.iterdir())
        for path in names:
            if path.suffix in WEIGHTS and path.is_file():
                found[path.resolve()] = None
    return list(found)


def available_bytes() -> int | None:
    """The memory the kernel reports available (``MemAvailable``), or None off Linux."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


class ReadAhead:
    """One model's weights read in a thread, at most one model at a time."""

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._model: str | None = None
        self._record: dict[str, Any] = {}

    def start(self, spec: ModelSpec, download: Future[None] | None = None) -> None:
        """Read ``spec``'s weights (after ``download``, its Hub download, ends)."""
        if self._model == spec.name:
            return
        self.stop()
        self._stop.clear()
        self._model = spec.name
        self._record = {"model": spec.name, "state": "started", "bytes": 0}
        self._thread = threading.Thread(
            target=self._read, args=(spec, download), daemon=True, name="wsc-read-ahead"
        )
        self._thread.start()

    def _read(self, spec: ModelSpec, download: Future[None] | None) -> None:
        record = self._record
        start = time.monotonic()
        try:
            if download is not None and download.exception() is not None:
                record.update(state="not read", why="its download failed")
                return
            files = weight_files(spec)
            total = sum(path.stat().st_size for path in files)
            room = available_bytes()
            if room is not None and total > room // 2:
                record.update(state="not read", why=f"{total} bytes, {room} available")
                return
            buffer = bytearray(CHUNK)
            for path in files:
                with path.open("rb", buffering=0) as handle:
                    if hasattr(os, "posix_fadvise"):
                        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_WILLNEED)
                    while not self._stop.is_set():
                        read = handle.readinto(buffer)
                        if not read:
                            break
                        record["bytes"] += read
                if self._stop.is_set():
                    record.update(state="stopped")
                    return
            record.update(state="read", files=len(files))
        except Exception as error:  # noqa: BLE001 - a read ahead never fails the sweep
            record.update(state="not read", why=f"{type(error).__name__}: {error}")
        finally:
            record["seconds"] = round(time.monotonic() - start, 3)
            record["ended"] = round(time.time(), 3)

    def taken(self, spec: ModelSpec) -> dict[str, Any]:
        """What was read of ``spec``'s weights before its run began (empty if nothing was
        started for it); a read still under way goes on, its load reads the rest."""
        if self._model != spec.name:
            return {}
        found = dict(self._record)
        found["before_its_run"] = found.get("state") == "read"
        return found

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._thread, self._model = None, None
