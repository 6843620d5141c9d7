"""A sweep: which models need a run, hand them to a launcher, watch them end, stop them on Ctrl-C.

Hub models are pinned to their commit first (``hub.pin``); one that cannot run (gated, remote
code, unknown) is refused with one line and an ``error.txt`` before any job starts, and the
others run. The models' folders decide (``folder.status``): done models are skipped, failed
ones too unless ``retry_failed``, stale ones (another request, changed weights or tokenizer, a
Hub revision now at another commit) and the rest are run. A run that ends without ``done.json``
or ``error.txt`` (a scheduler killed it) gets an ``error.txt`` with the launcher's account of how
it ended; while a live process still holds its lock (a worker the scheduler signalled, still
unwinding), the sweep waits for it to let go, up to ``ENDING_S``. The sweep holds
``<out>/.sweep/lock``, so a second sweep on the same folder stops at once naming the first.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from wsc_tasks.paths import read_done
from wsc_tasks.progress import ModelLines, progress
from wsc_tasks.sweep import folder as protocol
from wsc_tasks.sweep import hub
from wsc_tasks.sweep.identity import identify
from wsc_tasks.sweep.launchers.base import Launcher, RunState
from wsc_tasks.sweep.lock import FileLock, holder_alive
from wsc_tasks.sweep.models import ModelSpec

log = logging.getLogger(f"lm_eval.{__name__}")

# How long an ended run's lock may stay held before the model counts as held by another process
# (busy): longer than a scheduler takes from its SIGTERM to its SIGKILL (Slurm's KillWait, 30 s)
ENDING_S = 120.0


def _pin(spec: ModelSpec, out: Path) -> ModelSpec | None:
    """``spec`` pinned to its Hub commit, or None (refused: one line, and its ``error.txt``)."""
    folder = out / spec.name
    try:
        return hub.pin(spec, out)
    except hub.Unresolved as error:
        done = (read_done(folder) or {}).get("hub")
        if done:  # offline: whether the revision moved cannot be known; the run made stands
            log.warning(
                f"wsc_tasks: sweep: {spec.name}: offline, {done['repo']}@{done['revision']} not "
                f"in the local cache: its run of commit {done['commit']} is kept ({error})"
            )
            return dataclasses.replace(spec, hub=dict(done))
        _refuse(spec, folder, error)
    except hub.Refused as error:
        _refuse(spec, folder, error)
    return None


def _refuse(spec: ModelSpec, folder: Path, error: Exception) -> None:
    """One line naming what to do, and the model's ``error.txt`` (unless a run of it is under
    way or finished: its files are not this check's to overwrite)."""
    log.warning(f"wsc_tasks: sweep: {spec.name}: refused before its run: {error}")
    if not folder.exists() or (folder / protocol.SWEEP_ERROR).is_file():
        protocol.write_error(folder, f"{protocol.REFUSED}{error}")


def plan(specs: Sequence[ModelSpec], launcher: Launcher) -> tuple[list[ModelSpec], set[str]]:
    """(models to submit, pinned to their Hub commits; models an earlier sweep's jobs are still
    running); every count logged."""
    options = launcher.options
    adopted = launcher.adopt(specs)
    todo, counts, pinned = [], Counter[str](), {}
    for given in specs:
        if given.name in adopted:
            counts["queued or running from an earlier sweep"] += 1
            continue
        spec = _pin(given, options.out)
        if spec is None:
            counts["refused (not run)"] += 1
            continue
        if spec.hub:
            pinned[spec.name] = spec
        try:
            key = identify(spec).fingerprint
        except SystemExit:  # the default model is missing: its run says so in error.txt
            key = ""
        asked = protocol.request(spec, options)
        found = protocol.status(options.out / spec.name, asked, key, spec.hub)
        if found.state == "done" or (found.state == "failed" and not options.retry_failed):
            counts[f"{found.state} (skipped)"] += 1
            if spec.hub:
                pinned[spec.name] = dataclasses.replace(spec, hub={**spec.hub, "skip": found.state})
            continue
        if found.state == "stale":
            log.warning(f"wsc_tasks: sweep: {spec.name}: run again: {found.why}")
        counts[f"{found.state} (to run)"] += 1
        todo.append(spec)
    summary = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
    log.info(f"wsc_tasks: sweep: {len(specs)} models with --launcher {launcher.name}: {summary}")
    todo = hub.mark_shared(todo)
    _weights(list(pinned.values()), todo, adopted, launcher)
    return todo, adopted


def _weights(
    pinned: list[ModelSpec], todo: list[ModelSpec], adopted: set[str], launcher: Launcher
) -> None:
    """Before any run, where the user sees it: the Hub models to run at their commits, the
    snapshots of the cache that stay, what an earlier sweep of the folder left and is removed
    now (keeping the first snapshots this sweep runs), and the bound on the disk."""
    options, running = launcher.options, launcher.running_at_once()
    if pinned:
        lines = [
            f"  {s.name}: {s.hub['repo']}@{s.hub['commit'][:12]} ({s.hub['revision']})"
            + (f", {s.hub['skip']}: skipped" if "skip" in s.hub else "")
            for s in pinned
        ]
        print(f"wsc-tasks sweep: {hub.count(len(pinned), 'Hub model')}, at these commits:",
              *lines, sep="\n", file=sys.stderr)  # fmt: skip
    kept = sorted({f"{s.hub['repo']}@{s.hub['commit'][:12]}" for s in todo
                   if s.hub and s.hub.get("cached_before")})  # fmt: skip
    if kept and not options.keep_weights:
        log.warning(
            f"wsc_tasks: sweep: weights: {', '.join(kept)} were in the cache before this sweep "
            "folder downloaded anything: kept after their runs"
        )
    if adopted:  # an earlier sweep's jobs may be reading or downloading any of them
        log.warning("wsc_tasks: sweep: weights: runs of an earlier sweep are under way: the "
                    "snapshots it downloaded are left until the end of this one")  # fmt: skip
    else:
        for line in hub.clean(options.out, hub.window(todo, running, options.prefetch)):
            log.warning(f"wsc_tasks: sweep: weights: removed {line}, left by an earlier sweep")
    bound = hub.disk_bound(todo, running, options.prefetch, options.keep_weights)
    if bound:  # what the disk must hold: said where the user sees it, as the submission is
        print(f"wsc-tasks sweep: {bound}", file=sys.stderr)


def _settle(spec: ModelSpec, run: RunState, launcher: Launcher) -> str:
    """The final state of an ended run, from its folder; an ``error.txt`` for one that ended
    without a word (unless a live process still holds the model: then it is busy)."""
    out = launcher.options.out
    folder = out / spec.name
    if (folder / protocol.SWEEP_DONE).is_file():
        return "done"
    if (folder / protocol.SWEEP_ERROR).is_file():  # its worker's verdict, said here too
        state = protocol.verdict(folder)
        summary = protocol.error_summary(folder)
        log.warning(f"wsc_tasks: sweep: {spec.name}" + (f" failed: {summary}" if state == "failed"
                    else f": {summary}"))  # fmt: skip
        return state
    if run.outcome in ("busy", "interrupted"):
        return run.outcome
    if holder_alive(protocol.model_lock(out, spec.name)):
        return "busy"
    protocol.write_error(folder, run.detail or "the run ended without done.json or error.txt")
    log.warning(f"wsc_tasks: sweep: {spec.name} failed: {protocol.error_summary(folder)}")
    return "failed"


def _ending(out: Path, name: str, run: RunState, since_s: float) -> bool:
    """Whether a run that ended without a word (its scheduler's account only) may still be
    letting go of the model: a live process holds its lock, for less than ``ENDING_S`` since
    the launcher saw it end. A scheduler marks a job ended once it has signalled it, and its
    worker may take a few seconds more to unwind; its verdict must not be taken as busy."""
    if run.outcome is not None or since_s >= ENDING_S:
        return False
    return holder_alive(protocol.model_lock(out, name))


def sweep(specs: Sequence[ModelSpec], launcher: Launcher) -> dict[str, str]:
    """Run the models that need it with ``launcher``; name -> done, failed, busy, interrupted,
    or (when the launcher does not wait) queued. Ctrl-C cancels the sweep's runs, then raises."""
    out = launcher.options.out
    out.mkdir(parents=True, exist_ok=True)
    hub.allow()
    with FileLock(protocol.sweep_lock(out), f"output folder {out}"):
        protocol.clear_stopping(out)
        try:
            return _sweep(specs, launcher)
        except BaseException:
            protocol.mark_stopping(out)  # before the runs die: none is then taken as failed
            launcher.cancel()
            raise
        finally:
            launcher.close()


def _sweep(specs: Sequence[ModelSpec], launcher: Launcher) -> dict[str, str]:
    out = launcher.options.out
    todo, adopted = plan(specs, launcher)
    if todo:
        launcher.submit(todo)
    submitted = {s.name for s in todo}  # pinned: equal to the given spec by name only
    watched = {s.name: s for s in specs if s.name in adopted or s.name in submitted}
    final: dict[str, str] = {}
    if not launcher.waits:
        word = "not submitted (dry run)" if launcher.dry_run else "queued"
        queued = {name: word for name in watched}
        return _in_order(specs, queued | _folder_states(specs, launcher, watched))
    bar = progress(len(watched), "sweep: models", "model", launcher.options.quiet)
    lines = ModelLines(len(watched), launcher.options.quiet)  # where the bar is not shown
    ended_at: dict[str, float] = {}
    with bar:
        while len(final) < len(watched):
            for name, run in launcher.states().items():
                if name not in watched or name in final or run.state == "queued":
                    continue
                lines.started(name)
                if not run.ended:
                    continue
                ended_s = time.monotonic() - ended_at.setdefault(name, time.monotonic())
                # a shared filesystem may show its files a little later; its worker may still
                # be letting go of it
                early = ended_s < launcher.settle_s or _ending(out, name, run, ended_s)
                if early and not protocol.has_result(out / name):
                    continue
                final[name] = _settle(watched[name], run, launcher)
                bar.update()
                lines.finished(name, final[name])
            running = [n for n in watched if n not in final]
            bar.set_postfix_str(", ".join(_running(out, n) for n in running))
            if len(final) < len(watched):
                time.sleep(launcher.poll_s)
    held = {s.hub["commit"] for s in watched.values()
            if s.hub and final.get(s.name) in ("busy", "interrupted")}  # fmt: skip
    for line in hub.clean(out, held):  # those the sweep's models shared
        log.info(f"wsc_tasks: sweep: weights: removed {line} at the sweep's end")
    return _in_order(specs, _folder_states(specs, launcher, watched) | final)


PERCENT = re.compile(rb"(\d{1,3})%\|")  # a tqdm bar of lm-eval in a run's log


def _running(out: Path, name: str) -> str:
    """A model's progress as its log shows it: how far lm-eval's last progress bar got (the
    requests, once it is past building them), so the sweep's bar moves while a model runs."""
    try:
        with (out / name / protocol.LOG).open("rb") as log_file:
            log_file.seek(0, 2)
            log_file.seek(max(0, log_file.tell() - 4096))
            tail = log_file.read()
    except OSError:
        return f"{name} waiting"
    found = PERCENT.findall(tail)
    return f"{name} {int(found[-1])}%" if found else f"{name} started"


def _in_order(specs: Sequence[ModelSpec], states: dict[str, str]) -> dict[str, str]:
    return {spec.name: states[spec.name] for spec in specs}


def _folder_states(
    specs: Sequence[ModelSpec], launcher: Launcher, skip: dict[str, ModelSpec]
) -> dict[str, str]:
    states = {}
    for spec in specs:
        if spec.name in skip:
            continue
        folder = launcher.options.out / spec.name
        done = (folder / protocol.SWEEP_DONE).is_file()
        states[spec.name] = "done" if done else protocol.verdict(folder)
    return states
