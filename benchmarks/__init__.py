"""The developer benchmarks and simulations of wsc-tasks: ``python -m benchmarks NAME [options]``.

Not part of the installed package (they import ``wsc_tasks``; nothing in ``wsc_tasks`` imports
them): run from a checkout's root. One module per benchmark, named for what it measures; each is
also ``python -m benchmarks.<module>``. Their past figures are the tables of ``RESULTS.md``.
Each benchmark's module is imported only when it runs, so that this list and every ``--help``
print at once.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

VERBOSE_ENV = "WSC_TASKS_VERBOSE"  # 1: errors with their traceback (wsc-tasks' own setting)
INTERRUPTED = 130  # exit status after Ctrl-C (128 + SIGINT)


@dataclass(frozen=True)
class Benchmark:
    """A benchmark: its line in the list and ``module:function``, which takes the rest of the
    command line (its own ``--help`` included)."""

    help: str
    target: str

    def __call__(self, argv: list[str]) -> int:
        module, function = self.target.split(":")
        found: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
        return found(argv)


BENCHMARKS: dict[str, Benchmark] = {
    "run": Benchmark(
        "`wsc-tasks run` timed by phase; its requests, token positions",
        "benchmarks.run_phases:main",
    ),
    "board": Benchmark(
        "the leaderboard and the report timed over N copies of runs",
        "benchmarks.board_speed:main",
    ),
    "findings": Benchmark(
        "the findings' false-claim rates and power, by simulation",
        "benchmarks.findings_calibration:main",
    ),
    "ranks": Benchmark(
        "rank confidence sets: coverage, width on simulated boards",
        "benchmarks.rank_coverage:main",
    ),
    "mlm": Benchmark(
        "masked-LM scoring throughput, three ways, same sentences",
        "benchmarks.mlm_throughput:main",
    ),
    "sweep": Benchmark(
        "a sweep's models around their forward: warm worker vs own",
        "benchmarks.sweep_speed:main",
    ),
    "sweep-stops": Benchmark(
        "how fast a Hub sweep stops on a signal, what stays on disk",
        "benchmarks.sweep_stops:main",
    ),
    "switched-signal": Benchmark(
        "Min-K% of original against switched sentences, null and model",
        "benchmarks.switched_signal:main",
    ),
}


def listing() -> str:
    """``python -m benchmarks --help``: the benchmarks, one line each."""
    width = max(map(len, BENCHMARKS)) + 2
    rows = "\n".join(f"  {name:{width}s}{bench.help}" for name, bench in BENCHMARKS.items())
    return (
        "usage: python -m benchmarks [--verbose] NAME [options]\n\n"
        "The developer benchmarks and simulations of wsc-tasks (run from the checkout's\n"
        "root; their past figures: benchmarks/RESULTS.md).\n\n"
        f"benchmarks:\n{rows}\n\n"
        "`python -m benchmarks NAME --help` shows a benchmark's options; --verbose:\n"
        "errors with their traceback.\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark ``argv`` names: an error one line on stderr (exit 2), Ctrl-C one line
    (exit 130), unless ``--verbose`` or ``WSC_TASKS_VERBOSE=1`` asks for the traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    verbose = "--verbose" in argv or os.environ.get(VERBOSE_ENV, "") not in ("", "0")
    if "--verbose" in argv:
        os.environ[VERBOSE_ENV] = "1"  # the runs a benchmark starts pass it on
    argv = [a for a in argv if a != "--verbose"]
    if not argv or argv[0] in ("-h", "--help"):
        print(listing(), end="", file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] not in BENCHMARKS:
        print(
            f"benchmarks: error: no benchmark {argv[0]!r}; one of {', '.join(BENCHMARKS)}",
            file=sys.stderr,
        )
        return 2
    try:
        return BENCHMARKS[argv[0]](argv[1:])
    except KeyboardInterrupt:
        if verbose:
            raise
        print("benchmarks: interrupted", file=sys.stderr)
        return INTERRUPTED
    except SystemExit as error:  # argparse's own exit codes stand; a message is an error
        if verbose or not isinstance(error.code, str):
            raise
        print(_one_line(error), file=sys.stderr)
        return 2
    except Exception as error:
        if verbose:
            raise
        print(_one_line(error), file=sys.stderr)
        return 2


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    if isinstance(error, KeyError | AttributeError | TypeError | NameError):
        text = f"{type(error).__name__}: {text}"
    return f"benchmarks: error: {text} (--verbose for the traceback)"
