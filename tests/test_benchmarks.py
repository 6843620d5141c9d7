"""``python -m benchmarks``: the list and every benchmark's help; the ``run`` benchmark's phases of
a run and their timers (timed on a fake clock)."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import pytest

from benchmarks import BENCHMARKS, phase_timer, run_models, run_phases
from benchmarks import main as benchmarks

SCREEN_LINES, SCREEN_COLUMNS = 50, 80  # as every wsc-tasks --help (tests/test_help.py)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _help(argv: list[str]) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = benchmarks([*argv, "--help"])
        except SystemExit as error:  # argparse's help exits 0
            code = error.code
    assert code == 0, argv
    return out.getvalue()


def test_every_benchmark_help_fits_on_a_screen_with_its_usage_line(monkeypatch):
    monkeypatch.setenv("COLUMNS", str(SCREEN_COLUMNS))
    listed = _help([])
    assert all(f"\n  {name} " in listed for name in BENCHMARKS)
    for argv in ([], *([name] for name in BENCHMARKS)):
        text = _help(argv)
        lines = text.rstrip("\n").split("\n")
        assert lines[0].startswith(f"usage: python -m benchmarks {' '.join(argv)}".rstrip()), argv
        assert len(lines) <= SCREEN_LINES, (argv, len(lines))
        assert max(map(len, lines)) <= SCREEN_COLUMNS, argv
        assert "/work/" not in text and "site-packages" not in text, argv
    assert "wsc-tasks run --help" in _help(["run"])
    mlm = _help(["mlm"])
    assert "replaced" not in mlm and "(default 64)" in mlm


def test_the_users_command_list_has_no_benchmark():
    from wsc_tasks.cli import COMMANDS

    assert set(COMMANDS) == {"run", "report", "sweep", "leaderboard", "summary", "data",
                             "include-path"}  # fmt: skip


def test_an_unknown_benchmark_is_one_line_naming_them_all(capsys):
    assert benchmarks(["bench"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no benchmark 'bench'; one of run, board," in err


def test_run_help_imports_no_benchmark():
    """``python -m benchmarks run --help`` prints without torch or lm-eval (the benchmark's
    imports take seconds)."""
    import subprocess

    code = (
        "import sys; from benchmarks import main; assert main(['run', '--help']) == 0; "
        "heavy = [m for m in ('torch', 'lm_eval', 'transformers') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m benchmarks run")


def test_phase_timer_is_exclusive_of_nested_phases(monkeypatch):
    """On a fake clock: a 10 s outer phase that spends 3 s in a nested one is charged 7 s."""

    class Clock:
        now = 0.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    monkeypatch.setattr(phase_timer, "time", SimpleNamespace(perf_counter=clock))

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

    timer = phase_timer.PhaseTimer()
    timer.wrap(Work, "outer", "result processing")
    timer.wrap(Work, "inner", "tokenization")
    assert Work.outer() == "done"
    assert clock.now == 10.0
    assert timer.seconds["result processing"] == 7.0
    assert timer.seconds["tokenization"] == 3.0
    assert not timer._stack
    Work.inner()  # called alone, a phase is charged all of its time
    assert timer.seconds["tokenization"] == 6.0 and timer.seconds["result processing"] == 7.0
    text = phase_timer.report(timer, wall=clock.now, cpu=0.5)
    assert all(phase in text for phase in phase_timer.PHASES)
    assert "  result processing       7.00 s   53.8%" in text
    assert "  tokenization            6.00 s   46.2%" in text
    assert "  other                   0.00 s    0.0%" in text  # nothing counted twice or lost
    assert "wall / model forward time: inf" in text  # no model time was measured


@pytest.mark.slow
def test_bench_prints_every_phase_and_the_request_counts(data_dir, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    argv = ["run", "--no-winogrande", "--model", "wsc-chance", "--model_args", "seed=1"]
    assert benchmarks([*argv, "--tasks", "wsc266,wsc266_switched_consistency", "--limit", "5"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {phase} " in out for phase in phase_timer.PHASES)
    lines = dict(line.strip().split(": ", 1) for line in out.splitlines() if ": " in line)
    requests = int(lines["requests"].replace(",", ""))
    distinct = int(lines["distinct requests"].replace(",", ""))
    assert 0 < distinct <= requests


def test_the_winogrande_run_keeps_every_flag_but_the_tasks():
    argv = ["--model", "hf", "--tasks", "wsc_group", "--include_path", "mine", "--limit", "5"]
    out = run_phases.with_tasks(argv, "winogrande_local", "/tmp/wg")
    assert out == [
        "--model", "hf", "--limit", "5", "--tasks", "winogrande_local",
        "--include_path", f"mine{os.pathsep}/tmp/wg",
    ]  # fmt: skip
    assert run_phases.with_tasks(["--tasks=x"], "winogrande", None) == ["--tasks", "winogrande"]


def _timed(wall: float, forward: float, cpu: float, calls: int, tokens: int) -> run_phases.Timed:
    timer = phase_timer.PhaseTimer()
    timer.seconds["model forward"] = forward
    timer.counts["forward calls"], timer.counts["token positions through the model"] = calls, tokens
    return run_phases.Timed(timer, wall, cpu, 0)


def test_the_comparison_prints_the_ratios_of_wall_and_outside_time():
    theirs = _timed(wall=10.0, forward=2.0, cpu=9.0, calls=40, tokens=80_000)
    ours = _timed(wall=30.0, forward=6.0, cpu=18.0, calls=200, tokens=500_000)
    text = run_phases.comparison(ours, theirs, "wsc_group")
    assert "wall 3.00x, outside the forward calls 3.00x, CPU 2.00x" in text
    assert "  wsc_group                 30.00s     6.00s    24.00s    18.00s    200" in text
    assert " 2500        -" in text and " 2000        -" in text  # tokens per call; no CUDA
    theirs.timer.cuda, theirs.timer.parameters = True, 10**9
    assert theirs.tflops() == pytest.approx(2 * 10**9 * 80_000 / 2.0 / 1e12)


def test_model_parameters_leave_out_an_untied_input_embedding():
    import torch

    class Model(torch.nn.Module):
        def __init__(self, tied: bool) -> None:
            super().__init__()
            self.embed, self.body = torch.nn.Embedding(10, 4), torch.nn.Linear(4, 4)
            self.head = torch.nn.Linear(4, 10, bias=False)
            if tied:
                self.head.weight = self.embed.weight

        def get_input_embeddings(self):
            return self.embed

        def get_output_embeddings(self):
            return self.head

    assert phase_timer.model_parameters(Model(tied=False)) == 20 + 40
    assert phase_timer.model_parameters(Model(tied=True)) == 20 + 40


def test_instrument_is_undone_for_the_next_run():
    from lm_eval.models.huggingface import HFLM

    from wsc_tasks.serving import route as sender

    before = HFLM._model_call, sender.distinct  # where the serving route looks it up
    phase_timer.instrument(phase_timer.PhaseTimer())
    assert HFLM._model_call is not before[0] and sender.distinct is not before[1]
    phase_timer.uninstrument()
    assert (HFLM._model_call, sender.distinct) == before


@pytest.mark.slow
def test_bench_compares_with_lm_evals_winogrande_in_one_process(data_dir, capsys, monkeypatch):
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    argv = ["run", "--model", "wsc-chance", "--model_args", "seed=1", "--limit", "5"]
    assert benchmarks([*argv, "--tasks", "wsc266"]) == 0
    out = capsys.readouterr().out
    assert "benchmarks run: wsc266 against lm-eval's own winogrande" in out
    assert "|winogrande_local|" in out  # lm-eval's task, its own table
    assert "ratio wsc266 / winogrande: wall " in out


def test_the_report_puts_the_tries_nodes_beside_the_positions():
    timer = phase_timer.PhaseTimer()
    timer.seconds["model forward"] = 2.0
    timer.counts["requests"] = 4000
    timer.counts["token positions through the model"] = 204_653
    timer.counts["trie nodes"] = 200_040
    text = phase_timer.report(timer, wall=10.0)
    assert (
        "token positions through the model: 204,653 (the tries of the requests' token "
        "sequences: 200,040 nodes, the fewest a causal model needs; 1.02x)"
    ) in text
    assert "outside the forward calls: 2.000 ms a request" in text  # (10 - 2) s / 4,000


def test_models_flag_and_its_table():
    assert run_models.models_wanted(["--tiny-gpt2", "--models", "3", "--limit", "2"]) == (
        3, ["--tiny-gpt2", "--limit", "2"])  # fmt: skip
    assert run_models.models_wanted(["--models=2"]) == (2, [])
    assert run_models.models_wanted(["--limit", "2"]) == (0, ["--limit", "2"])
    with pytest.raises(SystemExit, match="2 or more"):
        run_models.models_wanted(["--models", "1"])

    def run(wall, forward, phases):
        phase = dict(zip(run_models.TOKENIZER_PHASES, phases, strict=True))
        seconds = {"model forward": forward, **phase}
        return {"wall": wall, "cpu": wall, "seconds": seconds, "counts": {}}

    text = run_models.table([run(30.0, 10.0, (2, 3, 3)), run(22.0, 10.0, (1, 0.5, 0.5))])
    assert "  1         30.00s    10.00s    20.00s             8.00s          1.00x" in text
    assert "  2         22.00s    10.00s    12.00s             2.00s          0.60x" in text
    assert text.splitlines()[-2].endswith("0.25x")


@pytest.mark.slow
def test_bench_models_runs_each_copy_in_its_own_process(tiny_gpt2_dir, data_dir, capfd):
    """Two copies of one model, one process each, one request cache: the second builds no
    request (lm-eval says when it builds a task's requests)."""
    argv = ["--model", "hf", "--model_args", f"pretrained={tiny_gpt2_dir}", "--tasks", "wsc266",
            "--limit", "2"]  # fmt: skip
    assert run_models.bench_models(2, argv) == 0
    out, err = capfd.readouterr()
    rows = [line.split() for line in out.splitlines() if line.startswith(("  1 ", "  2 "))]
    assert len(rows) == 2 and rows[0][-1] == "1.00x", out[-2000:]
    assert (out + err).count("Building contexts for wsc266") == 1
