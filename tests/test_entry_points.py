"""One model, the same methods, headline and figures from every lm-eval entry point.

lm-eval's CLI merges ``--model_args`` into the task metadata, where the tasks find the model's
tokenizer, as lm-eval's own tokenizer-dependent tasks do; from Python the ``TaskManager``'s
metadata names it (``TaskManager(include_path=..., metadata={"pretrained": ...})``). Before any
request reaches the model, each task checks that it is the model its requests were built for,
and stops with one line saying what to pass when it is not.
"""

from __future__ import annotations

import json
import sys

import lm_eval
import pytest
import tiny_models
from lm_eval.api.model import LM
from lm_eval.models.huggingface import HFLM

from wsc_tasks.cli import main as cli
from wsc_tasks.scoring import families
from wsc_tasks.scoring.methods import ScoringError

pytestmark = pytest.mark.slow

TASKS = ["wsc266", "wsc273_schemas", "wsc266_switched_consistency", "winowhy"]
LIMIT = 6
ALL = {"metrics": "all"}  # every per-method metric, so that every method's figures are compared
CAUSAL_METHODS = list(families.FAMILIES["causal"].methods)


def _rows(results: dict) -> dict:
    return {task: {k: v for k, v in results["results"][task].items() if k != "alias"}
            for task in TASKS}  # fmt: skip


@pytest.fixture(scope="module")
def through_the_cli(tiny_gpt2_dir, data_dir, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("cli")
    argv = ["run", "--model", "hf", "--model_args", f"pretrained={tiny_gpt2_dir},dtype=float32",
            "--tasks", ",".join(TASKS), "--limit", str(LIMIT), "--metadata", json.dumps(ALL),
            "--output_path", str(out)]  # fmt: skip
    saved = list(sys.argv)
    try:
        assert cli(argv) == 0
    finally:
        sys.argv = saved
    [path] = out.rglob("results_*.json")
    return json.loads(path.read_text())


def test_simple_evaluate_with_a_task_manager_equals_the_cli(
    through_the_cli, tiny_gpt2_dir, task_manager
):
    python = lm_eval.simple_evaluate(
        model="hf", model_args=f"pretrained={tiny_gpt2_dir},dtype=float32", tasks=TASKS,
        task_manager=task_manager(pretrained=str(tiny_gpt2_dir), **ALL), limit=LIMIT,
        device="cpu", batch_size=32, log_samples=False,
    )  # fmt: skip
    for results in (python, through_the_cli):
        assert results["configs"]["wsc266"]["metadata"]["headline"] == "smart"
        assert results["configs"]["winowhy"]["metadata"]["reason_score"] == "mean"
        for method in CAUSAL_METHODS:  # every causal method ran, not partial alone
            assert f"schema_acc_{method},none" in results["results"]["wsc266"]
    assert _rows(python) == _rows(through_the_cli)  # every metric, exactly


def test_evaluate_with_a_model_object_equals_the_cli(through_the_cli, tiny_gpt2_dir, task_manager):
    lm = HFLM(pretrained=str(tiny_gpt2_dir), dtype="float32", device="cpu", batch_size=32)
    tasks = task_manager(pretrained=str(tiny_gpt2_dir), **ALL).load(TASKS)
    found = lm_eval.evaluator.evaluate(lm=lm, task_dict=tasks, limit=LIMIT)
    assert _rows(found) == _rows(through_the_cli)


def test_a_task_manager_without_the_models_tokenizer_stops_the_run_saying_what_to_pass(
    tiny_gpt2_dir, data_dir, task_manager
):
    with pytest.raises(ScoringError) as raised:
        lm_eval.simple_evaluate(
            model="hf", model_args=f"pretrained={tiny_gpt2_dir}", tasks=["wsc266"],
            task_manager=task_manager(), limit=1, device="cpu",
        )  # fmt: skip
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("task wsc266: its requests were planned without a tokenizer")
    assert 'metadata={"pretrained": "<name or path>"}' in message


def test_a_tokenizer_other_than_the_models_stops_the_run(tiny_gpt2_dir, data_dir, task_manager):
    """The task counted tokens with one tokenizer (named in its metadata); the model encodes with
    another: every split and count would be another's."""
    llama = tiny_models.family_model(
        tiny_gpt2_dir.parent / "entry-llama", "llama", tiny_models.tokenizer("smollm2")
    )
    with pytest.raises(ScoringError, match="task wsc266: its requests were counted in the tokens"):
        lm_eval.simple_evaluate(
            model="hf", model_args=f"pretrained={llama}", tasks=["wsc266"], limit=1,
            task_manager=task_manager(pretrained=str(tiny_gpt2_dir)), device="cpu",
        )  # fmt: skip


class NoTokenizer(LM):
    """A model object from Python with no Hugging Face tokenizer (an API client, a wrapper…)."""

    def loglikelihood(self, requests, disable_tqdm=False):
        return [(-float(len(r.args[1])), False) for r in requests]

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        raise NotImplementedError

    def generate_until(self, requests, disable_tqdm=False):
        raise NotImplementedError


def test_a_model_without_tokenizer_stops_the_run_saying_what_to_pass(data_dir, task_manager):
    with pytest.raises(ScoringError) as raised:
        lm_eval.simple_evaluate(model=NoTokenizer(), tasks=["wsc266"],
                                task_manager=task_manager(), limit=1)  # fmt: skip
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith("task wsc266: the model (NoTokenizer) has no Hugging Face tokenizer")
    assert '{"tokenizer": ...}' in message


def test_the_tokenizer_named_in_the_task_manager_serves_such_a_model(
    tiny_gpt2_dir, data_dir, task_manager
):
    out = lm_eval.simple_evaluate(
        model=NoTokenizer(), tasks=["wsc266"], limit=2, bootstrap_iters=0,
        task_manager=task_manager(tokenizer=str(tiny_gpt2_dir)),
    )  # fmt: skip
    assert out["configs"]["wsc266"]["metadata"]["headline"] == "smart"


def test_lm_eval_iterates_the_rows_datasets_gives_once_converted(data_dir, task_manager):
    """A task's documents are its test split's rows as ``datasets`` gives them (``from_list``'s
    types and keys), converted once: lm-eval's passes over them (building the task, its
    requests, their results) read one list, not a ``Dataset`` that formats each row anew."""
    tasks = task_manager().load(["wsc266", "winowhy", "winogrande_twins"])["tasks"]
    for name, task in tasks.items():
        rows = task.eval_docs
        assert isinstance(rows, list) and rows is task.eval_docs, name
        assert rows == list(task.dataset["test"]), name
        assert rows.features == task.dataset["test"].features, name
        assert task.features == list(rows.features), name  # what lm-eval read when it built it


def test_documents_with_different_keys_are_refused_not_cut_to_the_first_ones():
    """``datasets.Dataset.from_list`` keeps the keys of the first document only: a task whose
    documents differed would lose fields without a word."""
    from wsc_tasks.tasks.request_task import RequestTask

    class Uneven(RequestTask):
        def documents(self) -> list[dict]:
            return [{"text": "a"}, {"text": "b", "note": "dropped"}]

    with pytest.raises(ValueError, match=r"^task uneven: document 1 has the keys \['note', "
                       r"'text'\], document 0 \['text'\]: every document"):  # fmt: skip
        Uneven(config={"task": "uneven"})
