"""The sweep's queue (``wsc_tasks.sweep.queue``): which model a worker takes next, and what the
sweep makes of the workers' lines, on hand-written lines (no model runs here)."""

from __future__ import annotations

import os
import time

import pytest

from wsc_tasks.sweep import folder as protocol
from wsc_tasks.sweep.lock import FileLock
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import RunState, SweepOptions
from wsc_tasks.sweep.queue import MAX_DEATHS, Queue, queues


@pytest.fixture
def queue(tmp_path) -> Queue:
    specs = [ModelSpec(name, "wsc-chance", "seed=1") for name in ("a", "b", "c")]
    return Queue.write("local", SweepOptions(tmp_path / "out", "wsc266"), specs)


def _verdict(queue: Queue, name: str, file: str = "done.json") -> None:
    folder = queue.options.out / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text("{}")


def test_the_queue_is_read_back_as_written(queue, tmp_path):
    again = Queue.read(queue.path)
    assert again == queue and queues(queue.options.out) == [queue.path]
    assert again.options.out.is_absolute() and again.worker(3) == f"{queue.name}.3"


def test_workers_take_models_in_order_skipping_what_is_settled_or_held(queue):
    assert queue.next(0).name == "a"
    _verdict(queue, "a")
    assert queue.next(0).name == "b"
    with FileLock(protocol.model_lock(queue.options.out, "b"), "b"):  # another worker's
        assert queue.next(1).name == "c"
        assert [s.name for s in queue.following(queue.specs[0], 5, 1)] == ["c"]
    assert queue.next(1, tried={"b"}).name == "c"


def test_a_verdict_older_than_the_queue_is_the_runners_to_judge(tmp_path):
    specs = [ModelSpec("a", "wsc-chance", "seed=1")]
    options = SweepOptions(tmp_path / "out", "wsc266")
    (options.out / "a").mkdir(parents=True)
    (options.out / "a" / "error.txt").write_text("an earlier sweep's failure\n")
    old = time.time() - 60
    os.utime(options.out / "a" / "error.txt", (old, old))
    queue = Queue.write("local", options, specs)  # e.g. --retry-failed
    assert not queue.settled("a") and queue.next(0).name == "a"


def test_a_model_given_back_interrupted_is_its_own_workers_to_take(queue):
    queue.report(0, "start", "a")
    queue.report(0, "end", "a", state="interrupted")  # a requeue or cancel of worker 0
    assert queue.next(1).name == "b"  # not a: worker 0's restart, or the sweep, settles it
    assert queue.next(0).name == "a"
    ended = {0: RunState("ended", "Slurm job 7_0 ended in state CANCELLED")}
    assert queue.states({1}, set(), ended)["a"] == ended[0]  # its error.txt says how, at once
    assert queue.states({1}, {0}, {})["a"] == RunState("queued")  # requeued: comes back


def test_a_model_whose_workers_die_with_it_is_run_again_then_settled(queue):
    queue.report(0, "start", "a")  # worker 0 killed while it ran a
    assert queue.next(1).name == "a"  # run again by the next worker
    queue.report(1, "start", "a")  # and that one killed too
    assert queue.history().deaths["a"] == MAX_DEATHS
    assert queue.next(2).name == "b"
    how = RunState("ended", "its worker (pid 9) was killed by SIGKILL (out of memory?)")
    states = queue.states({2}, set(), {0: how, 1: how})
    assert states["b"].state == "queued"
    assert states["a"].ended and states["a"].outcome is None  # settled while b waits
    assert states["a"].detail == f"2 workers died while running it; the last: {how.detail}"


def test_a_restarted_worker_counts_its_own_death(queue):
    """A start after a start without an end, in one worker's lines: it died there (a Ray actor
    started again, a Slurm task requeued after a node failure)."""
    for _ in range(MAX_DEATHS):
        queue.report(0, "start", "a")
    assert queue.history().deaths == {"a": MAX_DEATHS}
    assert queue.next(0).name == "b"


def test_a_worker_that_found_a_model_held_did_nothing_to_it(queue):
    queue.report(0, "start", "a")
    queue.report(1, "start", "a")
    queue.report(1, "end", "a", state="busy")  # worker 0 held its lock
    history = queue.history()
    assert history.last["a"]["worker"] == 0 and history.deaths == {"a": 1}  # 0 runs it
    assert queue.states({0, 1}, set(), {})["a"] == RunState("running")


def test_what_the_sweep_sees_once_no_worker_is_left(queue):
    queue.report(0, "start", "a")
    _verdict(queue, "a")
    queue.report(0, "end", "a", state="done")
    queue.report(0, "start", "b")
    queue.report(0, "end", "b", state="busy")  # held by a process outside the sweep
    states = queue.states(set(), set(), {0: RunState("ended", "")})
    assert states["a"] == RunState("ended")
    assert states["b"] == RunState("ended", outcome="busy")
    assert states["c"] == RunState("ended", "no worker of the sweep took it", "interrupted")
    assert queue.job_of("a") is None
    queue.report(1, "start", "c", job="12_1")
    assert queue.job_of("c") == "12_1"
