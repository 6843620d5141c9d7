"""``wsc-tasks report`` on real lm-eval outputs of the chance model: content and byte-identity."""

from __future__ import annotations

import csv
import json
import logging
import sys
from pathlib import Path

import pytest
import regenerate

from wsc_tasks.cli import main as cli
from wsc_tasks.cli import report
from wsc_tasks.runs import folders as runs

pytestmark = pytest.mark.slow

TASKS = "wsc266,wsc266_switched,wsc266_switched_consistency,wsc266_associativity"


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_gpt2_dir, data_dir, monkeypatch_module) -> list[Path]:
    out = []
    for seed in (1, 2):
        folder = tmp_path_factory.mktemp(f"chance{seed}")
        argv = ["run", "--model", "wsc-chance", "--tasks", TASKS, "--log_samples"]
        argv += ["--model_args", f"seed={seed},tokenizer={tiny_gpt2_dir}"]
        argv += ["--output_path", str(folder)]
        monkeypatch_module.setattr(sys, "argv", list(sys.argv))
        cli(argv)
        out.append(folder)
    return out


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*.*"))}


def test_report_regenerates_byte_for_byte(folders, tmp_path):
    argv = [f"one={folders[0]}", f"two={folders[1]}", "--iters", "500"]
    assert report.main([*argv, "--out", str(tmp_path / "a")]) == 0
    assert report.main([*argv, "--out", str(tmp_path / "b")]) == 0
    first, second = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert first == second
    names = set(first)
    for stem in ("findings", "runs", "overview", "methods_wsc266", "method_differences_wsc266",
                 "perturbations", "consistency_problems", "consistency_schemas",
                 "associativity_subsets", "associativity_effect", "associativity_adjusted",
                 "models", "glossary"):  # fmt: skip
        assert {f"tables/{stem}.{kind}" for kind in ("md", "csv", "tex")} <= names, stem
    for stem in ("overview", "methods_wsc266", "perturbations", "consistency", "models"):
        assert {f"figures/{stem}.png", f"figures/{stem}.svg"} <= names
    text = first["report.md"].decode()
    assert "Skipped: needs a reid250* task." in text
    assert (
        "![Accuracy on perturbations of WSC266 (95% intervals)](figures/perturbations.png)" in text
    )


def test_report_values_are_lm_evals_and_intervals_contain_them(folders, tmp_path):
    run = runs.load_run(folders[0], "one")
    assert set(run.tasks) == set(TASKS.split(","))
    wsc = run.tasks["wsc266"]
    assert {"acc", "schema_acc", "acc_partial", "acc_smart"} <= set(wsc.forms)
    assert wsc.methods()[0] == "smart"  # the headline comes first
    report.main([str(folders[0]), "--iters", "500", "--out", str(tmp_path)])
    with (tmp_path / "tables" / "overview.csv").open() as handle:
        rows = {r["task"]: r for r in csv.DictReader(handle)}
    row = rows["wsc266"]
    assert float(row["a"]) == pytest.approx(wsc.reported("acc"), abs=1e-6)
    assert float(row["a low"]) <= float(row["a"]) <= float(row["a high"])
    assert float(row["A low"]) <= 0.25 <= float(row["A high"])  # a chance model
    with (tmp_path / "tables" / "method_differences_wsc266.csv").open() as handle:
        diffs = {r["headline − method"]: r for r in csv.DictReader(handle)}
    same = diffs["smart − smart_mean"]  # same choices on wsc266 for any model: p = 1
    assert float(same["Δa"]) == 0 and float(same["Δa p"]) == 1
    pert = (tmp_path / "tables" / "perturbations.md").read_text()
    consistency = run.tasks["wsc266_switched_consistency"]
    assert f"{consistency.reported('acc_diff'):+.3f}" in pert  # from the paired documents


def test_a_task_without_samples_is_reported_without_intervals(folders, tmp_path):
    copy = tmp_path / "copy"
    for path in folders[0].rglob("results_*.json"):
        target = copy / path.relative_to(folders[0])
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(path.read_text())
    run = runs.load_run(copy)
    assert run.tasks["wsc266"].values == {} and run.tasks["wsc266"].reported("acc") is not None


def test_mismatching_samples_get_no_interval(folders, tmp_path):
    copy = tmp_path / "copy"
    for path in _run_files(folders[0]):
        target = copy / path.relative_to(folders[0])
        target.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text()
        if path.name.startswith("results_"):
            data = json.loads(text)
            data["results"]["wsc266"]["acc,none"] = 0.123
            text = json.dumps(data)
        target.write_text(text)
    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())  # type: ignore[method-assign]
    runs.log.addHandler(handler)
    try:
        run = runs.load_run(copy)
    finally:
        runs.log.removeHandler(handler)
    assert "acc" not in run.tasks["wsc266"].forms
    assert "schema_acc" in run.tasks["wsc266"].forms
    assert any("lm-eval reported 0.123" in m for m in messages)
    [note] = [n for n in run.notes() if "0.123" in n]  # and in the report, not only the log
    assert note.startswith("copy, wsc266: acc: the samples give 0.") and note.endswith(
        ", lm-eval reported 0.123; no interval for it"
    )


def test_folders_of_two_models_are_refused(folders, tmp_path):
    for i, folder in enumerate(folders):
        for path in folder.rglob("results_*.json"):
            target = tmp_path / "mixed" / f"m{i}" / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(path.read_text())
    with pytest.raises(runs.RunError, match="different models"):
        runs.load_run(tmp_path / "mixed")


RESULTS = Path(__file__).resolve().parents[1] / "results"


def test_committed_report_regenerates_byte_for_byte(tmp_path):
    """The committed tables and report.md, from the committed lm-eval outputs (results/README.md).

    Figures are left out of the comparison: their pixels depend on the installed font renderer.
    """
    assert cli(regenerate.report_argv(RESULTS, tmp_path)) == 0  # as `python tests/regenerate.py`
    committed = RESULTS / "report"
    made = {k: v for k, v in _files(tmp_path).items() if not k.startswith("figures/")}
    expected = {k: v for k, v in _files(committed).items() if not k.startswith("figures/")}
    assert sorted(made) == sorted(expected)
    for name, content in expected.items():
        assert made[name] == content, name


def _run_files(folder: Path) -> list[Path]:
    """lm-eval's files of a run, not the summaries a report or leaderboard wrote beside them."""
    written = ("wsc_summary_", "wsc_leaderboard_")
    return [p for p in folder.rglob("*.*") if not p.name.startswith(written)]


def _copy(folder: Path, target: Path, edit=None) -> Path:
    for path in _run_files(folder):
        out = target / path.relative_to(folder)
        out.parent.mkdir(parents=True, exist_ok=True)
        text = path.read_text()
        out.write_text(edit(path, text) if edit else text)
    return target


def test_incomplete_samples_and_limit_are_noted(folders, tmp_path):
    """A samples file cut at a line boundary (4 of 133 documents) is left out with a note, not
    reported from 4 documents; a run with --limit says so."""

    def edit(path: Path, text: str) -> str:
        if path.name.startswith("samples_wsc266_2"):
            return "".join(text.splitlines(keepends=True)[:4])
        if path.name.startswith("results_"):
            data = json.loads(text)
            data["config"]["limit"] = 133.0
            return json.dumps(data)
        return text

    copy = _copy(folders[0], tmp_path / "copy", edit)
    run = runs.load_run(copy, "cut")
    assert "wsc266" not in run.tasks and "wsc266_switched" in run.tasks
    assert run.incomplete["wsc266"] == (
        f"samples file {next(copy.rglob('samples_wsc266_2*')).name} is incomplete: 4 complete "
        "lines of the 133 documents lm-eval scored (n-samples); left out of every table (run the "
        "model again, or delete the incomplete folder)"
    )
    assert report.main([str(copy), "--iters", "50", "--out", str(tmp_path / "r")]) == 0
    for name in ("report.md", "report.html"):
        text = (tmp_path / "r" / name).read_text()
        assert "copy was run with --limit 133" in text, name
        assert "copy, wsc266: samples file samples_wsc266_" in text, name
    assert "- **Note:** copy was run with --limit 133" in (tmp_path / "r" / "report.md").read_text()


def test_results_of_a_json_output_path_are_found(folders, tmp_path):
    """``--output_path X.json`` makes lm-eval write ``X_<date>.json``; before, ``report`` and
    ``summary`` looked for ``results_*.json`` only and found nothing."""
    from wsc_tasks.report.results_summary import newest_results

    copy = _copy(folders[0], tmp_path / "copy")
    [results] = copy.rglob("results_*.json")
    named = results.with_name("mine" + results.name.removeprefix("results"))
    results.rename(named)
    run = runs.load_run(copy, "mine")
    assert set(run.tasks) == set(TASKS.split(",")) and run.tasks["wsc266"].docs  # and samples
    assert newest_results(copy) == named
    (named.parent / "notes_2024-01-01T00-00-00.json").write_text('{"results": 1}')
    with pytest.raises(runs.RunError, match=r"notes_2024-01-01T00-00-00.json: not an lm-eval"):
        runs.load_run(copy)


def test_a_truncated_gzip_samples_file_is_named_and_set_aside(folders, tmp_path):
    """Before: "Compressed file ended before the end-of-stream marker was reached", no file."""
    import gzip

    copy = _copy(folders[0], tmp_path / "copy")
    [samples] = copy.rglob("samples_wsc266_2*.jsonl")
    packed = samples.with_suffix(".jsonl.gz")
    packed.write_bytes(gzip.compress(samples.read_bytes())[:500])
    samples.unlink()
    run = runs.load_run(copy, "cut")
    assert "wsc266" not in run.tasks and "wsc266_switched" in run.tasks
    assert run.incomplete["wsc266"].startswith(f"samples file {packed.name} is incomplete: ")
    assert run.incomplete["wsc266"].endswith(
        " complete lines of the 133 documents lm-eval scored (n-samples), then cannot be read "
        "(Compressed file ended before the end-of-stream marker was reached): truncated or "
        "corrupt; left out of every table (run the model again, or delete the incomplete folder)"
    )


def test_reports_name_a_local_model_by_its_folder_unless_keep_paths(folders, tmp_path):
    """Results written by plain lm-eval name the model's absolute path; report.md and
    report.html did too."""

    def edit(path: Path, text: str) -> str:
        if not path.name.startswith("results_"):
            return text
        data = json.loads(text)
        data["config"]["model_args"] = "seed=1,tokenizer=/home/someone/models/tok"
        return json.dumps(data)

    copy = _copy(folders[0], tmp_path / "copy", edit)
    for out, extra in (("hidden", []), ("kept", ["--keep-paths"])):
        argv = [str(copy), "--iters", "20", "--quiet", "--out", str(tmp_path / out), *extra]
        assert report.main(argv) == 0
    for name, shown in (
        ("report.md", "tokenizer=&lt;tok>"),
        ("report.html", "tokenizer=&lt;tok&gt;"),
    ):
        hidden = (tmp_path / "hidden" / name).read_text()
        assert "/home/someone" not in hidden and shown in hidden, name
        assert "/home/someone/models/tok" in (tmp_path / "kept" / name).read_text(), name


def test_a_group_without_an_aggregate_is_not_read_as_a_task_without_samples():
    """``wsc_group`` (2.0) prints no mean of its tasks: lm-eval keeps a row for it in "results"
    but not in "groups"; before, it was read as a task whose samples file was missing, and every
    report and leaderboard of a wsc_group run carried a note saying a run had stopped."""
    run = runs.load_run(RESULTS / "smollm2-135m" / "lm_eval", "smollm2-135m")
    data = runs.read_results(runs.results_files(RESULTS / "smollm2-135m" / "lm_eval")[-1])
    assert "wsc_group" in data["results"] and "wsc_group" not in data["groups"]
    assert "wsc_group" not in run.tasks and len(run.tasks) == 47
    assert run.notes() == []


def test_a_samples_file_cut_mid_line_is_set_aside_with_a_note(folders, tmp_path):
    """What a run killed while writing leaves: the last line cut. Before, the report stopped with
    'not a JSON line' and wrote nothing."""

    def edit(path: Path, text: str) -> str:
        if path.name.startswith("samples_wsc266_switched_2"):
            return text[: len(text) // 2]  # mid-line
        return text

    copy = _copy(folders[0], tmp_path / "copy", edit)
    run = runs.load_run(copy, "cut")
    assert "wsc266_switched" not in run.tasks and "wsc266" in run.tasks
    why = run.incomplete["wsc266_switched"]
    assert "of the 70 documents lm-eval scored (n-samples), then a cut line " in why
    assert report.main([str(copy), "--iters", "50", "--out", str(tmp_path / "r")]) == 0
    for name in ("report.md", "report.html"):
        assert (
            "copy, wsc266_switched: samples file samples_wsc266_switched_"
            in (tmp_path / "r" / name).read_text()
        ), name


def test_a_perturbation_none_of_whose_originals_was_evaluated_says_why_it_has_no_row(
    folders, tmp_path
):
    """--limit: the first documents of wsc266_switched need not be made from the first ones of
    wsc266; before, the task dropped out of the perturbation table with a warning only."""
    from wsc_tasks.data.pairing import pair_schemas
    from wsc_tasks.report.estimates import Estimates
    from wsc_tasks.report.sections import Context, perturbations

    run = runs.load_run(folders[0], "limited")
    del run.tasks["wsc266_switched_consistency"]  # the pairs come from matching the two tasks
    for name, (start, stop, total) in {
        "wsc266": (-3, None, 133),
        "wsc266_switched": (0, 3, 70),
    }.items():
        task = run.tasks[name]  # as if run with --limit: some documents of each
        task.docs = task.docs[start:stop]
        task.values = {k: v[start:stop] for k, v in task.values.items()}
        task.scored = (3, total)
    original, perturbed = run.tasks["wsc266"], run.tasks["wsc266_switched"]
    assert pair_schemas(original.schemas(), perturbed.schemas(), True, some_originals=True) == []
    section = perturbations.build(Context([run], Estimates(50, 0)))
    assert not any(row[1] == "switched" for t in section.tables for row in t.rows)
    assert section.notes == [
        "limited: none of the wsc266_switched schemas evaluated was made from the wsc266 schemas "
        "evaluated (a run of the first documents of each, --limit), so it has no row in the "
        "perturbation table"
    ]


def test_a_figure_with_one_model_a_row_keeps_its_rows_short(tmp_path):
    """A row holds as many markers as models are drawn on it: one model a row (the findings'
    figure) keeps one marker's height whatever the number of models; models side by side on a
    row take a step each."""
    import re

    from wsc_tasks.metrics.stats import Estimate
    from wsc_tasks.report import figures

    point = Estimate(0.5, 0.4, 0.6, 0.05, None, None, 10, 100)

    def spacing(bars: list[figures.Bar], name: str) -> float:
        (svg,) = [p for p in figures.forest(bars, name, tmp_path / name) if p.suffix == ".svg"]
        ys = {}
        for y, label in re.findall(r'y="([\d.]+)"[^>]*>(row \d+)</text>', svg.read_text()):
            ys.setdefault(label, float(y))
        return (ys["row 1"] - ys["row 0"]) / 72  # inches

    models = [f"m{i}" for i in range(16)]
    alone = [figures.Bar("A", f"row {i}", m, point) for i, m in enumerate(models)]
    shared = [figures.Bar("A", f"row {i}", m, point) for i in range(2) for m in models]
    assert spacing(alone, "alone") == pytest.approx(0.12 + 0.13)
    assert spacing(shared, "shared") == pytest.approx(0.12 + figures.SPREAD * 16)
