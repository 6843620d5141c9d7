"""``wsc-tasks sweep``: models files, commands, and a killed sweep resumed on the chance model."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wsc_tasks.cli import sweep
from wsc_tasks.cli.run import default_model_args

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
    specs = sweep.read_models(text)
    assert [s.name for s in specs] == ["smol", "smol-partial", "SmolLM2-360M", "chance"]
    assert specs[1].metadata == {"headline": "partial"}
    assert specs[2].model_args == "pretrained=HuggingFaceTB/SmolLM2-360M"
    yaml_file = tmp_path / "models.yaml"
    yaml_file.write_text(
        "models:\n"
        "  - {name: smol, model_args: default}\n"
        "  - name: chance\n    model: wsc-chance\n    model_args: {seed: 1}\n"
    )
    specs = sweep.read_models(yaml_file)
    assert specs[1] == sweep.ModelSpec("chance", "wsc-chance", "seed=1", {})


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
    with pytest.raises(sweep.ModelsFileError, match=message):
        sweep.read_models(path)


def test_command_and_shared_cache_of_two_scoring_setups(tmp_path):
    plain = sweep.ModelSpec("smol", "hf", "default")
    partial = sweep.ModelSpec("smol-partial", "hf", "default", {"headline": "partial"})
    one = sweep.run_command(plain, tmp_path / "smol", "wsc266", ["--limit", "3"], tmp_path / "c")
    two = sweep.run_command(partial, tmp_path / "p", "wsc266", [], tmp_path / "c")
    assert one[1:5] == ["-m", "wsc_tasks.cli", "run", "--model"]
    assert one[one.index("--model_args") + 1] == default_model_args()
    assert "--log_samples" in one and one[-2:] == ["--limit", "3"]
    assert one[one.index("--use_cache") + 1] == two[two.index("--use_cache") + 1]
    assert json.loads(two[two.index("--metadata") + 1]) == {"headline": "partial"}
    chance = sweep.ModelSpec("chance", "wsc-chance", "default,seed=1")
    assert sweep.resolved_args(chance) == f"{default_model_args()},seed=1"
    launched = sweep.run_command(plain, tmp_path, "wsc266", [], None, processes=4)
    assert launched[1:5] == ["-m", "accelerate.commands.launch", "--num_processes", "4"]
    assert "--use_cache" not in launched


def _sweep_argv(models: Path, out: Path) -> list[str]:
    return [str(models), "--out", str(out), "--tasks", TASK, "--rank-task", TASK, "--iters", "300"]


def _leaderboard(out: Path) -> dict[str, dict[str, str]]:
    with (out / "leaderboard.csv").open(encoding="utf-8") as handle:
        return {row["model"]: row for row in csv.DictReader(handle)}


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
        return json.loads((out / sweep.MODEL_LOCKS / f"{name}.lock").read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.slow
def test_killed_sweep_resumes_to_the_same_leaderboard(tmp_path, data_dir):
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\nbroken no-such-model x=1\n")
    # uninterrupted
    assert sweep.main(_sweep_argv(models, tmp_path / "a")) == 1  # one model failed
    board = _leaderboard(tmp_path / "a")
    assert board["chance1"]["rank"] == "1" and not board["chance1"]["status"]
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
    for name in ("leaderboard.md", "leaderboard.csv"):
        assert (out / name).read_bytes() == (tmp_path / "a" / name).read_bytes()
    # a third run does nothing: finished and failed models are skipped
    before = (out / "chance1" / "done.json").stat().st_mtime_ns
    assert sweep.main(_sweep_argv(models, out)) == 1
    assert (out / "chance1" / "done.json").stat().st_mtime_ns == before


def test_a_second_sweep_on_the_same_folder_stops_naming_the_first(tmp_path, capsys):
    models = tmp_path / "models.txt"
    models.write_text("chance1 wsc-chance seed=1\n")
    out = tmp_path / "out"
    with sweep.hold(out / sweep.SWEEP_LOCK, "output folder"):  # as another sweep would
        assert sweep.main(_sweep_argv(models, out)) == 2
    error = capsys.readouterr().err
    assert f"is in use by pid {os.getpid()} on " in error and "started 20" in error
    assert not (out / "chance1").exists()


def test_a_resume_never_clears_a_folder_a_live_run_writes(tmp_path):
    out = tmp_path / "out"
    spec = sweep.ModelSpec("chance1", "wsc-chance", "seed=1")
    (out / "chance1").mkdir(parents=True)
    (out / "chance1" / "log.txt").write_text("written by a live run")
    with sweep.hold(out / sweep.MODEL_LOCKS / "chance1.lock", "model folder"):  # the live run
        assert sweep.run_model(spec, out, TASK, []) == "busy"
    assert (out / "chance1" / "log.txt").read_text() == "written by a live run"


def _tiny_gpt2(folder: Path, seed: int) -> None:
    import torch
    from conftest import gpt2_tokenizer
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=50257, n_positions=128, n_embd=16, n_layer=1, n_head=2)
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    gpt2_tokenizer().save_pretrained(folder)


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
    _tiny_gpt2(model, seed=1)
    out = tmp_path / "out"
    argv = [*_sweep_argv(tmp_path / "models.txt", out), "--limit", "4"]
    (tmp_path / "models.txt").write_text(f"old hf pretrained={model}\n")
    assert sweep.main(argv) == 0
    _tiny_gpt2(model, seed=2)
    (tmp_path / "models.txt").write_text(f"old hf pretrained={model}\nnew hf pretrained={model}\n")
    assert sweep.main(argv) == 0
    old, new = _responses(out / "old"), _responses(out / "new")
    assert len(old) == len(new) == 4 and old != new
    assert len(list((out / ".cache").glob("*.db"))) == 2
