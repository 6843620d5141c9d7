"""``wsc-tasks bench``: the phases of a run and their timers (no timing is asserted)."""

from __future__ import annotations

import sys

import pytest

from wsc_tasks.cli import bench
from wsc_tasks.cli import main as cli


def test_phase_timer_is_exclusive_of_nested_phases():
    class Work:
        @staticmethod
        def outer():
            Work.inner()
            return "done"

        @staticmethod
        def inner():
            return None

    timer = bench.PhaseTimer()
    timer.wrap(Work, "outer", "result processing")
    timer.wrap(Work, "inner", "tokenization")
    assert Work.outer() == "done"
    assert timer.seconds["result processing"] >= 0 and timer.seconds["tokenization"] >= 0
    assert not timer._stack
    text = bench.report(timer, wall=1.0, cpu=0.5)
    assert all(phase in text for phase in bench.PHASES)
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
