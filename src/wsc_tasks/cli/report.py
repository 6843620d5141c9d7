"""``wsc-tasks report [LABEL=]DIR…``: the report (``report.build``) of lm-eval output folders,
with a line of progress per folder read on stderr and the paths written on stdout."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from wsc_tasks.metrics import registry, stats
from wsc_tasks.paths import KEEP_PATHS
from wsc_tasks.report.build import build, nothing_to_show, write
from wsc_tasks.runs.folders import Run, RunError, parse_folder_argument
from wsc_tasks.runs.foreign import sources


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="wsc-tasks report",
        description="Thesis-style tables (Markdown, CSV, LaTeX), figures (PNG, SVG) and a "
        "Markdown report (and the same as one HTML page) from lm-eval output folders run with "
        "--log_samples; also lm-eval's own winogrande and wsc273 samples and the Open LLM "
        "Leaderboard's winogrande details files (a file, a folder, or hub:<owner>/<name>), "
        "scored at the schema level.",
    )
    parser.add_argument(
        "folders",
        nargs="+",
        metavar="[LABEL=]DIR",
        help="one folder per model; its label defaults to the folder's name (a sweep's "
        "<name>/lm_eval: <name>); or a samples file, a details file or folder, or a Hub dataset "
        "repository of details, hub:<owner>/<name>[@<revision>] (label: <org>__<model>)",
    )
    parser.add_argument(
        "--out", default="report", help="folder for report.md, tables/, figures/ (default report)"
    )
    parser.add_argument(
        "--iters", type=int, default=stats.DEFAULT_ITERS, help="bootstrap R (default %(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=stats.DEFAULT_SEED, help="bootstrap seed (default %(default)s)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument(
        "--readme",
        type=Path,
        help="a Markdown file whose findings block (between the lines "
        "'<!-- the findings of report/report.md … -->' and '<!-- end of the findings -->') is "
        "rewritten with the report's findings",
    )
    parser.add_argument(
        KEEP_PATHS, action="store_true", help="local model paths as given (default: <last part>)"
    )
    parser.add_argument(
        "--allow-empty",
        action="store_true",
        help="write a report with no figure (default: nothing written, exit 2 naming why)",
    )
    args = parser.parse_args(argv)
    runs, folders = [], []
    for number, text in enumerate(args.folders, 1):
        label, folder = parse_folder_argument(text)
        folders.append(folder)
        say(f"loading {number}/{len(args.folders)}: {folder} (results and samples)", args.quiet)
        started = time.monotonic()
        runs.append(sources.load(folder, label, keep_paths=args.keep_paths))  # one line if bad
        _check_scored(runs[-1], folder)
        found, took = runs[-1], time.monotonic() - started
        summary = f"{len(found.tasks)} task(s) of {found.model} in {took:.0f} s"
        say(f"  {found.label}: {summary}", args.quiet)
    labels = [r.label for r in runs]
    if len(set(labels)) != len(labels):
        raise RunError(f"two folders have the same label ({labels}); name them with LABEL=DIR")
    if not args.allow_empty and not any(t.samples for run in runs for t in run.tasks.values()):
        cut = [(folder, why) for run, folder in zip(runs, folders, strict=True)
               for why in run.incomplete.values()]  # fmt: skip
        if cut:  # set aside, not missing: said with its fix, as the warning above says it
            more = f" (and {len(cut) - 1} more)" if len(cut) > 1 else ""
            return _nothing(args.out, f"{cut[0][0]}: {cut[0][1]}{more}", anyway=False)
        count = sum(len(run.tasks) for run in runs)
        return _nothing(
            args.out, f"none of the {count} tasks read has a samples file (run with --log_samples)"
        )
    say("building the sections, then their bootstraps, figures and the HTML page", args.quiet)
    built = build(runs, args.iters, args.seed, args.quiet)
    empty = nothing_to_show(built)
    if empty and not args.allow_empty:
        return _nothing(args.out, empty)
    path = write(runs, Path(args.out), args.iters, args.seed, quiet=args.quiet, built=built)
    print(path)
    print(path.with_name("report.html"))
    if args.readme is not None:
        from wsc_tasks.report.sections.findings import splice

        readme = args.readme.read_text(encoding="utf-8")
        spliced = splice(readme, path.read_text(encoding="utf-8"), str(args.readme))
        args.readme.write_text(spliced, encoding="utf-8")
        print(args.readme)
    return 0


def _nothing(out: str, why: str, anyway: bool = True) -> int:
    also = " (--allow-empty writes it anyway)" if anyway else ""
    print(f"wsc-tasks report: error: {why}; nothing written to {out}{also}", file=sys.stderr)
    return 2


def _check_scored(run: Run, folder: str) -> None:
    """A ``--predict_only`` run has samples but no metric: one line naming its folder and the
    fix, rather than a report whose every section is skipped for want of samples."""
    if run.tasks and all(registry.predict_only(task.row) for task in run.tasks.values()):
        raise RunError(
            f"{folder}: a --predict_only run (every request's score, no metric): the report "
            "needs scored runs; run the model again without --predict_only, with --log_samples"
        )


def say(text: str, quiet: bool = False) -> None:
    """A line of progress on stderr (the paths written go to stdout)."""
    if not quiet:
        print(f"wsc-tasks report: {text}", file=sys.stderr, flush=True)
