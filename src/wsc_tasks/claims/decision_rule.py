"""The findings' decision rule: estimates tested against their null, one family at a time.

What each claim of the findings needs (two-sided p, Holm over its family, the interval on the
claimed side), the records the rule reads (``Model`` and its parts) and the verdicts it reads
from them. The rule in words, and why, is the docstring of ``claims.findings``, which turns
these verdicts into sentences; ``claims.calibration`` measures its error rates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from wsc_tasks.metrics import multiple_testing
from wsc_tasks.metrics.stats import Estimate

ALPHA = 0.05  # the familywise error rate of every kind of claim
ABOVE, BELOW = "above chance", "below chance"
UNCLEAR = "not distinguishable from chance"
AT = UNCLEAR  # the verdict of a test that is not significant (never "at chance")


@dataclass(frozen=True)
class Rule:
    """How a verdict is read from estimates: α, two- or one-sided p, Holm within a family, and
    whether the 95% interval must lie on the claimed side too."""

    alpha: float = ALPHA
    two_sided: bool = True
    holm: bool = True
    interval: bool = True


RULE = Rule()  # the findings' rule


# each one-sided p < 0.05 on its own, the interval not consulted: the rule the findings had before,
# kept to measure what the adjustment changes (``claims.calibration``)
UNCORRECTED = Rule(two_sided=False, holm=False, interval=False)


@dataclass(frozen=True)
class Accuracy:
    """One task's problem accuracy a and schema accuracy A, each with its p against chance."""

    task: str
    a: Estimate | None = None
    schema: Estimate | None = None  # A


@dataclass(frozen=True)
class Control:
    """A control baseline: what it changes (in words), the dataset it was made from, its a, and
    the model's a on that dataset (whether there is a score for an artifact to explain)."""

    task: str
    change: str  # "without the candidates"
    of: str
    a: Estimate
    original: Estimate | None = None  # a on ``of``


@dataclass(frozen=True)
class Perturbation:
    """A perturbation of the ranking task: its schema consistency C and ΔA (paired, p against 0)."""

    task: str
    change: str  # "with the two candidates switched"
    consistency: Estimate | None = None
    delta: Estimate | None = None  # A of the perturbed − A of the same original schemas


@dataclass(frozen=True)
class Contamination:
    """The contamination check on one published file: the sharded test's one-sided p (the task's
    ``contamination_p``) and effect, nats per token, with its 95% interval."""

    task: str
    dataset: str
    p: float
    effect: float
    low: float
    high: float
    shards: int

    @property
    def two_sided(self) -> float:
        """The t-test's two-sided p, from its one-sided p on the side of the effect."""
        if math.isnan(self.p):
            return math.nan
        return min(1.0, 2 * min(self.p, 1 - self.p))


@dataclass(frozen=True)
class Question:
    """A task asked as questions (a different formulation, generated answers read by a parser):
    a and A against chance, the share of questions unanswered (``missing`` of ``asked``), the
    share of answers naming the option shown first (f_A, against 0.5: a model that answers by
    position shows here) and the share of problems answered alike in both orders (c_o)."""

    task: str
    dataset: str | None = None
    a: Estimate | None = None
    schema: Estimate | None = None  # A
    unanswered: Estimate | None = None
    missing: int = 0
    asked: int = 0
    first: Estimate | None = None  # f_A, its null 0.5
    order: Estimate | None = None  # c_o


@dataclass(frozen=True)
class Model:
    """Everything the findings of one model need (any part may be missing)."""

    label: str
    chance_model: bool = False
    limit: float | None = None  # lm-eval's --limit
    ranking: Accuracy | None = None  # on the ranking task
    half_solved: Estimate | None = None  # A′ on the ranking task
    controls: Sequence[Control] = ()
    perturbations: Sequence[Perturbation] = ()
    reid250: Accuracy | None = None
    winogrande: Accuracy | None = None
    tasks: Sequence[Accuracy] = ()  # every task: a chance model's calibration
    contamination: Sequence[Contamination] = ()  # the contamination check, per published file
    questions: Sequence[Question] = ()  # the tasks asked as questions, the ranking dataset's first


@dataclass(frozen=True)
class Test:
    """One estimate tested against its null: its p, the p adjusted over its family (of
    ``family`` tests), and the verdict the rule reads from them and the interval."""

    estimate: Estimate
    p: float
    adjusted: float
    family: int
    verdict: str  # ABOVE, BELOW or UNCLEAR (for a change: above/below 0)


def _side(estimate: Estimate) -> int:
    null = estimate.null
    if null is None or math.isnan(estimate.value) or estimate.value == null:
        return 0
    return 1 if estimate.value > null else -1


def _p(estimate: Estimate, rule: Rule) -> float:
    """The test's own p: two-sided, or the one-sided p on the side the value lies on."""
    if rule.two_sided:
        found = estimate.p
    else:
        found = estimate.p_below if _side(estimate) < 0 else estimate.p_above
    return math.nan if found is None else found


def tests(estimates: Sequence[Estimate], rule: Rule = RULE) -> list[Test]:
    """Each estimate tested against its null, as one family: Holm-adjusted when the rule says
    so; a claim needs the adjusted p below α and (by the rule) the interval on its side."""
    ps = [_p(e, rule) for e in estimates]
    adjusted = multiple_testing.holm(ps) if rule.holm else ps
    size = sum(1 for p in ps if not math.isnan(p))
    out = []
    for e, p, q in zip(estimates, ps, adjusted, strict=True):
        side = _side(e)
        claim = side != 0 and not math.isnan(q) and q < rule.alpha
        if claim and rule.interval and e.null is not None:
            claim = e.low > e.null if side > 0 else e.high < e.null
        found = (ABOVE if side > 0 else BELOW) if claim else UNCLEAR
        out.append(Test(e, p, q, size, found))
    return out


def test(estimate: Estimate, rule: Rule = RULE) -> Test:
    """One estimate tested alone."""
    return tests([estimate], rule)[0]


def verdict(estimate: Estimate, rule: Rule = RULE) -> str:
    """``ABOVE``, ``BELOW`` or ``UNCLEAR``: one estimate tested alone."""
    return test(estimate, rule).verdict


def control_tests(model: Model, rule: Rule = RULE) -> list[tuple[Control, Test]]:
    """The model's control baselines on a, one family."""
    found = tests([c.a for c in model.controls], rule)
    return list(zip(model.controls, found, strict=True))


def perturbation_tests(model: Model, rule: Rule = RULE) -> list[tuple[Perturbation, Test]]:
    """ΔA of the model's perturbations, one family."""
    chosen = [p for p in model.perturbations if p.delta is not None]
    found = tests([p.delta for p in chosen if p.delta is not None], rule)
    return list(zip(chosen, found, strict=True))


def position_tests(model: Model, rule: Rule = RULE) -> list[tuple[Question, Test]]:
    """f_A of the model's question tasks against 0.5, one family (Holm over them)."""
    chosen = [q for q in model.questions if q.first is not None]
    found = tests([q.first for q in chosen if q.first is not None], rule)
    return list(zip(chosen, found, strict=True))


def headline_tests(models: Sequence[Model], rule: Rule = RULE) -> dict[str, Test]:
    """A on the ranking task: the models (chance models aside) one family; each chance model
    alone. Keyed by label."""
    ranked = [m for m in models if not m.chance_model and _headline(m) is not None]
    found = tests([_headline(m) for m in ranked], rule)  # type: ignore[misc]
    out = {m.label: t for m, t in zip(ranked, found, strict=True)}
    for m in models:
        e = _headline(m)
        if m.chance_model and e is not None:
            out[m.label] = test(e, rule)
    return out


def _headline(model: Model) -> Estimate | None:
    return model.ranking.schema if model.ranking is not None else None


def survives(a: Estimate, big_a: Estimate | Test | None, rule: Rule = RULE) -> bool | None:
    """Whether problem accuracy survives the schema score: None when a is not above chance (there
    is nothing to keep), else whether A is above chance too (False without A)."""
    if verdict(a, rule) != ABOVE:
        return None
    if big_a is None:
        return False
    found = big_a if isinstance(big_a, Test) else test(big_a, rule)
    return found.verdict == ABOVE


def explained_by_artifacts(model: Model, rule: Rule = RULE) -> list[str]:
    """The datasets whose score an artifact can explain: a control made from it is above chance
    (Holm over the model's controls) and the model's a on it is above chance (one test); in the
    order of the controls."""
    out = []
    for control, found in control_tests(model, rule):
        if found.verdict != ABOVE or control.original is None:
            continue
        if verdict(control.original, rule) == ABOVE:
            out.append(control.of)
    return list(dict.fromkeys(out))


def controls_above(model: Model, rule: Rule = RULE) -> list[Control]:
    """The control baselines above chance, Holm over the model's controls."""
    return [c for c, found in control_tests(model, rule) if found.verdict == ABOVE]


def contamination_adjusted(model: Model) -> list[float]:
    """Holm-adjusted two-sided p of each of the model's contamination checks, in order."""
    return multiple_testing.holm([c.two_sided for c in model.contamination])


def contaminated(model: Model, rule: Rule = RULE) -> list[tuple[Contamination, float]]:
    """The files the contamination rule flags, each with its adjusted p."""
    checks = list(model.contamination)
    adjusted = contamination_adjusted(model) if rule.holm else [c.two_sided for c in checks]
    return [
        (c, q)
        for c, q in zip(checks, adjusted, strict=True)
        if q < rule.alpha and c.effect > 0 and (c.low > 0 or not rule.interval)
    ]
