"""``wsc-tasks leaderboard OUT``: the leaderboard of the models a sweep left in ``OUT``."""

from __future__ import annotations

import argparse
from pathlib import Path

from wsc_tasks.metrics import stats
from wsc_tasks.paths import SWEEP_DONE
from wsc_tasks.reporting.leaderboard import DEFAULT_TASK, build, model_folders, printed, save
from wsc_tasks.reporting.runs import RunError


def main(argv: list[str] | None = None) -> int:
    """``wsc-tasks leaderboard OUT``: the leaderboard of the models a sweep left in ``OUT``,
    running none (a sweep submitted with ``--no-wait`` is collected by ``wsc-tasks sweep``)."""
    parser = argparse.ArgumentParser(
        prog="wsc-tasks leaderboard",
        description="Write OUT/leaderboard.md, .csv and .html from the model folders a sweep "
        "left in OUT (those with done.json are ranked, those with error.txt listed), running "
        "no model.",
    )
    parser.add_argument("out", help="the sweep's --out folder")
    parser.add_argument("--rank-task", default=DEFAULT_TASK, help=f"default {DEFAULT_TASK}")
    parser.add_argument(
        "--iters", type=int, default=stats.DEFAULT_ITERS, help="bootstrap R (default %(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=stats.DEFAULT_SEED, help="bootstrap seed (default %(default)s)"
    )
    parser.add_argument(
        "--above",
        action="append",
        default=[],
        metavar="MODEL",
        help="a ranked model (its folder name): the findings say which models rank above it in A "
        "with 95%% confidence (repeatable)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    names = model_folders(out)
    if not names:
        raise RunError(f"{out}: no model folder of a wsc-tasks sweep (<name>/{SWEEP_DONE}) in it")
    board = build(names, out, args.rank_task, args.iters, args.seed, above=args.above)
    paths = save(board, out)
    print("\n".join([*printed(board), *map(str, paths)]))
    return 0
