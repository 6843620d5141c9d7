"""The findings over all models of a report or leaderboard: which are above chance on the
ranking task (Holm over them), the smallest true A at which each would be found above chance
with 80% power, and which models may be the best (the τ-best confidence sets of ``metrics.ranks``).

A board of hundreds of models keeps these lines short: each list names its first ``NAMED``
models (in the order given: the ranking's) and counts the rest, whose figures are in the tables
(and the CSV); a count says the range of the rest's figures where one is quoted."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from wsc_tasks.claims import wording
from wsc_tasks.claims.decision_rule import ABOVE, ALPHA, Model, Test, _headline, headline_tests
from wsc_tasks.claims.wording import _join, _models, interval, number
from wsc_tasks.metrics import exact, multiple_testing, ranks

NAMED = 5  # models each list of the overview names; the others are counted
BEST = ((1, 2), (3, 11), (10, 31))  # (τ, the fewest ranked models its τ-best sentence needs)
RANKS = "Mogstad, Romano, Shaikh & Wilhelm 2024"


def _named(cells: Sequence[str], values: Sequence[float] = (), unit: str = "") -> str:
    """The first ``NAMED`` cells, then how many more (with the range of their ``values``)."""
    if len(cells) <= NAMED:
        return _join(cells)
    rest = len(cells) - NAMED
    spread = ""
    if values:
        low, high = min(values[NAMED:]), max(values[NAMED:])
        shown = number(low) if low == high else f"{number(low)} to {number(high)}"
        spread = f"; {unit} {shown}"
    more = f"{rest} more model" + ("" if rest == 1 else "s")
    return f"{', '.join(cells[:NAMED])} and {more} (their figures: the tables{spread})"


def detectable(models: Sequence[Model]) -> str | None:
    """Per model, the smallest true A on the ranking task at which it would be found above
    chance with 80% power: the exact test of its n schemas, two-sided at α, the model alone
    (``exact.detectable``, Binomial(n, A) against chance). A property of the design (n and
    chance), not of the model's answers."""
    cells, smallest = [], []
    for m in models:
        e = _headline(m)
        if m.chance_model or e is None or e.null is None or math.isnan(e.null):
            continue
        found = exact.detectable(e.n, e.null, ALPHA, multiple_testing.POWER)
        if math.isnan(found):
            cells.append(f"{wording.name(m.label)} none (n = {e.n}: too few schemas)")
            smallest.append(math.nan)
            continue
        cells.append(f"{wording.name(m.label)} {number(found)} (+{found - e.null:.3f}, n = {e.n})")
        smallest.append(found)
    if not cells:
        return None
    task = next(m.ranking.task for m in models if m.ranking is not None)
    return (
        f"Power, on {wording.code(task)}: per model, {wording.power_line()}: "
        f"{_named(cells, smallest if not any(map(math.isnan, smallest)) else (), 'smallest A')}."
    )


def overview(models: Sequence[Model], found: Mapping[str, Test] | None = None) -> str:
    """Which models are above chance on A of the ranking task (Holm over them); which are chance
    models."""
    found = found if found is not None else headline_tests(models)
    ranked = [m for m in models if not m.chance_model and m.label in found]
    checks = [wording.name(m.label) for m in models if m.chance_model]
    out = []
    if ranked:
        task = ranked[0].ranking.task if ranked[0].ranking else ""
        holm = f", Holm over {_models(len(ranked))}" if len(ranked) > 1 else ""
        question = f"in schema accuracy A on {wording.code(task)} (two-sided p < {ALPHA:g}{holm})"
        chosen = [found[m.label] for m in ranked if found[m.label].verdict == ABOVE]
        above = [
            f"{wording.name(m.label)} (A = {interval(found[m.label].estimate)})"
            for m in ranked
            if found[m.label].verdict == ABOVE
        ]
        rest = [found[m.label] for m in ranked if found[m.label].verdict != ABOVE]
        others = [
            f"{wording.name(m.label)} (rules out A > {number(found[m.label].estimate.high)})"
            for m in ranked
            if found[m.label].verdict != ABOVE
        ]
        values = [t.estimate.value for t in chosen]
        highs = [t.estimate.high for t in rest]
        if above:
            out.append(f"Above chance {question}: {_named(above, values, 'A')}.")
            if others:
                said = _named(others, highs, "upper ends of A")
                out.append(f"Not distinguishable from chance or below it: {said}.")
        else:
            said = _named(others, highs, "upper ends of A")
            out.append(f"{wording.NONE_ABOVE} {question}: {said}.")
    if checks:
        out.append(f"Chance models, the calibration check: {_named(checks)}.")
    return " ".join(out)


def best_models(labels: Sequence[str], sets: ranks.RankSets | None) -> list[str]:
    """The τ-best sentences: the models that may be among the τ best (τ = 1; 3 and 10 on larger
    boards), a 95% confidence set, simultaneous over the ranked models (``labels``, in the
    order of ``sets``)."""
    if sets is None or len(labels) < 2:
        return []
    out = []
    total = len(labels)
    over = f"{sets.confidence:.0%}, simultaneous over the {total} ranked models; {RANKS}"
    for tau, fewest in BEST:
        if total < fewest:
            continue
        chosen = [wording.name(labels[j]) for j in sets.best(tau)]
        who = "the best model" if tau == 1 else f"the {tau} best models"
        if len(chosen) == total:
            out.append(f"Any of the {total} ranked models may be {who} in A ({over}).")
        elif tau == 1 and len(chosen) == 1:
            out.append(f"The best model in A is {chosen[0]} ({over}).")
        else:
            verb = "is one of" if tau == 1 else "are among"
            out.append(
                f"{who[0].upper()}{who[1:]} in A {verb} these {len(chosen)} ({over}): "
                f"{_named(chosen)}."
            )
    return out


def ranked_above(label: str, above: Sequence[str], total: int) -> str:
    """The models ranked above ``label`` with 95% confidence (``ranks.above``: one-sided, the
    model's own family of comparisons, with the stepdown)."""
    over = f"95%, one-sided over the {total - 1} other ranked models; {RANKS}"
    if not above:
        return f"No model is ranked above {wording.name(label)} in A with confidence ({over})."
    named = _named([wording.name(x) for x in above])
    return (
        f"Ranked above {wording.name(label)} in A with confidence ({over}): {len(above)} "
        f"model{'' if len(above) == 1 else 's'}, {named}."
    )
