"""lm-eval flags that would change what is measured but that these tasks cannot honour: refused
(and a ``--limit`` that leaves no document).

The log-likelihood tasks build their own requests: plain sentences with the blank filled,
scored by log-likelihood. There is no prompt to wrap in a chat turn, put a system instruction
before or prefix with worked examples, and no generation. lm-eval would still record such a flag
in its results (the chat template and its hash, the instruction, ``fewshot_as_multiturn``), so a
reader would believe in an evaluation that did not happen. Each is therefore an error, raised
twice: by ``wsc-tasks run`` before the model loads, and by the tasks themselves before any
request is built (so plain ``lm_eval --include_path`` runs are refused too). The question tasks
(``tasks.questions``, ``PROMPTED``) have a prompt and generate: they take all of these.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wsc_tasks.tasks.conventions import LmEvalTask
else:
    LmEvalTask = object

QUESTIONS = "; the question tasks (<task>_chat, wsc_group_chat) take it, in a run of their own"
WHY = {
    "--apply_chat_template": "the tasks score plain sentences by log-likelihood; there is no "
    "prompt to put in a chat turn, so the template would be recorded but change no request"
    + QUESTIONS,
    "--system_instruction": "the tasks score plain sentences by log-likelihood; there is no "
    "prompt to put an instruction before, so it would be recorded but change no request"
    + QUESTIONS,
    "--fewshot_as_multiturn": "it only formats few-shot examples under a chat template, and "
    "these tasks take neither" + QUESTIONS,
    "--num_fewshot": "the tasks score each option's sentence by log-likelihood and have no "
    "prompt to put worked examples in (use --num_fewshot 0 or leave it out)" + QUESTIONS,
    "--gen_kwargs": "these tasks send log-likelihood requests only, never generation; lm-eval "
    "would record the arguments and use none",
}


class UnsupportedFlag(ValueError):
    """A flag that would be recorded in the results but could not change what is measured."""


LIMIT_ALLOWED = (
    "allowed: a whole number of documents ≥ 1, or a share of each task's documents between 0 "
    "and 1 (0.1: the first tenth)"
)


def message(flag: str, where: str = "wsc-tasks") -> str:
    return f"{where}: {flag} is not supported: {WHY[flag]}"


def check_limit(value: object) -> None:
    """``--limit`` as lm-eval reads it: a count if ≥ 1 (``int()``, so 2.5 would be 2), a share of
    each task if below 1; 0 and negatives would end in lm-eval's "did not find any docs" or an
    ``islice`` error."""
    try:
        number = float(value) if isinstance(value, int | float | str) else float("nan")
    except ValueError:
        number = float("nan")
    if not number > 0 or (number >= 1 and not number.is_integer()):
        raise UnsupportedFlag(f"wsc-tasks: --limit {value} is invalid; {LIMIT_ALLOWED}")


def check_task(
    task: str,
    *,
    num_fewshot: int | None = 0,
    apply_chat_template: bool | str | None = False,  # lm-eval: a flag, or a template name
    system_instruction: str | None = None,
    limit: int | None = None,
    prompted: bool = False,
) -> None:
    """Raise for the flags lm-eval hands a task (``build_all_requests``) that it cannot honour,
    and for a ``--limit`` that leaves no document (lm-eval has made a share a count by then).
    A ``prompted`` task (the questions) honours the chat template, instruction and examples."""
    where = f"task {task}"
    if limit is not None and limit < 1:
        raise UnsupportedFlag(f"{where}: --limit leaves {limit} documents; {LIMIT_ALLOWED}")
    if prompted:
        return
    if apply_chat_template:
        raise UnsupportedFlag(message("--apply_chat_template", where))
    if system_instruction:
        raise UnsupportedFlag(message("--system_instruction", where))
    if num_fewshot:
        raise UnsupportedFlag(message("--num_fewshot", where))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--apply_chat_template", nargs="?", const=True, default=None)
    parser.add_argument("--system_instruction", default=None)
    parser.add_argument("--fewshot_as_multiturn", nargs="?", const="true", default=None)
    parser.add_argument("--num_fewshot", "-f", default=None)
    parser.add_argument("--gen_kwargs", nargs="+", default=None)
    parser.add_argument("--limit", "-L", default=None)
    parser.add_argument("--config", "-C", default=None)
    return parser


def _true(value: object) -> bool:
    return value is True or str(value).lower() in ("true", "1", "yes")


def check_argv(
    argv: list[str], others: bool = False, scored: bool = True, prompted: bool = False
) -> None:
    """Raise for ``lm_eval run`` arguments (and a ``--config`` YAML file) asking for a refused
    flag; ``--num_fewshot 0`` and ``--fewshot_as_multiturn false`` change nothing and pass.
    ``others``: other packages' tasks run too, whose generation ``--gen_kwargs`` may be for;
    ``scored``: some task of this package scores by log-likelihood (refusing the chat template,
    the instruction and the examples); ``prompted``: some asks questions (taking all of them,
    and ``--gen_kwargs``)."""
    known, _ = _parser().parse_known_args(argv)
    settings: dict[str, object] = {}
    if known.config and Path(known.config).is_file():
        import yaml

        loaded = yaml.safe_load(Path(known.config).read_text(encoding="utf-8"))
        settings.update(loaded if isinstance(loaded, dict) else {})
    settings.update({k: v for k, v in vars(known).items() if v is not None and k != "config"})
    if settings.get("limit") is not None:
        check_limit(settings["limit"])
    generates = others or prompted
    refused = (
        *(("apply_chat_template", "system_instruction") if scored else ()),
        *(() if generates else ("gen_kwargs",)),
    )
    for name in refused:
        if settings.get(name) not in (None, False, "", [], {}):
            raise UnsupportedFlag(message(f"--{name}"))
    if not scored:
        return
    if settings.get("fewshot_as_multiturn") is not None and _true(settings["fewshot_as_multiturn"]):
        raise UnsupportedFlag(message("--fewshot_as_multiturn"))
    shots = settings.get("num_fewshot")
    if shots is not None and str(shots).strip() not in ("0", ""):
        raise UnsupportedFlag(message("--num_fewshot"))


class RefusesUnmeasuredFlags(LmEvalTask):
    """Mixin for this package's lm-eval tasks: lm-eval passes the chat template and system
    instruction to ``build_all_requests``, so that is where a task refuses them (and few-shot),
    also for plain ``lm_eval --include_path`` runs that never go through ``wsc-tasks run``.
    A task with a prompt (``PROMPTED``: the questions) takes them."""

    PROMPTED = False

    def build_all_requests(self, **kwargs: Any) -> None:
        check_task(
            self.config.task,
            num_fewshot=self.config.num_fewshot,
            apply_chat_template=kwargs.get("apply_chat_template"),
            system_instruction=kwargs.get("system_instruction"),
            limit=kwargs.get("limit"),
            prompted=self.PROMPTED,
        )
        super().build_all_requests(**kwargs)
