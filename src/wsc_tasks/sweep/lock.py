"""A lock file that holds between processes on different nodes of a shared filesystem.

``flock`` is not enough: NFS mounted with ``nolock``, or an old server, keeps it local to a node,
so two nodes could both clear and write one model's folder. The lock is instead a file created with
``O_CREAT | O_EXCL`` (atomic on local filesystems and on NFSv3 and later) holding its holder as
JSON (host, pid, the process's start time, the scheduler's job id, a random token). While it is
held a thread touches it every ``HEARTBEAT_S`` seconds. A lock is stale, and the next taker renames
it away, when it was left by an earlier run of the same Slurm job (a requeue), when its holder ran
on this host and that process is gone, or when it ran elsewhere and its heartbeat is older than
``STALE_S`` (measured against a file touched now on the same filesystem, so node clocks need not
agree).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import TypedDict

HEARTBEAT_S = 30.0
STALE_S = 300.0
YOUNG_S = 10.0  # a lock file may be empty for an instant between its creation and its holder


class Busy(RuntimeError):
    """A lock another live process holds; the message names the holder."""


JOB_ENV = "WSC_TASKS_JOB"  # set by a launcher's batch script: the scheduler's id of the job


def job_id() -> str | None:
    """This process's scheduler job, if any (a requeued job keeps its id)."""
    return os.environ.get(JOB_ENV) or None


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state first), or [] off Linux."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _start_time(pid: int) -> str | None:
    """The start time of a process (field 22 of /proc/PID/stat), which tells a reused pid."""
    fields = _stat(pid)
    return fields[19] if len(fields) > 19 else None


def _alive(pid: int, started: str | None) -> bool:
    """Running, and the same process (a zombie nobody reaped yet counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive
    fields = _stat(pid)
    if fields and fields[0] in ("Z", "X"):
        return False
    now = fields[19] if len(fields) > 19 else None
    return started is None or now is None or now == started


class Holder(TypedDict, total=False):
    """A lock file's record of the process holding it (empty: its holder never wrote it)."""

    host: str
    pid: int
    pid_started: str | None  # the process's start time, so that a reused pid is told apart
    job: str | None  # the scheduler's job id (Slurm), if any
    started: str
    token: str  # this lock's own, so that a stale lock is broken only by its taker


def _describe(holder: Holder | None) -> str:
    if not holder:
        return "another process"
    job = f" (job {holder['job']})" if holder.get("job") else ""
    return f"pid {holder.get('pid')} on {holder.get('host')}{job}, started {holder.get('started')}"


class FileLock:
    """``with FileLock(path, what):`` holds ``path`` for the block, or raises ``Busy``."""

    def __init__(self, path: Path, what: str, wait_s: float = 0.0) -> None:
        self.path = path
        self.what = what
        self.wait_s = wait_s
        self.token = secrets.token_hex(8)
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def _holder_record(self, pid: int) -> Holder:
        return {
            "host": socket.gethostname(),
            "pid": pid,
            "pid_started": _start_time(pid),
            "job": job_id(),
            "started": time.strftime("%FT%T%z"),
            "token": self.token,
        }

    def read(self) -> tuple[Holder | None, float | None]:
        """(holder, age of its heartbeat in seconds), or (None, None) if there is no lock."""
        try:
            text = self.path.read_text(encoding="utf-8")
            mtime = self.path.stat().st_mtime
        except FileNotFoundError:
            return None, None
        holder: Holder
        try:
            holder = json.loads(text)
        except ValueError:
            holder = {}
        return holder, max(0.0, self._now() - mtime)

    def _now(self) -> float:
        """The filesystem's clock: the mtime of a file touched now beside the lock."""
        probe = self.path.with_name(f".clock.{self.token}")
        try:
            probe.touch()
            return probe.stat().st_mtime
        except OSError:
            return time.time()
        finally:
            probe.unlink(missing_ok=True)

    def stale(self, holder: Holder, age: float) -> str | None:
        """Why the lock of ``holder`` is stale, or None while it may still be held."""
        if not holder:
            return "its holder never wrote it" if age > YOUNG_S else None
        if holder.get("job") and holder.get("job") == job_id():
            return f"left by an earlier run of this job ({_describe(holder)})"
        if holder.get("host") == socket.gethostname():
            pid = holder.get("pid")
            if isinstance(pid, int) and _alive(pid, holder.get("pid_started")):
                return None
            return f"{_describe(holder)} is gone"
        if age > STALE_S:
            return f"no heartbeat from {_describe(holder)} for {age:.0f} s"
        return None

    def _create(self) -> bool:
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(self._holder_record(os.getpid()), handle)
        return True

    def _break(self, holder: Holder) -> None:
        """Move a stale lock aside; if another taker replaced it meanwhile, put theirs back."""
        aside = self.path.with_name(f"{self.path.name}.stale.{self.token}")
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:
            return
        try:
            moved = json.loads(aside.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            moved = {}
        if moved.get("token") != holder.get("token"):
            try:
                os.link(aside, self.path)
            except FileExistsError:
                pass
        aside.unlink(missing_ok=True)

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + self.wait_s
        while not self._create():
            holder, age = self.read()
            if holder is None or age is None:
                continue  # released meanwhile
            why = self.stale(holder, age)
            if why is not None:
                self._break(holder)
                continue
            if time.monotonic() >= deadline:
                raise Busy(f"{self.what} is in use by {_describe(holder)}")
            time.sleep(min(5.0, max(0.1, deadline - time.monotonic())))
        self._stop.clear()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                os.utime(self.path)
            except OSError:
                return

    def stamp(self, pid: int) -> None:
        """Name ``pid`` (a child doing the locked work) as the process whose life the lock
        follows: if it dies with its parent, a resume on this host sees the lock stale at once."""
        record = json.dumps(self._holder_record(pid))
        temporary = self.path.with_name(f"{self.path.name}.{self.token}")
        temporary.write_text(record, encoding="utf-8")
        os.replace(temporary, self.path)

    def release(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()
            self._beat = None
        holder, _ = self.read()
        if holder is not None and holder.get("token") == self.token:
            self.path.unlink(missing_ok=True)

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.release()


def holder_alive(path: Path) -> bool:
    """Whether a live process holds the lock at ``path``."""
    lock = FileLock(path, str(path))
    holder, age = lock.read()
    return holder is not None and age is not None and lock.stale(holder, age) is None
