"""A sweep's log lines where no progress bar shows: one per model start and end, with times."""

from __future__ import annotations

import io
from collections.abc import Sequence

from wsc_tasks.progress import ModelLines, duration, time_left
from wsc_tasks.sweep import driver
from wsc_tasks.sweep import folder as protocol
from wsc_tasks.sweep.launchers.base import Launcher, RunState
from wsc_tasks.sweep.models import ModelSpec
from wsc_tasks.sweep.options import SweepOptions


def test_durations_read_as_a_person_writes_them():
    assert [duration(s) for s in (0, 42.4, 60, 422, 3599, 3780)] == [
        "0s", "42s", "1m00s", "7m02s", "59m59s", "1h03m"]  # fmt: skip


def test_time_left_is_the_mean_model_time_of_what_remains():
    assert time_left([], [10.0], 2, 1) is None  # nothing ended: no estimate
    # mean 100 s: the running model 30 s in has 70 s left, two waiting 200 s, one at a time
    assert time_left([80.0, 120.0], [30.0], 2, 1) == 270.0
    assert time_left([80.0, 120.0], [30.0], 2, 2) == 135.0  # two at a time
    assert time_left([100.0], [150.0], 0, 1) == 0.0  # past the mean: none, not negative


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_lines_of_three_models_one_at_a_time():
    out, clock = io.StringIO(), Clock()
    lines = ModelLines(3, stream=out, clock=clock)
    lines.started("a")
    clock.now = 420.0
    lines.finished("a", "done")
    lines.started("b")
    lines.started("b")  # said once
    clock.now = 600.0
    lines.finished("b", "failed")
    clock.now = 610.0
    lines.finished("c", "done")  # ended before it was seen running: started and ended now
    assert out.getvalue().splitlines() == [
        "wsc-tasks sweep: a started (1/3); sweep 0s so far, no estimate of the rest before a "
        "model ends",
        "wsc-tasks sweep: a done in 7m00s (1/3 ended); sweep 7m00s so far, about 14m00s left "
        "(the mean time of the models ended)",
        "wsc-tasks sweep: b started (2/3); sweep 7m00s so far, about 14m00s left (the mean time "
        "of the models ended)",
        "wsc-tasks sweep: b failed in 3m00s (2/3 ended); sweep 10m00s so far, about 5m00s left "
        "(the mean time of the models ended)",
        "wsc-tasks sweep: c started (3/3); sweep 10m10s so far, about 5m00s left (the mean time "
        "of the models ended)",
        "wsc-tasks sweep: c done in 0s (3/3 ended); sweep 10m10s so far",
    ]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_lines_on_a_terminal_or_when_quiet():
    for lines in (ModelLines(1, stream=Terminal()), ModelLines(1, True, stream=io.StringIO())):
        lines.started("a")
        lines.finished("a", "done")
        assert lines.stream.getvalue() == ""


class Scripted(Launcher):
    """Models whose states follow a script, one step per look; a model's folder gets its
    done.json when the script ends it."""

    name = "scripted"
    help = "test"
    poll_s = 0.0

    def __init__(self, options: SweepOptions, script: list[dict[str, str]]) -> None:
        super().__init__({}, options)
        self.script = script

    def submit(self, specs: Sequence[ModelSpec]) -> None:
        pass

    def states(self) -> dict[str, RunState]:
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        for name, state in step.items():
            if state == "ended":
                folder = self.options.out / name
                folder.mkdir(parents=True, exist_ok=True)
                (folder / protocol.SWEEP_DONE).write_text("{}")
        return {name: RunState(state) for name, state in step.items()}

    def cancel(self) -> None:
        pass


def test_a_sweep_logs_each_model_where_stderr_is_not_a_terminal(tmp_path, monkeypatch, capsys):
    specs = [ModelSpec("a"), ModelSpec("b")]
    monkeypatch.setattr(driver, "plan", lambda specs, launcher: (list(specs), set()))
    script = [
        {"a": "queued", "b": "queued"},
        {"a": "running", "b": "queued"},
        {"a": "ended", "b": "running"},
        {"a": "ended", "b": "ended"},
    ]
    launcher = Scripted(SweepOptions(tmp_path, "wsc266"), script)
    assert driver._sweep(specs, launcher) == {"a": "done", "b": "done"}
    said = [line for line in capsys.readouterr().err.splitlines() if "sweep: " in line]
    assert [line.split(";")[0] for line in said] == [
        "wsc-tasks sweep: a started (1/2)",
        "wsc-tasks sweep: a done in 0s (1/2 ended)",
        "wsc-tasks sweep: b started (2/2)",
        "wsc-tasks sweep: b done in 0s (2/2 ended)",
    ]
    assert "about 0s left" in said[2]  # b started with a's mean ahead of it


def test_a_quiet_sweep_says_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(driver, "plan", lambda specs, launcher: (list(specs), set()))
    options = SweepOptions(tmp_path, "wsc266", quiet=True)
    driver._sweep([ModelSpec("a")], Scripted(options, [{"a": "running"}, {"a": "ended"}]))
    assert "wsc-tasks sweep:" not in capsys.readouterr().err
