"""``wsc-tasks sweep``: models files, commands, locks, stale results, and a killed sweep resumed on
the chance model (the local launcher; tests/test_launchers.py has the others)."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import tiny_models

from wsc_tasks.cli import sweep
from wsc_tasks.paths import default_model_args
from wsc_tasks.sweep import driver
from wsc_tasks.sweep import folder as protocol
from wsc_tasks.sweep import lock as locks
from wsc_tasks.sweep.launchers.base import Launcher, RunState
from wsc_tasks.sweep.lock import Busy, FileLock
from wsc_tasks.sweep.models import (
    ModelsFileError,
    ModelSpec,
    read_models,
    read_models_file,
    resolved_args,
)
from wsc_tasks.sweep.options import SweepOptions
from wsc_tasks.sweep.runner import Run, child_command, run_command, run_one

TASK = "wsc266_associative"  # 25 schemas: quick, and a real task


def test_text_and_yaml_models_files(tmp_path):
    text = tmp_path / "models.txt"
    text.write_text(
        "# comment\n"
        "smol hf default\n"
        'smol-partial hf default {"headline": "partial"}\n'
        "HuggingFaceTB/SmolLM2-360M\n"
        "chance wsc-chance seed=1  # trailing comment\n"
    )
    specs = read_models(text)
    assert [s.name for s in specs] == ["smol", "smol-partial", "SmolLM2-360M", "chance"]
    assert specs[1].metadata == {"headline": "partial"}
    assert specs[2].model_args == "pretrained=HuggingFaceTB/SmolLM2-360M"
    yaml_file = tmp_path / "models.yaml"
    yaml_file.write_text(
        "models:\n"
        "  - {name: smol, model_args: default}\n"
        "  - name: chance\n    model: wsc-chance\n    model_args: {seed: 1}\n"
    )
    specs = read_models(yaml_file)
    assert specs[1] == ModelSpec("chance", "wsc-chance", "seed=1", {})


@pytest.mark.parametrize(
    "content,message",
    [
        ("a hf\n", "models.txt:1: expected NAME MODEL MODEL_ARGS"),
        ("a hf x=1\na hf x=2\n", "appear more than once"),
        ("a/b hf x=1\n", "folder name"),
        ("a hf x=1 {nope\n", "models.txt:1: metadata is not JSON"),
        ("# nothing\n", "no models"),
    ],
)
def test_bad_models_files_name_the_line(tmp_path, content, message):
    path = tmp_path / "models.txt"
    path.write_text(content)
    with pytest.raises(ModelsFileError, match=message):
        read_models(path)


def test_command_and_shared_cache_of_two_scoring_setups(tmp_path):
    plain = ModelSpec("smol", "hf", "default")
    partial = ModelSpec("smol-partial", "hf", "default", {"headline": "partial"})
    options = SweepOptions(tmp_path / "c", "wsc266")
    limited = SweepOptions(tmp_path / "c", "wsc266", ("--limit", "3"))
    one = run_command(plain, tmp_path / "smol", limited)
    two = run_command(partial, tmp_path / "p", options)
    assert one[0] == "--model"
    assert one[one.index("--model_args") + 1] == default_model_args()
    assert "--log_samples" in one and one[-2:] == ["--limit", "3"]
    assert one[one.index("--use_cache") + 1] == two[two.index("--use_cache") + 1]
    assert one[one.index("--use_cache") + 1] == f"{tmp_path / 'c' / '.cache'}/"  # run keys it
    assert json.loads(two[two.index("--metadata") + 1]) == {"headline": "partial"}
    chance = ModelSpec("chance", "wsc-chance", "default,seed=1")
    assert resolved_args(chance) == f"{default_model_args()},seed=1"
    uncached = SweepOptions(tmp_path, "wsc266", cache=False)
    argv = run_command(plain, tmp_path, uncached)
    assert "--use_cache" not in argv
    lock = FileLock(tmp_path / "x.lock", "x")
    alone = child_command(Run("smol", argv, tmp_path / "log.txt", {}, lock))
    assert alone[1:4] == ["-m", "wsc_tasks.cli", "run"] and alone[4:] == argv
    launched = child_command(Run("smol", argv, tmp_path / "log.txt", {}, lock, processes=4))
    assert launched[1:5] == ["-m", "accelerate.commands.launch", "--num_processes", "4"]


def _sweep_argv(models: Path, out: Path) -> list[str]:
    return [str(models), "--out", str(out), "--tasks", TASK, "--rank-task", TASK, "--iters", "300"]


# what differs between two runs of the same models: the cost, the run's date and the links to
# its files (named by lm-eval with the time of the run)
VOLATILE = ("GPU-h", "run date", "files")


def _leaderboard(out: Path) -> dict[str, dict[str, str]]:
    with (out / "leaderboard.csv").open(encoding="utf-8") as handle:
        return {row["model"]: row for row in csv.DictReader(handle)}


def _scores(out: Path) -> dict[str, dict[str, str]]:
    """The leaderboard's rows without the columns that differ from run to run."""
    return {
        name: {k: v for k, v in row.items() if k not in VOLATILE}
        for name, row in _leaderboard(out).items()
    }


def _alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as dead)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def _wait_for(condition, what: str, seconds: float = 180) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _lock_holder(out: Path, name: str) -> int | None:
    try:
        return json.loads(protocol.model_lock(out, name).read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


AT_FORK = """
import os, sys, threading
from pathlib import Path
from wsc_tasks.sweep import runner
from wsc_tasks.sweep.lock import FileLock

held = threading.Lock()
held.acquire()  # held at the fork, as a prefetching thread holds huggingface_hub's HTTP client
os.register_at_fork(after_in_child=held.acquire)  # a library's hook that waits for it
folder = Path(sys.argv[1])
runner.child_command = lambda run: [sys.executable, "-c", "print('ran')"]
with FileLock(folder / "model.lock", "the model") as lock:
    code = runner.in_child(runner.Run("m", [], folder / "log.txt", {}, lock))
print(code, (folder / "log.txt").read_text().strip())
"""


def test_a_run_starts_while_a_thread_holds_a_lock_that_an_at_fork_hook_waits_for(tmp_path):
    """No Python code runs between a run's fork and its exec. huggingface_hub closes its shared
    HTTP client in an at-fork hook; a ``preexec_fn`` ran it in the forked process while the next
    model's download held the client's connection pool, and the run, and the sweep, never went on
    (the Hub sweeps of tests/test_hub.py hung so)."""
    script = [sys.executable, "-c", AT_FORK, str(tmp_path)]
    done = subprocess.run(script, capture_output=True, text=True, timeout=60)
    assert done.stdout.split() == ["0", "ran"], done.stderr[-2000:]


@pytest.mark.slow
def test_killed_sweep_resumes_to_the_same_leaderboard(tmp_path, data_dir):
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\nbroken no-such-model x=1\n")
    # uninterrupted
    assert sweep.main(_sweep_argv(models, tmp_path / "a")) == 1  # one model failed
    board = _leaderboard(tmp_path / "a")
    assert board["chance1"]["kind"] == "chance model" and not board["chance1"]["status"]
    assert (
        board["chance1"]["rank (point estimate)"] == ""
    )  # a chance model is the calibration check, not ranked
    assert board["broken"]["status"].startswith("failed (broken/error.txt): exit status 2")
    assert "no-such-model" in (tmp_path / "a" / "broken" / "error.txt").read_text()
    # the sweep is killed while its first model runs: the run dies with it, then a resume
    out = tmp_path / "b"
    command = [sys.executable, "-m", "wsc_tasks.cli", "sweep", *_sweep_argv(models, out)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(lambda: _lock_holder(out, "chance1") not in (None, process.pid), "the model's run")
    child = _lock_holder(out, "chance1")
    assert _alive(child)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    _wait_for(lambda: not _alive(child), "the orphaned run to die with the sweep")
    assert not (out / "chance1" / "done.json").exists()
    (out / "chance1" / "partial-output.txt").write_text("left by the killed run")
    assert sweep.main(_sweep_argv(models, out)) == 1
    assert not (out / "chance1" / "partial-output.txt").exists()  # restarted cleanly
    assert _scores(out) == _scores(tmp_path / "a")
    first, again = ((f / "leaderboard.md").read_text() for f in (tmp_path / "a", out))
    assert first.split("**The models")[0] == again.split("**The models")[0]
    # a third run does nothing: finished and failed models are skipped
    before = (out / "chance1" / "done.json").stat().st_mtime_ns
    assert sweep.main(_sweep_argv(models, out)) == 1
    assert (out / "chance1" / "done.json").stat().st_mtime_ns == before


def test_a_second_sweep_on_the_same_folder_stops_naming_the_first(tmp_path, capsys):
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\n")
    out = tmp_path / "out"
    with FileLock(protocol.sweep_lock(out), "output folder"):  # as another sweep would
        assert sweep.main(_sweep_argv(models, out)) == 2
    error = capsys.readouterr().err
    assert f"is in use by pid {os.getpid()} on " in error and "started 20" in error
    assert not (out / "chance1").exists()


@contextlib.contextmanager
def _unwritable(tmp_path: Path, how: str) -> Iterator[tuple[Path, str]]:
    """A folder no file can be written in, as this process finds it (root included): under a
    file, or made read-only (chmod as a user; immutable, chattr +i, as root, whom chmod does not
    stop). Yields the --out to give and the folder the error names."""
    if how == "under a file":
        (tmp_path / "a-file").write_text("")
        yield tmp_path / "a-file" / "sweep", "Not a directory"
        return
    folder = tmp_path / "read-only"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o555)
        undo = ["chmod", "755", str(folder)]
    elif (
        shutil.which("chattr")
        and not subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode
    ):
        undo = ["chattr", "-i", str(folder)]
    else:
        pytest.skip("root, and no chattr +i here: nothing stops root writing a folder")
    try:
        yield folder, "Operation not permitted" if os.geteuid() == 0 else "Permission denied"
    finally:
        subprocess.run(undo, check=True)


@pytest.mark.parametrize("how", ["under a file", "read-only"])
def test_an_out_folder_that_cannot_be_written_is_one_line_before_anything_runs(
    how, tmp_path, capsys, monkeypatch
):
    """Before: ``[Errno 1] Operation not permitted: 'sw/7d/.sweep'`` (or ``[Errno 20] Not a
    directory``), without the fix that ``wsc-tasks run`` names for its --output_path."""
    from wsc_tasks.cli import main as cli

    monkeypatch.setattr(sweep, "models_of", lambda *a: pytest.fail("the models were read"))
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\n")
    with _unwritable(tmp_path, how) as (out, why):
        assert cli(["sweep", *_sweep_argv(models, out)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"wsc-tasks: error: --out {out}: cannot write to {out} ({why}); give a folder you can "
        "write to (--verbose for the traceback)"
    ]
    assert not out.exists() or not any(out.iterdir())


def test_a_resume_never_clears_a_folder_a_live_run_writes(tmp_path):
    out = tmp_path / "out"
    spec = ModelSpec("chance1", "wsc-chance", "seed=1")
    (out / "chance1").mkdir(parents=True)
    (out / "chance1" / "log.txt").write_text("written by a live run")
    with FileLock(protocol.model_lock(out, "chance1"), "model folder"):  # the live run
        assert run_one(spec, SweepOptions(out, TASK)) == "busy"
    assert (out / "chance1" / "log.txt").read_text() == "written by a live run"


class _Signalled(Launcher):
    """A scheduler that reports the model's job ended (signalled at its time limit) from its
    first look, while the worker holding the model's lock lets go only at look ``lets_go``."""

    name = "signalled"
    help = "test"
    poll_s = 0.0

    def __init__(self, options: SweepOptions, lock: FileLock, lets_go: int | None) -> None:
        super().__init__({}, options)
        self.lock, self.lets_go, self.looks = lock, lets_go, 0

    def submit(self, specs: Sequence[ModelSpec]) -> None:
        self.lock.acquire()  # the worker, running the model

    def states(self) -> dict[str, RunState]:
        self.looks += 1
        if self.looks == self.lets_go:
            self.lock.release()
        return {"m": RunState("ended", "Slurm job 7_0 ended in state TIMEOUT")}

    def cancel(self) -> None:
        pass


def test_a_run_its_scheduler_ended_is_settled_once_its_worker_lets_go_of_it(tmp_path, monkeypatch):
    """Slurm marks a job ended once it has signalled it; its worker may unwind for seconds
    more, holding the model's lock. The sweep waits for it (then writes the scheduler's account
    in ``error.txt``), not taking the model as held by another process; only a lock still held
    after ``ENDING_S`` makes it busy."""
    monkeypatch.setattr(driver, "plan", lambda specs, launcher: (list(specs), set()))
    spec = ModelSpec("m", "wsc-chance", "seed=1")
    for lets_go, ending_s, state in ((40, 60.0, "failed"), (None, 0.05, "busy")):
        out = tmp_path / state
        lock = FileLock(protocol.model_lock(out, "m"), "model m")
        launcher = _Signalled(SweepOptions(out, TASK), lock, lets_go)
        monkeypatch.setattr(driver, "ENDING_S", ending_s)
        assert driver._sweep([spec], launcher) == {"m": state}
        if state == "failed":
            assert launcher.looks == lets_go  # not one look before the lock was let go
            error = (out / "m" / protocol.SWEEP_ERROR).read_text()
            assert error.startswith("Slurm job 7_0 ended in state TIMEOUT")
        else:
            assert not (out / "m" / protocol.SWEEP_ERROR).exists()
            lock.release()


def _responses(folder: Path) -> list:
    import gzip

    [path] = folder.rglob("samples_*.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line)["resps"] for line in handle]


@pytest.mark.slow
def test_new_weights_at_the_same_path_never_read_the_old_cache(tmp_path, data_dir):
    """A model re-saved at the same path is a new model: its requests are not served from the
    cache of the old weights (before, every request was, and the new row had the old scores)."""
    model = tmp_path / "model"
    tiny_models.gpt2(model, seed=1, size="1x16")
    out = tmp_path / "out"
    argv = [*_sweep_argv(tmp_path / "models.txt", out), "--limit", "4"]
    (tmp_path / "models.txt").write_text(f"old hf pretrained={model}\n")
    assert sweep.main(argv) == 0
    before = _responses(out / "old")
    tiny_models.gpt2(model, seed=2, size="1x16")
    (tmp_path / "models.txt").write_text(f"old hf pretrained={model}\nnew hf pretrained={model}\n")
    assert sweep.main(argv) == 0  # "old" is run again too: its weights changed
    old, new = _responses(out / "old"), _responses(out / "new")
    assert len(old) == len(new) == 4 and old == new != before
    assert len(list((out / ".cache").glob("*.db"))) == 2
    # the model's path is written <model>, as the embedded model's is (before: verbatim)
    written = [  # the sweep's bookkeeping (.sweep/) aside: its queue names what to load
        p for p in out.rglob("*") if p.is_file() and p.suffix in (".json", ".txt", ".md")
        and ".sweep" not in p.parts
    ]  # fmt: skip
    assert {p.name for p in written} >= {"spec.json", "done.json", "log.txt", "leaderboard.md"}
    assert [p for p in written if str(model) in p.read_text()] == []
    spec = json.loads((out / "old" / protocol.SPEC).read_text())["spec"]
    assert spec["model_args"] == "pretrained=<model>"


def test_sweep_bookkeeping_is_never_committed():
    """Locks name a pid and a host: ignored under any --out, and none in the repository."""
    repo = Path(__file__).resolve().parents[1]
    ignored = [
        "results/.sweep/lock",
        "results/.sweep/locks/chance.lock",
        "out/.sweep/slurm/x.sh",
        "results/.sweep.lock",
        "results/.locks/chance.lock",
        "results/.cache/k_rank0.db",
    ]
    git = ["git", "-C", str(repo)]
    found = subprocess.run([*git, "check-ignore", *ignored], capture_output=True, text=True)
    assert found.stdout.split() == ignored
    tracked = subprocess.run([*git, "ls-files"], capture_output=True, text=True, check=True)
    assert [name for name in tracked.stdout.split() if name.endswith(".lock")] == []


def test_every_test_the_fault_table_names_exists():
    """docs/sweeps.md's fault table names a test per row (``::name`` alone: the row's last
    file); a renamed or removed test must not live on there."""
    import ast
    import re

    repo = Path(__file__).resolve().parents[1]
    text = (repo / "docs" / "sweeps.md").read_text(encoding="utf-8").split("## Faults", 1)[1]
    rows = [line for line in text.splitlines() if line.startswith("| ") and "`" in line]
    named: list[tuple[str, str]] = []
    for row in rows:
        last = ""
        for file, name in re.findall(r"`(tests/[\w/]+\.py)?::(\w+)", row.rsplit(" | ", 1)[-1]):
            last = file or last
            named.append((last, name))
    assert len(rows) >= 20 and len(named) >= 20
    defined: dict[str, set[str]] = {}
    for file, _ in named:
        tree = ast.parse((repo / file).read_text(encoding="utf-8"))
        defined[file] = {node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)}
    assert [(file, name) for file, name in named if name not in defined[file]] == []


def test_yaml_syntax_errors_and_bad_entries_name_the_file_and_line(tmp_path):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  - {name: a, model_args: x=1}\n  - {name: b, model_args: [x\n")
    with pytest.raises(ModelsFileError) as raised:
        read_models(path)
    assert str(raised.value) == (
        f"{path}:4:1: not valid YAML: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence at line 3, column 27)"
    )
    path.write_text("models:\n  - {name: a}\n\n  - {name: b, modle: hf}\n")
    with pytest.raises(ModelsFileError, match=rf"^{path}:4: model 2: unknown key\(s\) \['modle'\]"):
        read_models(path)
    path.write_text("- {name: a}\n- name: b\n  model: hf\n  model_args: [1, 2\n")
    with pytest.raises(ModelsFileError, match=rf"^{path}:\d+:\d+: not valid YAML"):
        read_models(path)
    path.write_text("slurm: {partition: gpu, time: '1:00:00'}\nmodels:\n  - {name: a}\n")
    found = read_models_file(path)
    assert found.sections == {"slurm": {"partition": "gpu", "time": "1:00:00"}}
    assert found.where("slurm") == f"{path}:1"


def test_a_yaml_error_on_the_command_line_is_one_line_naming_the_file(tmp_path, capsys):
    path = tmp_path / "models.yaml"
    path.write_text("models:\n  - {name: a\n")
    from wsc_tasks.cli import main as cli

    assert cli(["sweep", str(path), "--out", str(tmp_path / "out")]) == 2
    [line] = capsys.readouterr().err.splitlines()  # one line: no usage block before it
    assert line.startswith(f"wsc-tasks: error: {path}:3:1: not valid YAML")  # not <unicode string>


@pytest.mark.slow
def test_new_weights_at_the_same_path_are_run_again_not_reported_from_the_old_run(
    tmp_path, data_dir, caplog
):
    """A model re-saved at the same path is run again (said in the log), and its leaderboard row
    is that of a fresh sweep of the new weights (before, it was reported ``done`` from the old
    run and the leaderboard kept the old scores)."""
    model = tmp_path / "model"
    tiny_models.gpt2(model, seed=1, size="1x16")
    models = tmp_path / "models.txt"
    models.write_text(f"tiny hf pretrained={model}\n")
    out = tmp_path / "out"
    assert sweep.main(_sweep_argv(models, out)) == 0
    old = _leaderboard(out)["tiny"]
    tiny_models.gpt2(model, seed=2, size="1x16")
    with caplog.at_level("WARNING"):
        assert sweep.main(_sweep_argv(models, out)) == 0
    assert "tiny: run again: its weights or tokenizer changed (fingerprint" in caplog.text
    fresh = tmp_path / "fresh"
    assert sweep.main(_sweep_argv(models, fresh)) == 0
    scores = [k for k in old if k not in VOLATILE]
    assert [_leaderboard(out)["tiny"][k] for k in scores] == [
        _leaderboard(fresh)["tiny"][k] for k in scores
    ]
    assert [old[k] for k in scores] != [_leaderboard(out)["tiny"][k] for k in scores]


def test_done_json_without_the_fingerprint_is_stale(tmp_path):
    spec = ModelSpec("chance1", "wsc-chance", "seed=1")
    options = SweepOptions(tmp_path, TASK)
    folder = tmp_path / "chance1"
    folder.mkdir()
    asked = protocol.request(spec, options)
    (folder / "done.json").write_text(json.dumps({"request": asked}))
    assert protocol.status(folder, asked, "abc").state == "stale"
    protocol.write_done(folder, asked, "abc", {"gpu_hours": 0.5})
    assert protocol.status(folder, asked, "abc").state == "done"
    assert protocol.status(folder, asked, "def").why.startswith("its weights or tokenizer changed")


def test_a_task_whose_definition_changed_since_the_run_is_stale(tmp_path):
    """lm-eval records each task's version in its results; a done model whose run recorded
    another version of a task than this package defines now is run again, never reported."""
    from wsc_tasks.tasks import versions

    spec = ModelSpec("chance1", "wsc-chance", "seed=1")
    options = SweepOptions(tmp_path, TASK)
    folder = tmp_path / "chance1"
    (folder / "lm_eval").mkdir(parents=True)
    asked = protocol.request(spec, options)
    protocol.write_done(folder, asked, "abc", {"gpu_hours": 0.0})
    results = folder / "lm_eval" / "results_2026-01-01T00-00-00.000000.json"
    now = versions.current()[TASK]
    results.write_text(json.dumps({"versions": {TASK: now, "someone_elses_task": 7}}))
    assert protocol.status(folder, asked, "abc").state == "done"
    results.write_text(json.dumps({"versions": {TASK: now - 0.5}}))
    found = protocol.status(folder, asked, "abc")
    assert found.state == "stale"
    assert found.why == f"task {TASK} changed (version {now - 0.5} -> {now})"


def test_cost_in_the_leaderboard(tmp_path, data_dir):
    from wsc_tasks import leaderboard

    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\nchance2 wsc-chance seed=2\n")
    out = tmp_path / "out"
    assert sweep.main(_sweep_argv(models, out)) == 0
    for name, hours in (("chance1", 0.25), ("chance2", 1.5)):
        done = json.loads((out / name / "done.json").read_text())
        assert done["cost"]["launcher"] == "local" and done["cost"]["gpus"] == 0.0
        assert done["cost"]["wall_s"] > 0
        done["cost"]["gpu_hours"] = hours  # as a GPU run would have recorded
        (out / name / "done.json").write_text(json.dumps(done))
    leaderboard.write(["chance1", "chance2"], out, TASK, 300, 0)
    board = _leaderboard(out)
    assert {board["chance1"]["GPU-h"], board["chance2"]["GPU-h"]} == {"0.25", "1.5"}
    text = (out / "leaderboard.md").read_text()
    assert "**Cost:** 1.750 GPU-hours in total over 2 finished models." in text


# the lock: O_EXCL file, holder as JSON, heartbeat; stale rules that hold across nodes


def _dead_pid() -> int:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    return int(done.stdout)


def _holder(path: Path, **fields) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"host": "vm", "pid": 1, "pid_started": None, "job": None, "started": "2026",
              "token": "theirs"} | fields  # fmt: skip
    path.write_text(json.dumps(record))


def test_a_lock_held_by_a_live_process_names_it(tmp_path):
    path = tmp_path / "a.lock"
    with FileLock(path, "model a"):
        with pytest.raises(Busy, match=rf"model a is in use by pid {os.getpid()} on "):
            FileLock(path, "model a").acquire()
    assert not path.exists()  # released


def test_stale_locks_are_taken_over(tmp_path, monkeypatch):
    import socket

    path = tmp_path / "a.lock"
    host = socket.gethostname()
    _holder(path, host=host, pid=_dead_pid())  # this host, process gone: kill -9 of a sweep
    with FileLock(path, "a") as lock:
        assert json.loads(path.read_text())["token"] == lock.token
    _holder(path, host="elsewhere", pid=1)  # another node with a fresh heartbeat: held
    with pytest.raises(Busy, match="pid 1 on elsewhere"):
        FileLock(path, "a").acquire()
    old = time.time() - locks.STALE_S - 60
    os.utime(path, (old, old))  # its heartbeat stopped (the node died)
    with FileLock(path, "a"):
        pass
    _holder(path, host="elsewhere", pid=1, job="7_0")  # an earlier run of this requeued job
    with pytest.raises(Busy):
        FileLock(path, "a").acquire()
    monkeypatch.setenv(locks.JOB_ENV, "7_0")
    with FileLock(path, "a"):
        pass


def _hold_briefly(path: str, seen: str) -> None:
    for _ in range(20):
        try:
            with FileLock(Path(path), "x"):
                with open(seen, "a") as log:
                    log.write(f"+{os.getpid()}\n")
                time.sleep(0.005)
                with open(seen, "a") as log:
                    log.write(f"-{os.getpid()}\n")
        except Busy:
            time.sleep(0.001)


def test_the_lock_excludes_between_processes(tmp_path):
    import multiprocessing

    seen = tmp_path / "seen.txt"
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_hold_briefly, args=(str(tmp_path / "x.lock"), str(seen)))
        for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    events = seen.read_text().split()
    pairs = zip(events[::2], events[1::2], strict=True)
    assert events and all(a[0] == "+" and b == "-" + a[1:] for a, b in pairs)


def test_lock_files_are_never_committed():
    """Locks name a pid and a host of one machine: ignored under any --out, none in results/."""
    repo = Path(__file__).resolve().parents[1]
    if not (repo / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout")
    tracked = subprocess.run(["git", "ls-files"], cwd=repo, capture_output=True, text=True)
    files = tracked.stdout.splitlines()
    assert not [f for f in files if f.endswith(".lock") or "/.sweep/" in f or "/.locks/" in f]
    for path in ("results/.sweep/lock", "results/.sweep/locks/a.lock", "x/.sweep/slurm/jobs.json",
                 "results/.sweep.lock", "results/.locks/a.lock"):  # fmt: skip
        ignored = subprocess.run(["git", "check-ignore", "-q", "--no-index", path], cwd=repo)
        assert ignored.returncode == 0, f"{path} is not ignored"


def test_the_sweeps_bar_shows_how_far_a_running_models_requests_got(tmp_path):
    """Before, the bar over the models sat at 0/N while a model ran."""
    from wsc_tasks.sweep.driver import _running

    (tmp_path / "m").mkdir()
    assert _running(tmp_path, "m") == "m waiting"  # queued: no log yet
    log = tmp_path / "m" / "log.txt"
    log.write_text("INFO Building contexts for wsc266\n")
    assert _running(tmp_path, "m") == "m started"
    bar = "Running loglikelihood requests:  12%|█▏   | 120/1000\r  45%|████▌  | 450/1000\r"
    log.write_text(log.read_text() + bar)
    assert _running(tmp_path, "m") == "m 45%"


def test_the_board_says_how_each_unranked_model_ended_and_what_brings_it_back(tmp_path):
    """A refused model and one whose weights could not be fetched are checked again by the next
    sweep; only a failed run needs --retry-failed, and the board says which is which."""
    from wsc_tasks.leaderboard.board import build
    from wsc_tasks.paths import NOT_FETCHED, REFUSED

    errors = {"a": REFUSED + "gated", "b": NOT_FETCHED + "HTTP 503", "c": "exit status 2"}
    for name, first in errors.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "error.txt").write_text(first + "\n")
    board = build(sorted(errors), tmp_path, "wsc266", iters=10, seed=1)
    assert dict(board.problems) == {
        "a": f"refused (a/error.txt): {REFUSED}gated",
        "b": f"not fetched (b/error.txt): {NOT_FETCHED}HTTP 503",
        "c": "failed (c/error.txt): exit status 2",
    }
    assert [note for note in board.notes if "not in the ranking" in note] == [
        "1 model failed, not in the ranking: c (their errors: the last table; --retry-failed "
        "runs them again)",
        "1 model refused, not in the ranking: a (their errors: the last table; the next sweep "
        "checks them again)",
        "1 model not fetched, not in the ranking: b (their errors: the last table; the next "
        "sweep downloads them again)",
    ]


# the warm worker, in this process: one model after another, a failing one alone, no model left


@pytest.mark.slow
def test_a_worker_runs_one_model_after_another_and_keeps_none_in_memory(
    tmp_path, data_dir, monkeypatch
):
    """The worker's loop with the worker command's own evaluation, in this process: a model whose
    run fails ends alone (its error.txt) and the worker takes the next; the two GPT-2s are done;
    when each run starts no model of an earlier one is alive (its memory was handed back), and
    none is after the last; what the worker keeps is frozen out of the collector's walks when a
    later run starts, and handed back when the worker ends."""
    import gc
    import weakref

    from transformers import PreTrainedModel

    from wsc_tasks import garbage_collection
    from wsc_tasks.cli import sweep_worker
    from wsc_tasks.sweep import worker
    from wsc_tasks.sweep.queue import Queue

    made: weakref.WeakSet = weakref.WeakSet()  # every model built (frozen ones included)
    built = []
    post_init = PreTrainedModel.post_init

    def registered(self):
        made.add(self)
        built.append(type(self).__name__)
        return post_init(self)

    monkeypatch.setattr(PreTrainedModel, "post_init", registered)

    def models_alive() -> int:
        garbage_collection.collect()  # the frozen objects walked too
        return len(made)

    for seed in (1, 2):
        tiny_models.gpt2(tmp_path / f"tiny{seed}", seed, size="1x16")
    specs = [ModelSpec("tiny1", "hf", f"pretrained={tmp_path / 'tiny1'}"),
             ModelSpec("broken", "no-such-model", "x=1"),
             ModelSpec("tiny2", "hf", f"pretrained={tmp_path / 'tiny2'}")]  # fmt: skip
    options = SweepOptions(tmp_path / "out", TASK, ("--limit", "4"), cache=False)
    queue = Queue.write("local", options, specs)
    alive, frozen = [], []

    def evaluate(run):
        frozen.append(gc.get_freeze_count())
        alive.append(models_alive())
        return sweep_worker.evaluate(run)

    states = worker.work(queue, 0, worker.placement(queue, 0), evaluate)
    assert states == {"tiny1": "done", "broken": "failed", "tiny2": "done"}
    assert alive == [0, 0, 0] and models_alive() == 0
    assert built.count("GPT2LMHeadModel") >= 2  # each run's model was seen
    assert frozen[1] > 0 and frozen[2] > 0 and gc.get_freeze_count() == 0
    error = (options.out / "broken" / "error.txt").read_text()
    assert error.startswith("exit status 2: wsc-tasks: error: Attempted to load model")
    read = [line.get("read_ahead", {}) for line in queue.lines() if line["event"] == "end"]
    assert read[2]["model"] == "tiny2" and read[2]["state"] == "read" and read[2]["bytes"] > 0
    assert "tiny2: wsc-tasks run --model hf" not in (options.out / "tiny1" / "log.txt").read_text()
