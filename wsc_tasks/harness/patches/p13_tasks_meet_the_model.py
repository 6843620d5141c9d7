"""lm-eval patch 13, ``tasks_meet_the_model``: what it changes and why, then the change."""

from __future__ import annotations

import sys
from types import FrameType
from typing import TypedDict

from wsc_tasks.harness.patches.base import (
    TESTED,
    Patch,
    is_our_task,
    original,
)
from wsc_tasks.harness.patches.p10_warn_unkeyed_request_cache import _tasks_of
from wsc_tasks.scoring.methods import ScoringError


# Not a bug of lm-eval: an ordering it has no hook for. lm-eval builds the tasks before it hands
# them a model, and its CLI (and ``simple_evaluate`` without a ``TaskManager``) merges the model
# arguments into every task's metadata, while ``simple_evaluate(..., task_manager=...)`` and
# ``evaluate(lm, task_dict)`` do not: a task would see the tokenizer from one entry point and not
# from another. Before any request is built, ``evaluate`` now hands each of our tasks the model
# (``TaskConventions.meet_model``: the plan settled from the model when the metadata names no
# tokenizer, see ``model_facts``) and the keys that came from the run's model arguments, read from
# ``simple_evaluate``'s own ``model_args`` while it runs (the only record of which metadata keys
# are model arguments, so that a misspelt key can be told from one). Its ``metadata`` argument,
# which lm-eval ignores when a ``task_manager`` is given, is checked against the tasks' metadata.
class RunArguments(TypedDict):
    """Arguments of the running ``simple_evaluate`` (lm-eval's own values, as it was called)."""

    model_args: str | dict[str, object] | None
    metadata: dict[str, object] | None
    task_manager: object
    flags: dict[str, object]  # apply_chat_template, system_instruction, num_fewshot, …


# the flags of ``simple_evaluate`` that ``flags.check_task`` refuses, read by a task as lm-eval
# builds it (plain ``lm_eval`` runs: before any document is read or request built)
RUN_FLAGS = ("apply_chat_template", "system_instruction", "fewshot_as_multiturn", "num_fewshot")


def simple_evaluate_arguments() -> RunArguments | None:
    """``model_args``, ``metadata``, ``task_manager`` and the refused flags (``RUN_FLAGS``) of
    the running ``simple_evaluate``; None outside it (``evaluate`` called directly)."""
    import inspect

    from lm_eval import evaluator

    code = inspect.unwrap(original(evaluator, "simple_evaluate")).__code__
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    if frame is None:
        return None
    found = frame.f_locals
    return RunArguments(
        model_args=found.get("model_args"),
        metadata=found.get("metadata"),
        task_manager=found.get("task_manager"),
        flags={name: found.get(name) for name in RUN_FLAGS},
    )


def model_argument_keys(model_args: object) -> frozenset[str]:
    """The keys of ``simple_evaluate``'s ``model_args`` (a ``k=v,…`` string or a mapping)."""
    if isinstance(model_args, str):
        from lm_eval.utils import simple_parse_args_string

        return frozenset(simple_parse_args_string(model_args))
    return frozenset(model_args) if isinstance(model_args, dict) else frozenset()


def meet_the_model(lm: object, task_dict: object) -> None:
    """Hand each of our tasks in ``task_dict`` the model and the run's model-argument keys."""
    from lm_eval.api.task import Task

    run = simple_evaluate_arguments()
    keys = model_argument_keys(run["model_args"] if run else None)
    every = [t for t in _tasks_of(task_dict) if isinstance(t, Task)]
    tasks = [t for t in every if is_our_task(t) and hasattr(t, "meet_model")]
    shared = len(tasks) < len(every)  # other packages' tasks read the same metadata
    given = (run["metadata"] if run else None) or {}
    if run and run["task_manager"] is not None and isinstance(given, dict):
        for task in tasks:
            requested = task._requested
            ignored = sorted(k for k, v in given.items() if k not in requested or requested[k] != v)
            if ignored:
                raise ScoringError(
                    f"task {task.config.task}: simple_evaluate(metadata=...) is not used by "
                    f"lm-eval when a task_manager is given ({', '.join(ignored)}); pass it as "
                    "TaskManager(include_path=..., metadata=...)"
                )
    for task in tasks:
        task.meet_model(lm, keys, shared)
    if tasks:  # a plain lm_eval run then ends saying where its files are (section 23)
        from wsc_tasks.harness.patches.p23_say_where_results_are import ran

        ran()


def lm_eval_keeps_model_args_out_of_a_given_task_managers_metadata() -> bool:
    """lm-eval's ``simple_evaluate(..., task_manager=...)`` builds its tasks without the model
    arguments in their metadata (it merges them only into a ``TaskManager`` it builds itself)."""
    import tempfile
    from pathlib import Path
    from unittest import mock

    from lm_eval import evaluator
    from lm_eval.tasks import TaskManager

    class Built(Exception):
        pass

    built: dict[str, object] = {}

    def evaluate(lm: object, task_dict: dict[str, dict[str, object]], **kwargs: object) -> None:
        built.update(task_dict["tasks"])
        raise Built

    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "docs.jsonl").write_text('{"x": "a", "y": " b"}\n')
        Path(folder, "probe.yaml").write_text(
            "task: wsc_tasks_probe\ndataset_path: json\n"
            f"dataset_kwargs:\n  cache_dir: {folder}\n"  # nothing left in the user's cache
            f"  data_files:\n    test: {Path(folder, 'docs.jsonl')}\n"
            "output_type: loglikelihood\ntest_split: test\n"
            "doc_to_text: '{{x}}'\ndoc_to_target: '{{y}}'\n"
        )
        manager = TaskManager(include_path=folder, include_defaults=False)
        with mock.patch.object(evaluator, "evaluate", evaluate):
            try:
                original(evaluator, "simple_evaluate")(
                    model="dummy", model_args="probe_key=1", tasks=["wsc_tasks_probe"],
                    task_manager=manager,
                )  # fmt: skip
            except Built:
                pass
    task = built.get("wsc_tasks_probe")
    metadata = getattr(getattr(task, "config", None), "metadata", None)
    return task is not None and "probe_key" not in (metadata or {})


PATCH = Patch(
    "tasks_meet_the_model",
    "lm_eval.evaluator.evaluate (simple_evaluate's model_args read)",
    TESTED,
    still_needed=lm_eval_keeps_model_args_out_of_a_given_task_managers_metadata,
)
