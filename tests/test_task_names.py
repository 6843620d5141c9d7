"""Unknown ``--tasks`` names: refused with the closest names before lm-eval indexes its tasks."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from wsc_tasks.cli import run as cli_run
from wsc_tasks.cli import task_names


def test_asked_tasks_reads_lm_evals_forms():
    assert task_names.asked_tasks(["--model", "hf"]) is None
    assert task_names.asked_tasks(["--tasks", "a,b", "c", "--limit", "1"]) == ["a", "b", "c"]
    assert task_names.asked_tasks(["--tasks=a, b", "-t", "d"]) == ["a", "b", "d"]


def test_unknown_keeps_names_globs_and_files_it_cannot_judge(tmp_path):
    known = {"wsc266", "wsc266_switched", "hellaswag"}
    assert task_names.unknown(["wsc266", "wsc26*", "wsc226", "x*"], known) == ["wsc226", "x*"]
    assert task_names.unknown(["my/task.yaml", str(tmp_path)], known) == []


def test_the_scan_reads_every_way_a_yaml_names_a_task(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.yaml").write_text('"task": "quoted_name"\n"tag": "quoted_tag"\n')
    (tmp_path / "sub" / "_template").write_text("tag:\n  - block_one\n  - block_two\n")
    (tmp_path / "sub" / "g.yaml").write_text("group: grp\ntask:\n  - task: inline\ntag: [f1, f2]\n")
    (tmp_path / "notes.md").write_text("task: not_a_task\n")
    found = task_names.names_in([tmp_path])
    assert {"quoted_name", "quoted_tag", "block_one", "block_two", "grp", "inline", "f1", "f2"} <= (
        found
    )
    assert "not_a_task" not in found


# lm-eval folders whose names come from quoted keys, included files without a .yaml name, or
# tags set only in an included template; then every 60th folder for breadth
TRICKY = ["aradice", "afrobench", "bertaqa", "paloma", "truthfulqa-multi", "bbh"]


def test_the_scan_finds_every_name_lm_evals_index_has():
    """The superset the check relies on: the day lm-eval indexes a name written elsewhere (or
    otherwise), this fails and ``task_names`` must learn where."""
    from lm_eval.tasks._index import TaskIndex

    root = task_names.lm_eval_tasks_folder()
    folders = sorted(p for p in root.iterdir() if p.is_dir() and p.name != "__pycache__")
    chosen = [root / name for name in TRICKY] + folders[::60]
    for folder in chosen:
        index = TaskIndex.build([folder])
        missed = set(index) - task_names.names_in([folder])
        assert not missed, f"{folder.name}: {sorted(missed)[:5]}"


def test_a_misspelt_task_is_refused_before_lm_eval_indexes_or_loads_anything(monkeypatch):
    from lm_eval.api import registry
    from lm_eval.tasks import manager

    def forbidden(*args, **kwargs):
        raise AssertionError("lm-eval's task index or a model was built")

    monkeypatch.setattr(manager.TaskManager, "__init__", forbidden)
    monkeypatch.setattr(registry, "get_model", forbidden)
    with pytest.raises(ValueError) as error:
        cli_run.run_lm_eval(["--tasks", "wsc226,hellaswg", "--limit", "1"])
    text = str(error.value)
    assert "\n" not in text
    assert text.startswith("wsc-tasks: --tasks: unknown tasks wsc226 (did you mean wsc266, ")
    assert "wsc273 (lm-eval)" in text
    assert "hellaswg (did you mean hellaswag (lm-eval)" in text


def test_the_users_include_path_counts_as_known(tmp_path, monkeypatch):
    (tmp_path / "mine.yaml").write_text("task: my_task\n")
    monkeypatch.setattr(task_names, "lm_eval_tasks_folder", lambda: tmp_path / "none")
    cli_run.check_task_names(["--tasks", "my_task,wsc266", "--include_path", str(tmp_path)])
    with pytest.raises(ValueError, match=r"unknown task my_tsk \(did you mean my_task\?\)"):
        cli_run.check_task_names(["--tasks", "my_tsk", "--include_path", str(tmp_path)])


def test_the_command_prints_one_line_and_exits_2(tmp_path):
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "wsc_tasks.cli", "run", "--tasks", "wsc226"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    took = time.monotonic() - started
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown task wsc226 (did you mean wsc266" in lines[0], done.stderr
    print(f"refused in {took:.1f} s")  # the figure, not a limit (2 shared cores vary)


def test_a_sweep_refuses_a_misspelt_task_before_any_model_runs(tmp_path, capsys):
    from wsc_tasks.cli import main as cli

    models = tmp_path / "models.txt"
    models.write_text("chance wsc-chance seed=1\n")
    out = tmp_path / "out"
    assert cli(["sweep", str(models), "--out", str(out), "--tasks", "wsc226"]) == 2
    assert "unknown task wsc226 (did you mean wsc266" in capsys.readouterr().err
    assert not out.exists()
