"""Launchers: the registry and its settings, local GPU packing, the Slurm batch script as text,
and sweeps on a real Slurm cluster and a local Ray cluster that give the local launcher's
leaderboard.

The Slurm tests need a cluster that answers ``sinfo`` (``.ci/slurm-up`` starts a one-node one),
the Ray tests Ray installed: where a launcher's service is missing (``Launcher.unavailable``) its
tests are skipped, unless ``WSC_TASKS_REQUIRE_<LAUNCHER>=1`` (CI: ``SLURM``) makes that a failure.
"""

from __future__ import annotations

import csv
import inspect
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
import tiny_models
import yaml
from conftest import needs
from test_sweep import _lock_holder, _wait_for

from wsc_tasks.cli import sweep
from wsc_tasks.sweep import launchers
from wsc_tasks.sweep.launchers import (
    DEFAULT,
    LAUNCHERS,
    Launcher,
    LauncherError,
    RunState,
    Setting,
    register,
)
from wsc_tasks.sweep.launchers.local import LocalLauncher
from wsc_tasks.sweep.launchers.slurm import SlurmLauncher
from wsc_tasks.sweep.models import ModelSpec, read_models_file
from wsc_tasks.sweep.options import SweepOptions
from wsc_tasks.sweep.queue import Queue, queues
from wsc_tasks.sweep.runner import run_one

TASK = "wsc266_associative"  # 25 schemas: a few seconds per model
COST = "GPU-h"


def _argv(models: Path, out: Path, *more: str) -> list[str]:
    return [str(models), "--out", str(out), "--tasks", TASK, "--rank-task", TASK,
            "--iters", "300", "--quiet", *more]  # fmt: skip


# what differs between two runs of the same models: the cost (by launcher and machine), the run's
# date and the links to its files (named by lm-eval with the time of the run)
VOLATILE = (COST, "run date", "files")


def _board(out: Path) -> dict[str, dict[str, str]]:
    """The leaderboard's rows without the columns that differ from run to run (``VOLATILE``)."""
    with (out / "leaderboard.csv").open(encoding="utf-8") as handle:
        rows = {row["model"]: row for row in csv.DictReader(handle)}
    for row in rows.values():
        for column in VOLATILE:
            row.pop(column, None)
    return rows


def _scored_chance_model(row: dict[str, str]) -> bool:
    """A chance model's row: scored (A given), set apart from the ranking (no rank)."""
    return (
        row["kind"] == "chance model"
        and row["rank (point estimate)"] == ""
        and float(row["A"]) >= 0
    )


def _cost(out: Path, name: str) -> dict:
    return json.loads((out / name / "done.json").read_text())["cost"]


# the registry and settings


# the contract every registered launcher meets: adding one needs no edit of this file


def test_every_launcher_module_registers_its_launcher():
    package = Path(launchers.__file__).parent
    modules = {p.stem for p in package.glob("[!_]*.py")} - {"base"}
    assert {cls.__module__.rsplit(".", 1)[-1] for cls in LAUNCHERS.values()} == modules
    assert DEFAULT in LAUNCHERS


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_the_command_line_offers_the_launcher_and_its_settings(name):
    cls = LAUNCHERS[name]
    assert cls.name == name and cls.help and not inspect.isabstract(cls)
    text = sweep.parser().format_help()
    assert "{" + ",".join(sorted(LAUNCHERS)) + "}" in text
    assert f"--launcher {name}" in text
    for setting in cls.settings:
        assert setting.flag in text and setting.help
        for other in LAUNCHERS.values():  # a flag two launchers share means the same to both
            same = [s for s in other.settings if s.name == setting.name]
            assert all(s.kind == setting.kind for s in same), (other.name, setting.name)


@pytest.mark.parametrize("name", sorted(LAUNCHERS))
def test_the_launchers_models_file_section_takes_its_settings(name, tmp_path):
    """Every setting a models file may give, given there as the defaults; a misspelt key is named
    with its file, line and launcher."""
    cls = LAUNCHERS[name]
    given = [s for s in cls.settings if not s.command_line_only and s.kind != "lines"]
    section = {s.name: s.default for s in given if s.default is not None}
    needs(name.upper(), cls.unavailable(cls.resolve(section, "models.yaml", {})))
    path = tmp_path / "models.yaml"
    path.write_text(yaml.safe_dump({"models": [{"name": "a"}], name: section or {}}))
    args, _ = sweep.parser().parse_known_args([str(path), "--launcher", name])
    launcher = sweep.launcher_from(args, read_models_file(path), SweepOptions(tmp_path, TASK))
    assert isinstance(launcher, cls)
    assert {k: launcher.values[k] for k in section} == section
    assert set(launcher.values) == {s.name for s in cls.settings}
    with pytest.raises(LauncherError, match=rf"{path}:\d+: {name}: unknown setting 'no-such'"):
        cls.resolve({"no-such": 1}, str(path) + ":3", {})


def test_a_variant_keeps_adds_and_drops_settings_without_copying(tmp_path):
    """A variant of the local launcher lists the settings it keeps and adds its own; what it
    leaves out takes the local launcher's default (``Launcher.setting``), and the contract above
    (its values are its settings) holds for it unchanged."""
    from wsc_tasks.sweep.launchers import local

    class Pinned(LocalLauncher):  # not registered: it would join every sweep's command line
        name = "pinned"
        help = "one model per listed device"
        settings = (local.DEVICES, Setting("label", "a label for its runs", str, "x"))

    values = Pinned.resolve({"devices": "0,1"}, "models.yaml:3", {})
    assert set(values) == {s.name for s in Pinned.settings}
    launcher = Pinned(values, SweepOptions(tmp_path, TASK))
    try:
        assert launcher.setting("label") == "x" and launcher.setting("devices") == (0, 1)
        assert launcher.setting("per-gpu") == 1 and launcher.setting("accelerate") is False
        assert [slot.env["CUDA_VISIBLE_DEVICES"] for slot in launcher.slots] == ["0", "1"]
        with pytest.raises(KeyError, match="no setting 'no-such'"):
            launcher.setting("no-such")
    finally:
        launcher.close()


def test_a_second_launcher_of_the_same_name_is_refused():
    class Twin(LAUNCHERS[DEFAULT]):  # type: ignore[misc,valid-type]
        pass

    with pytest.raises(TypeError, match=f"two launchers are named '{DEFAULT}'"):
        register(Twin)
    assert LAUNCHERS[DEFAULT] is not Twin


def test_settings_come_from_the_models_file_then_the_command_line(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  - {name: a}\nslurm:\n  partition: gpu\n  max_parallel: 4\n")
    models = read_models_file(path)
    options = SweepOptions(tmp_path, TASK)
    args, _ = sweep.parser().parse_known_args(
        [str(path), "--launcher", "slurm", "--max-parallel", "2", "--dry-run"]
    )
    launcher = sweep.launcher_from(args, models, options)
    assert launcher.values["partition"] == "gpu" and launcher.values["max-parallel"] == 2
    path.write_text("models:\n  - {name: a}\nslurm:\n  partiton: gpu\n")
    with pytest.raises(
        LauncherError,
        match=rf"{path}:3: slurm: unknown setting 'partiton' .*"
        "did you mean 'partition'",
    ):
        sweep.launcher_from(args, read_models_file(path), options)
    path.write_text("models:\n  - {name: a}\nslrum: {}\n")
    with pytest.raises(LauncherError, match=rf"{path}:3: unknown section 'slrum'"):
        sweep.launcher_from(args, read_models_file(path), options)
    args, _ = sweep.parser().parse_known_args([str(path), "--partition", "gpu"])
    with pytest.raises(LauncherError, match="--partition is a setting of --launcher slurm"):
        sweep.launcher_from(args, models, options)
    with pytest.raises(LauncherError, match="--max-parallel: invalid literal"):
        SlurmLauncher.resolve({}, "x", {"max-parallel": "two"})


def test_a_launcher_added_to_the_registry_is_on_the_command_line(tmp_path, data_dir, monkeypatch):
    """The seam: a launcher is a class with settings; nothing else names it."""

    class Inline(Launcher):
        name = "inline"
        help = "runs each model in submit()"
        settings = (Setting("note", "a note"),)

        def submit(self, specs: Sequence[ModelSpec]) -> None:
            self.done = {s.name: run_one(s, self.options) for s in specs}

        def states(self) -> dict[str, RunState]:
            return {n: RunState("ended", outcome=s) for n, s in self.done.items()}

        def cancel(self) -> None:
            pass

    monkeypatch.setitem(LAUNCHERS, "inline", Inline)
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\n")
    argv = _argv(models, tmp_path / "out", "--launcher", "inline", "--note", "hi")
    assert sweep.main(argv) == 0
    assert _scored_chance_model(_board(tmp_path / "out")["chance1"])


# local: the warm worker against a process per model, and a worker killed mid-model


def _worker_pids(out: Path) -> dict[str, set[int]]:
    """The processes that took each model, from the queue's lines."""
    found: dict[str, set[int]] = {}
    for path in queues(out):
        for line in Queue.read(path).lines():
            found.setdefault(line["model"], set()).add(line["pid"])
    return found


def _without_times(path: Path) -> dict:
    """A results file without what two runs of one model never share (its date and duration)."""
    results = json.loads(path.read_text())
    for key in ("date", "start_time", "end_time", "total_evaluation_time_seconds"):
        results.pop(key, None)
    return results


@pytest.mark.slow
def test_a_worker_gives_each_model_the_files_of_a_run_of_its_own(three, tmp_path):
    """One worker ran the three models in one process (the ``three`` fixture); a model's
    samples are byte for byte, and its results value for value but the date and duration, those
    of ``--process-per-model``, where each is a ``wsc-tasks run`` of its own; the leaderboards
    agree."""
    pids = _worker_pids(three / "local")
    assert len(set.union(*pids.values())) == 1 and len(pids) == 3
    out = tmp_path / "own"
    assert sweep.main(_argv(three / "models.txt", out, "--process-per-model")) == 0
    assert len(set.union(*_worker_pids(out).values())) == 1  # the worker; the runs its children
    for name in ("chance1", "tiny1", "tiny2"):
        warm, own = (sorted((root / name / "lm_eval").iterdir()) for root in (three / "local", out))
        assert [p.name.split("_20")[0] for p in warm] == [p.name.split("_20")[0] for p in own]
        for one, two in zip(warm, own, strict=True):
            if one.name.startswith("samples_"):
                assert one.read_bytes() == two.read_bytes(), one.name
            elif one.suffix == ".json":
                assert _without_times(one) == _without_times(two), one.name
    assert _board(out) == _board(three / "local")


@pytest.mark.slow
def test_a_worker_killed_mid_model_is_replaced_and_its_model_run_again(three, tmp_path):
    """``kill -9`` of the worker (as the kernel's out-of-memory killer does) while it runs tiny1:
    a new worker runs tiny1 again and goes on; the finished model stays done, the leaderboard is
    the local launcher's."""
    out = tmp_path / "killed"
    process = _start(_argv(three / "models.txt", out))
    try:
        first = _the_run(out, "tiny1")
        done_before = (out / "chance1" / "done.json").stat().st_mtime_ns
        os.kill(first, signal.SIGKILL)
        output, _ = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, output
    assert (out / "chance1" / "done.json").stat().st_mtime_ns == done_before  # not run again
    pids = _worker_pids(out)
    assert first in pids["tiny1"] and len(pids["tiny1"]) == 2
    assert _cost(out, "tiny1")["worker"].endswith(".1")  # the worker that replaced the first
    assert _board(out) == _board(three / "local")


# local: GPU packing (the CPU part: slots, environment, recorded GPUs, parallel runs)


def test_per_gpu_packs_models_onto_each_device(tmp_path):
    options = SweepOptions(tmp_path, TASK)
    values = {"accelerate": False, "per-gpu": 2, "devices": (0, 1)}
    launcher = LocalLauncher(values, options)
    assert [(s.env or {}).get("CUDA_VISIBLE_DEVICES") for s in launcher.slots] == [
        "0", "1", "0", "1"]  # fmt: skip
    assert {s.gpus for s in launcher.slots} == {0.5}
    launcher.close()
    cpu = LocalLauncher({"accelerate": False, "per-gpu": 1, "devices": ()}, options)
    assert len(cpu.slots) == 1 and cpu.slots[0].gpus == 0.0 and cpu.slots[0].env is None
    cpu.close()
    with pytest.raises(LauncherError, match="--accelerate and --per-gpu"):
        LocalLauncher({"accelerate": True, "per-gpu": 2, "devices": (0,)}, options)


@pytest.mark.slow
def test_per_gpu_runs_two_models_at_once_on_one_device(tmp_path, data_dir):
    """On a CPU machine CUDA_VISIBLE_DEVICES=0 changes nothing for the run itself; what is
    tested is that two models share the one device at the same time, each recorded at 0.5."""
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\nchance2 wsc-chance seed=2\n")
    out = tmp_path / "out"
    assert sweep.main(_argv(models, out, "--devices", "0", "--per-gpu", "2")) == 0
    costs = [_cost(out, name) for name in ("chance1", "chance2")]
    assert [c["gpus"] for c in costs] == [0.5, 0.5]
    starts = [time.mktime(time.strptime(c["started"], "%Y-%m-%dT%H:%M:%S%z")) for c in costs]
    assert abs(starts[0] - starts[1]) < min(c["wall_s"] for c in costs)  # they overlapped


# Slurm: the batch script as text (the GPU lines cannot run on a CPU cluster)


def test_the_slurm_batch_script(tmp_path):
    values = SlurmLauncher.resolve(
        {"partition": "gpu", "gpus-per-model": 2, "time": "4:00:00", "sbatch": ["constraint=a100"],
         "setup": ["module load cuda"]},
        "models.yaml",
        {"max-parallel": "8", "dry-run": True, "account": "nlp", "qos": "high", "mem": "32G"},
    )  # fmt: skip
    launcher = SlurmLauncher(values, SweepOptions(tmp_path / "out", TASK))
    script = launcher.script(tmp_path / "m.json", launcher.workers(20))  # 8 workers, 20 models
    lines = script.splitlines()
    for line in ("#SBATCH --array=0-7", "#SBATCH --gres=gpu:2", "#SBATCH --partition=gpu",
                 "#SBATCH --time=4:00:00", "#SBATCH --account=nlp", "#SBATCH --qos=high",
                 "#SBATCH --mem=32G", "#SBATCH --constraint=a100", "#SBATCH --requeue",
                 "#SBATCH --signal=B:USR1@300", "module load cuda", "trap requeue USR1",
                 '    if [ "${SLURM_RESTART_COUNT:-0}" -lt 3 ]; then'):  # fmt: skip
        assert line in lines, line
    assert f"#SBATCH --output={tmp_path / 'out' / '.sweep' / 'slurm' / 'logs'}/%A_%a.log" in lines
    worker = f"{sys.executable} -m wsc_tasks.cli.sweep_worker {tmp_path / 'm.json'}"
    assert f'{worker} "$SLURM_ARRAY_TASK_ID" &' in lines
    bash = subprocess.run(["bash", "-n"], input=script, text=True, capture_output=True)
    assert bash.returncode == 0, bash.stderr
    plain = SlurmLauncher(
        SlurmLauncher.resolve({}, "x", {"gpus-per-model": 0, "no-requeue": True, "dry-run": True}),
        SweepOptions(tmp_path, TASK),
    ).script(tmp_path / "m.json", 3)  # no --max-parallel: a worker per model
    assert "#SBATCH --array=0-2" in plain and "#SBATCH --no-requeue" in plain
    assert "gres" not in plain and "trap" not in plain and "--requeue\n" not in plain


def test_a_gpu_job_refused_by_a_cluster_without_gpus_names_the_flag(tmp_path, monkeypatch):
    from wsc_tasks.sweep.launchers import slurm

    said = "sbatch: error: Invalid generic resource (gres) specification\n"
    refused = subprocess.CompletedProcess(["sbatch"], 1, "", said)
    monkeypatch.setattr(slurm.subprocess, "run", lambda *a, **k: refused)
    launcher = SlurmLauncher(SlurmLauncher.resolve({}, "x", {}), SweepOptions(tmp_path, TASK))
    with pytest.raises(LauncherError) as raised:
        launcher.submit([ModelSpec("m")])
    assert str(raised.value).endswith(
        "failed: sbatch: error: Invalid generic resource (gres) specification (each job asks "
        "for --gres=gpu:1: without GPUs, --gpus-per-model 0)"
    )


def test_dry_run_prints_the_script_and_submits_nothing(tmp_path, capsys):
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\n")
    out = tmp_path / "out"
    assert sweep.main(_argv(models, out, "--launcher", "slurm", "--dry-run")) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("#!/bin/bash\n#SBATCH --job-name=wsc-sweep\n#SBATCH --array=0-0\n")
    assert not (out / ".sweep" / "slurm").exists() and not (out / "leaderboard.md").exists()


# a real Slurm cluster


def _slurm_missing() -> str | None:
    if shutil.which("sbatch") is None:
        return "Slurm is not installed (Debian: slurmctld slurmd slurm-client munge)"
    try:
        found = subprocess.run(
            ["sinfo", "--noheader", "--format=%t"], capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        return "sinfo does not answer"
    if found.returncode != 0 or not {"idle", "mix", "alloc"} & set(found.stdout.split()):
        return f"no Slurm node is up (sinfo: {found.stdout.strip() or found.stderr.strip()})"
    return None


@pytest.fixture(scope="module")
def slurm() -> None:
    missing = _slurm_missing()
    needs("SLURM", missing and f"{missing}; start one with .ci/slurm-up")


SLURM = ("--launcher", "slurm", "--gpus-per-model", "0", "--cpus-per-model", "1", "--poll", "1")


@pytest.fixture(scope="module")
def three(tmp_path_factory, data_dir) -> Path:
    """The chance model and two tiny random GPT-2s, and their leaderboard by the local launcher."""
    root = tmp_path_factory.mktemp("three")
    for seed in (1, 2):
        tiny_models.gpt2(root / f"tiny{seed}", seed, size="1x16")
    models = root / "models.txt"
    models.write_text(
        f"chance1 wsc-chance seed=1\ntiny1 hf pretrained={root / 'tiny1'}\n"
        f"tiny2 hf pretrained={root / 'tiny2'}\n"
    )
    assert sweep.main(_argv(models, root / "local")) == 0
    return root


def _squeue(name: str = "wsc-sweep") -> list[str]:
    found = subprocess.run(
        ["squeue", "--noheader", "--array", f"--name={name}", "--format=%i %T"],
        capture_output=True,
        text=True,
    )
    return found.stdout.split("\n")[:-1]


@pytest.mark.slow
def test_slurm_sweep_of_three_models_gives_the_local_leaderboard(slurm, three, tmp_path):
    running: list[int] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.5):
            running.append(sum(line.endswith(" RUNNING") for line in _squeue("wsc-three")))

    watcher = threading.Thread(target=watch)
    watcher.start()
    out = tmp_path / "slurm"
    more = (*SLURM, "--max-parallel", "2", "--job-name", "wsc-three")
    try:
        assert sweep.main(_argv(three / "models.txt", out, *more)) == 0
    finally:
        stop.set()
        watcher.join()
    assert _board(out) == _board(three / "local")
    assert max(running) == 2  # two workers, never three
    done = [_cost(out, name) for name in ("chance1", "tiny1", "tiny2")]
    assert {d["launcher"] for d in done} == {"slurm"}
    jobs = {d["job"] for d in done}  # three models, two array tasks of one array
    assert len(jobs) == 2 and len({job.split("_")[0] for job in jobs}) == 1
    assert "0.000 GPU-hours in total over 3 finished models" in (out / "leaderboard.md").read_text()


@pytest.mark.slow
def test_slurm_reports_a_failed_model_and_finishes_the_others(slurm, data_dir, tmp_path):
    models = tmp_path / "models.txt"
    models.write_text("broken no-such-model x=1\nchance1 wsc-chance seed=1\n")
    out = tmp_path / "out"
    assert sweep.main(_argv(models, out, *SLURM)) == 1
    board = _board(out)
    assert _scored_chance_model(board["chance1"])
    assert board["broken"]["status"].startswith("failed (broken/error.txt): exit status 2")
    assert "no-such-model" in (out / "broken" / "error.txt").read_text()


@pytest.mark.slow
def test_slurm_a_job_the_scheduler_ended_gets_an_error_naming_its_state(slurm, three, tmp_path):
    models = tmp_path / "models.txt"
    models.write_text(f"tiny1 hf pretrained={three / 'tiny1'}\nchance1 wsc-chance seed=1\n")
    out = tmp_path / "out"
    process = _start(_argv(models, out, *SLURM, "--job-name", "wsc-killed"))
    _wait_for(lambda: (out / "tiny1" / "log.txt").is_file(), "the model's run to start")
    job = _job_of(out, "tiny1")
    subprocess.run(["scancel", job], check=True)  # as an administrator, or out of memory, would
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 1, output
    error = (out / "tiny1" / "error.txt").read_text()
    log = out / ".sweep" / "slurm" / "logs" / f"{job}.log"
    assert error.startswith(f"Slurm job {job} ended in state CANCELLED")
    assert f"without a result; log: {log}\n" in error
    board = _board(out)
    assert _scored_chance_model(board["chance1"]) and board["tiny1"]["status"].startswith("failed")


def _the_run(out: Path, name: str, other_than: int | None = None) -> int:
    """The process that runs the model (its worker, named in the model's lock), once its run
    has started (its log is there)."""

    def run() -> int | None:
        pid = _lock_holder(out, name)
        if not pid or pid == other_than or not (out / name / "log.txt").is_file():
            return None
        return pid if _alive(pid) else None

    _wait_for(lambda: run() is not None, f"the run of {name} to start")
    pid = run()
    assert pid
    return pid


@pytest.mark.slow
def test_slurm_a_job_at_its_time_limit_gets_an_error_naming_the_limit_and_the_fix(
    slurm, three, tmp_path
):
    """``--no-requeue``: no trap sends the job back before its limit. Its time limit is cut to 0
    once its run has started (and the run is stopped, so that it cannot finish first); Slurm ends
    it at its next check of the limits (every 30 s); ``--retry-failed`` then runs it."""
    models = tmp_path / "models.txt"
    models.write_text(f"tiny1 hf pretrained={three / 'tiny1'}\nchance1 wsc-chance seed=1\n")
    out = tmp_path / "out"
    argv = _argv(models, out, *SLURM, "--no-requeue", "--job-name", "wsc-timeout")
    process = _start(argv)
    run = _the_run(out, "tiny1")
    job = _job_of(out, "tiny1")
    try:
        os.kill(run, signal.SIGSTOP)  # so that Slurm's check of the limits finds it running
        subprocess.run(["scontrol", "update", f"JobId={job}", "TimeLimit=0"], check=True)
        output, _ = process.communicate(timeout=180)
    finally:
        subprocess.run(["scancel", str(job)], capture_output=True)
        try:
            os.kill(run, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert process.returncode == 1, output
    assert (out / "tiny1" / "error.txt").is_file(), output
    error = (out / "tiny1" / "error.txt").read_text()
    log = out / ".sweep" / "slurm" / "logs" / f"{job}.log"
    assert error.startswith(
        f"Slurm job {job} ended in state TIMEOUT, reason TimeLimit without a result: it reached "
        "its time limit (0:00); give it a longer --time, or drop --no-requeue so that it "
        f"requeues itself before the limit and resumes from its cache; log: {log}\n"
    ), error
    assert "tiny1 failed: Slurm job" in output
    board = _board(out)
    assert _scored_chance_model(board["chance1"]) and board["tiny1"]["status"].startswith("failed")
    assert sweep.main([*argv, "--retry-failed"]) == 0
    row, local = _board(out)["tiny1"], _board(three / "local")["tiny1"]
    assert {k: row[k] for k in ("A", "A low", "A high", "a")} == {
        k: local[k] for k in ("A", "A low", "A high", "a")
    }


def _job_of(out: Path, name: str) -> str | None:
    """The Slurm array task of the worker that took the model last (its queue's lines)."""
    found = [Queue.read(path).job_of(name) for path in queues(out)]
    return next((job for job in reversed(found) if job), None)


# ``wsc-tasks sweep`` as started at a terminal, where Ctrl-C raises KeyboardInterrupt: Python keeps
# an ignored SIGINT ignored, and a test run started as a background job of a non-interactive shell
# passes SIGINT on ignored
_AT_A_TERMINAL = (
    "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "from wsc_tasks.cli import main; raise SystemExit(main(sys.argv[1:]))"
)


def _start(argv: list[str]) -> subprocess.Popen:
    command = [sys.executable, "-c", _AT_A_TERMINAL, "sweep", *argv]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
def test_slurm_requeue_mid_run_finishes_with_the_same_scores(slurm, three, tmp_path):
    models = tmp_path / "models.txt"
    models.write_text(f"tiny1 hf pretrained={three / 'tiny1'}\n")
    out = tmp_path / "out"
    process = _start(_argv(models, out, *SLURM, "--job-name", "wsc-requeue"))
    _wait_for(lambda: (out / "tiny1" / "log.txt").is_file(), "the model's run to start")
    job = _job_of(out, "tiny1")
    assert job and not (out / "tiny1" / "done.json").exists()
    subprocess.run(["scontrol", "requeue", job], check=True)
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 0, output
    row, local = _board(out)["tiny1"], _board(three / "local")["tiny1"]
    scores = ["A", "A low", "A high", "A p", "a", "a low", "a high", "a p"]
    assert {k: row[k] for k in scores} == {k: local[k] for k in scores}
    log = (out / ".sweep" / "slurm" / "logs" / f"{job}.log").read_text()
    assert f"job {job}, restart 0" in log and f"job {job}, restart 1" in log
    assert _cost(out, "tiny1")["job"] == job


@pytest.mark.slow
def test_slurm_ctrl_c_leaves_no_job_in_the_queue(slurm, data_dir, tmp_path):
    models = tmp_path / "models.txt"
    models.write_text(
        "chance1 wsc-chance seed=1\nchance2 wsc-chance seed=2\nchance3 wsc-chance seed=3\n"
    )
    out = tmp_path / "out"
    process = _start(_argv(models, out, *SLURM, "--max-parallel", "1", "--job-name", "wsc-ctrl-c"))
    _wait_for(lambda: any(line.endswith(" RUNNING") for line in _squeue("wsc-ctrl-c")), "a job")
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=120)
    assert process.returncode == 130, output
    assert "cancelled Slurm job" in output
    assert _squeue("wsc-ctrl-c") == []
    assert not any((out / n / "error.txt").exists() for n in ("chance1", "chance2", "chance3"))
    assert not (out / ".sweep" / "slurm" / "jobs.json").read_text().strip("{}\n")


@pytest.mark.slow
def test_slurm_no_wait_then_a_second_call_collects(slurm, data_dir, tmp_path, capsys):
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\nchance2 wsc-chance seed=2\n")
    out = tmp_path / "out"
    argv = _argv(models, out, *SLURM, "--job-name", "wsc-no-wait")
    started = time.monotonic()
    assert sweep.main([*argv, "--no-wait"]) == 0
    assert time.monotonic() - started < 10  # returned at once
    assert "queued   chance1" in capsys.readouterr().out
    assert not (out / "leaderboard.md").exists() and len(_squeue("wsc-no-wait")) == 2
    assert sweep.main(argv) == 0  # waits for the same jobs, submits nothing new
    assert capsys.readouterr().out.startswith("done     chance1\ndone     chance2\n")
    jobs_file = out / ".sweep" / "slurm" / "jobs.json"
    assert json.loads(jobs_file.read_text()) == {}  # collected: forgotten
    assert sorted(_board(out)) == ["chance1", "chance2"]
    jobs = {_cost(out, name)["job"].split("_")[0] for name in ("chance1", "chance2")}
    assert len(jobs) == 1  # one array


# Ray


@pytest.mark.slow
def test_ray_sweep_of_three_models_gives_the_local_leaderboard(three, tmp_path):
    needs("RAY", LAUNCHERS["ray"].unavailable({}))
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        out = tmp_path / "ray"
        argv = _argv(three / "models.txt", out, "--launcher", "ray", "--cpus-per-model", "1")
        assert sweep.main(argv) == 0
    finally:
        ray.shutdown()
    assert _board(out) == _board(three / "local")
    cost = _cost(out, "tiny1")
    assert cost["launcher"] == "ray" and cost["gpus"] == 0.0 and cost["job"].startswith("ray:")


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.mark.slow
def test_ray_a_dead_worker_is_run_again_ctrl_c_leaves_no_process_and_the_resume_agrees(
    three, tmp_path
):
    """One worker: the chance model, then tiny1, whose Ray actor is killed mid-run (the run dies
    with it, and Ray starts the actor again, which runs tiny1 again: ``--retries``); Ctrl-C during
    the second run ends the sweep in seconds with no process of it left (Ray's, the actor's);
    the same command then gives the local launcher's leaderboard."""
    needs("RAY", LAUNCHERS["ray"].unavailable({}))
    out = tmp_path / "ray"
    argv = _argv(three / "models.txt", out, "--launcher", "ray", "--cpus-per-model", "1",
                 "--max-parallel", "1")  # fmt: skip
    process = _start(argv)
    try:
        first = _the_run(out, "tiny1")  # the actor's process
        os.kill(first, signal.SIGKILL)
        second = _the_run(out, "tiny1", other_than=first)
        processes = _descendants(process.pid) | {second}
        assert not _alive(first)
        started = time.monotonic()
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, output
    assert took < 10, took
    _wait_for(lambda: not any(_alive(pid) for pid in processes), "the sweep's processes", 5)
    assert not (out / "tiny1" / "error.txt").exists(), (out / "tiny1" / "error.txt").read_text()
    assert not (out / "tiny2").exists()
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        assert sweep.main(argv) == 0
    finally:
        ray.shutdown()
    assert _board(out) == _board(three / "local")
