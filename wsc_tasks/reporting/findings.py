"""The findings: per model, the few sentences a reader needs, each a rule applied to estimates.

Estimates in, sentences out. A ``Model`` holds one model's estimates (``stats.Estimate``: value,
95% interval, p against chance); ``sentences(model)`` gives its findings and ``overview(models)``
the line over all of them. Nothing here reads runs, samples or a report's internals: whoever
computed the estimates (the report's findings section, the leaderboard) builds a ``Model``, so
every output says the same thing by the same rules. A sentence is Markdown with `code` spans only.

The rules:

- **Against chance.** An accuracy is *above chance* when the one-sided bootstrap p of "above
  chance" is below 0.05, *below chance* when the one-sided p of "below chance" is below 0.05, and
  *at chance* otherwise. The p quoted is the one-sided p on the side of chance the value lies on,
  written `p(A > 0.250)` or `p(A < 0.250)`. Chance is 0.5 for problem accuracy a, and for schema
  accuracy A the mean of 2^−size over schemas (0.25 for pairs of problems).
- **Headline.** Schema accuracy A on the ranking task (`wsc266`) against chance.
- **Problem accuracy and the schema score.** Problem accuracy a *survives the schema score* when a
  and A are both above chance, and does not when a is above chance and A is not. The share of
  half-solved schemas A′ (some but not all problems right) is quoted and, where a = A + A′/2 holds
  (schemas of two problems, thesis eq. 3.80), how much of a comes from solved and how much from
  half-solved schemas.
- **Controls.** Each control baseline (the candidates removed, or only the clause around the
  pronoun kept) is above, at or below chance on a. A control above chance means the model answers
  without what a reader needs to resolve the pronoun: an artifact can explain part of its score
  on the dataset the control was made from. With no control above chance, none of the artifacts
  tested explains it.
- **Perturbations.** Of the perturbations of the ranking task, the two with the lowest schema
  consistency C (1 − C of the schemas change how many of their problems are right) and the largest
  drop in A (perturbed minus the same original schemas, paired), called lower or higher when its
  two-sided p is below 0.05 and not significant otherwise.
- **Contamination** (the sharded exchangeability test of Oren et al. 2024 on each published file
  the model was checked on, ``metrics.contamination``). The files checked form one family ("has
  the model seen any of them?"), tested with Holm's step-down correction at 0.05: a file whose
  Holm-adjusted p is below 0.05 gets *the canonical order is more likely than shuffles: p = …*
  (the one-sided p of the sharded t-test and its Holm-adjusted value, the effect in nats per token
  with its 95% interval): the model has probably seen that file in that order, and its scores on
  the file and on every task made from it may be memory. Otherwise one sentence for all: *no
  evidence of contamination* (their p-values) — which does not show the files unseen, only that
  the published order is not detectably preferred.
- **Reid250 and Winogrande.** a and A on `reid250` and on `winogrande_dev` against chance, a line
  each.
- **Chance models** (random log-likelihoods) are the calibration check, not models: A on the
  ranking task is expected at chance (outside it about one run in ten: two one-sided tests at
  0.05), and a 95% interval is expected to exclude chance on about 5% of the tasks; the findings
  count on how many it does.
- **In one sentence** (a leaderboard row, ``brief``): the headline; a, and whether it survives
  the schema score by the rule above; how many control baselines are above chance, and so
  whether an artifact can explain part of the score; where the contamination check ran, whether
  a published file is flagged by the contamination rule above.
- **Over all models.** How many models (chance models aside) are above chance on A of the ranking
  task, and which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from wsc_tasks.metrics.stats import Estimate, format_p

ALPHA = 0.05  # every test of the findings, one-sided against chance, two-sided for a change
ABOVE, AT, BELOW = "above chance", "at chance", "below chance"


@dataclass(frozen=True)
class Accuracy:
    """One task's problem accuracy a and schema accuracy A, each with its p against chance."""

    task: str
    a: Estimate | None = None
    schema: Estimate | None = None  # A


@dataclass(frozen=True)
class Control:
    """A control baseline: what it changes (in words), the dataset it was made from, its a."""

    task: str
    change: str  # "without the candidates"
    of: str
    a: Estimate


@dataclass(frozen=True)
class Perturbation:
    """A perturbation of the ranking task: its schema consistency C and ΔA (paired, p against 0)."""

    task: str
    change: str  # "with the two candidates switched"
    consistency: Estimate | None = None
    delta: Estimate | None = None  # A of the perturbed − A of the same original schemas


@dataclass(frozen=True)
class Contamination:
    """The contamination check on one published file: the sharded test's one-sided p and effect
    (published minus mean shuffled log-likelihood, nats per token) with its 95% interval."""

    task: str
    dataset: str
    p: float
    effect: float
    low: float
    high: float
    shards: int


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


# -- the pieces of a sentence ---------------------------------------------------------------------
def number(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.3f}"


def interval(estimate: Estimate) -> str:
    """``0.293 [0.218, 0.376]``."""
    return f"{number(estimate.value)} [{number(estimate.low)}, {number(estimate.high)}]"


def verdict(estimate: Estimate, alpha: float = ALPHA) -> str:
    """``ABOVE``, ``BELOW`` or ``AT`` chance (its null), by the one-sided p of each side."""
    if estimate.p_above is not None and estimate.p_above < alpha:
        return ABOVE
    if estimate.p_below is not None and estimate.p_below < alpha:
        return BELOW
    return AT


def one_sided(symbol: str, estimate: Estimate) -> str:
    """The one-sided p on the side of chance the value lies: ``p(A > 0.250) = .2``."""
    chance = estimate.null if estimate.null is not None else math.nan
    below = estimate.value < chance
    p = estimate.p_below if below else estimate.p_above
    text = format_p(p)
    relation = text if text[0] in "<>" else f"= {text}"
    return f"p({symbol} {'<' if below else '>'} {number(chance)}) {relation}"


def against_chance(symbol: str, estimate: Estimate) -> str:
    """``A = 0.293 [0.218, 0.376], at chance (0.250; p(A > 0.250) = .2)``."""
    found = verdict(estimate)
    chance = number(estimate.null) if estimate.null is not None else "–"
    return f"{symbol} = {interval(estimate)}, {found} ({chance}; {one_sided(symbol, estimate)})"


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


# -- the rules ------------------------------------------------------------------------------------
def headline(model: Model) -> str | None:
    if model.ranking is None or model.ranking.schema is None:
        return None
    return (
        f"Schema accuracy on `{model.ranking.task}` (the ranking task): "
        f"{against_chance('A', model.ranking.schema)}."
    )


def survives(a: Estimate, big_a: Estimate | None) -> bool | None:
    """Whether problem accuracy survives the schema score: None when a is not above chance (there
    is nothing to keep), else whether A is above chance too (False without A)."""
    if verdict(a) != ABOVE:
        return None
    return big_a is not None and verdict(big_a) == ABOVE


def survival(model: Model) -> str | None:
    """Does problem accuracy survive the schema score; how much of it is half-solved schemas."""
    found = model.ranking
    if found is None or found.a is None:
        return None
    a, big_a = found.a, found.schema
    text = f"Problem accuracy {against_chance('a', a)}"
    kept = survives(a, big_a)
    if kept is None:
        text += ": no problem accuracy above chance for the schema score to keep."
    elif kept:
        text += ", and it survives the schema score: A is above chance too."
    elif big_a is not None:
        text += f", but it does not survive the schema score: A is {verdict(big_a)}."
    else:
        text += "."
    half = model.half_solved
    if half is None:
        return text
    text += f" Half-solved schemas (some but not all problems right): A′ = {interval(half)}"
    if big_a is not None and math.isclose(a.value, big_a.value + half.value / 2, abs_tol=1e-9):
        text += (
            f"; of a = {number(a.value)}, {number(big_a.value)} comes from solved schemas and "
            f"{number(half.value / 2)} from half-solved ones (a = A + A′/2)"
        )
    return text + "."


def explained_by_artifacts(model: Model) -> list[str]:
    """The datasets whose score an artifact can explain: those a control above chance was made
    from, in the order of the controls."""
    return list(dict.fromkeys(c.of for c in model.controls if verdict(c.a) == ABOVE))


def controls(model: Model) -> list[str]:
    """Each control against chance, by what it changes; whether an artifact can explain the
    score of the datasets they were made from."""
    if not model.controls:
        return []
    changes = list(dict.fromkeys(c.change for c in model.controls))
    parts = []
    for change in changes:
        chosen = [c for c in model.controls if c.change == change]
        groups = []
        for found in (ABOVE, AT, BELOW):
            items = [c for c in chosen if verdict(c.a) == found]
            if items:
                cells = [f"`{c.task}` (a = {interval(c.a)}; {one_sided('a', c.a)})" for c in items]
                groups.append(f"{found} on {_join(cells)}")
        parts.append(f"{change}, {'; '.join(groups)}")
    text = "Control baselines: " + "; ".join(parts) + "."
    explained = explained_by_artifacts(model)
    if explained:
        datasets = _join([f"`{d}`" for d in explained])
        verdict_text = (
            f"So an artifact can explain part of its score on {datasets}: it answers above "
            "chance without what a reader needs to resolve the pronoun."
        )
    else:
        verdict_text = "No control is above chance: no artifact tested explains its score."
    return [text, verdict_text]


def perturbations(model: Model, shown: int = 2) -> str | None:
    """The least consistent perturbations, and the largest drop in A."""
    parts = []
    measured = [(p.consistency, p) for p in model.perturbations if p.consistency is not None]
    if measured:
        lowest = sorted(measured, key=lambda item: (item[0].value, item[1].task))[:shown]
        cells = [
            f"on `{p.task}`, {p.change} (C = {interval(c)}: {1 - c.value:.0%} of the schemas "
            "change how many of their problems are right)"
            for c, p in lowest
        ]
        parts.append(f"least consistent {_join(cells)}")
    changed = [(p.delta, p) for p in model.perturbations if p.delta is not None]
    if changed:
        delta, worst = min(changed, key=lambda item: (item[0].value, item[1].task))
        if delta.p is not None and delta.p < ALPHA:
            significance = f"{'lower' if delta.value < 0 else 'higher'}, two-sided p"
        else:
            significance = "not significant, two-sided p"
        change = f"ΔA = {delta.value:+.3f} [{delta.low:+.3f}, {delta.high:+.3f}]"
        shown_p = f"{significance} {_p_relation(delta.p)}"
        where = f"on `{worst.task}`, {worst.change} ({change}, {shown_p})"
        if delta.value < 0:
            parts.append(f"largest drop in A {where}")
        else:
            parts.append(f"A drops under no perturbation: its smallest change is {where}")
    return f"Under perturbation: {'; '.join(parts)}." if parts else None


def _p_relation(p: float | None) -> str:
    text = format_p(p)
    return text if text[0] in "<>" else f"= {text}"


def one_line(name: str, found: Accuracy | None) -> str | None:
    """``Reid250 (`reid250`): a = …; A = ….``"""
    if found is None:
        return None
    parts = [
        against_chance(symbol, estimate)
        for symbol, estimate in (("a", found.a), ("A", found.schema))
        if estimate is not None
    ]
    return f"{name} (`{found.task}`): {'; '.join(parts)}." if parts else None


def calibration(model: Model) -> list[str]:
    """A chance model: at chance on the ranking task? How often its intervals exclude chance."""
    out = ["Chance model (random log-likelihoods): the calibration check, not a model to rank."]
    if model.ranking is not None and model.ranking.schema is not None:
        found = model.ranking.schema
        expected = (
            "as expected"
            if verdict(found) == AT
            else "expected about one run in ten (two one-sided tests at 0.05); more often, "
            "the intervals would be miscalibrated"
        )
        out.append(f"On `{model.ranking.task}`: {against_chance('A', found)}, {expected}.")
    counts = []
    for symbol in ("a", "A"):
        chosen = [t.a if symbol == "a" else t.schema for t in model.tasks]
        nulls = [(e, e.null) for e in chosen if e is not None and e.null is not None]
        known = [(e, null) for e, null in nulls if not math.isnan(e.low)]
        if known:
            missed = sum(1 for e, null in known if not e.low <= null <= e.high)
            share = missed / len(known)
            counts.append(f"on {missed} of {len(known)} tasks for {symbol} ({share:.0%})")
    if counts:
        out.append(f"Its 95% intervals exclude chance {_join(counts)}; about 5% is expected.")
    return out


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (NaN stays NaN, tested last)."""
    order = sorted(range(len(ps)), key=lambda i: (math.isnan(ps[i]), ps[i]))
    m = sum(not math.isnan(p) for p in ps)
    adjusted, running = [math.nan] * len(ps), 0.0
    for rank, i in enumerate(order):
        if math.isnan(ps[i]):
            continue
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[i] = running
    return adjusted


def contaminated(model: Model) -> list[tuple[Contamination, float]]:
    """The files whose Holm-adjusted p is below ``ALPHA``, each with that adjusted p."""
    checks = list(model.contamination)
    adjusted = holm([c.p for c in checks])
    return [(c, q) for c, q in zip(checks, adjusted, strict=True) if q < ALPHA]


def _p(p: float) -> str:
    """``p = .04``, ``p < .001``."""
    text = format_p(p)
    return f"p {text}" if text[0] in "<>" else f"p = {text}"


def _effect(check: Contamination) -> str:
    return f"{check.effect:+.4f} nats/token [{check.low:+.4f}, {check.high:+.4f}]"


def contamination(model: Model) -> list[str]:
    """The contamination rule of the module docstring: a sentence per file flagged, or one
    saying there is no evidence."""
    checks = list(model.contamination)
    if not checks:
        return []
    flagged = contaminated(model)
    family = f"Holm over the {len(checks)} files checked" if len(checks) > 1 else ""
    out = []
    for check, q in flagged:
        adjusted = f" ({family}: {_p(q)})" if family else ""
        out.append(
            f"On `{check.dataset}` the canonical order is more likely than shuffles: "
            f"{_p(check.p)}{adjusted}; {_effect(check)}, {check.shards} shards. The "
            "model has probably seen this file in this order: its scores on it, and on the tasks "
            "made from it, may be memory rather than reasoning."
        )
    rest = [c for c in checks if c not in {f for f, _ in flagged}]
    if rest:
        listed = _join([f"`{c.dataset}` ({_p(c.p)})" for c in rest])
        out.append(
            f"No evidence of contamination on {listed}: the published order is no more likely "
            "than shuffles (this does not show the files unseen)."
        )
    return out


def sentences(model: Model) -> list[str]:
    """The findings of one model, in the order of the rules."""
    out = []
    if model.limit is not None:
        out.append(
            f"Run with --limit {model.limit:g}: every figure is of the first documents of each "
            "task, not of the whole dataset."
        )
    if model.chance_model:
        return out + calibration(model)
    found = [
        headline(model),
        survival(model),
        *controls(model),
        perturbations(model),
        *contamination(model),
        one_line("Reid250, adversarial schemas", model.reid250),
        one_line("Winogrande", model.winogrande),
    ]
    return out + [s for s in found if s]


def brief(model: Model) -> str:
    """A model's findings in one sentence, for a leaderboard row: the headline, whether problem
    accuracy survives the schema score, how many controls are above chance (the same rules as
    ``sentences``)."""
    limit = f"(--limit {model.limit:g}) " if model.limit is not None else ""
    found = model.ranking
    if found is None or found.schema is None:
        checked = f"; {contamination_brief(model)}" if model.contamination else ""
        return f"{limit}no samples of the ranking task to say it from{checked}."
    parts = [against_chance("A", found.schema)]
    if model.chance_model:
        expected = "as expected" if verdict(found.schema) == AT else "expected about one run in ten"
        return f"{limit}chance model, the calibration check: {parts[0]}, {expected}."
    if found.a is not None:
        kept = survives(found.a, found.schema)
        if kept is None:
            said = "not above chance"
        elif kept:
            said = "above chance, and it survives the schema score"
        else:
            said = "above chance, but it does not survive the schema score"
        parts.append(f"a = {interval(found.a)}, {said}")
    if model.controls:
        above = [c.task for c in model.controls if verdict(c.a) == ABOVE]
        total = len(model.controls)
        if above:
            tasks = _join([f"`{t}`" for t in above])
            parts.append(
                f"above chance on {len(above)} of {total} control baselines ({tasks}): an "
                "artifact can explain part of its score"
            )
        else:
            parts.append(f"at or below chance on all {total} control baselines")
    if model.contamination:
        parts.append(contamination_brief(model))
    return limit + "; ".join(parts) + "."


def contamination_brief(model: Model) -> str:
    """The contamination rule in a clause, for ``brief``."""
    flagged = contaminated(model)
    if flagged:
        files = _join([f"`{c.dataset}` ({_p(c.p)})" for c, _ in flagged])
        return f"the canonical order is more likely than shuffles on {files}: likely contaminated"
    return f"no evidence of contamination on {len(model.contamination)} published file(s)"


def overview(models: Sequence[Model]) -> str:
    """Which models are above chance on A of the ranking task; which are chance models."""
    ranked = [
        (m.label, m.ranking.task, m.ranking.schema)
        for m in models
        if not m.chance_model and m.ranking is not None and m.ranking.schema is not None
    ]
    checks = [m.label for m in models if m.chance_model]
    out = []
    if ranked:
        question = f"in schema accuracy A on `{ranked[0][1]}` (one-sided p < {ALPHA:g})"
        above = [f"{label} (A = {interval(e)})" for label, _, e in ranked if verdict(e) == ABOVE]
        others = [label for label, _, e in ranked if verdict(e) != ABOVE]
        if above:
            out.append(f"Above chance {question}: {_join(above)}.")
            if others:
                out.append(f"Not above chance: {_join(others)}.")
        else:
            out.append(f"No model is above chance {question}: {_join(others)}.")
    if checks:
        out.append(f"Chance models, the calibration check: {_join(checks)}.")
    return " ".join(out)
