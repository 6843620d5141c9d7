"""Every number and claim of the prose about the committed results, checked against them.

The README's opening table and sentences against the committed report's tables (which figure,
which scoring method, which p, which verdict by the findings' rule); ``results/README.md``'s
account of the figures against the committed report's findings (it is a copy of them); and the
committed findings and leaderboard against the rules' promises (no chance model with a control
above chance, an artifact only on a score above chance, never "at chance"); and the READMEs'
hand-written numbers (requests, the GPU batch's token positions, the leaderboard's ranked models
and lowest C, versions, the contamination check's cost) against the committed runs.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest

from wsc_tasks.claims import findings
from wsc_tasks.metrics.stats import Estimate, format_p
from wsc_tasks.report.sections import findings as section

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
    """The README's prose before its quick try, the generated blocks left out."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    text = text[: text.index("## A quick try")]
    return re.sub(r"<!-- rule:(\S+) -->.*?<!-- end rule:\1 -->", "", text, flags=re.S)


def test_the_readme_sentences_are_the_committed_verdicts(overview):
    """The README's opening writes no figure by hand (its table is the report's, written by
    ``tests/regenerate.py``); what its sentences say of the embedded model is what the committed
    findings say of it, no stronger."""
    text = " ".join(opening().split())
    assert not re.findall(r"\d\.\d{3}", text)
    said = "Its problem accuracy is above chance while its schema accuracy is not distinguishable"
    assert f"{said} from chance" in text
    assert findings.verdict(estimate(overview, "smollm2-135m", "wsc266", "a")) == findings.ABOVE
    assert findings.verdict(estimate(overview, "smollm2-135m", "wsc266", "A")) == findings.UNCLEAR
    control = estimate(overview, "smollm2-135m", "wsc266_associative_nocands", "a")
    assert findings.verdict(control) == findings.ABOVE
    assert "it still answers the associative schemas right" in text
    report = section.block((RESULTS / "report" / "report.md").read_text(encoding="utf-8"))
    own = re.search(r"\*\*smollm2-135m\*\*.*?\n\n(.*?)\n\n", report, re.S)
    assert own is not None
    assert "but the schema score A is not distinguishable from chance" in own[1]
    assert "an artifact can explain part of its score on `wsc266`" in own[1]


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


# -- the hand-written numbers of the READMEs, against the committed runs ---------------------------
SMOLLM2 = ("smollm2-135m", "smollm2-135m-partial", "smollm2-135m-smart2")
WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def prose(path: Path) -> str:
    """A Markdown file's text with its lines joined (a sentence may break anywhere)."""
    return " ".join(path.read_text(encoding="utf-8").split())


def count(text: str) -> int:
    return int(text.replace(",", ""))


@pytest.fixture(scope="module")
def requests() -> tuple[int, set[tuple[str, str]]]:
    """The main job's log-likelihood requests as its samples files log them: how many, and the
    distinct (context, continuation) pairs the model was sent."""
    import gzip

    import orjson

    total, distinct = 0, set()
    for path in sorted((RESULTS / SMOLLM2[0] / "lm_eval").glob("samples_*.jsonl.gz")):
        with gzip.open(path, "rb") as handle:
            for line in handle:
                for argument in orjson.loads(line)["arguments"].values():
                    total += 1
                    distinct.add((argument["arg_0"], argument["arg_1"]))
    return total, distinct


def test_the_request_counts_are_the_committed_runs(requests):
    """Before, results/README.md said 43,904 distinct requests where every log says 43,745. The
    main job computes every distinct request; the other two SmolLM2 setups find all of them in
    the sweep's request cache, as results/README.md says."""
    total, distinct = requests
    n = len(distinct)
    for name in SMOLLM2:
        log = (RESULTS / name / "log.txt").read_text(encoding="utf-8")
        sent = re.findall(r"wsc_tasks: (\d+) loglikelihood requests, (\d+) distinct sent", log)
        assert sent == [(str(total), str(n))], name
        hits = 0 if name == SMOLLM2[0] else n
        assert f"request cache answered {hits} of {n} distinct requests" in log, name
    results = prose(RESULTS / "README.md")
    said = re.findall(r"sends ([\d,]+) log-likelihood requests \(([\d,]+) distinct", results)
    assert [(count(a), count(b)) for a, b in said] == [(total, n)]
    answered = "`lm-eval's request cache answered {} of {} distinct requests`"
    assert answered.format(n, n) in results
    assert answered.format(0, n) + " in its `log.txt`" in results
    performance = prose(ROOT / "docs" / "performance.md")
    said = re.findall(r"([\d,]+) requests, ([\d,]+) of them distinct", performance)
    assert [(count(a), count(b)) for a, b in said] == [(total, n)]


def test_the_leaderboard_and_runs_as_results_readme_counts_them(overview):
    """Before, results/README.md said the leaderboard ranks "the five runs": it ranks 3, the
    chance models apart."""
    import yaml

    text = prose(RESULTS / "README.md")
    listed = re.search(r"\[`models.yaml`\]\(models.yaml\) lists the (\w+) runs", text)
    assert listed is not None
    assert WORDS[listed[1]] == len(yaml.safe_load((RESULTS / "models.yaml").read_text()))
    said = re.search(
        r"rank the (\w+) models \(the (\w+) chance models are listed apart, not ranked; the \w+ "
        r"models' ranks with their 95% confidence sets, all \[(\d+), (\d+)\]: on (\d+) schemas "
        r"their A differ by at most ([\d.]+);",
        text,
    )
    assert said is not None
    board = pd.read_csv(RESULTS / "leaderboard.csv", keep_default_na=False)
    ranked = board[board["rank (point estimate)"] != ""]
    assert len(ranked) == WORDS[said[1]]
    assert sorted(board[board["rank (point estimate)"] == ""].model) == sorted(CHANCE_MODELS)
    assert WORDS[said[2]] == len(CHANCE_MODELS)
    for kind in ("simultaneous", "marginal"):
        sets = ranked[[f"rank, 95% {kind} low", f"rank, 95% {kind} high"]]
        assert {tuple(map(int, row)) for row in sets.to_numpy()} == {(int(said[3]), int(said[4]))}
    assert {int(estimate(overview, m, "wsc266", "A").n) for m in ranked.model} == {int(said[5])}
    assert f"{ranked.A.max() - ranked.A.min():.3f}" == said[6]


def test_the_versions_and_refreshed_figures_are_the_committed_runs():
    """results/README.md's versions (each run's done.json), the refreshed winogrande_dev figure
    (smart before, partial now) and the peer run's acc on the same dev problems."""
    import json

    from wsc_tasks.runs import folders as runs

    text = prose(RESULTS / "README.md")
    said = re.search(
        r"Python ([\d.]+), torch ([\d.]+) CPU, lm-eval ([\d.]+), transformers ([\d.]+)", text
    )
    assert said is not None
    for name in (*SMOLLM2, *CHANCE_MODELS):
        versions = json.loads((RESULTS / name / "done.json").read_text())["versions"]
        ran = [versions[k] for k in ("python", "torch", "lm_eval", "transformers")]
        assert ran == [said[1], f"{said[2]}+cpu", said[3], said[4]], name
    [results] = runs.results_files(RESULTS / SMOLLM2[0] / "lm_eval")
    data = runs.read_results(results)
    task = "winogrande_dev"
    samples = runs.samples_file(results, task)
    found = runs.read_task(task, dict(data["results"][task]), samples)
    changed = re.search(r"the main job: ([\d.]+), smart, to ([\d.]+), partial\)", text)
    assert changed is not None
    assert f"{found.row['acc_smart,none']:.3f}" == changed[1]
    assert f"{found.row['acc,none']:.3f}" == changed[2]
    assert found.row["acc,none"] == found.row["acc_partial,none"]
    [peer] = (RESULTS / "peer").glob("results_*.json")
    peer_data = json.loads(peer.read_text())["results"]
    said = re.search(r"Both report `acc` ([\d.]+) on the ([\d,]+) dev problems", text)
    assert said is not None
    for name in ("winogrande", "winogrande_dev"):
        assert f"{peer_data[name]['acc,none']:.4f}" == said[1], name
    assert peer_data["winogrande"]["sample_len"] == count(said[2])
    assert peer_data["winogrande_dev"]["n_problems,none"] == count(said[2])
    assert f"the {2 * count(said[2]):,} log-likelihoods behind them" in text


def test_the_leaderboards_lowest_c_is_the_one_the_findings_name():
    """Before, the leaderboard's `lowest C` was the minimum over every consistency task (0.575,
    `winogrande_switched`) where the findings name the lowest over the ranking task's
    perturbations (0.586), with no word of the difference; and its rank sets were presented as
    Mogstad et al.'s without the Student's t step that departs from them."""
    from wsc_tasks.data import catalog

    board = pd.read_csv(RESULTS / "leaderboard.csv", keep_default_na=False)
    report = section.block((RESULTS / "report" / "report.md").read_text(encoding="utf-8"))
    family = [f"C {name}" for name in catalog.datasets(catalog.PERTURBATION, of=catalog.RANKING)]
    for model in SMOLLM2:
        row = board[board.model == model].iloc[0]
        lowest = min(row[column] for column in family if column in row)
        assert row["lowest C"] == lowest, model
        own = re.search(rf"\*\*{model}\*\*.*?\n\n(.*?)\n\n", report, re.S)
        assert own is not None
        named = re.search(
            r"(?:point estimate\)|least consistent) `[^`]+`, [^(]*\(C = ([\d.]+)", own[1]
        )
        assert named is not None and named[1] == f"{lowest:.3f}", model
    page = prose(RESULTS / "leaderboard.md")
    assert (
        "`lowest C`: the lowest schema consistency under the perturbations of the ranking task"
        in page
    )
    assert "each pair's studentised difference t is first read on Student's t scale" in page
