"""The checks lm-eval's own test suite makes on a new task, made on every task and group here.

lm-eval's ``tests/test_tasks.py`` loads each new task and checks its splits, documents, targets and
requests; its ``tests/test_evaluator.py`` evaluates a model with ``simple_evaluate`` and again with
``evaluate`` on a model and tasks built by hand, and asks for equal results. Both are written here
for this package (lm-eval's own copy needs its whole task index and Hub models): the task checks
on every task of ``wsc_group`` (which holds every task and group of the package) and on each group
loaded by name, the evaluator check on ``wsc_group`` with the chance model at several ``--limit``s,
where a metric undefined on the first documents must be lm-eval's ``N/A`` with a note, never
NaN. Also: lm-eval's W&B logger, offline, writes a sample table for every task (it reads each
config's ``metric_list``).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from itertools import islice

import lm_eval.api as lm_eval_api
import lm_eval.evaluator as evaluator
import pytest

from wsc_tasks.cli.run import our_task_names
from wsc_tasks.cli.task_names import output_types
from wsc_tasks.models import chance  # noqa: F401  registers wsc-chance

LIMIT = 10  # lm-eval's ``limit`` fixture
GROUPS = ["wsc_group", "wsc266_suite", "wsc266_perturbations", "winogrande_suite",
          "reid250_suite", "zeroshot_suite"]  # fmt: skip
OPTIONAL = "contamination_suite"  # beside wsc_group, not in it (it needs rolling log-likelihoods)
CHECKS = sorted(name for name in our_task_names() if name.endswith("_contamination"))
# the question tasks: a group of their own, beside wsc_group (they generate)
ASKING = "wsc_group_chat"
QUESTIONS = sorted(
    name for name, sent in output_types().items() if sent == {"generate_until"} and name != ASKING
)
# every task YAML of wsc_group; with CHECKS and QUESTIONS, every task of the package
ALL_TASKS = sorted(
    our_task_names() - set(GROUPS) - {OPTIONAL, ASKING} - set(CHECKS) - set(QUESTIONS)
)


@pytest.fixture(scope="module")
def tasks(tiny_gpt2_dir, data_dir, task_manager) -> dict:
    """Every task, loaded through ``wsc_group`` and the contamination suite as lm-eval's
    ``task_class`` loads them; the tokenizer named in the metadata, as lm-eval's test builds
    requests without a model."""
    manager = task_manager(tokenizer=str(tiny_gpt2_dir))
    return manager.load(["wsc_group", OPTIONAL, ASKING])["tasks"]


def _docs(task) -> list[dict]:
    docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
    return list(islice(docs, LIMIT))


def test_wsc_group_holds_every_task_and_group(tasks, task_manager):
    loaded = task_manager().load(["wsc_group"])
    assert set(tasks) == set(ALL_TASKS) | set(CHECKS) | set(QUESTIONS)
    assert set(task_manager().load([ASKING])["tasks"]) == set(QUESTIONS)
    assert set(loaded["tasks"]) == set(ALL_TASKS)
    assert {group.name for group in loaded["groups"].values()} == set(GROUPS)
    checks = task_manager().load([OPTIONAL])
    assert set(checks["tasks"]) == set(CHECKS)


@pytest.mark.parametrize("name", ALL_TASKS + CHECKS + QUESTIONS)
def test_task_checks_of_lm_evals_test_tasks(tasks, name):
    task = tasks[name]
    task.download(task.config.dataset_kwargs)
    assert task.dataset is not None
    for has, split in (
        (task.has_training_docs, "training_split"),
        (task.has_validation_docs, "validation_split"),
        (task.has_test_docs, "test_split"),
    ):
        assert has() in (True, False)
        if has():
            assert task._config[split] is not None
    assert task.should_decontaminate() in (True, False)
    if task.should_decontaminate():
        assert task._config["doc_to_decontamination_query"] is not None
    docs = _docs(task)
    assert len(docs) == LIMIT
    if task.multiple_input:  # the questions: lm-eval's multiple inputs, one prompt a question
        for doc in docs:
            prompts, target = task.doc_to_choice(doc), task.doc_to_target(doc)
            assert isinstance(task.doc_to_text(doc), int) and len(prompts) == len(target)
            assert all(isinstance(p, str) and not p[-1].isspace() for p in prompts)
            assert set(target) <= {"A", "B"}
        requests = [task.construct_requests(doc=d, ctx=task.doc_to_choice(d)) for d in docs]
        assert len(requests) == LIMIT and all(requests)
        task.build_all_requests(rank=1, limit=LIMIT, world_size=1)
        assert task.instances
        return
    for doc in docs:
        text = task.doc_to_text(doc)
        assert isinstance(text, str)
        if text and task.config.target_delimiter.isspace():
            assert not text[-1].isspace()
        target = task.doc_to_target(doc)
        if task.OUTPUT_TYPE == "loglikelihood_rolling":  # a whole text scored: no target
            assert isinstance(target, str)
        else:
            assert isinstance(target, list) and all(isinstance(x, int) for x in target)
    requests = [task.construct_requests(doc=doc, ctx=task.doc_to_text(doc)) for doc in docs]
    assert len(requests) == LIMIT and all(requests)
    task.build_all_requests(rank=1, limit=LIMIT, world_size=1)
    assert task.instances


@pytest.mark.parametrize("group", GROUPS)
def test_each_group_loads_by_name_and_builds_its_requests(
    tiny_gpt2_dir, data_dir, group, task_manager
):
    loaded = task_manager(tokenizer=str(tiny_gpt2_dir)).load([group])
    assert group in {g.name for g in loaded["groups"].values()}
    assert loaded["tasks"] and set(loaded["tasks"]) <= set(ALL_TASKS)
    for task in loaded["tasks"].values():
        task.build_all_requests(rank=0, limit=2, world_size=1)
        assert task.instances


def _same(one: dict, two: dict) -> list:
    """lm-eval's check: every value of one result row equal to the other's (``==``, so a NaN
    never passes)."""
    return [
        (task, key)
        for task, row in one["results"].items()
        for key in row.keys() | two["results"][task].keys()
        if row.get(key) != two["results"][task].get(key)
    ]


@pytest.mark.slow
@pytest.mark.parametrize("limit,iters", [(1, 0), (5, 100000)])
def test_evaluator_checks_of_lm_evals_test_evaluator(
    tiny_gpt2_dir, data_dir, limit, iters, task_manager
):
    model_args = f"seed=1,tokenizer={tiny_gpt2_dir}"  # every causal method
    named = {"tokenizer": str(tiny_gpt2_dir)}  # as lm-eval's CLI merges the model arguments in
    first = evaluator.simple_evaluate(
        model="wsc-chance", model_args=model_args, tasks=["wsc_group"], limit=limit,
        bootstrap_iters=iters, task_manager=task_manager(**named), log_samples=False,
    )  # fmt: skip
    lm = lm_eval_api.registry.get_model("wsc-chance").create_from_arg_string(
        model_args, {"batch_size": None, "max_batch_size": None, "device": None}
    )
    second = evaluator.evaluate(
        lm=lm,
        task_dict=task_manager(**named).load(["wsc_group"]),
        limit=limit,
        bootstrap_iters=iters,
    )
    assert first is not None and second is not None
    assert set(first["results"]) == set(ALL_TASKS + GROUPS)
    assert _same(first, second) == []
    values = [v for row in first["results"].values() for v in row.values()]
    assert not any(isinstance(v, float) and math.isnan(v) for v in values)
    # the first documents of wsc266_associativity are associative schemas only: N/A, noted
    row = first["results"]["wsc266_associativity"]
    assert isinstance(row["acc_associative_adjusted,none"], float)
    assert row["acc_nonassociative_adjusted,none"] == "N/A"
    notes = first["configs"]["wsc266_associativity"]["metadata"]["notes"]
    first_docs = "the first of" if limit == 1 else f"the first {limit} of"
    assert notes == [
        f"--limit {limit}: the figures are of the first {limit} documents (schemas), not of the "
        "whole dataset; do not compare them with a full run",
        "acc_nonassociative_adjusted, schema_acc_nonassociative_adjusted not reported (N/A): no "
        f"non-associative schema in {first_docs} its 130 documents (--limit)",
    ]


@pytest.mark.slow
def test_wandb_offline_logs_a_sample_table_for_every_task(tiny_gpt2_dir, data_dir, tmp_path):
    """lm-eval's W&B logger reads each task config's ``metric_list`` for the sample tables."""
    pytest.importorskip("wandb")
    tasks = ["wsc266_suite", "winowhy"]
    command = [sys.executable, "-m", "wsc_tasks.cli", "run", "--model", "wsc-chance",
               "--model_args", f"seed=1,tokenizer={tiny_gpt2_dir}", "--tasks", ",".join(tasks),
               "--limit", "2", "--log_samples", "--output_path", str(tmp_path / "out"),
               "--wandb_args", "project=wsc-tasks-test"]  # fmt: skip
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path),
           "WANDB_SILENT": "true"}  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Logging to W&B failed" not in done.stdout + done.stderr
    [results] = (tmp_path / "out").rglob("results_*.json")
    configs = json.loads(results.read_text())["configs"]
    tables = {p.name.split("_eval_results")[0] for p in tmp_path.rglob("*_eval_results_*.json")}
    assert set(configs) <= tables  # every task's samples, as a W&B table
    metric_list = {m["metric"]: m["higher_is_better"] for m in configs["wsc266"]["metric_list"]}
    assert metric_list == {"acc": True, "schema_acc": True, "n_problems": None, "n_schemas": None}
