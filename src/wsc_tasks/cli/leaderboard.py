"""``wsc-tasks leaderboard OUT``: the leaderboard of the models a sweep left in ``OUT``, and of the
runs made elsewhere put there (lm-eval output, Open LLM Leaderboard details files)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wsc_tasks.leaderboard import (
    DEFAULT_TASK,
    FOREIGN_TASK,
    build,
    default_task,
    model_folders,
    printed,
    save,
)
from wsc_tasks.metrics import stats
from wsc_tasks.paths import SWEEP_DONE
from wsc_tasks.runs.folders import RunError
from wsc_tasks.runs.foreign import details_hub
from wsc_tasks.runs.foreign.pinned import ForeignError


def main(argv: list[str] | None = None) -> int:
    """``wsc-tasks leaderboard OUT``: the leaderboard of the models a sweep left in ``OUT``,
    running none (a sweep submitted with ``--no-wait`` is collected by ``wsc-tasks sweep``)."""
    parser = argparse.ArgumentParser(
        prog="wsc-tasks leaderboard",
        description="Write OUT/leaderboard.md, .csv and .html from the model folders a sweep "
        "left in OUT (those with done.json are ranked, those with error.txt listed) and from the "
        "folders of runs made elsewhere in OUT (lm-eval output with --log_samples, Open LLM "
        "Leaderboard winogrande details files), running no model.",
    )
    parser.add_argument("out", help="the sweep's --out folder, or a folder of model folders")
    parser.add_argument(
        "--rank-task",
        default=None,
        help=f"default {DEFAULT_TASK}; {FOREIGN_TASK} for a folder of runs made elsewhere only",
    )
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
    parser.add_argument(
        "--details-repo",
        action="append",
        default=[],
        metavar="OWNER/NAME",
        help="a Hub dataset repository of Open LLM Leaderboard details "
        "(open-llm-leaderboard-old/details_<org>__<model>[@<revision>]): its newest winogrande "
        "details file is downloaded into OUT/<org>__<model>/ first (repeatable)",
    )
    parser.add_argument(
        "--details-repos",
        type=Path,
        metavar="FILE",
        help="a text file of such repositories, one a line ('#' starts a comment)",
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    repos = list(args.details_repo)
    if args.details_repos is not None:
        repos += _listed(args.details_repos)
    unread: list[tuple[str, str]] = []  # a repository not fetched: listed, the rest ranked
    for number, repo in enumerate(repos, 1):
        try:
            found = fetch(repo, out)
        except ForeignError as error:
            name = folder_name(repo.partition("@")[0])
            unread.append((name, f"not fetched: {error}"))
            found = f"not fetched: {error}"
        print(f"wsc-tasks leaderboard: {number}/{len(repos)}: {found}", file=sys.stderr)
    names = model_folders(out)
    if not names:
        raise RunError(
            f"{out}: no model folder of a wsc-tasks sweep (<name>/{SWEEP_DONE}) and no run made "
            "elsewhere (<name>/ with lm-eval output or winogrande details files) in it"
            + (f"; {len(unread)} details repositories could not be fetched" if unread else "")
        )
    task = args.rank_task or default_task(out, names)
    board = build(names, out, task, args.iters, args.seed, above=args.above, unread=unread)
    paths = save(board, out)
    print("\n".join([*printed(board), *map(str, paths)]))
    return 0


def fetch(repo: str, out: Path) -> str:
    """A details repository's newest winogrande details file, into ``out/<org>__<model>/``
    (a model folder of its own); what was fetched, in a line."""
    name, _ = details_hub.parse(repo)
    folder = out / folder_name(name)
    found = details_hub.fetch(f"{details_hub.PREFIX}{repo}", local_dir=folder)
    return f"{found.shown} -> {folder}"


def folder_name(repo: str) -> str:
    """A details repository's model folder: ``details_<org>__<model>`` → ``<org>__<model>``."""
    name = repo.split("/")[-1]
    return name.removeprefix("details_") or repo.replace("/", "__")


def _listed(path: Path) -> list[str]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as error:
        raise RunError(f"--details-repos {path}: cannot be read ({error})") from None
    return [line.split("#", 1)[0].strip() for line in lines if line.split("#", 1)[0].strip()]
