"""``wsc-tasks sweep``: the command line of ``wsc_tasks.sweep``, then the leaderboard.

The launcher choices and their flags come from the launcher registry (``LAUNCHERS``): each
launcher's settings are flags here and keys of its section in the models file. A flag of another
launcher than the one chosen is refused rather than ignored.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from wsc_tasks import leaderboard
from wsc_tasks.cli.run import DEFAULT_TASKS, check_task_names
from wsc_tasks.cli.run_outputs import check_writable
from wsc_tasks.metrics import stats
from wsc_tasks.paths import KEEP_PATHS
from wsc_tasks.sweep import hub
from wsc_tasks.sweep.driver import sweep
from wsc_tasks.sweep.launchers import DEFAULT, LAUNCHERS, Launcher, LauncherError
from wsc_tasks.sweep.lock import Busy
from wsc_tasks.sweep.models import ModelsFile, ModelsFileError, ModelSpec, read_models_file
from wsc_tasks.sweep.options import SweepOptions


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends the sweep like Ctrl-C: its runs are stopped first."""
    raise SystemExit(128 + signum)


def parser(shown: str | None = None) -> argparse.ArgumentParser:
    """The sweep's flags; ``--help`` lists the settings of launcher ``shown`` only (all if None)."""
    others = sorted(name for name in LAUNCHERS if name != shown)
    found = argparse.ArgumentParser(
        prog="wsc-tasks sweep",
        usage="wsc-tasks sweep [MODELS_FILE] [--hub-query K=V,…] [--out DIR]\n"
        "       [options] [lm_eval flags…]",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=22),
        description="Run lm-eval on every model of MODELS_FILE and --hub-query (resumable), then "
        "write <out>/leaderboard.md, .csv, .html. Unknown flags go to each lm-eval run.",
        epilog=f"Other launchers: --launcher {'|'.join(others)} --help (docs/sweeps.md: Clusters).",
    )
    found.add_argument(
        "models_file",
        nargs="?",
        help="a YAML or text list of models; optional with --hub-query",
    )
    found.add_argument(
        "--hub-query",
        metavar="K=V,…",
        help="models from a Hub query (author, search, tags, …)",
    )
    found.add_argument(
        "--prefetch",
        type=int,
        default=1,
        metavar="N",
        help="Hub models downloading while one evaluates (default 1)",
    )
    found.add_argument(
        "--keep-weights",
        action="store_true",
        help="keep Hub weights cached after a run (default: removed)",
    )
    found.add_argument(
        "--out", default="results", metavar="DIR", help="one folder per model (default results)"
    )
    found.add_argument(
        "--tasks",
        default=DEFAULT_TASKS,
        metavar="T1,T2",
        help=f"tasks of every run (default {DEFAULT_TASKS})",
    )
    found.add_argument(
        "--rank-task",
        default=leaderboard.DEFAULT_TASK,
        metavar="TASK",
        help=f"task or group that ranks models (default {leaderboard.DEFAULT_TASK})",
    )
    found.add_argument("--retry-failed", action="store_true", help="run failed models again")
    found.add_argument(
        "--process-per-model",
        action="store_true",
        help="a process per model (default: a worker runs many)",
    )
    found.add_argument(
        "--no-cache", action="store_true", help="no lm-eval caches (answers, requests)"
    )
    found.add_argument(
        "--iters",
        type=int,
        metavar="R",
        default=stats.DEFAULT_ITERS,
        help=f"bootstrap R (default {stats.DEFAULT_ITERS})",
    )
    found.add_argument(
        "--seed",
        type=int,
        metavar="N",
        default=stats.DEFAULT_SEED,
        help=f"bootstrap seed (default {stats.DEFAULT_SEED})",
    )
    found.add_argument("--quiet", action="store_true", help="no progress bar or progress lines")
    found.add_argument(
        KEEP_PATHS,
        action="store_true",
        help="local model paths as given (default: their last part)",
    )
    found.add_argument(
        "--launcher", choices=sorted(LAUNCHERS), default=DEFAULT, help=f"default {DEFAULT}"
    )
    added: set[str] = set()
    # the shown launcher first, so that a setting it shares with another is listed under it
    for name, cls in sorted(LAUNCHERS.items(), key=lambda item: (item[0] != shown, item[0])):
        listed = shown is None or name == shown
        group = found.add_argument_group(f"--launcher {name}", cls.help if listed else None)
        for setting in cls.settings:
            if setting.name in added:
                continue  # a setting two launchers share (--max-parallel): one flag
            added.add(setting.name)
            common: dict[str, Any] = {"dest": setting.dest, "default": argparse.SUPPRESS}
            if setting.kind not in ("flag", "lines"):
                common["metavar"] = "N" if setting.parse in (int, float) else "V"
            elif setting.kind == "lines":
                common["metavar"] = "LINE"
            if not listed:
                common["help"] = argparse.SUPPRESS
            common.setdefault("help", setting.shown_help)
            if setting.kind == "flag":
                group.add_argument(setting.flag, action="store_true", **common)
            elif setting.kind == "lines":
                group.add_argument(setting.flag, action="append", **common)
            else:
                group.add_argument(setting.flag, **common)
    return found


def launcher_from(args: argparse.Namespace, models: ModelsFile, options: SweepOptions) -> Launcher:
    """The chosen launcher with its settings: its models-file section, then the flags given."""
    cls = LAUNCHERS[args.launcher]
    given = vars(args)
    own = {setting.name for setting in cls.settings}
    for name, other in LAUNCHERS.items():
        for setting in other.settings:
            if setting.dest in given and setting.name not in own:
                raise LauncherError(
                    f"{setting.flag} is a setting of --launcher {name}, not of "
                    f"--launcher {cls.name}"
                )
    unknown = sorted(set(models.sections) - set(LAUNCHERS))
    if unknown:
        raise LauncherError(
            f"{models.where(unknown[0])}: unknown section {unknown[0]!r} (sections: models, "
            f"{', '.join(sorted(LAUNCHERS))})"
        )
    flags = {s.name: given[s.dest] for s in cls.settings if s.dest in given}
    section = models.sections.get(cls.name, {})
    values = cls.resolve(section, models.where(cls.name), flags)
    return cls(values, options)


def _launcher_asked(argv: list[str]) -> str:
    """The ``--launcher`` of ``argv`` (the default if none), for ``--help``."""
    for i, arg in enumerate(argv):
        if arg == "--launcher" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--launcher="):
            return arg.split("=", 1)[1]
    return DEFAULT


def models_of(args: argparse.Namespace, out: Path) -> tuple[ModelsFile, list[ModelSpec]]:
    """The models file and every model of the sweep: its entries, then those of its ``hub:``
    query and of ``--hub-query`` (expanded once into ``<out>/hub-models.yaml``)."""
    if args.models_file is None and not args.hub_query:
        raise ModelsFileError("give a models file, or --hub-query")
    if args.models_file is not None:
        models = read_models_file(args.models_file)  # an error names the file and line
    else:
        models = ModelsFile(Path("--hub-query"), [])
    query = None
    if args.hub_query:
        query = hub.parse_query(args.hub_query, "--hub-query")
    elif models.hub is not None:
        query = hub.parse_query(models.hub, models.where("hub"))
    specs = list(models.specs)
    if query is not None:
        specs += hub.expand(query, out)
    names = [spec.name for spec in specs]
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ModelsFileError(f"model name(s) {twice} appear more than once (file and query)")
    return models, specs


def _value_of_passthrough(
    args: argparse.Namespace, argv: list[str], passthrough: list[str]
) -> None:
    """With ``--hub-query`` and no models file, argparse takes the value of an lm-eval flag
    (``--limit 4``) for the models file: give it back to its flag."""
    given = args.models_file
    if not args.hub_query or given is None or Path(given).exists() or given not in argv:
        return
    before = argv[argv.index(given) - 1]
    if before in passthrough and before.startswith("-"):
        passthrough.insert(passthrough.index(before) + 1, given)
        args.models_file = None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = parser(_launcher_asked(argv))
    args, passthrough = command.parse_known_args(argv)
    _value_of_passthrough(args, argv, passthrough)
    out = Path(args.out)
    check_writable(out, f"--out {args.out}", keep=False)  # before a Hub query or lock writes there
    check_task_names(["--tasks", args.tasks, *passthrough])  # once, not in every model's run
    if args.prefetch < 0:
        command.error("--prefetch: expected 0 or more")
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _main(args, passthrough, out)
    except KeyboardInterrupt:
        print("wsc-tasks sweep: interrupted; run the same command again to resume", file=sys.stderr)
        return 130
    except SystemExit as stopped:  # SIGTERM: as Ctrl-C
        if stopped.code == 128 + signal.SIGTERM:
            print("wsc-tasks sweep: terminated; run the same command again to resume",
                  file=sys.stderr)  # fmt: skip
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)


def _main(args: argparse.Namespace, passthrough: list[str], out: Path) -> int:
    """The sweep after its flags are read; Ctrl-C and SIGTERM end it in ``main``."""
    try:
        models, specs = models_of(args, out)
    except ModelsFileError as error:
        print(f"wsc-tasks: error: {error}", file=sys.stderr)
        return 2
    options = SweepOptions(
        out=out,
        tasks=args.tasks,
        lm_eval_flags=tuple(passthrough),
        cache=not args.no_cache,
        retry_failed=args.retry_failed,
        quiet=args.quiet,
        keep_paths=args.keep_paths,
        prefetch=args.prefetch,
        keep_weights=args.keep_weights,
        process_per_model=args.process_per_model,
    )
    launcher = launcher_from(args, models, options)
    try:
        states = sweep(specs, launcher)
    except Busy as error:
        print(f"wsc-tasks sweep: error: {error}; wait for it or use another --out", file=sys.stderr)
        return 2
    if not launcher.waits:
        for name, state in states.items():
            print(f"{state:8s} {name}", file=sys.stderr if launcher.dry_run else sys.stdout)
        if any(state == "queued" for state in states.values()):
            print(
                "not waiting: run the same command again to collect the results and write the "
                "leaderboard",
                file=sys.stderr,
            )
        return 0
    names = [spec.name for spec in specs]
    names += leaderboard.made_elsewhere(out, names)  # runs put beside the sweep's (foreign)
    board = leaderboard.build(names, out, args.rank_task, args.iters, args.seed)
    paths = leaderboard.save(board, out)
    for name, state in states.items():
        print(f"{state:8s} {name}")
    again = sorted(n for n, state in states.items() if state in ("refused", "not fetched"))
    if again:
        print(f"wsc-tasks sweep: {', '.join(again)}: refused or not fetched (their error.txt "
              "says why): the next sweep checks them again", file=sys.stderr)  # fmt: skip
    print("\n".join(leaderboard.printed(board)))
    print("\n".join(str(p) for p in paths))
    return 0 if all(s == "done" for s in states.values()) else 1
