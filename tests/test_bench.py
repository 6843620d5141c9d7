"""``wsc-tasks bench``: the phases of a run and their timers (timed on a fake clock)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from wsc_tasks.cli import bench
from wsc_tasks.cli import main as cli


def test_phase_timer_is_exclusive_of_nested_phases(monkeypatch):
    """On a fake clock: a 10 s outer phase that spends 3 s in a nested one is charged 7 s."""

    class Clock:
        now = 0.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    monkeypatch.setattr(bench, "time", SimpleNamespace(perf_counter=clock))

    class Work:
        @staticmethod
        def outer():
            clock.now += 4.0
            Work.inner()
            clock.now += 3.0
            return "done"

        @staticmethod
        def inner():
            clock.now += 3.0

    timer = bench.PhaseTimer()
    timer.wrap(Work, "outer", "result processing")
    timer.wrap(Work, "inner", "tokenization")
    assert Work.outer() == "done"
    assert clock.now == 10.0
    assert timer.seconds["result processing"] == 7.0
    assert timer.seconds["tokenization"] == 3.0
    assert not timer._stack
    Work.inner()  # called alone, a phase is charged all of its time
    assert timer.seconds["tokenization"] == 6.0 and timer.seconds["result processing"] == 7.0
    text = bench.report(timer, wall=clock.now, cpu=0.5)
    assert all(phase in text for phase in bench.PHASES)
    assert "  result processing       7.00 s   53.8%" in text
    assert "  tokenization            6.00 s   46.2%" in text
    assert "  other                   0.00 s    0.0%" in text  # nothing counted twice or lost
    assert "wall / model forward time: inf" in text  # no model time was measured


@pytest.mark.slow
def test_bench_prints_every_phase_and_the_request_counts(data_dir, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    argv = ["bench", "--model", "wsc-chance", "--model_args", "seed=1"]
    assert cli([*argv, "--tasks", "wsc266,wsc266_switched_consistency", "--limit", "5"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {phase} " in out for phase in bench.PHASES)
    lines = dict(line.strip().split(": ", 1) for line in out.splitlines() if ": " in line)
    requests = int(lines["requests"].replace(",", ""))
    distinct = int(lines["distinct requests"].replace(",", ""))
    assert 0 < distinct <= requests
