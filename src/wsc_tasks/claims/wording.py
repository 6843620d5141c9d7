"""The pieces of the findings' sentences: numbers, intervals, p's and names as every format
shows them (a user's string enters a sentence only through ``code`` and ``name``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from wsc_tasks import markup
from wsc_tasks.claims import decision_rule
from wsc_tasks.claims.decision_rule import UNCLEAR, Rule, Test, test
from wsc_tasks.metrics import stats
from wsc_tasks.metrics.stats import Estimate, format_p


def code(text: str) -> str:
    """A task or dataset name in a sentence, shown as code: marked as user text
    (``markup.code``), so that Markdown puts it in a code span that holds it whatever it
    contains, HTML escapes it inside ``<code>``, the terminal prints it as it is."""
    return markup.code(text)


def name(label: str) -> str:
    """A model's label in a sentence: marked as user text (``markup.name``), escaped by each
    format, never read as Markdown."""
    return markup.name(label)


def number(value: float) -> str:
    return "–" if math.isnan(value) else f"{value:.3f}"


def interval(estimate: Estimate) -> str:
    """``0.293 [0.218, 0.376]``."""
    return f"{number(estimate.value)} [{number(estimate.low)}, {number(estimate.high)}]"


def signed(estimate: Estimate) -> str:
    """``-0.100 [-0.190, -0.010]``: a change."""
    return f"{estimate.value:+.3f} [{estimate.low:+.3f}, {estimate.high:+.3f}]"


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def _relation(p: float | None) -> str:
    text = format_p(p)
    return text if text[0] in "<>" else f"= {text}"


def _p_text(found: Test, over: str = "") -> str:
    """``p = .03`` or, in a family of several, ``p = .03, Holm-adjusted over the 6 controls .2``."""
    text = f"p {_relation(found.p)}"
    if found.family > 1 and over:
        text += f", Holm-adjusted over {over} {format_p(found.adjusted)}"
    return text


def against_chance(symbol: str, found: Test | Estimate, over: str = "") -> str:
    """``A = 0.293 [0.218, 0.376], not distinguishable from chance (0.250; p = .3); rules out
    A > 0.376``; ``above chance (0.500; p < .001)``."""
    found = found if isinstance(found, Test) else test(found)
    e = found.estimate
    chance = number(e.null) if e.null is not None else "–"
    text = f"{symbol} = {interval(e)}, {found.verdict} ({chance}; {_p_text(found, over)})"
    if found.verdict == UNCLEAR and not math.isnan(e.high):
        text += f"; rules out {symbol} > {number(e.high)}"
    return text


def _models(count: int) -> str:
    return f"the {count} models"


def _p_is(p: float) -> str:
    """``p = .04``, ``p < .001``."""
    return f"p {_relation(p)}"


# The rule in the fixed text around the findings (the report's opening, its findings section, the
# leaderboard, the README): each phrase read from ``decision_rule.RULE``, so that no page says a p
# or a family the rule does not use (``tests/test_rule_prose.py``; the README's blocks are written
# from these by ``tests/regenerate.py``).
def sides(rule: Rule | None = None) -> str:
    """``two-sided`` or ``one-sided``: the findings' p (``decision_rule.RULE`` by default)."""
    rule = rule or decision_rule.RULE
    return "two-sided" if rule.two_sided else "one-sided"


FAMILIES = (
    "a model's control baselines; its perturbations; the models tested on the ranking task, "
    "chance models aside"
)


def how_p() -> str:
    """How every p is computed (``metrics.stats``' rule, its module docstring), in words."""
    return (
        "exact where a schema's outcome is binary (schema accuracy A against chance: the exact "
        "binomial test of the number of schemas solved, Poisson-binomial where schema sizes "
        "differ; a paired difference in A: exact McNemar on the schemas where the two differ); "
        "otherwise Monte Carlo (k + 1)/(R + 1) of a bootstrap over schemas (thesis §3.8), or, "
        f"on fewer than {stats.MIN_DOCUMENTS} schemas or where its replicates do not vary, the "
        "exact sign test of the schemas' own values (an unpaired difference then has none)"
    )


def how_intervals() -> str:
    """How every 95% interval is computed (``metrics.stats``' rule), in words."""
    return (
        "for A, Clopper–Pearson over the schemas, and for a paired difference in A, ψ(2π − 1) "
        "over the Clopper–Pearson intervals of the share ψ of schemas where the two differ and "
        "the share π of them the first wins (a function of two 95% intervals: at least 90% "
        "by Bonferroni, at least 95% in simulations at 4, 10, 40 and 133 schemas); "
        "otherwise the percentile interval of a bootstrap over schemas (lm-eval documents), or "
        f"Clopper–Pearson over the schemas on fewer than {stats.MIN_DOCUMENTS} of them or where "
        "its replicates do not vary"
    )


def which_p(rule: Rule | None = None) -> str:
    """The p of every table (``stats.Estimate.p``, always two-sided) and of the findings (by
    ``rule``), in one sentence (after ``p:``)."""
    rule = rule or decision_rule.RULE
    text = (
        f"{how_p()}; one significant digit; two-sided, against chance for an accuracy, written "
        "with the side of chance the value lies on (`.007 (below)`: far below chance, not a "
        "good model), and against 0 for a difference, whose sign is its side"
    )
    return f"{text}; {findings_p(rule)}."


def findings_p(rule: Rule | None = None) -> str:
    """Which p the findings test, next to the tables' two-sided one."""
    rule = rule or decision_rule.RULE
    if rule.two_sided:
        return "the findings quote the same p as the tables"
    return f"the findings test the {sides(rule)} p on the side the value lies on"


def claim_rule(rule: Rule | None = None) -> str:
    """What a claim needs, by ``rule`` (``decision_rule.RULE`` unless given)."""
    rule = rule or decision_rule.RULE
    parts = [f"{sides(rule)} p below {rule.alpha:g}"]
    if rule.holm:
        parts[0] += f" after Holm's adjustment over its family ({FAMILIES})"
    if rule.interval:
        parts.append("its 95% interval on the claimed side")
    return (
        f"A claim (above or below chance, lower or higher) needs {' and '.join(parts)}; "
        "otherwise the result is *not distinguishable from chance*, never *at chance*, and the "
        "interval says what it rules out"
    )


def power_line() -> str:
    """What the power line states, per model (``across_models.detectable``)."""
    return (
        "the smallest true A at which it would be found above chance with 80% power (the exact "
        f"test of its schemas, two-sided at {decision_rule.RULE.alpha:g}, the model alone)"
    )


NONE_ABOVE = "No model is shown above chance"  # the overview when none is: not "none is"
