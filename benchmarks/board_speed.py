"""``python -m benchmarks board``: the leaderboard and the report over N copies of finished runs.

It builds a sweep folder of N model folders, each a copy of one of the finished runs under
``--runs`` (the committed ``results/``: ``<name>/done.json`` and ``<name>/lm_eval/``) under a name
of its own (samples hard-linked where the file system allows it, so 1,000 copies cost no disk),
then times, each in a fresh process (``wsc-tasks leaderboard`` / ``wsc-tasks report``, as a user
runs them) with its wall time and its peak resident memory (the child's ``ru_maxrss``):

- ``leaderboard, first``: the first leaderboard of the folder (each run read from its samples);
- ``leaderboard, again``: the same command once more (what each run's summary saves);
- ``leaderboard, +1 model (its run's summary)``: one more copy added with the summary its run
  wrote at its end (``wsc-tasks run``), its leaderboard figures computed, the board written again;
- ``leaderboard, +1 model (its sweep's figures)``: one more, also with the figures a sweep's
  runner writes at the end of the model's run;
- ``report``: ``wsc-tasks report`` over the first N folders, for N up to ``--report-max``.

Sizes above ``--max-seconds`` of the previous size's first leaderboard extrapolated are skipped.

With ``--details N,…`` it times instead the leaderboard of N archived Open LLM Leaderboard
details files (``details_board``): copies of one details file (``--details-file``, e.g. the
tests' fixture or a file of the archive; else one written from the pinned dev file with random
log-likelihoods), each with other scores (the two log-likelihoods of a share of its rows
exchanged, its ``acc`` recomputed), each in a model folder of its own as ``wsc-tasks leaderboard
--details-repo`` leaves it; the first leaderboard (each file read once, its figures kept beside
it), again, and with one more file added.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from wsc_tasks.paths import SWEEP_DONE, SWEEP_RESULTS

DEFAULT_SIZES = (10, 100, 1000)
DETAILS_DATE = "2023-09-18T03-05-58.053951"  # the copies' run time, as the archive names runs
DETAILS_NAME = f"details_harness|winogrande|5_{DETAILS_DATE}.parquet"


def finished_runs(runs: Path) -> list[Path]:
    """The model folders of a sweep that finished with samples (``done.json`` and ``lm_eval/``)."""
    found = sorted(
        p.parent for p in runs.glob(f"*/{SWEEP_DONE}") if (p.parent / SWEEP_RESULTS).is_dir()
    )
    if not found:
        raise SystemExit(f"benchmarks board: no finished run (<name>/{SWEEP_DONE}) in {runs}")
    return found


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def copy_run(source: Path, target: Path, carry: bool = False, summary: bool = False) -> None:
    """One model folder copied under another name: the run's own files, with ``summary`` or
    ``carry`` its summary, with ``carry`` its leaderboard figures too (as if the copy had been
    read once; their keys hold)."""
    target.mkdir(parents=True)
    for name in (SWEEP_DONE, "spec.json", "log.txt"):
        if (source / name).is_file():
            shutil.copy2(source / name, target / name)
    if carry:
        for path in source.glob("wsc_leaderboard_*.json"):
            shutil.copy2(path, target / path.name)
    lm_eval = target / SWEEP_RESULTS
    lm_eval.mkdir()
    kept = ("results_", "samples_", *(("wsc_summary_",) if carry or summary else ()))
    for path in sorted((source / SWEEP_RESULTS).iterdir()):
        if path.name.startswith(kept):
            _link_or_copy(str(path), str(lm_eval / path.name))


def grow(
    folder: Path, runs: list[Path], count: int, carry: bool = False, summary: bool = False
) -> list[str]:
    """``folder`` holding ``count`` model folders (copies of ``runs`` in turn); their names."""
    names = []
    for index in range(count):
        source = runs[index % len(runs)]
        name = f"{source.name}-{index:04d}"
        if not (folder / name).exists():
            copy_run(source, folder / name, carry, summary)
        names.append(name)
    return names


def timed(argv: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system: what a busy shared machine does not inflate as
    much as the wall) and peak resident MB of ``python -m wsc_tasks.cli ARGV`` in a fresh
    process."""
    started = time.monotonic()
    child = subprocess.Popen(
        [sys.executable, "-m", "wsc_tasks.cli", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert child.stderr is not None
    errors = child.stderr.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        tail = errors.decode(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"benchmarks board: {' '.join(argv[:2])} failed: {' '.join(tail)}")
    # ru_maxrss is in kilobytes on Linux, in bytes on macOS
    peak = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return wall, usage.ru_utime + usage.ru_stime, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks board",
        description="Time the leaderboard and the report over N copies of finished runs.",
    )
    parser.add_argument("--runs", default="results", help="a sweep folder (default results)")
    parser.add_argument(
        "--sizes",
        default=",".join(map(str, DEFAULT_SIZES)),
        help="comma-separated numbers of models (default 10,100,1000)",
    )
    parser.add_argument(
        "--report-max", type=int, default=30, help="report only up to this many models"
    )
    parser.add_argument("--report-sizes", default="", help="sizes of the report (default: --sizes)")
    parser.add_argument("--iters", type=int, default=None, help="bootstrap R (default the CLI's)")
    parser.add_argument("--work", default=None, help="folder for the copies (default a temp one)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=3600.0,
        help="skip a size whose first leaderboard, extrapolated, would take longer",
    )
    parser.add_argument(
        "--with-summaries",
        action="store_true",
        help="copies carry their source's summary and figures (run the leaderboard on --runs "
        "first): times the board once every run was read, without reading N runs first",
    )
    parser.add_argument(
        "--page",
        default=None,
        help="instead: measure this leaderboard.html in headless Chromium (load, a sort, a "
        "filter by --query, where the ranking starts)",
    )
    parser.add_argument("--query", default="0", help="the filter's text for --page")
    parser.add_argument(
        "--details",
        default="",
        metavar="SIZES",
        help="instead: the leaderboard of N archived winogrande details files (comma-separated "
        "sizes, e.g. 1000), copies of --details-file with other scores",
    )
    parser.add_argument(
        "--details-file",
        type=Path,
        default=None,
        help="the details file copied (default: one written from the pinned dev file)",
    )
    args = parser.parse_args(argv)
    if args.page:
        print(page_measures(Path(args.page), args.query))
        return 0
    if args.details:
        work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="wsc-bench-board-"))
        sizes = sorted(int(s) for s in args.details.split(",") if s.strip())
        extra = ["--iters", str(args.iters)] if args.iters else []
        print(table(details_board(work, sizes, args.details_file, extra)))
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
        return 0
    sizes = sorted(int(s) for s in args.sizes.split(",") if s.strip())
    report_sizes = sorted(int(s) for s in (args.report_sizes or args.sizes).split(",") if s.strip())
    runs = finished_runs(Path(args.runs))
    extra = ["--iters", str(args.iters)] if args.iters else []
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="wsc-bench-board-"))
    rows: list[tuple[int, str, float, float, float]] = []
    print(f"{len(runs)} finished runs under {args.runs}, copies under {work}", file=sys.stderr)
    per_model: float | None = None
    largest = max(runs, key=lambda run: sum(p.stat().st_size for p in run.rglob("samples_*")))
    for size in sizes:
        if per_model is not None and per_model * size > args.max_seconds:
            print(f"N = {size}: skipped (about {per_model * size:.0f} s)", file=sys.stderr)
            continue
        board = work / f"board-{size}"
        board.mkdir(parents=True, exist_ok=True)
        grow(board, runs, size, args.with_summaries)
        for what in ("leaderboard, first", "leaderboard, again"):
            wall, cpu, peak = timed(["leaderboard", str(board), *extra])
            rows.append((size, what, wall, cpu, peak))
            print(
                f"N = {size}: {what}: {wall:.1f} s, {cpu:.1f} s CPU, {peak:.0f} MB", file=sys.stderr
            )
            per_model = per_model or wall / size
        for added, what in enumerate(("its run's summary", "its sweep's figures"), 1):
            # the new model: a copy of the largest run, its folder as its run left it
            new = board / f"{largest.name}-new{added}"
            if not new.exists():
                copy_run(largest, new, carry=added == 2, summary=True)
            wall, cpu, peak = timed(["leaderboard", str(board), *extra])
            rows.append((size, f"leaderboard, +1 model ({what})", wall, cpu, peak))
            print(f"N = {size}: +1 model ({what}): {wall:.1f} s, {cpu:.1f} s CPU", file=sys.stderr)
    for size in report_sizes:
        if size > args.report_max:
            continue
        board = work / f"report-{size}"
        board.mkdir(parents=True, exist_ok=True)
        names = grow(board, runs, size, args.with_summaries)
        folders = [f"{name}={board / name / SWEEP_RESULTS}" for name in names]
        out = work / f"report-{size}-out"
        wall, cpu, peak = timed(["report", *folders, "--quiet", "--out", str(out), *extra])
        rows.append((size, "report", wall, cpu, peak))
        print(f"N = {size}: report: {wall:.1f} s, {cpu:.1f} s CPU, {peak:.0f} MB", file=sys.stderr)
    print(table(rows))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def details_template(source: Path | None) -> Any:
    """The details file copied, as a table: ``source``'s, or one written from the pinned dev
    file (every problem, in an order of its own, random log-likelihoods, its acc against the
    answer, a few-shot prompt of about the archive's size)."""
    import numpy as np
    import pyarrow.parquet as pq

    from wsc_tasks.runs.foreign import leaderboard_details
    from wsc_tasks.runs.foreign.pinned import VERDICT, WINOGRANDE, pinned

    if source is not None:
        return pq.read_table(source)
    found = pinned(WINOGRANDE)
    problems = [p for schema in found.schemas for p in schema.problems]
    rng = np.random.default_rng(0)
    order = rng.permutation(len(problems))
    lls = rng.normal(-30.0, 5.0, size=(len(problems), 2))
    shots = [problems[i].fill(problems[i].label) for i in range(5)]
    rows = []
    for at in order:
        problem, pair = problems[at], lls[at]
        sentence = "_".join(problem.segments)
        rows.append({
            "example": sentence,
            "full_prompt": "\n\n".join([*shots, problem.segments[0] + problem.options[0][0]]),
            "predictions": [float(pair[0]), float(pair[1])],
            VERDICT: float(int(pair[1] > pair[0]) == problem.label),
            "num_fewshot": 5,
        })  # fmt: skip
    path = Path(tempfile.mkdtemp(prefix="wsc-details-")) / DETAILS_NAME
    leaderboard_details.write(path, rows)
    table = pq.read_table(path)
    shutil.rmtree(path.parent, ignore_errors=True)
    return table


def rescored(template: Any, seed: int) -> Any:
    """``template`` with other scores: each row's two log-likelihoods exchanged with a chance of
    its own for this copy (10% to 60%), its ``acc`` recomputed against the pinned answer."""
    import numpy as np
    import pyarrow as pa

    from wsc_tasks.runs.foreign.pinned import VERDICT, WINOGRANDE, pinned

    found = pinned(WINOGRANDE)
    labels = np.array([found.places[found.key(e)].label for e in template["example"].to_pylist()])
    lls = np.array(template["predictions"].to_pylist(), dtype=float)
    rng = np.random.default_rng(seed)
    swap = rng.random(len(lls)) < rng.uniform(0.1, 0.6)
    lls[swap] = lls[swap][:, ::-1]
    acc = (np.argmax(lls, axis=1) == labels).astype(float)
    predictions = pa.array(lls.tolist(), pa.list_(pa.float64()))
    metrics = pa.array([{VERDICT: a} for a in acc.tolist()], pa.struct([(VERDICT, pa.float64())]))
    table = template.set_column(template.column_names.index("predictions"), "predictions",
                                predictions)  # fmt: skip
    return table.set_column(table.column_names.index("metrics"), "metrics", metrics)


def write_copy(template: Any, folder: Path, seed: int) -> None:
    import pyarrow.parquet as pq

    path = folder / DETAILS_DATE / DETAILS_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(rescored(template, seed), path)


def details_board(
    work: Path, sizes: list[int], source: Path | None, extra: list[str]
) -> list[tuple[int, str, float, float, float]]:
    """The leaderboard of N details files, first, again and with one more, each timed in a
    fresh process (``timed``)."""
    template = details_template(source)
    rows: list[tuple[int, str, float, float, float]] = []
    for size in sizes:
        board = work / f"details-{size}"
        for index in range(size):
            folder = board / f"org__model-{index:04d}"
            if not folder.exists():
                write_copy(template, folder, index)
        print(f"N = {size}: {size} details files under {board}", file=sys.stderr)
        for what in ("leaderboard, first", "leaderboard, again"):
            wall, cpu, peak = timed(["leaderboard", str(board), *extra])
            rows.append((size, f"details: {what}", wall, cpu, peak))
            print(f"N = {size}: {what}: {wall:.1f} s, {cpu:.1f} s CPU, {peak:.0f} MB",
                  file=sys.stderr)  # fmt: skip
        write_copy(template, board / "org__model-new", size + 1)
        wall, cpu, peak = timed(["leaderboard", str(board), *extra])
        rows.append((size, "details: leaderboard, +1 details file", wall, cpu, peak))
        print(f"N = {size}: +1 details file: {wall:.1f} s, {cpu:.1f} s CPU", file=sys.stderr)
    return rows


PAGE_JS = """
const table = document.getElementById('table-leaderboard');
const nav = performance.getEntriesByType('navigation')[0];
const head = table.tHead.rows[0].cells[2];
let start = performance.now(); head.click(); const sort = performance.now() - start;
const box = document.querySelector('input.filter[data-table="table-leaderboard"]');
box.value = arguments[0];
start = performance.now(); box.dispatchEvent(new Event('input'));
const filter = performance.now() - start;
const shown = Array.from(table.tBodies[0].rows).filter(r => !r.hidden).length;
return [nav.loadEventEnd, sort, filter, shown, table.tBodies[0].rows.length,
        table.getBoundingClientRect().top + window.scrollY, window.innerHeight];
"""


def page_measures(page: Path, query: str) -> str:
    """The leaderboard page in headless Chromium (selenium, ``/usr/bin/chromium``), 1,400 ×
    1,000 px: its load, a sort of A, a filter of the models by ``query`` and where the ranking
    starts (on the first screen when above the window's height)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    profile = tempfile.mkdtemp(prefix="wsc-chromium-")
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
    try:
        driver.set_window_size(1400, 1000)
        driver.get(page.resolve().as_uri())
        load, sort, found, shown, rows, top, height = driver.execute_script(PAGE_JS, query)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    return (
        f"{page}: {rows} ranked rows; load {load / 1000:.2f} s; sort {sort:.0f} ms; filter "
        f"{found:.0f} ms ({shown} rows shown); the ranking at y = {top:.0f} px (window {height} px)"
    )


def table(rows: list[tuple[int, str, float, float, float]]) -> str:
    """The measures as a Markdown table, with the seconds per model."""
    lines = [
        "| N | command | wall (s) | CPU (s) | per model (s) | peak memory (MB) |",
        "|---|---|---|---|---|---|",
    ]
    for size, what, wall, cpu, peak in rows:
        lines.append(
            f"| {size} | {what} | {wall:.1f} | {cpu:.1f} | {wall / size:.3f} | {peak:.0f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
