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

from wsc_tasks.cli.run import DEFAULT_TASKS
from wsc_tasks.metrics import stats
from wsc_tasks.paths import KEEP_PATHS
from wsc_tasks.reporting import leaderboard
from wsc_tasks.sweep.driver import sweep
from wsc_tasks.sweep.launchers import DEFAULT, LAUNCHERS, Launcher, LauncherError
from wsc_tasks.sweep.lock import Busy
from wsc_tasks.sweep.models import ModelsFile, read_models_file
from wsc_tasks.sweep.options import SweepOptions


def _terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM ends the sweep like Ctrl-C: its runs are stopped first."""
    raise SystemExit(128 + signum)


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(
        prog="wsc-tasks sweep",
        description="Run lm-eval on every model of MODELS_FILE (resumable) and write "
        "<out>/leaderboard.md, .csv and .html. Unknown flags go to every lm-eval run.",
    )
    found.add_argument("models_file", help="YAML or text list of models (see wsc_tasks.sweep)")
    found.add_argument("--out", default="results", help="one folder per model under it")
    found.add_argument("--tasks", default=DEFAULT_TASKS, help=f"default {DEFAULT_TASKS}")
    found.add_argument(
        "--rank-task", default=leaderboard.DEFAULT_TASK, help="task or group that ranks models"
    )
    found.add_argument("--retry-failed", action="store_true", help="run failed models again")
    found.add_argument("--no-cache", action="store_true", help="no lm-eval request cache")
    found.add_argument("--iters", type=int, default=stats.DEFAULT_ITERS, help="bootstrap R")
    found.add_argument("--seed", type=int, default=stats.DEFAULT_SEED)
    found.add_argument("--quiet", action="store_true", help="no progress bar over the models")
    found.add_argument(
        KEEP_PATHS,
        action="store_true",
        help="write local model paths as given (default: <last component>)",
    )
    found.add_argument(
        "--launcher", choices=sorted(LAUNCHERS), default=DEFAULT, help=f"default {DEFAULT}"
    )
    added: set[str] = set()
    for name, cls in sorted(LAUNCHERS.items()):
        group = found.add_argument_group(f"--launcher {name}", cls.help)
        for setting in cls.settings:
            if setting.name in added:
                continue  # a setting two launchers share (--max-parallel): one flag
            added.add(setting.name)
            common: dict[str, Any] = {"dest": setting.dest, "default": argparse.SUPPRESS}
            if setting.kind == "flag":
                group.add_argument(setting.flag, action="store_true", help=setting.help, **common)
            elif setting.kind == "lines":
                group.add_argument(setting.flag, action="append", help=setting.help, **common)
            else:
                group.add_argument(setting.flag, help=setting.help, **common)
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


def main(argv: list[str] | None = None) -> int:
    command = parser()
    args, passthrough = command.parse_known_args(argv)
    models = read_models_file(args.models_file)  # an error names the file and line: one line
    out = Path(args.out)
    options = SweepOptions(
        out=out,
        tasks=args.tasks,
        lm_eval_flags=tuple(passthrough),
        cache=not args.no_cache,
        retry_failed=args.retry_failed,
        quiet=args.quiet,
        keep_paths=args.keep_paths,
    )
    launcher = launcher_from(args, models, options)
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        states = sweep(models.specs, launcher)
    except Busy as error:
        print(f"wsc-tasks sweep: error: {error}; wait for it or use another --out", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("wsc-tasks sweep: interrupted; its runs were stopped", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
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
    names = [spec.name for spec in models.specs]
    board = leaderboard.build(names, out, args.rank_task, args.iters, args.seed)
    paths = leaderboard.save(board, out)
    for name, state in states.items():
        print(f"{state:8s} {name}")
    print("\n".join(leaderboard.printed(board)))
    print("\n".join(str(p) for p in paths))
    return 0 if all(s == "done" for s in states.values()) else 1
