"""The pieces of the findings' sentences: numbers, intervals, p's and names as every format
shows them (a user's string enters a sentence only through ``code`` and ``name``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from wsc_tasks.metrics.stats import Estimate, format_p
from wsc_tasks.reporting import markup
from wsc_tasks.reporting.claims import UNCLEAR, Test, test


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
