"""The files of a ``wsc-tasks run``: its output folder checked before the model loads, lm-eval's
files checked after it returns (lm-eval only warns when it cannot write them), and what the run
had written removed on Ctrl-C (``wsc_tasks.cli.run`` calls these).
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path

from wsc_tasks.runs.output_files import RESULTS_FILE, RunError, read_results, stamp_of


class OutputError(RuntimeError):
    """lm-eval's files could not be written, or not completely."""


def check_output(target: Path, given: tuple[int, str] | None) -> list[Path]:
    """Before any model work: ``target`` exists (made here if needed) and takes a new file.
    lm-eval finds out only after the run, logs a warning and exits 0 with nothing saved.
    Returns the folders made, for ``discard``."""
    return check_writable(target, f"--output_path {given[1]}" if given else "--output_path")


def check_writable(target: Path, flag: str, keep: bool = True) -> list[Path]:
    """``target`` exists (made here if needed) and takes a new file, else one line naming
    ``flag``, the folder, why and the fix (``wsc-tasks run``'s --output_path, ``wsc-tasks
    sweep``'s --out). Returns the folders made, deepest first (none if not ``keep``: removed
    again, for a command that makes them itself later)."""
    made = [folder for folder in (target, *target.parents) if not folder.exists()]
    try:
        target.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=target, prefix=".wsc-tasks-write-check-"):
            pass
    except OSError as error:
        _remove_empty(made)
        raise OutputError(
            f"wsc-tasks: {flag}: cannot write to {target} ({error.strerror or error}); give a "
            "folder you can write to"
        ) from None
    if not keep:
        _remove_empty(made)
        return []
    return made


def check_written(target: Path, new: list[Path], samples: bool) -> None:
    """After lm-eval returns: a complete results file and, with ``--log_samples``, a complete
    samples file for every task in it (as many JSON lines as lm-eval's ``n-samples`` times the
    task's filters: lm-eval writes a line per document and filter)."""
    if not new:
        raise OutputError(
            f"wsc-tasks: lm-eval wrote no results file to {target} (its warning above says why); "
            "nothing of this run was saved"
        )
    for path in new:
        try:
            data = read_results(path)
        except RunError as error:
            raise OutputError(f"wsc-tasks: {error}") from None
        if not samples:
            continue
        for task, config in data.get("configs", {}).items():
            file = path.with_name(f"samples_{task}_{stamp_of(path)}.jsonl")
            expected = data.get("n-samples", {}).get(task, {}).get("effective")
            filters = len(config.get("filter_list") or []) or 1
            expected = None if expected is None else expected * filters
            lines = _json_lines(file)
            if lines is None:
                raise OutputError(
                    f"wsc-tasks: lm-eval wrote no samples file {file} for task {task} (its "
                    "warning above says why)"
                )
            if expected is not None and lines != expected:
                raise OutputError(
                    f"wsc-tasks: samples file {file} is incomplete: {lines} complete lines of "
                    f"the {expected} of task {task} (a line per document and filter)"
                )


def _json_lines(path: Path) -> int | None:
    """How many lines of ``path`` are complete JSON (up to the first that is not); None if the
    file is missing."""
    try:
        handle = path.open(encoding="utf-8")
    except OSError:
        return None
    count = 0
    with handle:
        for line in handle:
            try:
                json.loads(line)
            except ValueError:
                break
            count += 1
    return count


_SAMPLES_FILE = re.compile(r"^samples_.+\.jsonl$")


def outputs(folder: Path | None) -> set[Path]:
    """lm-eval's results and samples files directly in ``folder``."""
    if folder is None or not folder.is_dir():
        return set()
    names = (RESULTS_FILE, _SAMPLES_FILE)
    return {p for p in folder.iterdir() if any(n.match(p.name) for n in names) and p.is_file()}


def discard(target: Path | None, before: set[Path], made: list[Path]) -> list[Path]:
    """What an interrupted run wrote (a results file, some samples files), removed, so that no
    half-written run is ever read; the folders made for it too, if left empty."""
    removed = sorted(outputs(target) - before)
    for path in removed:
        path.unlink(missing_ok=True)
    _remove_empty(made)
    return removed


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:  # deepest first
        try:
            folder.rmdir()
        except OSError:
            return


def ending(
    target: Path | None, new: list[Path], samples: bool, label: str, predict_only: bool = False
) -> str:
    """The run's last lines: where its files are and what to run next (the report needs the
    samples, so without them it says how to get them; it needs metrics too, which a
    ``--predict_only`` run has not)."""
    if target is None:
        return (
            "wsc-tasks: nothing saved (no --output_path). To keep this run and write its report: "
            f"add --log_samples --output_path runs/ and then run: wsc-tasks report runs/{label}"
        )
    files = ", ".join(p.name for p in new)
    if not samples:
        return (
            f"wsc-tasks: results in {target}/ ({files}); no samples (run with --log_samples for "
            "intervals, p-values and the findings of: wsc-tasks report)"
        )
    count = sum(1 for p in target.glob(f"samples_*_{stamp_of(new[-1])}.jsonl*")) if new else 0
    if predict_only:
        return (
            f"wsc-tasks: predictions in {target}/ ({files} and {count} samples files: every "
            "request's score, no metric); wsc-tasks report needs scored runs: run again without "
            "--predict_only to report on them"
        )
    return (
        f"wsc-tasks: results in {target}/ ({files} and {count} samples files). Next: "
        f"wsc-tasks report {target}"
    )
