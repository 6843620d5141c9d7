"""Each run's summary (``runs.decoded_samples``) and each model's leaderboard figures
(``leaderboard.cache``): the same tables as the samples, a changed samples file re-read, a
truncated or missing file rebuilt, never trusted."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path

import pytest

from wsc_tasks import leaderboard
from wsc_tasks.leaderboard import cache
from wsc_tasks.runs import decoded_samples as summaries
from wsc_tasks.runs import folders as runs
from wsc_tasks.runs.folders import load_run

RESULTS = Path(__file__).resolve().parents[1] / "results"
# the ranking task, a control baseline and a perturbation with its consistency task: every table
TASKS = ("wsc266", "wsc266_associative_nocands", "wsc266_switched", "wsc266_switched_consistency")
MODELS = ("smollm2-135m", "chance")
ITERS = 200


def _copy_model(source: Path, target: Path) -> None:
    """A sweep's model folder with the samples of ``TASKS`` only (the others: no samples)."""
    (target / "lm_eval").mkdir(parents=True)
    for name in ("done.json", "spec.json"):
        shutil.copy2(source / name, target / name)
    for path in (source / "lm_eval").iterdir():
        task = path.name.removeprefix("samples_").rsplit("_2026", 1)[0]
        if path.name.startswith("results_") or task in TASKS:
            shutil.copy2(path, target / "lm_eval" / path.name)


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    for name in MODELS:
        _copy_model(RESULTS / name, tmp_path / name)
    return tmp_path


def _summary(folder: Path) -> Path:
    (found,) = (folder / "lm_eval").glob(f"{summaries.PREFIX}*.parquet")
    return found


def _samples(folder: Path, task: str) -> Path:
    (found,) = (folder / "lm_eval").glob(f"samples_{task}_2026*.jsonl.gz")
    return found


def _board(sweep: Path) -> dict[str, bytes]:
    leaderboard.write(list(MODELS), sweep, "wsc266", ITERS, 0)
    return {kind: (sweep / f"leaderboard.{kind}").read_bytes() for kind in ("md", "csv", "html")}


def _uncached(sweep: Path) -> None:
    for path in sweep.glob("*/wsc_leaderboard_*.json"):
        path.unlink()


def test_summary_gives_what_the_samples_give(sweep: Path):
    folder = sweep / "chance"
    assert not list((folder / "lm_eval").glob(f"{summaries.PREFIX}*"))
    first = load_run(folder / "lm_eval", "chance")  # from the samples, writing the summary
    path = _summary(folder)
    written = path.stat().st_mtime_ns
    again = load_run(folder / "lm_eval", "chance")  # from the summary
    assert path.stat().st_mtime_ns == written  # not rewritten: nothing read from samples
    for task in TASKS:
        assert again.tasks[task].docs == first.tasks[task].docs
        assert again.tasks[task].values == first.tasks[task].values
        assert again.tasks[task].forms == first.tasks[task].forms
    assert again.notes() == first.notes()


def test_summary_keeps_each_distinct_value_once_and_shares_it(sweep: Path):
    import pyarrow.parquet as pq

    first = {name: load_run(sweep / name / "lm_eval", name) for name in MODELS}  # writes them
    again = {name: load_run(sweep / name / "lm_eval", name) for name in MODELS}
    task = "wsc266"
    docs = [run.tasks[task].docs for run in again.values()]
    assert docs[0] == first[MODELS[0]].tasks[task].docs
    assert all(a is b for a, b in zip(docs[0], docs[1], strict=True))  # one object per text
    values = again["chance"].tasks[task].values
    total = sum(len(column) for run in again.values() for t in run.tasks.values()
                for column in t.values.values())  # fmt: skip
    rows = pq.ParquetFile(_summary(sweep / "chance")).metadata.num_rows
    assert rows < total / 4  # a document's metrics repeat a few outcomes
    assert values["acc"][0] is values["schema_acc"][0]


def test_a_first_read_gives_the_values_a_summary_read_gives(sweep: Path):
    """Read from its samples, a run's equal values are already one object (each metric is
    recomputed once per distinct value), as a read from the summary gives them."""
    first = load_run(sweep / "chance" / "lm_eval", "chance")
    values = first.tasks["wsc266"].values
    assert values["acc"][0] is values["schema_acc"][0]
    again = load_run(sweep / "chance" / "lm_eval", "chance")
    assert again.tasks["wsc266"].values == values


def test_values_orjson_cannot_write_as_they_are_are_written_by_json():
    """NaN and infinities (orjson writes them as null), integers beyond 64 bits and keys that
    are not strings (orjson refuses them) come back as ``json`` gives them; equal values, equal
    texts, whichever writer wrote them."""
    import math

    values = [float("nan"), [1.0, float("-inf")], None, 2**70, {1: "x"}, "é\n", [1e-05, 0.5]]
    texts = summaries.encode(values)
    back = summaries.decode(texts)
    assert math.isnan(back[0]) and back[1] == [1.0, float("-inf")] and back[2] is None
    assert back[3:] == [2**70, {"1": "x"}, "é\n", [1e-05, 0.5]]
    assert texts[0] == "NaN" and texts[2] == "null"
    assert summaries.encode(json.loads(json.dumps(values))) == texts


def test_a_samples_line_orjson_refuses_is_read_by_json(tmp_path: Path):
    """lm-eval writes a float that is not finite as NaN or Infinity (not JSON, refused by
    orjson): such a line is read by ``json``; a cut last line is still an incomplete file."""
    import math

    from wsc_tasks.runs.output_files import LINE, IncompleteSamples, read_samples

    path = tmp_path / "samples_t_2026-01-01T00-00-00.jsonl"
    path.write_text('{"doc_id": 1, "resps": [[NaN]], "acc": 1}\n\n{"doc_id": 0, "acc": 0}\n')
    rows = read_samples(path)
    assert [(r["doc_id"], r[LINE]) for r in rows] == [(0, 1), (1, 0)]
    assert math.isnan(rows[1]["resps"][0][0])
    path.write_text('{"doc_id": 0, "acc": 0}\n{"doc_id": 1, "acc"')
    with pytest.raises(IncompleteSamples, match="1 complete line, then a cut line 2 "):
        read_samples(path)


def test_summary_keeps_the_recomputed_figures_and_why_one_failed(sweep: Path, monkeypatch):
    folder = sweep / "chance"
    first = load_run(folder / "lm_eval", "chance")
    kept = summaries.Summary(_summary(folder))
    task = "wsc266"
    figure = kept.computed(task, "acc")
    assert figure is not None and figure[0] == "value"
    assert figure[1] == pytest.approx(first.tasks[task].reported("acc"), abs=1e-9)
    # a kept figure is used as it is, never recomputed (nor a kept failure)
    for name in list(kept.tasks[task]["computed"]):
        kept.remember(task, name, ["error", "kept failure"])
    kept.save()
    forms = runs.registry.by_name

    def unrecomputable(name, first):
        return None if forms(name, first) is None else lambda values: 1 / 0

    monkeypatch.setattr(runs.registry, "by_name", unrecomputable)
    again = load_run(folder / "lm_eval", "chance")
    assert "acc: not recomputable from the samples (kept failure); no interval" in (
        again.tasks[task].problems
    )


def test_leaderboard_from_summaries_and_caches_is_byte_identical(sweep: Path):
    from_samples = _board(sweep)  # each run read from its samples
    assert len(list(sweep.glob("*/wsc_leaderboard_wsc266_R200_s0.json"))) == 2
    assert _board(sweep) == from_samples  # the models' cached figures
    _uncached(sweep)
    assert _board(sweep) == from_samples  # the runs' summaries, figures recomputed
    # and the same bytes as with no summary at all (the reader of the samples)
    for folder in MODELS:
        _summary(sweep / folder).unlink()
    _uncached(sweep)
    assert _board(sweep) == from_samples


def _rewrite_samples(path: Path, keep: int) -> None:
    """The samples file with its first ``keep`` documents only (a changed file)."""
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        lines = handle.readlines()[:keep]
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(lines)


def test_a_changed_samples_file_is_read_again(sweep: Path):
    folder = sweep / "chance"
    board = _board(sweep)
    assert "wsc266_switched" not in load_run(folder / "lm_eval").incomplete
    samples = _samples(folder, "wsc266_switched")
    _rewrite_samples(samples, 10)
    os.utime(samples, ns=(samples.stat().st_atime_ns, samples.stat().st_mtime_ns + 10**9))
    run = load_run(folder / "lm_eval")
    assert "is incomplete: 10 complete lines of" in run.incomplete["wsc266_switched"]  # read again
    assert "wsc266_switched" not in run.tasks
    changed = _board(sweep)  # the model's figures recomputed too
    assert b"wsc266_switched" in changed["md"] and changed["md"] != board["md"]
    assert json.loads(cache.cache_path(folder, "wsc266", ITERS, 0).read_text(encoding="utf-8"))[
        "key"
    ] == cache.run_key(folder / "lm_eval", "wsc266", ITERS, 0)


@pytest.mark.parametrize("damage", ["truncated", "missing", "garbage"])
def test_a_damaged_summary_is_rebuilt_never_trusted(sweep: Path, damage: str):
    folder = sweep / "chance"
    first = load_run(folder / "lm_eval", "chance")
    path = _summary(folder)
    whole = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(whole[: len(whole) // 2])
    elif damage == "missing":
        path.unlink()
    else:
        path.write_bytes(b"PAR1" + b"\0" * 100 + b"PAR1")
    again = load_run(folder / "lm_eval", "chance")
    for task in TASKS:
        assert again.tasks[task].values == first.tasks[task].values
    rebuilt = summaries.Summary(_summary(folder))  # rewritten whole, and read back
    assert not rebuilt.changed and set(TASKS) <= set(rebuilt.tasks)
    assert rebuilt.tasks["wsc266"]["columns"][summaries.DOCS] == first.tasks["wsc266"].docs


@pytest.mark.parametrize("damage", ["truncated", "missing", "foreign"])
def test_a_damaged_model_cache_is_recomputed(sweep: Path, damage: str):
    board = _board(sweep)
    path = cache.cache_path(sweep / "chance", "wsc266", ITERS, 0)
    text = path.read_text(encoding="utf-8")
    if damage == "truncated":
        path.write_text(text[: len(text) // 2], encoding="utf-8")
    elif damage == "missing":
        path.unlink()
    else:  # the right key, a content of another format: recomputed, not shown
        data = json.loads(text)
        path.write_text(json.dumps({"key": data["key"], "run": {}}), encoding="utf-8")
    assert _board(sweep) == board
    assert json.loads(path.read_text(encoding="utf-8"))["A"] is not None


def _no_samples_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(path: Path) -> list:
        raise AssertionError(f"{path.name}: samples decoded after the run's end")

    monkeypatch.setattr("wsc_tasks.runs.folders.read_samples", refuse)
    monkeypatch.setattr("wsc_tasks.runs.output_files.read_samples", refuse)


def test_the_end_of_a_run_writes_its_summary(sweep: Path, monkeypatch: pytest.MonkeyPatch):
    """What ``wsc-tasks run`` does after lm-eval returns: the summary written, and no later
    leaderboard or report decodes the samples again."""
    folder = sweep / "chance" / "lm_eval"
    runs.write_summaries(folder)
    assert _summary(sweep / "chance").stat().st_size > 0
    _no_samples_read(monkeypatch)
    assert load_run(folder, "chance").tasks["wsc266"].docs


def test_a_sweeps_runner_leaves_the_summary_and_the_leaderboard_figures(
    sweep: Path, monkeypatch: pytest.MonkeyPatch
):
    """The runner's last step: the model's summary and its figures for the default board, so the
    sweep's leaderboard reads one small file per model; the board is the same as from the
    samples."""
    from wsc_tasks.sweep import runner

    from_samples = _board(sweep)
    _uncached(sweep)
    for name in MODELS:
        _summary(sweep / name).unlink()
        monkeypatch.setattr(runner.stats, "DEFAULT_ITERS", ITERS)
        runner._summarise(name, sweep / name)
        assert _summary(sweep / name).is_file()
        assert list((sweep / name).glob(f"wsc_leaderboard_wsc266_R{ITERS}_s0.json"))
    _no_samples_read(monkeypatch)
    assert _board(sweep) == from_samples


def test_a_failed_summary_never_fails_the_run(tmp_path: Path, caplog: pytest.LogCaptureFixture):
    runs.write_summaries(tmp_path)  # no results file: a warning, no exception
    assert "no summary written" in caplog.text


def test_the_lines_a_summary_keeps_find_the_shown_documents(sweep: Path):
    from wsc_tasks.report.examples import shown_scores
    from wsc_tasks.runs.output_files import RunError

    folder = sweep / "chance" / "lm_eval"
    load_run(folder, "chance")  # writes the summary
    task = load_run(folder, "chance").tasks["wsc266"]  # read from it
    assert task.samples is not None and task.lines is not None
    assert sorted(task.lines) == list(range(len(task.docs)))
    shown = {0, 7, len(task.docs) - 1}
    expected = shown_scores(task.samples, shown)  # every line's doc_id read
    assert shown_scores(task.samples, shown, task.lines) == expected
    assert all(expected[i] for i in shown)
    with pytest.raises(RunError, match="fewer than when it was read"):
        shown_scores(task.samples, shown, [line + 10**6 for line in task.lines])


def test_the_collector_is_paused_while_samples_are_decoded_and_restored_after(tmp_path: Path):
    import gc

    from wsc_tasks.garbage_collection import paused
    from wsc_tasks.runs.output_files import read_samples

    seen = []
    path = tmp_path / "samples_t_2026-01-01T00-00-00.jsonl"
    path.write_text('{"doc_id": 0, "acc": 0}\n')
    with paused():
        seen.append(gc.isenabled())
    assert seen == [False] and gc.isenabled()
    gc.disable()  # left off when it was off
    try:
        read_samples(path)
        assert not gc.isenabled()
    finally:
        gc.enable()
    read_samples(path)
    assert gc.isenabled()
