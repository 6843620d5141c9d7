"""``wsc-tasks run``'s evaluation: lm-eval's ``run`` flags, read by lm-eval, run through its API.

lm-eval's own parser and ``EvaluatorConfig`` read the flags (and a ``--config`` YAML), exactly as
``lm_eval run`` does; then this module does what lm-eval's ``run`` command does with them through
lm-eval's Python API (``simple_evaluate``, ``EvaluationTracker``, ``WandbLogger``, ``make_table``),
with two differences a user of ``wsc-tasks run`` asked for: the task folders are a list (the
user's ``--include_path`` and this package's), and a run of this package's tasks alone indexes
only their folder, not lm-eval's thousands of task YAMLs (12 s of CPU). The tables are printed as
lm-eval prints them, but for this package's counts (as integers, without a standard error) and
its undefined metrics (left out; the notes under the tables say why).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import re
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from wsc_tasks.metrics import registry

log = logging.getLogger(f"lm_eval.{__name__}")


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` read by lm-eval's own ``run`` parser (an error exits as lm-eval's does)."""
    from lm_eval._cli.harness import HarnessCLI

    saved = sys.argv
    sys.argv = ["lm_eval", "run", *argv]
    try:
        return HarnessCLI().parse_args()
    finally:
        sys.argv = saved


def _task_names(tasks: str | list[str] | None) -> list[str]:
    """``--tasks`` as lm-eval's run reads it: names separated by commas, in one or more words."""
    words = [tasks] if isinstance(tasks, str) else list(tasks or [])
    return [name.strip() for word in words for name in word.split(",") if name.strip()]


def task_manager(config: Any, only_ours: bool) -> Any:
    """lm-eval's ``TaskManager`` for the run, every ``--include_path`` folder in it; lm-eval's own
    tasks indexed only when ``only_ours`` is false. Sets ``config.tasks`` to what it found."""
    from lm_eval.tasks import TaskManager

    folders = [p for p in str(config.include_path or "").split(os.pathsep) if p]
    if not only_ours:
        config.include_path = folders
        return config.process_tasks(config.metadata)  # lm-eval's own resolution of --tasks
    manager = TaskManager(include_path=folders, include_defaults=False, metadata=config.metadata)
    names = _task_names(config.tasks)
    missing = [name for name in names if not manager.match_tasks([name])]
    if missing:
        raise ValueError(f"Tasks not found: {', '.join(missing)}")
    config.tasks = names
    return manager


def evaluate(argv: Sequence[str], only_ours: bool) -> dict[str, Any] | None:
    """Run ``argv`` as lm-eval's ``run`` would, through its API; the results (samples taken out
    and saved, as lm-eval's ``run`` does), or None on a rank other than the first."""
    from lm_eval import simple_evaluate
    from lm_eval.config.evaluate_config import EvaluatorConfig
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.utils import setup_logging

    setup_logging()  # as lm-eval's command line: its log on stderr
    os.environ["TOKENIZERS_PARALLELISM"] = "false"  # as lm-eval's run command
    config = EvaluatorConfig.from_cli(parse(argv))
    if config.output_path:
        config.hf_hub_log_args["output_path"] = config.output_path
    if os.environ.get("HF_TOKEN"):
        config.hf_hub_log_args["token"] = os.environ["HF_TOKEN"]
    tracker = EvaluationTracker(**config.hf_hub_log_args)
    manager = task_manager(config, only_ours)
    wandb = _logger("WandbLogger", config, "wandb_args", "wandb_config_args")
    seed = config.seed or [None] * 4
    caching = config.cache_requests or {}
    results = simple_evaluate(
        model=config.model,
        model_args=config.model_args,
        tasks=config.tasks,
        num_fewshot=config.num_fewshot,
        batch_size=config.batch_size,
        max_batch_size=config.max_batch_size,
        device=config.device,
        use_cache=config.use_cache,
        cache_requests=caching.get("cache_requests", False),
        rewrite_requests_cache=caching.get("rewrite_requests_cache", False),
        delete_requests_cache=caching.get("delete_requests_cache", False),
        limit=config.limit,
        samples=config.samples,
        check_integrity=config.check_integrity,
        write_out=config.write_out,
        log_samples=config.log_samples,
        evaluation_tracker=tracker,
        system_instruction=config.system_instruction,
        apply_chat_template=config.apply_chat_template,
        fewshot_as_multiturn=config.fewshot_as_multiturn,
        gen_kwargs=config.gen_kwargs,
        task_manager=manager,
        verbosity=config.verbosity,
        predict_only=config.predict_only,
        random_seed=seed[0],
        numpy_random_seed=seed[1],
        torch_random_seed=seed[2],
        fewshot_random_seed=seed[3],
        confirm_run_unsafe_code=config.confirm_run_unsafe_code,
        metadata=config.metadata,
    )
    if results is None:
        return None
    samples = results.pop("samples", None) if config.log_samples else None
    if getattr(config, "show_config", False):
        from lm_eval.utils import handle_non_serializable

        print(json.dumps(results, indent=2, default=handle_non_serializable, ensure_ascii=False))
    if wandb is not None:
        try:
            wandb.post_init(results)
            wandb.log_eval_result()
            if samples is not None:
                wandb.log_eval_samples(samples)
        except Exception as error:  # noqa: BLE001 - as lm-eval's run: the results still count
            log.info("Logging to W&B failed: %s", error)
    tracker.save_results_aggregated(results=results, samples=samples)
    if samples is not None:
        for task in results["configs"]:
            tracker.save_results_samples(task_name=task, samples=samples[task])
    if tracker.push_results_to_hub or tracker.push_samples_to_hub:
        tracker.recreate_metadata_card()
    print_tables(config, results)
    if wandb is not None:
        wandb.run.finish()
    return results


def _logger(name: str, config: Any, *fields: str) -> Any:
    """lm-eval's logger ``name`` built from ``config``'s ``fields``, if the first is given."""
    values = [getattr(config, field, None) for field in fields]
    if not values[0]:
        return None
    from lm_eval import loggers

    return getattr(loggers, name)(*values)


def print_tables(config: Any, results: dict[str, Any]) -> None:
    """lm-eval's header line and tables, this package's counts and undefined metrics aside."""
    from lm_eval.utils import make_table

    shown = readable(results)
    model_args = {k: v for k, v in (config.model_args or {}).items() if k != "trust_remote_code"}
    sizes = ",".join(map(str, results.get("config", {}).get("batch_sizes", [])))
    print(
        f"{config.model} ({model_args}), gen_kwargs: ({config.gen_kwargs}), "
        f"limit: {config.limit}, num_fewshot: {config.num_fewshot}, "
        f"batch_size: {config.batch_size}{f' ({sizes})' if sizes else ''}"
    )
    print(integer_counts(make_table(shown)))
    if "groups" in shown:
        print(integer_counts(make_table(shown, "groups")))


def readable(results: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``results`` for lm-eval's ``make_table``: a count of this package as the integer
    it is, with no standard error (lm-eval writes ``N/A``), and an undefined (NaN) metric of this
    package left out (its task's note says why); everything else as lm-eval gives it."""
    shown = dict(results)
    for column in ("results", "groups"):
        if column not in results:
            continue
        shown[column] = {task: _readable_row(row) for task, row in results[column].items()}
    return shown


def _readable_row(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for text, value in row.items():  # this package's metrics without a value: its notes say why
        key = registry.Key.parse(text.partition(",")[0])
        if key is not None and value == registry.NOT_AVAILABLE:
            out.pop(text)
            out.pop(registry.column(registry.stderr_name(key.name)), None)
    for key, value in registry.reported(row).items():
        name = registry.column(key.name)
        error = registry.column(registry.stderr_name(key.name))
        if isinstance(value, float) and math.isnan(value):
            out.pop(name, None)
            out.pop(error, None)
        elif key.metric.kind == "count":
            out[name] = int(value) if float(value).is_integer() else value
            out.pop(error, None)
    return out


def integer_counts(table: str) -> str:
    """``table`` (lm-eval's Markdown) with the whole values of this package's counts written as
    integers: its table writer gives every number of a column the column's decimals
    (``266.0``)."""
    lines = table.split("\n")
    for i, line in enumerate(lines):
        cells = line.split("|")
        if len(cells) != 11:
            continue
        key = registry.Key.parse(cells[5].strip())
        value = cells[7].strip()
        if key is None or key.metric.kind != "count" or not re.fullmatch(r"\d+(\.0*)?", value):
            continue
        cells[7] = value.split(".")[0].rjust(len(cells[7]))
        lines[i] = "|".join(cells)
    return "\n".join(lines)


@contextmanager
def logging_filters(*pairs: tuple[str, logging.Filter]) -> Iterator[None]:
    """``(logger name, filter)`` pairs in place while the block runs (this command's output
    only)."""
    for name, found in pairs:
        logging.getLogger(name).addFilter(found)
    try:
        yield
    finally:
        for name, found in pairs:
            logging.getLogger(name).removeFilter(found)
