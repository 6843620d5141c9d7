"""The fixed text around the findings says the rule the findings apply.

The README's blocks about the decision rule and the findings, the report's opening paragraph, its
findings section's note and the leaderboard's are written from ``claims.wording`` and
``findings.SAYS``, which read ``decision_rule.RULE``: a changed rule changes them, and the committed
README must then be rewritten (``python tests/regenerate.py readme``) or this test fails.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
from regenerate import documents

from wsc_tasks.claims import decision_rule as claims
from wsc_tasks.claims import findings, wording
from wsc_tasks.leaderboard import board
from wsc_tasks.metrics.stats import Estimate
from wsc_tasks.report import readme_blocks as readme
from wsc_tasks.report import writing
from wsc_tasks.report.sections import decision
from wsc_tasks.report.sections import findings as section

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_blocks_are_written_from_the_rule():
    assert readme.fill(README) == README


@pytest.mark.parametrize("name", sorted(documents()))
def test_every_written_block_of_the_docs_is_what_the_code_writes(name):
    """README.md, docs/methods.md and each task family's README: ``python tests/regenerate.py
    readme`` writes their blocks."""
    text = (ROOT / name).read_text(encoding="utf-8")
    assert documents()[name](text) == text


@pytest.mark.parametrize(
    "change", [{"two_sided": False}, {"alpha": 0.01}, {"holm": False}, {"interval": False}]
)
def test_a_changed_rule_changes_the_readme_and_the_fixed_text(monkeypatch, change):
    def said() -> tuple[str, ...]:
        rule = decision.RULE.format(
            ranking="r",
            sides=wording.sides(),
            alpha=f"{claims.RULE.alpha:g}",
            how_p=wording.how_p(),
            power=wording.power_line(),
        )
        return readme.fill(README), writing.intro(100, 1), wording.claim_rule(), rule

    before = said()
    monkeypatch.setattr(claims, "RULE", dataclasses.replace(claims.RULE, **change))
    after = said()
    assert after[0] != before[0]
    assert after[2] != before[2]
    if "two_sided" in change or "alpha" in change:
        assert after[3] != before[3]
    if "two_sided" in change:
        assert after[1] != before[1]
        assert "one-sided" in wording.findings_p()


def test_the_fixed_text_says_the_rule_the_findings_apply():
    rule = claims.RULE
    assert rule.two_sided and rule.holm and rule.interval  # the words below are for this rule
    said = [writing.intro(10_000, 1234), section.HOW_TO_READ, board.HOW_TO_READ, README]
    for text in said:
        flat = " ".join(text.split())
        assert "one-sided" not in flat.replace("the task's one-sided", "")
        assert "No model is above chance" not in flat
        assert "the models above chance" not in flat  # a family defined by its verdict
    assert wording.claim_rule() in section.HOW_TO_READ
    assert wording.claim_rule() in board.HOW_TO_READ
    assert wording.which_p() in writing.intro(10_000, 1234)
    assert f"p below {findings.ALPHA:g}" in wording.claim_rule()


def test_the_findings_say_what_the_readme_says_they_say():
    """``SAYS`` follows ``sentences``: one entry per part, in its order."""
    e = Estimate  # value, low, high, stderr, p, null, n, R
    ranking = findings.Accuracy("wsc266", e(0.6, 0.55, 0.65, 0.02, 0.001, 0.5, 266, 999),
                                e(0.3, 0.2, 0.4, 0.05, 0.3, 0.25, 133, 999))  # fmt: skip
    control = e(0.5, 0.45, 0.55, 0.02, 0.9, 0.5, 133, 999)
    consistency = e(0.6, 0.5, 0.7, 0.05, None, None, 133, 999)
    delta = e(0.0, -0.1, 0.1, 0.05, 0.9, 0.0, 133, 999)
    model = findings.Model(
        "m",
        ranking=ranking,
        controls=(findings.Control("c", "without the candidates", "wsc266", control),),
        perturbations=(findings.Perturbation("p", "switched", consistency, delta),),
        contamination=(findings.Contamination("k", "wsc273", 0.5, 0.0, -0.1, 0.1, 10),),
        reid250=findings.Accuracy("reid250", ranking.a, ranking.schema),
        winogrande=findings.Accuracy("winogrande_dev", ranking.a, ranking.schema),
        questions=(findings.Question("q", "wsc266", ranking.a, ranking.schema, first=control),),
    )
    said = findings.sentences(model)
    starts = ["Schema accuracy", "Problem accuracy", "Control baselines", "No control",
              "Under the", "No evidence of contamination", "Reid250", "Winogrande",
              "Asked as questions", "No position bias shown"]  # fmt: skip
    assert len(said) == len(starts)
    assert all(s.startswith(start) for s, start in zip(said, starts, strict=True))
    assert len(findings.SAYS) == 8  # the seven parts of a model, and a chance model's
    assert re.search(r"least consistent only when", findings.SAYS[3])


def test_the_methods_page_lists_every_causal_method_from_the_registry(monkeypatch):
    """docs/methods.md's table of causal methods is written from ``causal.METHODS``: a method
    added in its own module gets its row when the docs are regenerated, and every method states
    its score (its formula's ``text``, or its own)."""
    from wsc_tasks.scoring import causal

    page = (ROOT / "docs" / "methods.md").read_text(encoding="utf-8")
    fill = documents()["docs/methods.md"]
    assert fill(page) == page  # python tests/regenerate.py readme
    for method in causal.METHODS.values():
        assert method.text or method.formula.text, method.name
        assert f"`{method.name}`" in readme.causal_methods(), method.name

    class Doubled(causal.Formula):
        text = "2 × full"

    monkeypatch.setitem(causal.METHODS, "doubled", causal.Causal("doubled", formula=Doubled("d")))
    monkeypatch.setitem(
        causal.METHODS,
        "doubled_mean",
        causal.Causal("doubled_mean", formula=Doubled("d"), mean=True),
    )
    table = readme.causal_methods()
    assert "| `doubled` | 2 × full |" in table
    assert "`smart_mean`, `doubled_mean` |" in table
    assert fill(page) != page
