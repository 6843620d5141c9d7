"""``wsc-tasks run`` misused as users misuse it: a request cache shared by two models, output
folders that cannot be written, files lm-eval left incomplete, Ctrl-C, bad ``--limit`` and model
arguments, and machine paths in what a run writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import tiny_models
from lm_eval.loggers import EvaluationTracker

from wsc_tasks import cli
from wsc_tasks.cli import run as cli_run
from wsc_tasks.fingerprint import cache_key
from wsc_tasks.tasks import flags

slow = pytest.mark.slow
TASK = "wsc266_associative"


def _run(argv: list[str], capsys, monkeypatch) -> tuple[int, str]:
    """``wsc-tasks run ARGV`` in this process: its exit status and its stderr."""
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # lm-eval's CLI replaces it
    code = cli.main(["run", *argv])
    return code, capsys.readouterr().err


def _chance(tmp_path: Path, *extra: str) -> list[str]:
    return ["--model", "wsc-chance", "--model_args", "seed=1", "--tasks", TASK, "--limit", "2",
            "--output_path", str(tmp_path / "out"), "--log_samples", *extra]  # fmt: skip


def _last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


def _log_likelihoods(folder: Path) -> list:
    [path] = folder.rglob("samples_*.jsonl")
    return [json.loads(line)["resps"] for line in path.read_text().splitlines()]


# -- the request cache knows the model ------------------------------------------------------------
def test_use_cache_is_named_by_the_model_fingerprint(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for folder in (one, two):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(b"weights")
    shared = str(tmp_path / "shared")

    def cache(*argv: str) -> str:
        found = cli_run.lm_eval_argv(list(argv))
        return found[found.index("--use_cache") + 1]

    first = cache("--model_args", f"pretrained={one}", "--use_cache", shared)
    assert first == f"{shared}_{cache_key('hf', f'pretrained={one}')}"
    assert cache("--model_args", f"pretrained={one}", "--use_cache", shared) == first
    assert cache("--model_args", f"pretrained={two}", "--use_cache", shared) != first
    assert cache("--model_args", f"pretrained={one},dtype=float16", "--use_cache", shared) != first
    (one / "model.safetensors").write_bytes(b"new weights, same path")
    assert cache("--model_args", f"pretrained={one}", "--use_cache", shared) != first
    folder = cache("--model_args", f"pretrained={two}", "--use_cache", f"{tmp_path}/c/")
    assert folder == f"{tmp_path}/c/{cache_key('hf', f'pretrained={two}')}"
    argv = cli_run.lm_eval_argv(["--model_args", f"pretrained={two}", f"--use_cache={shared}"])
    assert f"--use_cache={shared}_{cache_key('hf', f'pretrained={two}')}" in argv


@slow
def test_two_models_sharing_a_use_cache_path_get_their_own_answers(
    tmp_path, data_dir, capsys, monkeypatch
):
    """Before, the second model was answered from the first one's cache entries (the log said
    ``Cached requests: N, Requests remaining: 0``) and reported the first one's scores."""
    first = tiny_models.gpt2(tmp_path / "first", seed=1, size="1x16")
    second = tiny_models.gpt2(tmp_path / "second", seed=2, size="1x16")
    shared = str(tmp_path / "shared")

    def run(model: Path, out: str) -> list:
        argv = ["--model_args", f"pretrained={model}", "--tasks", TASK, "--limit", "2",
                "--use_cache", shared, "--output_path", str(tmp_path / out)]  # fmt: skip
        argv.append("--log_samples")
        assert _run(argv, capsys, monkeypatch)[0] == 0
        return _log_likelihoods(tmp_path / out)

    answers = run(first, "a")
    assert run(second, "b") != answers
    assert run(first, "again") == answers  # its own entries are still read
    assert len(list(tmp_path.glob("shared_*_rank0.db"))) == 2


@slow
def test_cache_requests_with_other_metadata_builds_its_own_requests(
    tmp_path, tiny_gpt2_dir, data_dir, capsys, monkeypatch
):
    """Before, the second run read the first one's requests (``scoring: partial`` only), sent
    them all to the model and failed: ``zip() argument 2 is shorter than argument 1``."""
    from lm_eval.caching import cache

    monkeypatch.setattr(cache, "PATH", str(tmp_path / "requests"))
    model = ["--model", "wsc-chance", "--model_args", f"seed=1,tokenizer={tiny_gpt2_dir}"]
    base = [*model, "--tasks", TASK, "--limit", "3"]

    def results(out: str, *extra: str) -> dict:
        argv = [*base, "--output_path", str(tmp_path / out), *extra]
        code, err = _run(argv, capsys, monkeypatch)
        assert code == 0, _last_line(err)
        [path] = (tmp_path / out).rglob("results_*.json")
        return json.loads(path.read_text())["results"][TASK]

    cached = ["--cache_requests", "true"]
    results("partial", *cached, "--metadata", '{"scoring": "partial"}')
    served = results("all", *cached)
    assert served == results("fresh")
    files = sorted(path.name for path in (tmp_path / "requests").iterdir())
    assert sum(name.startswith("requests-") for name in files) == 2  # one per metadata
    assert sum(name.startswith("wsc_tasks-encodings-") for name in files) == 1  # one tokenizer


# -- the output folder and lm-eval's files ------------------------------------------------------
def test_an_output_path_that_cannot_be_written_stops_before_the_model_loads(
    tmp_path, capsys, monkeypatch
):
    """Before, lm-eval ran the whole evaluation, logged two warnings and exited 0, saving
    nothing."""
    from wsc_tasks.cli import lm_eval_run

    def model_work(argv, only_ours) -> None:
        raise AssertionError("lm-eval started")

    monkeypatch.setattr(lm_eval_run, "evaluate", model_work)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    argv = [*_chance(tmp_path)[:-3], "--output_path", str(blocker / "out")]
    code, err = _run(argv, capsys, monkeypatch)
    assert code == 2
    assert _last_line(err).startswith(
        f"wsc-tasks: error: --output_path {blocker / 'out'}: cannot write to "
        f"{blocker / 'out' / 'wsc-chance'} (Not a directory); give a folder you can write to"
    )


def _without(method: str, keep_lines: int | None = None):
    """lm-eval's ``EvaluationTracker.<method>`` failing as it does on a full or read-only disk:
    nothing written (or, with ``keep_lines``, a samples file cut short), then only a warning."""
    original = getattr(EvaluationTracker, method)

    def failing(self, *args, **kwargs):
        if keep_lines is not None:
            original(self, *args, **kwargs)
            for path in Path(self.output_path).parent.glob("samples_*.jsonl"):
                lines = path.read_text().splitlines(keepends=True)
                path.write_text("".join(lines[:keep_lines]) + lines[keep_lines][:10])

    return failing


@slow
@pytest.mark.parametrize(
    "method,keep_lines,message",
    [
        ("save_results_aggregated", None, "lm-eval wrote no results file to {out}"),
        ("save_results_samples", None, "lm-eval wrote no samples file {out}/samples_" + TASK),
        ("save_results_samples", 1, "samples file {out}/samples_" + TASK),
    ],
)
def test_files_lm_eval_did_not_write_completely_are_an_error(
    method, keep_lines, message, tmp_path, data_dir, capsys, monkeypatch
):
    """Before, each of these exited 0 (lm-eval logs a warning when it cannot write)."""
    monkeypatch.setattr(EvaluationTracker, method, _without(method, keep_lines))
    code, err = _run(_chance(tmp_path), capsys, monkeypatch)
    assert code == 2
    line = _last_line(err)
    assert line.startswith("wsc-tasks: error: " + message.format(out=tmp_path / "out/wsc-chance"))
    if keep_lines is not None:
        assert f"is incomplete: 1 complete lines of the 2 of task {TASK}" in line


@slow
def test_ctrl_c_while_lm_eval_writes_leaves_no_half_written_run(
    tmp_path, data_dir, capsys, monkeypatch
):
    """lm-eval writes the results file, then one samples file per task: Ctrl-C in between used
    to leave a results file without its samples (and a 35-frame traceback)."""
    original = EvaluationTracker.save_results_samples

    def interrupted(self, *args, **kwargs):
        original(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(EvaluationTracker, "save_results_samples", interrupted)
    code, err = _run(_chance(tmp_path), capsys, monkeypatch)
    assert code == 130
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(
            f"wsc-tasks: interrupted; removed what it had written: {tmp_path / 'out/wsc-chance'}/"
        )
    )
    assert "KeyboardInterrupt" not in err  # no traceback
    assert not (tmp_path / "out").exists()  # the folders made for the run went too


def test_ctrl_c_before_anything_is_written_is_one_line(tmp_path, capsys, monkeypatch):
    from wsc_tasks.cli import lm_eval_run

    def interrupted(argv, only_ours) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(lm_eval_run, "evaluate", interrupted)
    (tmp_path / "out").mkdir()
    code, err = _run(_chance(tmp_path), capsys, monkeypatch)
    assert (code, err.strip().splitlines()[-1]) == (130, "wsc-tasks: interrupted")
    assert list((tmp_path / "out").iterdir()) == []  # the output folder the user made stays


# -- one-line errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("limit", ["0", "-1", "2.5", "none"])
def test_a_limit_that_leaves_no_document_is_refused(limit, capsys, monkeypatch):
    """Before: ``task.build_requests() did not find any docs!`` (0), an ``islice`` message (-1),
    2.5 silently read as 2."""
    code, err = _run(
        ["--model", "wsc-chance", "--model_args", "seed=1", "--limit", limit], capsys, monkeypatch
    )
    assert code == 2
    assert _last_line(err).startswith(
        f"wsc-tasks: error: --limit {limit} is invalid; allowed: a whole number of documents ≥ 1,"
        " or a share of each task's documents between 0 and 1"
    )


def test_limits_lm_eval_reads_as_documents_pass():
    for limit in ("1", "3", "0.5", "0.01", "10.0"):
        flags.check_argv(["--limit", limit])
    flags.check_argv(["-L", "4"])
    with pytest.raises(flags.UnsupportedFlag, match="^task t: --limit leaves 0 documents"):
        flags.check_task("t", limit=0)  # a plain lm_eval run, after lm-eval's own arithmetic


def test_a_model_without_its_arguments_is_named_with_what_it_takes(capsys, monkeypatch):
    """Before: exit 1 and "a --model other than hf needs its --model_args"."""
    code, err = _run(["--model", "wsc-chance", "--tasks", TASK], capsys, monkeypatch)
    assert code == 2
    assert _last_line(err).startswith(
        "wsc-tasks: error: --model wsc-chance needs --model_args; it takes seed=<int> (and "
        "tokenizer= or pretrained=, read by the tasks to count tokens)"
    )
    code, err = _run(["--model", "hf-mlm"], capsys, monkeypatch)
    assert code == 2 and "--model hf-mlm needs --model_args; it takes pretrained=<Hub id" in err


def test_a_missing_default_model_exits_2(capsys, monkeypatch):
    monkeypatch.setattr(cli_run, "default_model_args", cli_run.default_model_args)
    monkeypatch.setattr("wsc_tasks.paths.default_model_folder", lambda: None)
    code, err = _run([], capsys, monkeypatch)
    assert code == 2
    assert _last_line(err).startswith("wsc-tasks: error: no --model_args given and the embedded")


# -- no path of this machine in what a run writes -------------------------------------------------
def test_local_model_paths_become_their_last_component(tmp_path, monkeypatch):
    from wsc_tasks.paths import hide_model_paths, local_model_paths

    model = tmp_path / "models" / "my-gpt2"
    model.mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    found = local_model_paths({"pretrained": "models/my-gpt2", "tokenizer": "gpt2"})
    assert found == {
        str(model): "<my-gpt2>",
        str(model).replace("/", "__"): "<my-gpt2>",
        "models/my-gpt2": "<my-gpt2>",
        "models__my-gpt2": "<my-gpt2>",
    }
    assert local_model_paths({"pretrained": "org/name"}) == {}  # a Hub id
    assert (
        hide_model_paths(f"pretrained={model},dtype=float32")
        == "pretrained=<my-gpt2>,dtype=float32"
    )
    assert hide_model_paths('{"tokenizer": "~/tok/", "pretrained": "org/name"}') == (
        '{"tokenizer": "<tok>", "pretrained": "org/name"}'
    )


@slow
def test_results_name_a_local_model_by_its_folder_unless_keep_paths(
    tmp_path, tiny_gpt2_dir, data_dir, capsys, monkeypatch
):
    """Before, the tokenizer's absolute path was in the results (model_args, every task's
    metadata)."""
    model = ["--model", "wsc-chance", "--model_args", f"seed=1,tokenizer={tiny_gpt2_dir}"]
    for out, keep in (("plain", []), ("kept", ["--keep-paths"])):
        argv = [*model, "--tasks", TASK, "--limit", "2", "--output_path", str(tmp_path / out)]
        assert _run([*argv, *keep], capsys, monkeypatch)[0] == 0
    [plain] = (tmp_path / "plain").rglob("results_*.json")
    [kept] = (tmp_path / "kept").rglob("results_*.json")
    assert str(tiny_gpt2_dir) not in plain.read_text()
    assert json.loads(plain.read_text())["config"]["model_args"]["tokenizer"] == (
        f"<{tiny_gpt2_dir.name}>"
    )
    assert str(tiny_gpt2_dir) in kept.read_text()


def test_the_summary_names_a_local_model_by_its_folder_unless_keep_paths(tmp_path, capsys):
    results = {"results": {}, "config": {"model": "hf", "model_args": "pretrained=/home/u/m1"}}
    path = tmp_path / "x_2026-01-02T03-04-05.678901.json"  # --output_path x.json
    path.write_text(json.dumps(results))
    assert cli.main(["summary", str(tmp_path)]) == 0
    assert "- model: `hf` with `pretrained=<m1>`" in capsys.readouterr().out
    assert cli.main(["summary", str(tmp_path), "--keep-paths"]) == 0
    assert "- model: `hf` with `pretrained=/home/u/m1`" in capsys.readouterr().out
