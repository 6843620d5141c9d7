"""``wsc-tasks``: one command for the include path, the data, lm-eval runs, reports and sweeps.

Each subcommand lives in its own module (``run``, ``sweep``, ``bench``; ``report`` and ``summary``
in ``wsc_tasks.reporting``); this one parses the command line and turns errors into one line.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from wsc_tasks.cli.run import run_lm_eval
from wsc_tasks.paths import KEEP_PATHS, include_path

VERBOSE_ENV = "WSC_TASKS_VERBOSE"  # 1: errors with their traceback (same as --verbose)
INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT, as a shell reports it)


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
    summary_parser.add_argument(
        KEEP_PATHS, action="store_true", help="local model paths as given (default: <last part>)"
    )
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
    sub.add_parser(
        "bench-findings",
        add_help=False,
        help="the findings' false-claim rates and power, by simulation",
    )
    sub.add_parser("report", add_help=False, help="thesis-style tables, figures and p-values")
    sub.add_parser("sweep", add_help=False, help="run many models, write a leaderboard")
    sub.add_parser(
        "leaderboard", add_help=False, help="write a sweep folder's leaderboard, running nothing"
    )
    if argv[:1] == ["run"]:
        return run_lm_eval(argv[1:])
    if argv[:1] == ["report"]:
        from wsc_tasks.cli.report import main as report

        return report(argv[1:])
    if argv[:1] == ["sweep"]:
        from wsc_tasks.cli.sweep import main as sweep

        return sweep(argv[1:])
    if argv[:1] == ["leaderboard"]:
        from wsc_tasks.cli.leaderboard import main as board

        return board(argv[1:])
    if argv[:1] == ["bench"]:
        from wsc_tasks.cli.bench import bench_run

        return bench_run(argv[1:])
    if argv[:1] == ["bench-findings"]:
        from wsc_tasks.reporting.calibration import main as calibrate

        return calibrate(argv[1:])
    if argv[:1] == ["bench-mlm"]:
        from wsc_tasks.cli.bench import main as bench

        return bench(argv[1:])
    args = parser.parse_args(argv)
    if args.command == "include-path":
        print(include_path())
        return 0
    if args.command == "summary":
        from wsc_tasks.reporting.summary import markdown, newest_results

        print(markdown(newest_results(args.path), args.keep_paths), end="")
        return 0
    return _data(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
