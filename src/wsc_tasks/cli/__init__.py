"""``wsc-tasks``: one command for the include path, the data, lm-eval runs, reports and sweeps.

Each subcommand is an entry of ``COMMANDS``, a function taking its part of the command line
(the modules ``run``, ``sweep``, ``report`` and ``leaderboard`` of this package);
this module dispatches to it and turns errors into one line.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wsc_tasks.paths import KEEP_PATHS, include_path

VERBOSE_ENV = "WSC_TASKS_VERBOSE"  # 1: errors with their traceback (same as --verbose)
INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT, as a shell reports it)


DATA_ACTIONS = {
    "fetch": "download the missing dataset files and verify every file's SHA-256",
    "path": "print the data folder ($WSC_TASKS_DATA, default ~/.cache/wsc_tasks/data)",
    "stats": "print the documents, problems and schemas of every task's dataset",
    "audit": "check the control baselines: no candidate left, only mentions deleted",
    "check": "parse your own files (thesis .txt, Winogrande .jsonl) and print their counts",
}


def data_command(argv: list[str]) -> int:
    """``wsc-tasks data ACTION``: each action a subcommand with its own help."""
    parser = argparse.ArgumentParser(
        prog="wsc-tasks data",
        description="The datasets: pinned public files, read from $WSC_TASKS_DATA.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, text in DATA_ACTIONS.items():
        action = actions.add_parser(name, help=text, description=text[0].upper() + text[1:] + ".")
        if name == "check":
            action.add_argument("files", nargs="+", metavar="FILE", help="a .txt or .jsonl file")
    return _data(parser.parse_args(argv))


def _data(args: argparse.Namespace) -> int:
    from wsc_tasks.data import catalog, sources

    if args.action == "fetch":
        for path in sources.fetch_all():
            print(f"ok  {path}")
        root = sources.data_root()
        print(f"all {len(sources.CHECKSUMS)} files present and verified under {root}")
    elif args.action == "path":
        print(sources.data_root())
    elif args.action == "check":
        from wsc_tasks.data import parsers
        from wsc_tasks.data.problems import count

        for name in args.files:
            path = Path(name)
            if path.suffix == ".jsonl":
                schemas = parsers.group_twins(parsers.parse_winogrande(path))
            else:
                schemas = list(parsers.parse_maler(path).schemas)
            problems, groups = count(schemas)
            print(f"ok  {path}: {problems} problems in {groups} schemas")
    elif args.action == "stats":
        from wsc_tasks.data.problems import count

        for name in catalog.SPECS:
            schemas = catalog.load(name)
            problems, groups = count(schemas)
            print(
                f"{name:32s} {len(schemas):5d} documents {problems:5d} problems {groups:4d} schemas"
            )
    elif args.action == "audit":
        from wsc_tasks.data.audit import audit_catalog, failures, format_audit

        audits = audit_catalog()
        print(format_audit(audits))
        failed = failures(audits)
        print(f"audit: {failed} failed check(s)" if failed else "audit: every check passed")
        return 1 if failed else 0
    return 0


def main(argv: list[str] | None = None) -> int:
    """``wsc-tasks``: an error is one line on stderr (exit 2), Ctrl-C one line (exit 130), unless
    ``--verbose`` (anywhere) or ``WSC_TASKS_VERBOSE=1`` asks for the traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv or os.environ.get(VERBOSE_ENV, "") not in ("", "0")
    if "--verbose" in argv:
        os.environ[VERBOSE_ENV] = "1"  # sweeps pass it on to their runs
    argv = [a for a in argv if a != "--verbose"]
    try:
        return _main(argv)
    except KeyboardInterrupt as error:  # Ctrl-C: one line, the shell's 128 + SIGINT
        if verbose:
            raise
        print(str(error) or "wsc-tasks: interrupted", file=sys.stderr)
        return INTERRUPTED
    except SystemExit as error:  # argparse's own exit codes stand; a message is an error
        if verbose or not isinstance(error.code, str):
            raise
        print(one_line(error), file=sys.stderr)
        return 2
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


def include_path_command(argv: list[str]) -> int:
    argparse.ArgumentParser(
        prog="wsc-tasks include-path",
        description="Print the folder of this package's task YAMLs, for lm-eval's --include_path: "
        "lm_eval run --include_path $(wsc-tasks include-path) --tasks wsc_group …",
    ).parse_args(argv)
    print(include_path())
    return 0


def summary_command(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="wsc-tasks summary",
        description="Print a Markdown table of the newest lm-eval results file under a folder.",
    )
    parser.add_argument("path", help="an lm-eval --output_path folder or results_*.json")
    parser.add_argument(
        KEEP_PATHS, action="store_true", help="local model paths as given (default: <last part>)"
    )
    args = parser.parse_args(argv)
    from wsc_tasks.report.results_summary import markdown, newest_results

    print(markdown(newest_results(args.path), args.keep_paths), end="")
    return 0


@dataclass(frozen=True)
class Command:
    """A subcommand: its line in ``wsc-tasks --help`` and ``module:function``, which takes the
    rest of the command line (its own ``--help`` included) and is imported only when run."""

    help: str
    target: str

    def __call__(self, argv: list[str]) -> int:
        module, function = self.target.split(":")
        found: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
        return found(argv)


COMMANDS: dict[str, Command] = {
    "run": Command(
        "lm-eval with these tasks (default: wsc_group, SmolLM2-135M)",
        "wsc_tasks.cli.run:run_lm_eval",
    ),
    "report": Command(
        "findings, tables, figures, p-values of runs with --log_samples",
        "wsc_tasks.cli.report:main",
    ),
    "sweep": Command("run many models, then write their leaderboard", "wsc_tasks.cli.sweep:main"),
    "leaderboard": Command(
        "write a sweep folder's leaderboard again, running nothing",
        "wsc_tasks.cli.leaderboard:main",
    ),
    "summary": Command(
        "a Markdown table of the newest lm-eval results under a folder",
        "wsc_tasks.cli:summary_command",
    ),
    "data": Command(
        "fetch, locate, count, audit or check the datasets", "wsc_tasks.cli:data_command"
    ),
    "include-path": Command(
        "print the folder of the task YAMLs, for lm_eval --include_path",
        "wsc_tasks.cli:include_path_command",
    ),
}


def parser() -> argparse.ArgumentParser:
    """``wsc-tasks --help``: the commands; each parses its own options."""
    width = max(map(len, COMMANDS)) + 2
    listed = "\n".join(f"  {name:{width}s}{command.help}" for name, command in COMMANDS.items())
    found = argparse.ArgumentParser(
        prog="wsc-tasks",
        usage="wsc-tasks [--verbose] COMMAND [options]",
        description="Winograd-schema tasks for lm-evaluation-harness: run them, report on\n"
        f"the runs, sweep many models.\n\ncommands:\n{listed}",
        epilog="`wsc-tasks COMMAND --help` shows a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    found.add_argument("--verbose", action="store_true", help="errors with their traceback")
    found.add_argument("--version", action="version", version=version_line())
    sub = found.add_subparsers(dest="command", required=True, metavar="COMMAND", help="a command")
    for name in COMMANDS:
        sub.add_parser(name, add_help=False)
    return found


def version_line() -> str:
    """``wsc-tasks --version``: this package's version and the lm-eval it runs on."""
    from importlib import metadata

    from wsc_tasks import __version__

    try:
        lm_eval = metadata.version("lm_eval")
    except metadata.PackageNotFoundError:
        lm_eval = "not installed"
    return f"wsc-tasks {__version__} (lm-eval {lm_eval})"


def _main(argv: list[str]) -> int:
    if argv[:1] and argv[0] in COMMANDS:
        return COMMANDS[argv[0]](argv[1:])
    parser().parse_args(argv)  # --help, or an unknown command: argparse says so
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
