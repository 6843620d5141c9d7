"""lm-eval's output files by name and content: results files, the samples files beside them.

``wsc_tasks.runs.folders`` reads a folder of them into runs; ``wsc-tasks run`` finds the files a
run wrote by the same names.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path
from typing import Any

import orjson

from wsc_tasks.garbage_collection import paused

# lm-eval's results file: <stem>_<date>.json, the date as datetime.isoformat() with '-' for ':';
# the stem is "results" for an --output_path folder, X for --output_path X.json
RESULTS_FILE = re.compile(
    r"^(?P<stem>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.json$"
)


class RunError(ValueError):
    """An output folder that cannot be read as one model's lm-eval results."""


INCOMPLETE_FIX = "run the model again, or delete the incomplete folder"


class IncompleteSamples(RunError):
    """A samples file cut short, or with fewer (or more) documents than lm-eval's ``n-samples``
    says: its complete lines (``found``), the documents lm-eval scored (``expected``, when the
    reader knows them) and how it ends (``detail``), said with the fix."""

    def __init__(self, path: Path, found: int, expected: int | None = None, detail: str = ""):
        super().__init__(path, found, expected, detail)
        self.path, self.found, self.expected, self.detail = path, found, expected, detail

    def __str__(self) -> str:
        scored = "" if self.expected is None else f" of the {self.expected} documents lm-eval "
        scored += "scored (n-samples)" if scored else ""
        return (
            f"samples file {self.path.name} is incomplete: {self.found} complete "
            f"line{'' if self.found == 1 else 's'}{scored}"
            f"{self.detail}; left out of every table ({INCOMPLETE_FIX})"
        )


def stamp_of(path: Path) -> str:
    """The date lm-eval put in a results file's name; its samples files end with it too."""
    found = RESULTS_FILE.match(path.name)
    if found is None:
        raise RunError(f"{path}: not named as lm-eval names a results file (<stem>_<date>.json)")
    return found["stamp"]


def results_files(folder: str | Path) -> list[Path]:
    """lm-eval's results files at or below ``folder``, oldest first."""
    found = [p for p in Path(folder).rglob("*.json") if RESULTS_FILE.match(p.name)]
    return sorted(found, key=lambda p: (stamp_of(p), str(p)))


def read_results(path: Path) -> dict[str, Any]:
    """A results file's JSON; a truncated or foreign file is an error naming it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise RunError(f"{path}: not a complete lm-eval results file ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise RunError(f"{path}: not an lm-eval results file (no 'results' mapping)")
    return data


def samples_file(results: Path, task: str) -> Path | None:
    """The samples file lm-eval wrote for ``task`` beside results file ``results`` (``.jsonl``,
    or ``.jsonl.gz`` as a sweep keeps them), if there is one."""
    named = RESULTS_FILE.match(results.name)
    if named is None:  # not named as lm-eval names it: no stamp to find samples by
        return None
    plain = results.with_name(f"samples_{task}_{named['stamp']}.jsonl")
    found = [p for p in (plain, plain.with_suffix(".jsonl.gz")) if p.is_file()]
    return found[0] if found else None


LINE = "__wsc_line__"  # a row's place among the samples file's lines (blank ones not counted)


def read_samples(path: Path) -> list[dict[str, Any]]:
    """A samples file's rows by document, each with its ``LINE``; a cut or corrupt file is
    ``IncompleteSamples``. Lines are decoded by orjson (a few times faster than ``json``); a line
    it refuses, as one with the ``NaN`` or ``Infinity`` that lm-eval's ``json.dumps`` writes for a
    float that is not finite, by ``json``."""
    rows: list[dict[str, Any]] = []
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as handle, paused():  # decoded JSON holds no cycle
            for number, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        rows.append(_row(line))
                        rows[-1][LINE] = len(rows) - 1
                    except json.JSONDecodeError as error:
                        if not line.endswith(b"\n"):  # the last line, cut: a run stopped writing
                            raise IncompleteSamples(
                                path,
                                len(rows),
                                detail=f", then a cut line {number} (a run stopped while writing "
                                "it?)",
                            ) from None
                        raise RunError(f"{path}:{number}: not a JSON line ({error})") from error
    except (EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError) as error:
        raise IncompleteSamples(
            path, len(rows), detail=f", then cannot be read ({error}): truncated or corrupt"
        ) from None
    return sorted(rows, key=lambda r: r["doc_id"])


def _row(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)
