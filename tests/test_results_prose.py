"""Every number and claim of the prose about the committed results, checked against them.

The README's opening table and sentences against the committed report's tables (which figure,
which scoring method, which p, which verdict by the findings' rule); ``results/README.md``'s
account of the figures against the committed report's findings (it is a copy of them); and the
committed findings and leaderboard against the rules' promises (no chance model with a control
above chance, an artifact only on a score above chance, never "at chance").
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from wsc_tasks.metrics.stats import Estimate, format_p
from wsc_tasks.reporting import findings
from wsc_tasks.reporting.sections import findings as section

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
CHANCE_MODELS = ("chance", "chance-seed2")


@pytest.fixture(scope="module")
def overview() -> pd.DataFrame:
    return pd.read_csv(RESULTS / "report" / "tables" / "overview.csv")


def estimate(overview: pd.DataFrame, model: str, task: str, symbol: str) -> Estimate:
    row = overview[(overview.model == model) & (overview.task == task)].iloc[0]
    return Estimate(
        row[symbol], row[f"{symbol} low"], row[f"{symbol} high"], math.nan, row[f"{symbol} p"],
        row[f"{symbol} chance"], int(row.documents), 10_000,
    )  # fmt: skip


def said(e: Estimate, symbol: str) -> str:
    """How the README writes an estimate, by the findings' rule: value, interval, verdict, p."""
    found = findings.verdict(e)
    p = format_p(e.p)
    p = p if p[0] in "<>" else f"= {p}"
    text = f"**{e.value:.3f}** [{e.low:.3f}, {e.high:.3f}], {found} (p {p})"
    if found == findings.UNCLEAR:
        text += f"; rules out {symbol} > {e.high:.3f}"
    return text


def opening() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text[: text.index("The tasks come from five papers")]


def test_the_readme_table_is_the_committed_figures(overview):
    rows = {
        line.split(" | ")[0].strip("| "): line.split(" | ")[1:]
        for line in opening().splitlines()
        if line.startswith("| ")
    }
    methods = pd.read_csv(RESULTS / "report" / "tables" / "methods_wsc266.csv")
    for model, method in (("smollm2-135m", "smart"), ("smollm2-135m-partial", "partial")):
        label = next(k for k in rows if f"(`{model}`)" in k)
        assert f"`{method}` scoring" in label
        a_cell, big_a_cell = (c.strip(" |") for c in rows[label])
        a = estimate(overview, model, "wsc266", "a")
        big_a = estimate(overview, model, "wsc266", "A")
        assert a_cell == said(a, "a")
        assert big_a_cell == said(big_a, "A")
        # the scoring method named is the one that gives that figure in the main job's run
        chosen = methods[(methods.model == "smollm2-135m") & (methods.method == method)].iloc[0]
        assert (round(chosen.a, 3), round(chosen.A, 3)) == (
            round(a.value, 3),
            round(big_a.value, 3),
        )
    label = next(k for k in rows if "`wsc-chance`" in k)
    values = [estimate(overview, m, "wsc266", s).value for s in "aA" for m in CHANCE_MODELS]
    assert [c.strip(" |") for c in rows[label]] == [
        f"{values[0]:.3f}, {values[1]:.3f}",
        f"{values[2]:.3f}, {values[3]:.3f}",
    ]


def test_the_readme_sentences_are_the_committed_figures(overview):
    text = " ".join(opening().split())
    a = estimate(overview, "smollm2-135m", "wsc266_associative_nocands", "a")
    big_a = estimate(overview, "smollm2-135m", "wsc266_associative_nocands", "A")
    assert findings.verdict(a) == findings.ABOVE
    assert (
        f"with a = {a.value:.3f} [{a.low:.3f}, {a.high:.3f}] (above chance, p {format_p(a.p)}; "
        f"both problems of a schema with A = {big_a.value:.3f}; `wsc266_associative_nocands`)"
    ) in text
    # what the opening says the control shows is what the committed findings say of the model
    assert (
        "does not survive the schema score, and a control baseline shows that an artifact can "
        "explain part of it" in text
    )
    report = section.block((RESULTS / "report" / "report.md").read_text(encoding="utf-8"))
    own = re.search(r"\*\*smollm2-135m\*\*.*?\n\n(.*?)\n\n", report, re.S)
    assert own is not None
    assert "it does not survive the schema score" in own[1]
    assert "an artifact can explain part of its score on `wsc266`" in own[1]
    partial = estimate(overview, "smollm2-135m-partial", "wsc266", "a").value
    smart = estimate(overview, "smollm2-135m", "wsc266", "a").value
    assert (
        f"({partial:.3f} with the `partial` scoring of lm-eval's `winogrande`; {smart:.3f}" in text
    )
    # no other figure in the opening
    table = [line for line in opening().splitlines() if line.startswith("| ")]
    prose = " ".join(line for line in opening().splitlines() if not line.startswith("| "))
    quoted = set(re.findall(r"\d\.\d{3}", prose))
    assert quoted <= set(re.findall(r"\d\.\d{3}", " ".join(table))) | {
        f"{a.value:.3f}",
        f"{a.low:.3f}",
        f"{a.high:.3f}",
        f"{big_a.value:.3f}",
    }


def test_the_results_readme_quotes_the_committed_findings():
    readme = (RESULTS / "README.md").read_text(encoding="utf-8")
    report = (RESULTS / "report" / "report.md").read_text(encoding="utf-8")
    assert section.splice(readme, report) == readme
    assert section.block(report) in readme


def test_the_committed_findings_keep_the_rules_promises(overview):
    report = section.block((RESULTS / "report" / "report.md").read_text(encoding="utf-8"))
    board = (RESULTS / "leaderboard.md").read_text(encoding="utf-8")
    board = board[: board.index("\n| ")]  # its findings: the overview and a sentence per model
    for text in (report, board):
        assert not re.search(r"(?<!not )(?<!never \*)\bat chance\b", text)
    # no chance model has a control baseline above chance
    frame = pd.read_csv(RESULTS / "leaderboard.csv")
    for model in CHANCE_MODELS:
        row = frame[frame.model == model].iloc[0]
        assert str(row["controls above chance"]).startswith("0 of ")
    # an artifact is said to explain part of a score only where that score is above chance
    for model in ("smollm2-135m", "smollm2-135m-partial", "smollm2-135m-smart2"):
        found = re.search(rf"\*\*{model}\*\*.*?\n\n(.*?)\n\n", report, re.S)
        assert found is not None
        named = re.findall(r"artifact can explain part of its score on ([^:]+):", found[1])
        for sentence in named:
            for task in re.findall(r"`([^`]+)`", sentence):
                assert findings.verdict(estimate(overview, model, task, "a")) == findings.ABOVE
