"""The Open LLM Leaderboard's archived details of ``winogrande``: one Parquet file per run.

Where they are: the ``open-llm-leaderboard-old/details_<org>__<model>`` dataset repositories on
the Hub, each run's files under a folder named by its time, ``<time>/details_harness|winogrande|5_
<time>.parquet`` (the dataset cards' ``configs``: ``harness_winogrande_5``, one split per run and
``latest``), 1,267 rows, one per problem of the Winogrande dev set, in the leaderboard's own order
(not the dev file's). Their columns are those of lighteval's ``DetailsLogger.Detail``, the logger
that wrote them (``example``, ``instruction``, ``full_prompt``, ``num_effective_few_shots``,
``num_asked_few_shots``, ``predictions``, ``input_tokens``, ``cont_tokens``, ``truncated``,
``padded``, ``gold``, ``pred_logits``, ``choices``, ``gold_index``, ``metrics``): for a harness
task ``example`` is the document's ``sentence`` (blank included), ``full_prompt`` the few-shot
context, ``predictions`` each option's log-likelihood (lm-eval's ``winogrande`` at the
leaderboard's harness commit, option1 then option2; a list of floats, in some files its text),
``metrics`` a struct with the row's ``acc`` (in older files an ``acc`` column of its own), and
``choices``, ``gold`` and ``gold_index`` empty. So a row has no answer and no id: the problem is
found by its sentence in the pinned dev file, which gives the answer, and the row's ``acc`` must
be what its log-likelihoods give against it (``pinned.match``). Where lighteval could not write a
column's values as they were, it wrote every column as its text (``"[-1.5, -2.25]"``,
``"{'acc': 1.0}"``, ``"5"``): such a file is read from that text. A row whose log-likelihoods
include a NaN has no verdict (``pinned.UNDEFINED``). A file is a details file by its columns; its
name (``details_<suite>|winogrande|<shots>_<time>.parquet``, as the repositories hold them) gives
the run's time and num_fewshot, and a copy saved under another name (``load_dataset(...)
.to_parquet(...)``) is read too, its num_fewshot from its ``num_effective_few_shots`` column.

``write`` writes the same layout (the tests' fixture, written from a local lm-eval run, and the
benchmark's copies); ``read`` reads only the columns it needs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from wsc_tasks.runs.foreign.origin import DETAILS, Origin
from wsc_tasks.runs.foreign.pinned import (
    VERDICT,
    WINOGRANDE,
    ForeignError,
    Scored,
    match,
    picked,
    pinned,
    tasks,
)
from wsc_tasks.runs.task_run import TaskRun

# lighteval's ``Detail`` fields, the columns of a details file, in its order
COLUMNS = (
    "example", "instruction", "full_prompt", "num_effective_few_shots", "num_asked_few_shots",
    "predictions", "input_tokens", "cont_tokens", "truncated", "padded", "gold", "pred_logits",
    "choices", "gold_index", "metrics",
)  # fmt: skip
NAME = re.compile(
    r"^details_(?P<suite>[^|/]+)\|(?P<task>[^|/]+)\|(?P<shots>\d+)_(?P<date>.+)\.parquet$"
)
NUMBER = re.compile(r"-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|-?inf|nan")
ACC_IN_TEXT = re.compile(r"""['"]acc['"]\s*:\s*(-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan)""")
TASKS = (WINOGRANDE,)  # the details read (the leaderboard ran no wsc273)


@dataclass(frozen=True)
class DetailsFile:
    """A details file's name, read: its suite, task, num_fewshot and the run's time."""

    path: Path
    suite: str
    task: str
    shots: int
    date: str

    @classmethod
    def of(cls, path: Path) -> DetailsFile | None:
        found = NAME.match(path.name)
        if found is None:
            return None
        return cls(path, found["suite"], found["task"], int(found["shots"]), found["date"])

    @classmethod
    def unnamed(cls, path: Path) -> DetailsFile | None:
        """A Parquet file not named as a details file whose columns are a details file's (a copy
        saved under another name): winogrande's if its rows are (``read`` checks them), its
        time unknown (the file's modification time orders it)."""
        if path.suffix != ".parquet" or NAME.match(path.name) or not _has_details_columns(path):
            return None
        stamp = datetime.fromtimestamp(path.stat().st_mtime).strftime("%Y-%m-%dT%H-%M-%S")
        return cls(path, "", WINOGRANDE, -1, stamp)


def _has_details_columns(path: Path) -> bool:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = set(pq.read_schema(path).names)
    except (OSError, pa.ArrowException):
        return False
    return {"example", "predictions"} <= names and bool({"metrics", VERDICT} & names)


def details_files(folder: Path) -> list[DetailsFile]:
    """The winogrande details files at or below ``folder``, oldest run first: those named as the
    repositories name them, else copies saved under another name (``DetailsFile.unnamed``)."""
    found = [DetailsFile.of(p) for p in folder.rglob("details_*.parquet")]
    chosen = [f for f in found if f is not None and f.task in TASKS]
    if not chosen:
        chosen = [f for p in folder.rglob("*.parquet") if (f := DetailsFile.unnamed(p))]
    # the time is written with ':' or '-' between its parts, as the runs wrote it
    return sorted(chosen, key=lambda f: (f.date.replace(":", "-"), str(f.path)))


def _acc_of_text(value: Any) -> Any:
    """The ``acc`` of a ``metrics`` cell written as text (``"{'acc': 1.0}"``), or the value."""
    if not isinstance(value, str):
        return value
    found = ACC_IN_TEXT.search(value)
    return float(found[1]) if found else None


def _number(value: Any) -> Any:
    """A number written as text (``"1.0"``), or the value."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return value


def _predictions(value: Any) -> tuple[float, ...]:
    if isinstance(value, str):
        return tuple(float(x) for x in NUMBER.findall(value))
    if isinstance(value, list | tuple):
        return tuple(float(x[0] if isinstance(x, list | tuple) else x) for x in value)
    raise ValueError(f"predictions {value!r}")


def scored(path: Path) -> list[Scored]:
    """Each row as ``pinned.Scored``: the sentence, the two log-likelihoods and the row's acc
    (an error names the file by its path: it is said to the user of this machine)."""
    shown = str(path)
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        handle = pq.ParquetFile(path)
        names = set(handle.schema_arrow.names)
        verdict = "metrics" if "metrics" in names else VERDICT
        missing = {"example", "predictions", verdict} - names
        if missing:
            raise ForeignError(
                f"{shown}: not an Open LLM Leaderboard details file: no column "
                f"{', '.join(sorted(missing))} (it has {', '.join(sorted(names))}); nothing read"
            )
        table = handle.read(columns=["example", "predictions", verdict])
    except ForeignError:
        raise
    except (OSError, pa.ArrowException) as error:
        raise ForeignError(f"{shown}: cannot be read as Parquet ({error}): truncated or "
                           "corrupt; nothing read") from None  # fmt: skip
    accs: list[Any]
    if verdict == "metrics":
        column = table.column("metrics").combine_chunks()
        if pa.types.is_struct(column.type) and column.type.get_field_index(VERDICT) >= 0:
            accs = column.field(VERDICT).to_pylist()
        elif pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            accs = [_acc_of_text(v) for v in column.to_pylist()]  # every column as its text
        else:
            raise ForeignError(f"{shown}: its metrics column has no acc ({column.type}); nothing "
                               "read")  # fmt: skip
    else:
        accs = [_number(v) for v in table.column(VERDICT).to_pylist()]
    column = table.column("predictions")
    listed = pa.types.is_list(column.type) and pa.types.is_floating(column.type.value_type)
    predictions: list[Any] = column.to_pylist()
    out = []
    examples = table.column("example").to_pylist()
    for row, (example, found, acc) in enumerate(zip(examples, predictions, accs, strict=True)):
        try:
            lls = tuple(found) if listed else _predictions(found)
        except (TypeError, ValueError) as error:
            raise ForeignError(f"{shown}, row {row}: no log-likelihoods ({error}); nothing "
                               "read") from None  # fmt: skip
        if len(lls) != 2 or not isinstance(example, str) or None in lls:
            raise ForeignError(f"{shown}, row {row}: {len(lls)} log-likelihoods for a problem of "
                               "two options; nothing read")  # fmt: skip
        said = float(acc) if isinstance(acc, int | float) else None
        out.append(Scored((example,), lls, f"row {row}", None, None, said, picked(lls)))
    return out


def read(path: Path, shown: str | None = None) -> dict[str, TaskRun]:
    """The tasks of one details file (``shown``: how the outputs name it; no path of this
    machine). A file named as another task's details is refused; one not named as details is
    read as winogrande's, and its rows must be winogrande's (``pinned.match``)."""
    named = DetailsFile.of(path) or DetailsFile.unnamed(path)
    shown = shown or path.name
    if named is None or named.task not in TASKS:
        raise ForeignError(f"{path}: not a winogrande details file (its name is another task's, "
                           "or it lacks the example, predictions and metrics columns)")  # fmt: skip
    found = pinned(named.task)
    right = match(found, scored(path), str(path))
    shots = named.shots if named.shots >= 0 else _recorded_shots(path)
    return tasks(found, right, Origin(DETAILS, named.task, shown, shots), path)


def _recorded_shots(path: Path) -> int | None:
    """num_fewshot as a details file's ``num_effective_few_shots`` column records it (one value
    for every row), None where it records none."""
    import pyarrow.parquet as pq

    if "num_effective_few_shots" not in pq.read_schema(path).names:
        return None
    column = pq.read_table(path, columns=["num_effective_few_shots"]).column(0)
    values = {_number(v) for v in column.to_pylist()}
    if len(values) != 1 or not isinstance(shots := values.pop(), int | float):
        return None
    return int(shots)


def write(path: Path, rows: Sequence[dict[str, Any]]) -> None:
    """A details file of ``rows`` in the leaderboard's layout: each row's ``example``,
    ``full_prompt``, ``predictions`` and ``acc`` (and, if given, ``input_tokens`` and
    ``cont_tokens``); the columns a harness task leaves empty, empty."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    empty: list[list[None]] = [[] for _ in rows]
    tokens = pa.list_(pa.list_(pa.int64()))
    shots = [int(r.get("num_fewshot", 0)) for r in rows]
    table = pa.table(
        {
            "example": pa.array([r["example"] for r in rows], pa.string()),
            "instruction": pa.array(["" for _ in rows], pa.string()),
            "full_prompt": pa.array([r["full_prompt"] for r in rows], pa.string()),
            "num_effective_few_shots": pa.array(shots, pa.int64()),
            "num_asked_few_shots": pa.array(shots, pa.int64()),
            "predictions": pa.array([list(r["predictions"]) for r in rows], pa.list_(pa.float64())),
            "input_tokens": pa.array([r.get("input_tokens", []) for r in rows], tokens),
            "cont_tokens": pa.array([r.get("cont_tokens", []) for r in rows], tokens),
            "truncated": pa.array([[0, 0] for _ in rows], pa.list_(pa.int64())),
            "padded": pa.array([[0, 0] for _ in rows], pa.list_(pa.int64())),
            "gold": pa.array(empty, pa.list_(pa.null())),
            "pred_logits": pa.array(empty, pa.list_(pa.null())),
            "choices": pa.array(empty, pa.list_(pa.null())),
            "gold_index": pa.array(empty, pa.list_(pa.null())),
            "metrics": pa.array(
                [{VERDICT: float(r[VERDICT])} for r in rows], pa.struct([(VERDICT, pa.float64())])
            ),  # fmt: skip
        }
    )
    assert tuple(table.column_names) == COLUMNS
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
