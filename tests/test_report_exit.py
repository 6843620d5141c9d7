"""``wsc-tasks report`` with no figure to show: exit 2 naming why, nothing written, unless
``--allow-empty``."""

from __future__ import annotations

import logging
import shutil
import sys
import time
from pathlib import Path

import pytest

from wsc_tasks.cli import main as cli
from wsc_tasks.report.build import nothing_to_show
from wsc_tasks.report.sections import Figure, Section

RESULTS = Path(__file__).resolve().parents[1] / "results"


def _without_samples(tmp_path: Path) -> Path:
    """The committed main run's results file alone: what a run without --log_samples leaves."""
    copy = tmp_path / "smollm2"
    copy.mkdir()
    for path in (RESULTS / "smollm2-135m" / "lm_eval").glob("results_*.json"):
        (copy / path.name).write_text(path.read_text())
    return copy


def test_a_report_without_figures_exits_2_naming_why(tmp_path, capsys, caplog):
    """Said once (no warning per task before it), as soon as the folders are read."""
    out = tmp_path / "report"
    started = time.monotonic()
    with caplog.at_level(logging.WARNING):
        code = cli(["report", str(_without_samples(tmp_path)), "--quiet", "--out", str(out)])
    assert time.monotonic() - started < 10
    assert code == 2
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert err[0] == (
        "wsc-tasks report: error: none of the 47 tasks read has a samples file (run with "
        f"--log_samples); nothing written to {out} (--allow-empty writes it anyway)"
    )
    assert not out.exists()


@pytest.fixture(scope="module")
def cut_run(tmp_path_factory, data_dir) -> Path:
    """A run of the chance model on 10 documents, with its samples (its summary removed, so the
    samples file is read again)."""
    out = tmp_path_factory.mktemp("cut")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", list(sys.argv))
        argv = ["run", "--model", "wsc-chance", "--model_args", "seed=1", "--tasks", "wsc266"]
        assert cli([*argv, "--limit", "10", "--log_samples", "--output_path", str(out)]) == 0
    for path in (out / "wsc-chance").glob("wsc_summary_*"):
        path.unlink()
    return out / "wsc-chance"


@pytest.mark.parametrize(
    "keep,ending",
    [(6, ""), (6.5, ", then a cut line 7 (a run stopped while writing it?)")],
    ids=["at a line's end", "mid-line"],
)
def test_a_report_of_a_cut_samples_file_names_it_and_the_fix(
    keep, ending, cut_run, tmp_path, capsys
):
    """Before: "none of the 0 tasks read has a samples file (run with --log_samples)", of a run
    made with --log_samples whose samples file was cut short."""
    folder = tmp_path / "wsc-chance"
    shutil.copytree(cut_run, folder)
    [samples] = folder.glob("samples_wsc266_*.jsonl")
    lines = samples.read_text().splitlines(keepends=True)
    whole = int(keep)
    samples.write_text("".join(lines[:whole]) + lines[whole][: 50 if keep != whole else 0])
    out = tmp_path / "report"
    assert cli(["report", str(folder), "--quiet", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        f"wsc-tasks report: error: {folder}: samples file {samples.name} is incomplete: 6 "
        f"complete lines of the 10 documents lm-eval scored (n-samples){ending}; left out of "
        f"every table (run the model again, or delete the incomplete folder); nothing written "
        f"to {out}"
    )
    assert not out.exists()


def test_allow_empty_writes_it_anyway(tmp_path, capsys):
    out = tmp_path / "report"
    argv = ["report", str(_without_samples(tmp_path)), "--quiet", "--iters", "20", "--out"]
    assert cli([*argv, str(out), "--allow-empty"]) == 0
    assert (out / "report.md").is_file() and (out / "report.html").is_file()
    assert "Skipped" in (out / "report.md").read_text()


def test_nothing_to_show_names_the_skipped_sections():
    skipped = [Section("Overview", skipped="needs samples"), Section("Models", skipped="needs two")]
    assert nothing_to_show(skipped) == (
        "no section of the report has a figure (2 skipped: needs samples; needs two)"
    )
    many = [Section(str(i), skipped=f"needs {i}") for i in range(5)] + [Section("Glossary")]
    assert nothing_to_show(many) == (
        "no section of the report has a figure (5 skipped: needs 0; needs 1; needs 2; …)"
    )
    figure = Figure("f", [], "t", "c")
    assert nothing_to_show([Section("Overview", figures=[figure])]) is None
