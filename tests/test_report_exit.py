"""``wsc-tasks report`` with no figure to show: exit 2 naming why, nothing written, unless
``--allow-empty``."""

from __future__ import annotations

import logging
import time
from pathlib import Path

from wsc_tasks.cli import main as cli
from wsc_tasks.reporting.report import nothing_to_show
from wsc_tasks.reporting.sections import Figure, Section

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
