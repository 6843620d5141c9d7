"""A plain ``lm_eval --include_path … --tasks …`` run (lm-eval's own CLI, in this process, nothing
of it changed): what this package refuses is refused as lm-eval builds its tasks, before any
request is built, in one sentence naming the task and the fix; the run prints lm-eval's table of
the task's headline metrics and keeps its samples.

lm-eval loads the model before it builds the tasks, so a plain run pays the model's loading first
(a tiny model here); ``wsc-tasks run`` refuses the same before the model loads
(``tests/test_cli.py``). lm-eval's index of its own task YAMLs is left out here (the tests'
``TaskManager`` indexes this package's folder only): it costs the same with or without these
tasks.
"""

from __future__ import annotations

import json
import sys
import time

import pytest

from wsc_tasks.metrics import registry
from wsc_tasks.paths import include_path
from wsc_tasks.tasks import flags, metadata_keys

LIMIT_S = 10  # every refusal, from the command line to the error


def _lm_eval(monkeypatch, model_dir, *extra: str, tasks: str = "wsc266") -> None:
    from lm_eval.__main__ import cli_evaluate
    from lm_eval.tasks import manager

    init = manager.TaskManager.__init__

    def ours_only(self, *args, **kwargs):
        kwargs["include_defaults"] = False
        init(self, *args, **kwargs)

    argv = ["lm_eval", "run", "--model", "hf", "--model_args", f"pretrained={model_dir}"]
    argv += ["--device", "cpu", "--include_path", str(include_path()), "--tasks", tasks]
    monkeypatch.setattr(sys, "argv", [*argv, *extra])
    monkeypatch.setattr(manager.TaskManager, "__init__", ours_only)
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


@pytest.mark.slow
def test_a_plain_lm_eval_run_prints_the_headline_table_and_keeps_every_value(
    monkeypatch, tiny_gpt2_dir, data_dir, tmp_path, capsys
):
    out = tmp_path / "runs"
    extra = ["--limit", "4", "--log_samples", "--output_path", str(out)]
    _lm_eval(monkeypatch, tiny_gpt2_dir, *extra)
    table = capsys.readouterr().out
    rows = {line.split("|")[5].strip() for line in table.splitlines() if line.count("|") == 10}
    assert {"acc", "schema_acc"} <= rows  # figures of the model, no count
    assert not {"n_problems", "n_schemas", registry.MORE_METRICS} & rows
    assert not any(name.endswith("_stderr") or "_smart" in name for name in rows)
    [samples] = out.rglob("samples_wsc266_*.jsonl")
    first = json.loads(samples.read_text().splitlines()[0])
    logged = registry.logged(first)
    assert registry.Key("acc", method="partial").name in logged  # every method's, in the samples
    counts = {n: registry.bind(n)([logged[n]]) for n in ("n_problems", "n_schemas")}
    assert counts == {"n_problems": 2, "n_schemas": 1}  # the counts too
    assert "acc" in logged and "acc_stderr" not in logged


@pytest.mark.slow
def test_a_plain_lm_eval_run_asks_the_questions_with_the_chat_template(
    monkeypatch, chat_gpt2_dir, data_dir, tmp_path, capsys
):
    """The question tasks take what the log-likelihood tasks refuse, in a plain lm-eval run."""
    out = tmp_path / "runs"
    extra = ["--limit", "1", "--apply_chat_template", "--gen_kwargs", "max_gen_toks=2",
             "--log_samples", "--output_path", str(out)]  # fmt: skip
    _lm_eval(monkeypatch, chat_gpt2_dir, *extra, tasks="wsc266_chat")
    table = capsys.readouterr().out
    rows = {line.split("|")[5].strip() for line in table.splitlines() if line.count("|") == 10}
    assert {"acc", "schema_acc", "unanswered", "first_option", "order_consistency"} <= rows
    [samples] = out.rglob("samples_wsc266_chat_*.jsonl")
    first = json.loads(samples.read_text().splitlines()[0])
    assert first["arguments"]["gen_args_0"]["arg_0"].endswith("Answer:\n<|assistant|>")
