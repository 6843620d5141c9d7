"""A plain ``lm_eval --include_path … --tasks …`` run (lm-eval's own CLI, in this process): what
this package refuses is refused as lm-eval builds its tasks, before any document is read, as one
line; the counts of its table print as integers (patches sections 16 and 22).

lm-eval loads the model before it builds the tasks, so a plain run pays the model's loading first
(a tiny model here); ``wsc-tasks run`` refuses the same before the model loads
(``tests/test_cli.py``). lm-eval's index of its own task YAMLs is left out
(``without_lm_eval_tasks``, as ``wsc-tasks run`` does): it costs the same with or without these
tasks.
"""

from __future__ import annotations

import sys
import time

import pytest

from wsc_tasks import lm_eval_fixes as patches

from wsc_tasks.tasks import flags, metadata_keys
from wsc_tasks.lm_eval_fixes.p22_one_line_refusals import OneLineRefusals
from wsc_tasks.paths import include_path

LIMIT_S = 10  # every refusal, from the command line to the error


def _lm_eval(monkeypatch, model_dir, *extra: str) -> None:
    from lm_eval.__main__ import cli_evaluate

    argv = ["lm_eval", "run", "--model", "hf", "--model_args", f"pretrained={model_dir}"]
    argv += ["--device", "cpu", "--include_path", str(include_path()), "--tasks", "wsc266"]
    monkeypatch.setattr(sys, "argv", [*argv, *extra])
    with patches.without_lm_eval_tasks():
        cli_evaluate()


@pytest.mark.parametrize(
    ("extra", "error", "said"),
    [
        (["--apply_chat_template"], flags.UnsupportedFlag, "--apply_chat_template is not"),
        (["--system_instruction", "Be brief."], flags.UnsupportedFlag, "--system_instruction"),
        (["--num_fewshot", "2"], flags.UnsupportedFlag, "--num_fewshot is not supported"),
        (
            ["--metadata", '{"headline": "parital"}'],
            metadata_keys.BadValue,
            "did you mean partial?",
        ),
        (["--metadata", '{"metrics": "al"}'], metadata_keys.BadValue, "did you mean all?"),
    ],
)
def test_a_plain_lm_eval_run_is_refused_as_the_tasks_load(
    monkeypatch, tiny_gpt2_dir, data_dir, extra, error, said
):
    started = time.monotonic()
    with pytest.raises(error) as raised:
        _lm_eval(monkeypatch, tiny_gpt2_dir, *extra)
    assert time.monotonic() - started < LIMIT_S
    text = str(raised.value)
    assert said in text and "\n" not in text
    assert text.startswith("task wsc266")


def test_a_refusal_is_printed_as_one_line(monkeypatch, capsys):
    """Python's traceback of a refusal, under lm-eval's CLI, becomes its one line; any other
    error, or with WSC_TASKS_VERBOSE=1, keeps its traceback."""
    shown = []
    hook = OneLineRefusals(lambda *args: shown.append(args))
    refusal = flags.UnsupportedFlag(flags.message("--apply_chat_template", "task wsc266"))
    hook(type(refusal), refusal, None)
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("lm_eval: error: task wsc266: --apply_chat")
    assert not shown
    other = RuntimeError("boom")
    hook(RuntimeError, other, None)
    assert shown == [(RuntimeError, other, None)]
    monkeypatch.setenv("WSC_TASKS_VERBOSE", "1")
    hook(type(refusal), refusal, None)
    assert len(shown) == 2
    patches.one_line_refusals()
    assert isinstance(sys.excepthook, OneLineRefusals)
    assert not patches.one_line_refusals()  # once


def test_the_make_table_lm_evals_cli_holds_prints_counts_as_integers():
    """The CLI takes ``make_table`` before the tasks load; that same function object prints a
    count as an integer once they have (``print_counts_in_place``), with no ``± N/A``."""
    from lm_eval import utils

    held = utils.make_table
    if not getattr(held, "_wsc_tasks_patch", False):
        patches.print_counts_in_place()
    assert not patches.print_counts_in_place()  # once
    results = {
        "results": {
            "winogrande_dev": {
                "acc,none": 0.5043,
                "acc_stderr,none": 0.014,
                "n_problems,none": 1267.0,
                "n_problems_stderr,none": "N/A",
            }
        },
        "versions": {"winogrande_dev": 1.0},
        "n-shot": {"winogrande_dev": 0},
        "higher_is_better": {"winogrande_dev": {"acc": True, "n_problems": None}},
    }
    table = utils.make_table(results)
    [row] = [line for line in table.splitlines() if "n_problems" in line]
    cells = [cell.strip() for cell in row.split("|")]
    assert cells[7:10] == ["1267", "", ""]
    [acc] = [line for line in table.splitlines() if "|acc " in line or "|acc|" in line]
    assert "0.5043" in acc and "0.014" in acc


@pytest.mark.slow
def test_a_plain_lm_eval_run_ends_saying_where_its_files_are(
    monkeypatch, tiny_gpt2_dir, data_dir, tmp_path, capsys
):
    """Printed when lm-eval's CLI ends (after its table): the folder and ``wsc-tasks report``."""
    from wsc_tasks.lm_eval_fixes import p23_say_where_results_are as section

    monkeypatch.setitem(section._STATE, "off", False)  # as in a plain run: no wsc-tasks run
    monkeypatch.setitem(section._STATE, "registered", True)  # printed here, not at exit
    monkeypatch.setitem(section._STATE, "said", None)
    out = tmp_path / "runs"
    extra = ["--limit", "2", "--log_samples", "--output_path", str(out)]
    _lm_eval(monkeypatch, tiny_gpt2_dir, *extra)
    capsys.readouterr()
    section._print_ending()
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    assert list(folder.glob("results_*.json")) and list(folder.glob("samples_wsc266_*.jsonl"))
    said = capsys.readouterr().out.strip()
    assert said == f"wsc_tasks: results and samples in {folder}/. Next: wsc-tasks report {folder}"
