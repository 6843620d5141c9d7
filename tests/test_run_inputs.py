"""Inputs a run used to ignore in silence, and figures it used to print without a reason.

A misspelt ``--metadata`` key or model argument is a one-line error naming the closest known one
(lm-eval's own metadata keys and the model arguments it merges in are not refused);
``--predict_only`` gives samples and no metric; the chance model without a tokenizer says, under
the table and in the results, which method the headline uses and why; a metric undefined on the
documents evaluated is left out with a note, never printed as NaN; counts get no ↑.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import lm_eval
import pytest

from wsc_tasks.cli import main as cli
from wsc_tasks.models import chance
from wsc_tasks.tasks import metadata_keys


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    saved = list(sys.argv)
    try:
        code = cli(argv)
    finally:
        sys.argv = saved
    out, err = capsys.readouterr()
    return code, out, err


def test_a_misspelt_metadata_key_is_one_line_naming_the_closest(capsys, data_dir):
    argv = ["run", "--model", "wsc-chance", "--model_args", "seed=1", "--tasks", "wsc266",
            "--metadata", '{"scorng": ["partial"]}']  # fmt: skip
    code, _, err = _run(argv, capsys)
    [line] = [line for line in err.splitlines() if line.startswith("wsc-tasks: error:")]
    assert code == 2
    assert line.startswith(
        "wsc-tasks: error: --metadata key 'scorng' is unknown; did you mean scoring? known keys:"
    )


def test_known_keys_lm_evals_own_and_model_arguments_pass(caplog, monkeypatch):
    """``wsc-tasks run`` knows ``--metadata`` apart from ``--model_args``: an unknown key there is
    an error. A task lm-eval builds sees them merged (and other packages' keys): a key spelt like
    one of its settings is a warning, once; any other (``dtype``, ``seed``…) passes."""
    given = {"dataset": "wsc266", "scoring": "all", "version": 1.0, "config_source": "x.yaml",
             "pretrained": "gpt2", "logprob_check": False}  # fmt: skip
    metadata_keys.check("wsc-tasks: --metadata", given)
    with pytest.raises(metadata_keys.UnknownKey, match="'headlin' is unknown; did you mean head"):
        metadata_keys.check("wsc-tasks: --metadata", {"headlin": "full"})
    merged = {**given, "dtype": "float32", "seed": 1, "max_seq_lengths": [4096], "scorng": "x"}
    monkeypatch.setattr(metadata_keys, "_warned", set())  # once per process: from here
    with caplog.at_level(logging.WARNING):
        metadata_keys.check("task t: metadata", merged, strict=False)
        metadata_keys.check("task u: metadata", merged, strict=False)
    warned = [r.getMessage() for r in caplog.records if "is unknown" in r.getMessage()]
    assert len(warned) == 1 and "'scorng' is unknown; did you mean scoring?" in warned[0]


@pytest.mark.slow
def test_the_tasks_warn_of_a_misspelt_key_from_python(data_dir, task_manager, caplog, monkeypatch):
    """From Python the tasks cannot tell the user's key from a model argument lm-eval merged
    into the same metadata: a key spelt like one of their settings is named with the closest."""
    monkeypatch.setattr(metadata_keys, "_warned", set())  # once per process: from here
    manager = task_manager(scorng="partial")
    with caplog.at_level(logging.WARNING):
        lm_eval.simple_evaluate(model="wsc-chance", model_args="seed=1", tasks=["wsc266"],
                                task_manager=manager, limit=1)  # fmt: skip
    assert any(
        "task wsc266: metadata key 'scorng' is unknown; did you mean scoring?" in r.getMessage()
        for r in caplog.records
    )


def test_misspelt_model_arguments_of_our_models_name_the_closest():
    with pytest.raises(ValueError, match="unknown model argument.* sed; did you mean seed"):
        chance.ChanceLM(sed=1)
    from wsc_tasks.models.mlm import MaskedLM

    with pytest.raises(ValueError, match="max_batch_token; did you mean max_batch_tokens"):
        MaskedLM(pretrained="unused", max_batch_token=4)  # refused before anything loads


@pytest.mark.slow
def test_predict_only_gives_samples_and_no_metric(capsys, data_dir, tmp_path):
    argv = ["run", "--model", "wsc-chance", "--model_args", "seed=1", "--tasks",
            "wsc266,wsc266_switched_consistency", "--limit", "2", "--predict_only",
            "--output_path", str(tmp_path)]  # fmt: skip
    code, out, _ = _run(argv, capsys)
    assert code == 0
    [path] = tmp_path.rglob("results_*.json")
    results = json.loads(path.read_text())["results"]
    for task in ("wsc266", "wsc266_switched_consistency"):
        assert {k for k in results[task] if "," in k} == {"bypass,none", "bypass_stderr,none"}
        [samples] = tmp_path.rglob(f"samples_{task}_2*.jsonl")  # _<date>
        rows = [json.loads(line) for line in samples.read_text().splitlines()]
        assert len(rows) == 2 and all(r["metrics"] == ["bypass"] and r["resps"] for r in rows)
    assert "--predict_only: no metric computed; the samples files hold every request's" in out


@pytest.fixture(scope="module")
def chance_at_limit_5(data_dir, tmp_path_factory) -> tuple[str, dict]:
    """The chance model without a tokenizer on wsc266_suite and winowhy, first 5 documents:
    lm-eval's printed tables with the notes under them, and the results file."""
    out = tmp_path_factory.mktemp("chance")
    argv = ["run", "--model", "wsc-chance", "--model_args", "seed=1", "--tasks",
            "wsc266_suite,winowhy", "--limit", "5", "--output_path", str(out)]  # fmt: skip
    with pytest.MonkeyPatch.context() as patch:
        printed: list[str] = []
        patch.setattr("builtins.print", lambda *a, **k: printed.append(" ".join(map(str, a))))
        saved = list(sys.argv)
        try:
            assert cli(argv) == 0
        finally:
            sys.argv = saved
    [path] = Path(out).rglob("results_*.json")
    return "\n".join(printed), json.loads(path.read_text())


@pytest.mark.slow
def test_the_chance_model_without_tokenizer_says_which_headline_and_why(chance_at_limit_5):
    printed, results = chance_at_limit_5
    footer = printed[printed.index("Notes:") :]
    schema = (
        "headline partial, the token-free method, is the only scoring method run: wsc-chance was "
        "given no tokenizer (add tokenizer=<name or path> to its model arguments"
    )
    assert schema in footer and "- wsc266, wsc266_associative," in footer
    assert "- winowhy: headline score per_byte (no *_mean scores without a tokenizer)" in footer
    assert any(schema in note for note in results["configs"]["wsc266"]["metadata"]["notes"])
    assert results["configs"]["wsc266"]["metadata"]["headline"] == "partial"


@pytest.mark.slow
def test_an_undefined_metric_is_not_available_with_its_reason_never_nan(chance_at_limit_5):
    printed, results = chance_at_limit_5
    table = printed[: printed.index("Notes:")]
    assert "nan" not in table.lower()
    assert (
        "- wsc266_associativity: acc_nonassociative_adjusted, schema_acc_nonassociative_adjusted "
        "not reported (N/A): no non-associative schema in the first 5 of its 130 documents "
        "(--limit)"
    ) in printed
    assert "acc_nonassociative_adjusted" not in table  # left out of the table, the note says why
    assert results["results"]["wsc266_associativity"]["acc_nonassociative_adjusted,none"] == "N/A"
    rows = [line.split("|") for line in table.splitlines() if line.startswith("|")]
    arrows = {cells[5].strip(): cells[6].strip() for cells in rows if len(cells) > 7}
    assert arrows["acc_diff"] == ""  # a difference: neither direction is better
    assert arrows["schema_consistency"] == "↑"
    assert not {"n_problems", "n_pairs", "n_schemas"} & arrows.keys()  # counts: no figure rows
    assert "n_schemas" not in results["higher_is_better"]["wsc266"]
