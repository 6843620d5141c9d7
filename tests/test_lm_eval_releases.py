"""Every lm-eval release the package allows: the oldest (``SUPPORTED[0]``) run beside the newest
installed one. ``.ci/run`` installs the oldest into a folder of its own (``pip install --no-deps
--target``) and names it in ``WSC_TASKS_LM_EVAL_OLDEST``; each check runs in a process whose
``PYTHONPATH`` puts that release first. Checked there: the tasks load and pass lm-eval's own
new-task checks, ``wsc266`` on a tiny model gives the same samples as on the newest release, and
a plain ``lm_eval`` run prints its table.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from conftest import REPO, needs

from wsc_tasks import lm_eval_fixes
from wsc_tasks.metrics import registry
from wsc_tasks.paths import include_path

pytestmark = pytest.mark.slow

OLDEST_ENV = "WSC_TASKS_LM_EVAL_OLDEST"


@pytest.fixture(scope="module")
def oldest() -> Path:
    folder = os.environ.get(OLDEST_ENV)
    low = lm_eval_fixes.SUPPORTED[0]
    missing = None
    if not folder or not Path(folder, "lm_eval").is_dir():
        missing = (
            f"lm-eval {low} is not installed beside this one: pip install --no-deps --target "
            f"DIR lm_eval=={low}, then {OLDEST_ENV}=DIR"
        )
    needs("LM_EVAL_OLDEST", missing)
    return Path(str(folder))


def _run(command: list[str], release: Path | None, **kwargs) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if release is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(release), env.get("PYTHONPATH", "")]).strip(":")
    return subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO, **kwargs)


def test_the_oldest_is_the_first_release_the_package_allows(oldest):
    version = "import importlib.metadata as m; print(m.version('lm_eval'))"
    done = _run([sys.executable, "-c", version], oldest)
    assert done.stdout.strip() == lm_eval_fixes.SUPPORTED[0]
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    [requirement] = [d for d in pyproject["project"]["dependencies"] if d.startswith("lm-eval")]
    low, below = lm_eval_fixes.SUPPORTED
    assert requirement == f"lm-eval>={low},<{below}"


def test_the_tasks_pass_lm_evals_new_task_checks_on_the_oldest(oldest):
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow",
               "tests/test_lm_eval_checks.py", "tests/test_lm_eval_fixes.py"]  # fmt: skip
    done = _run(command, oldest, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:]


def _wsc266(release: Path | None, model: Path, out: Path) -> Path:
    """``wsc-tasks run`` of ``wsc266`` (10 schemas, samples kept) on ``release``; its folder."""
    command = [sys.executable, "-m", "wsc_tasks.cli", "run", "--model", "hf", "--model_args",
               f"pretrained={model},dtype=float32", "--tasks", "wsc266", "--limit", "10",
               "--log_samples", "--output_path", str(out)]  # fmt: skip
    done = _run(command, release, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"Next: wsc-tasks report {out / model.name}" in done.stderr + done.stdout
    return out / model.name


@pytest.fixture(scope="module")
def runs(oldest, tiny_gpt2_dir, tmp_path_factory) -> dict[str, Path]:
    """The same ``wsc266`` run on the oldest release and on the newest, each folder named after
    the model (so that the reports label both alike)."""
    folder = tmp_path_factory.mktemp("releases")
    return {
        "oldest": _wsc266(oldest, tiny_gpt2_dir, folder / "oldest"),
        "newest": _wsc266(None, tiny_gpt2_dir, folder / "newest"),
    }


def _samples(run: Path) -> list[dict]:
    [path] = run.rglob("samples_wsc266_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_wsc266_gives_the_same_samples_on_the_oldest_and_the_newest(runs):
    old, new = _samples(runs["oldest"]), _samples(runs["newest"])
    assert len(old) == len(new) == 10
    for a, b in zip(old, new, strict=True):
        for field in ("doc_id", "doc", "target", "arguments", "resps", "filtered_resps"):
            assert a[field] == b[field], field
        assert registry.logged(a) == registry.logged(b)


def test_the_oldest_keeps_the_tasks_notes_in_its_results_file(runs):
    """lm-eval 0.4.10 dumps a task's config before it runs (``early_config_dump``): the notes
    the task records while it runs reach the results file all the same."""
    found = {}
    for release, run in runs.items():
        [path] = run.glob("results_*.json")
        data = json.loads(path.read_text())
        found[release] = data["configs"]["wsc266"]["metadata"]["notes"]
        assert data["group_subtasks"] == {"wsc266": []} if release == "oldest" else True
    assert found["oldest"] == found["newest"]
    assert any("--limit 10" in note for note in found["oldest"])


def _report(run: Path, release: Path | None, out: Path) -> dict[str, bytes]:
    command = [sys.executable, "-m", "wsc_tasks.cli", "report", str(run), "--out", str(out),
               "--iters", "200"]  # fmt: skip
    done = _run(command, release, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.suffix in (".md", ".csv")
    }


def test_a_run_on_the_oldest_is_reported_as_one_on_the_newest(runs, oldest, tmp_path):
    """Read back on its own release, the oldest's run gives the newest's report, file by file
    (its Markdown and CSV tables)."""
    old = _report(runs["oldest"], oldest, tmp_path / "oldest")
    new = _report(runs["newest"], None, tmp_path / "newest")
    assert "report.md" in old and len(old) > 10
    assert old == new


def test_runs_of_both_releases_are_ranked_on_one_leaderboard(runs, oldest, tmp_path):
    board = tmp_path / "board"
    for release, run in runs.items():
        shutil.copytree(run, board / release)
    command = [sys.executable, "-m", "wsc_tasks.cli", "leaderboard", str(board), "--rank-task",
               "wsc266", "--iters", "200"]  # fmt: skip
    done = _run(command, oldest, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows: dict[str, list[str]] = {}  # each model's first row: the ranking table's
    for line in (board / "leaderboard.md").read_text().splitlines():
        if line.startswith(("| oldest |", "| newest |")):
            rows.setdefault(line.split("|")[1].strip(), line.split("|")[5:9])
    assert rows.keys() == {"oldest", "newest"}
    assert rows["oldest"] == rows["newest"]  # A, p (A), a, p (a)


def test_a_plain_lm_eval_run_prints_its_table_on_the_oldest(oldest, tiny_gpt2_dir):
    """lm-eval 0.4.10 gives a class task none of the run's metadata in a plain run: the table
    comes, the token-free headline, and the notes say why."""
    command = [sys.executable, "-m", "lm_eval", "run", "--model", "hf", "--model_args",
               f"pretrained={tiny_gpt2_dir},dtype=float32", "--include_path",
               str(include_path()), "--tasks", "wsc266", "--limit", "4",
               "--device", "cpu"]  # fmt: skip
    done = _run(command, oldest, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = {
        line.split("|")[5].strip() for line in done.stdout.splitlines() if line.count("|") == 10
    }
    assert {"acc", "schema_acc", "n_problems", "n_schemas"} <= rows
    assert "gives a task with a class of its own none of the run's metadata" in done.stderr
