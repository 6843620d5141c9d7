"""Hub models in a sweep: a query that expands to models, each pinned to its commit, checked before
any job starts, its weights fetched ahead of its run and removed from the cache after it.

- ``HubQuery``, ``expand``: a query of the Hub's models and the models it found
  (``wsc_tasks.sweep.hub_query``, re-exported here).
- ``pin``: the commit a model's ``revision`` (default ``main``) resolves to, through the Hub's API
  when it answers, else the local cache (said in the log); a gated repository without access and
  remote code (``auto_map`` in ``config.json``) without ``trust_remote_code`` are refused with one
  line naming what to do. The run is made at ``revision=<commit>`` and the commit is recorded in
  ``done.json``; a later sweep runs the model again when the revision moved.
- ``fetch`` / ``prefetch`` / ``remove``: the snapshot of a model downloaded before its run (the
  next ``--prefetch`` models' while it evaluates), each download a process of its own that
  ``stop`` kills (``wsc_tasks.sweep.download``), and deleted once its run ended, unless
  ``--keep-weights``, it was cached before the sweep folder's first download, or another model of
  the sweep uses it. What the folder downloaded is recorded before each download starts
  (``wsc_tasks.sweep.snapshots``), so ``clean`` lets a resume remove what an interrupted sweep
  left and never exceed the stated bound. Every fetch and removal is a line of
  ``<out>/.sweep/weights.jsonl`` with its time and the cache's size.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from wsc_tasks.sweep import snapshots, tether
from wsc_tasks.sweep.hub_query import EXPANDED, QUERY_KEYS, HubQuery, expand, parse_query, search
from wsc_tasks.sweep.models import ModelSpec

__all__ = [
    "COMMIT", "EVENTS", "EXPANDED", "QUERY_KEYS", "FetchFailed", "HubQuery", "Interrupted",
    "Refused", "Unresolved", "allow", "cache_size", "cached_commit", "clean", "commit_url",
    "count", "disk_bound", "env_for_run", "expand", "fetch", "hub_repo", "mark_shared",
    "parse_query", "pin", "prefetch", "record", "remove", "run_args", "search", "stop",
    "stopping", "wait_for_prefetches", "window",
]  # fmt: skip

log = logging.getLogger(f"lm_eval.{__name__}")

COMMIT = re.compile(r"^[0-9a-f]{40}$")
EVENTS = "weights.jsonl"  # in <out>/.sweep/: fetches and removals with the cache's size
DOWNLOADER = "wsc_tasks.sweep.download"  # the module a download's process runs


class Refused(Exception):
    """A model that cannot run as asked (gated, remote code, unknown); the message says the fix."""


class Unresolved(Refused):
    """Offline, and the revision is not in the local cache: its commit cannot be known."""


# -- one model's commit ----------------------------------------------------------------------------


def _args(spec: ModelSpec) -> dict[str, str]:
    return dict(item.split("=", 1) for item in spec.model_args.split(",") if "=" in item)


def hub_repo(spec: ModelSpec) -> str | None:
    """The Hub repository of ``pretrained=`` when it is one (not a local path, not ``default``)."""
    value = _args(spec).get("pretrained", "")
    if not value or value.startswith(("/", "~", ".")) or Path(value).expanduser().exists():
        return None
    return value if re.fullmatch(r"[\w.-]+/[\w.-]+|[\w.-]+", value) and "/" in value else None


def _cache() -> Path:
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def _repo_folder(repo: str) -> Path:
    return _cache() / f"models--{repo.replace('/', '--')}"


def _offline() -> bool:
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE)


def cached_commit(repo: str, revision: str) -> str | None:
    """The commit ``revision`` resolves to in the local cache (a commit stands for itself)."""
    if COMMIT.match(revision):
        return revision if (_repo_folder(repo) / "snapshots" / revision).is_dir() else None
    ref = _repo_folder(repo) / "refs" / revision
    return ref.read_text(encoding="utf-8").strip() if ref.is_file() else None


def _trusted(spec: ModelSpec) -> bool:
    return _args(spec).get("trust_remote_code", "").lower() in ("true", "1", "yes")


def _check_config(spec: ModelSpec, repo: str, config: Mapping[str, Any]) -> None:
    if config.get("auto_map") and not _trusted(spec):
        raise Refused(
            f"{repo} runs its own code (auto_map in its config.json): read it, then add "
            f"trust_remote_code=True to its model_args (or trust_remote_code: true to the query)"
        )


def pin(spec: ModelSpec, out: Path | None = None) -> ModelSpec:
    """``spec`` with its Hub commit (``spec.hub``) if ``pretrained=`` is a Hub repository, after
    checking access and remote code; ``Refused`` says why a model cannot run. ``cached_before``:
    its snapshot is in the cache and sweep folder ``out`` did not download it (it is kept)."""
    repo = hub_repo(spec)
    if repo is None:
        return spec
    revision = _args(spec).get("revision", "main")
    online = not _offline()
    commit = None
    if online:
        commit = _pin_online(spec, repo, revision)
    if commit is None:
        commit = cached_commit(repo, revision)
        if commit is None:
            why = "HF_HUB_OFFLINE is set" if not online else "the Hub cannot be reached"
            raise Unresolved(
                f"{repo}: {why} and revision {revision} is not in the local cache: run the sweep "
                "where the Hub answers, or download it first"
            )
        log.warning(
            f"wsc_tasks: sweep: {spec.name}: offline: {repo}@{revision} resolved to {commit} "
            "from the local cache, not the Hub"
        )
        config = _repo_folder(repo) / "snapshots" / commit / "config.json"
        if config.is_file():
            _check_config(spec, repo, json.loads(config.read_text(encoding="utf-8")))
    before = (_repo_folder(repo) / "snapshots" / commit).is_dir() and not _incomplete(repo)
    if out is not None and snapshots.read(out, commit) is not None:
        before = False  # this sweep folder downloaded it: removed after its run
    hub = {"repo": repo, "revision": revision, "commit": commit, "url": commit_url(repo, commit),
           "cached_before": before}  # fmt: skip
    return dataclasses.replace(spec, hub=hub)


def commit_url(repo: str, commit: str) -> str:
    """The page of the commit's files on the Hub (``HF_ENDPOINT``'s)."""
    from huggingface_hub import constants

    return f"{constants.ENDPOINT.rstrip('/')}/{repo}/tree/{commit}"


def _incomplete(repo: str) -> bool:
    return any((_repo_folder(repo) / "blobs").glob("*.incomplete"))


def _pin_online(spec: ModelSpec, repo: str, revision: str) -> str | None:
    """The commit from the Hub's API (None: the Hub cannot be reached). The model's info carries
    its config (``auto_map``); a ``HEAD`` of its ``config.json`` is what a gated repository
    refuses without access (nothing is downloaded)."""
    import httpx2
    from huggingface_hub import HfApi, get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import (
        GatedRepoError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        info = HfApi().model_info(repo, revision=revision)
        commit = str(info.sha)
        get_hf_file_metadata(hf_hub_url(repo, "config.json", revision=commit))
    except GatedRepoError:
        raise Refused(
            f"{repo} is gated: accept its terms on the Hub, then give a token with access "
            "(HF_TOKEN=… or hf auth login)"
        ) from None
    except RevisionNotFoundError:
        raise Refused(
            f"{repo} has no revision {revision!r}: fix revision= in its model_args"
        ) from None
    except RepositoryNotFoundError:
        raise Refused(
            f"{repo} is not on the Hub, or private: check the id, or give a token with access "
            "(HF_TOKEN=…)"
        ) from None
    except (httpx2.ConnectError, httpx2.TimeoutException, OfflineModeIsEnabled):
        return None
    _check_config(spec, repo, info.config or {})
    return commit


def run_args(spec: ModelSpec, args: str) -> str:
    """``args`` at the pinned commit: ``revision=<commit>`` instead of a branch or tag."""
    if not spec.hub:
        return args
    kept = [item for item in args.split(",") if item and not item.startswith("revision=")]
    return ",".join([*kept, f"revision={spec.hub['commit']}"])


# -- weights ---------------------------------------------------------------------------------------


def cache_size() -> int:
    """Bytes of the Hugging Face cache's model files (blobs, incomplete downloads included)."""
    root = _cache()
    return sum(p.stat().st_size for p in root.glob("models--*/blobs/*") if p.is_file())


def record(out: Path, event: str, spec: ModelSpec, **more: Any) -> None:
    """One line of ``<out>/.sweep/weights.jsonl``: what happened to whose weights, when, and the
    cache's size right after."""
    _event(out, event, spec.name, **more)


def _event(out: Path, event: str, model: str, **more: Any) -> None:
    path = out / ".sweep" / EVENTS
    path.parent.mkdir(parents=True, exist_ok=True)
    line = {"time": round(time.time(), 3), "event": event, "model": model,
            "cache_bytes": cache_size(), **more}  # fmt: skip
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, sort_keys=True) + "\n")


_fetching: dict[str, Future[None]] = {}  # commit -> its download in this process
_guard = threading.RLock()  # re-entered by stop() from a signal handler of the main thread
_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="wsc-prefetch")
_downloads: set[int] = set()  # process groups of the downloads under way in this process
_stopping = threading.Event()  # set by stop(): no download starts, those under way are killed


class Interrupted(Exception):
    """A download stopped by the sweep's own stop (Ctrl-C, SIGTERM, a scheduler's cancel)."""


class FetchFailed(Exception):
    """A download that failed for good: one line naming the repository, the Hub's reason and
    the fix (``wsc_tasks.sweep.download``)."""


def stop() -> None:
    """Start no more downloads in this process and kill those under way (their partial files
    are removed by the thread that waited for each)."""
    with _guard:  # a download is either refused by _child or in the set killed here
        _stopping.set()
        groups = list(_downloads)
    for group in groups:
        try:
            os.killpg(group, signal.SIGKILL)
        except ProcessLookupError:
            pass


def allow() -> None:
    """A new sweep in this process may download again."""
    _stopping.clear()


def stopping() -> bool:
    return _stopping.is_set()


def _child(repo: str, commit: str) -> None:
    """``wsc_tasks.sweep.download`` in a process group of its own, tied to this process."""
    command = tether.command(os.getpid(), [sys.executable, "-m", DOWNLOADER, repo, commit])
    with _guard:
        if _stopping.is_set():
            raise Interrupted(f"{repo}: download not started: the sweep is stopping")
        child = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
            start_new_session=True,
        )  # fmt: skip
        _downloads.add(child.pid)
    try:
        _, errors = child.communicate()
    except BaseException:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        raise
    finally:
        _downloads.discard(child.pid)
    if child.returncode == 0:
        return
    if _stopping.is_set() or child.returncode < 0:
        raise Interrupted(f"{repo}: download stopped ({child.returncode})")
    lines = [line for line in errors.strip().splitlines() if line.strip()]
    raise FetchFailed(lines[-1] if lines else f"{repo}: download ended with {child.returncode}")


def _download(spec: ModelSpec, out: Path, why: str) -> None:
    hub = spec.hub
    ours = not hub.get("cached_before")
    if ours:  # recorded first: a sweep stopped half way leaves the list of what it downloaded
        snapshots.claim(out, hub["repo"], hub["commit"], spec.name)
    record(out, "fetch-start", spec, why=why)
    clock = time.monotonic()
    try:
        _child(hub["repo"], hub["commit"])
    except BaseException:
        if ours and (snapshots.read(out, hub["commit"]) or {}).get("state") != snapshots.COMPLETE:
            _purge(hub["repo"], hub["commit"])  # nothing half-downloaded is left to trust
        record(out, "fetch-stopped" if _stopping.is_set() else "fetch-failed", spec, why=why)
        raise
    if ours:
        snapshots.complete(out, hub["commit"])
    if not COMMIT.match(hub["revision"]):  # as a download by branch would: offline, main resolves
        ref = _repo_folder(hub["repo"]) / "refs" / hub["revision"]
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(hub["commit"], encoding="utf-8")
    record(out, "fetch-end", spec, why=why, seconds=round(time.monotonic() - clock, 3))


def _start(spec: ModelSpec, out: Path, why: str) -> Future[None]:
    with _guard:
        future = _fetching.get(spec.hub["commit"])
        if future is None or (future.done() and future.exception() is not None):
            future = _pool.submit(_download, spec, out, why)
            _fetching[spec.hub["commit"]] = future
        return future


def fetch(spec: ModelSpec, out: Path) -> None:
    """The model's snapshot in the cache before its run (waits for a prefetch under way);
    ``Interrupted`` when the sweep is stopping, ``FetchFailed`` naming the Hub's reason."""
    if _stopping.is_set():
        raise Interrupted(f"{spec.name}: not fetched: the sweep is stopping")
    if spec.hub and not _offline():
        _start(spec, out, "its run").result()


def prefetch(specs: Sequence[ModelSpec], out: Path) -> list[Future[None]]:
    """Start downloading the snapshots of ``specs`` (the next models) in the background; a model
    whose run has started (``spec.json`` in its folder: it fetches its own) is left alone, so a
    snapshot is never fetched again after its run removed it."""
    if _offline() or _stopping.is_set():
        return []
    return [
        _start(spec, out, "ahead")
        for spec in specs
        if spec.hub and not (out / spec.name / "spec.json").exists()
    ]


def _purge(repo: str, commit: str) -> int:
    """Delete ``commit``'s snapshot of ``repo`` and the repository's partial downloads; bytes
    freed."""
    from huggingface_hub import scan_cache_dir

    freed = 0
    if (_repo_folder(repo) / "snapshots" / commit).exists():
        strategy = scan_cache_dir().delete_revisions(commit)
        strategy.execute()
        freed = strategy.expected_freed_size
    for partial in (_repo_folder(repo) / "blobs").glob("*.incomplete"):
        freed += partial.stat().st_size
        partial.unlink(missing_ok=True)
    return freed


def remove(spec: ModelSpec, out: Path, keep_weights: bool) -> None:
    """Delete the model's snapshot once its run ended if this sweep folder downloaded it, unless
    it must stay (logged either way)."""
    hub = spec.hub
    if not hub:
        return
    ours = snapshots.read(out, hub["commit"]) is not None
    if keep_weights:
        snapshots.forget(out, hub["commit"])  # the user's now: no later sweep removes it
    keep = ("--keep-weights" if keep_weights else
            "another model of the sweep uses it" if hub.get("shared") else
            "it was in the cache before the sweep" if not ours else "")  # fmt: skip
    if keep:
        log.info(f"wsc_tasks: sweep: {spec.name}: weights kept in the cache ({keep})")
        return
    with _guard:
        _fetching.pop(hub["commit"], None)
    freed = _purge(hub["repo"], hub["commit"])
    snapshots.forget(out, hub["commit"])
    record(out, "removed", spec, freed=freed)
    log.info(
        f"wsc_tasks: sweep: {spec.name}: removed {hub['repo']}@{hub['commit'][:12]} from the "
        f"cache ({freed / 1e6:.1f} MB)"
    )


def clean(out: Path, keep: set[str]) -> list[str]:
    """Remove the snapshots this sweep folder downloaded that no run about to start needs
    (``keep``: their commits), and the partial files of any download that never completed (a
    resume downloads those again rather than trusting them); returns what was removed."""
    removed = []
    for found in snapshots.records(out):
        commit, repo = found["commit"], found["repo"]
        if commit in keep and found.get("state") == snapshots.COMPLETE:
            continue
        freed = _purge(repo, commit)
        snapshots.forget(out, commit)
        with _guard:
            _fetching.pop(commit, None)
        why = ("its download never completed" if commit in keep else
               "no run about to start needs it")  # fmt: skip
        removed.append(f"{repo}@{commit[:12]} ({why}, {freed / 1e6:.1f} MB)")
        _event(out, "removed", ",".join(found.get("models", [])), freed=freed, why=why)
    return removed


def mark_shared(specs: Sequence[ModelSpec]) -> list[ModelSpec]:
    """``hub['shared']`` on models whose commit another model of the sweep also runs: their
    weights stay until the sweep's end rather than being fetched twice."""
    commits = [s.hub.get("commit") for s in specs if s.hub]
    return [
        dataclasses.replace(s, hub={**s.hub, "shared": True})
        if s.hub and commits.count(s.hub["commit"]) > 1
        else s
        for s in specs
    ]


def count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def disk_bound(
    specs: Sequence[ModelSpec], running: int | None, ahead: int, keep_weights: bool = False
) -> str:
    """The sentence that states how many snapshots can be on disk at once, and their size."""
    hub = [s for s in specs if s.hub]
    if not hub:
        return ""
    models = count(len(hub), "Hub model")
    if keep_weights:
        return (
            f"weights: {models}, each fetched before its run and {ahead} ahead, kept in the "
            "cache after it (--keep-weights): every snapshot stays on disk"
        )
    if running is None:
        return (
            f"weights: {models}, {ahead} fetched ahead of each run; no bound on the snapshots "
            "on disk at once without a cap on the models running (--max-parallel)"
        )
    most = min(len(hub), running + running * ahead)
    return (
        f"weights: {models}, each fetched before its run and {ahead} ahead, removed after it: "
        f"at most {count(most, 'snapshot')} on disk at once ({running} running + {ahead} ahead "
        "of each)"
    )


def window(specs: Sequence[ModelSpec], running: int | None, ahead: int) -> set[str]:
    """The commits of the Hub models that a sweep of ``specs`` (in order) holds on disk first:
    what a resume keeps of the snapshots an earlier sweep left."""
    hub = [s.hub["commit"] for s in specs if s.hub]
    return set(hub if running is None else hub[: running + running * ahead])


def env_for_run(spec: ModelSpec, env: Mapping[str, str] | None) -> dict[str, str] | None:
    """The run's environment: offline once its snapshot is in the cache (nothing downloads
    while the model evaluates, and a moved branch cannot change what it loads)."""
    if not spec.hub:
        return dict(env) if env is not None else None
    return {**(env if env is not None else os.environ), "HF_HUB_OFFLINE": "1"}


def wait_for_prefetches() -> None:
    """Wait until the downloads this process started have ended (a scheduler's job, before it
    exits); their errors are left to the models' own fetch."""
    with _guard:
        pending = list(_fetching.values())
    for future in pending:
        future.exception()
