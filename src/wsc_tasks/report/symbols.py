"""Every symbol the report shows, with what it means, each written once.

The metric registry's symbols and descriptions (a, A, A′, c, C̃, C*, r_B…), and the few the report
adds (p, Δ, the interval, chance). The glossary section lists them; the HTML pages give a column
header's meaning as its tooltip (``describe``), so a symbol is defined where it is shown.
"""

from __future__ import annotations

import re

from wsc_tasks.claims import wording
from wsc_tasks.metrics import registry

# the report's own symbols and words (the metrics' are the registry's)
OWN = {
    "[low, high]": f"95% interval: {wording.how_intervals()}",
    "p": f"p-value: {wording.how_p()}. In a table: two-sided, against chance for an accuracy "
    "(with the side of chance the value lies on: above or below) and against 0 for a difference "
    "(its side is its sign). The findings quote the same two-sided p, and, in a family of "
    "claims, its Holm-adjusted p",
    "Holm-adjusted p": "a p-value adjusted over a family of m tests by Holm's step-down method "
    "(the i-th smallest times m − i + 1, kept increasing): claims with an adjusted p below 0.05 "
    "have a familywise error rate of at most 0.05 under any dependence",
    "not distinguishable from chance": "the test against chance is not significant (or its "
    "interval includes chance): the data do not show the model above or below chance, and the "
    "interval says what they rule out; not the same as at chance",
    "detectable effect": "the power line: per model, " + wording.power_line(),
    "Δ": "a difference between two conditions, paired when both are on the same schemas",
    "chance level": "the accuracy of answering at random: 0.5 for a; for A the mean of 2^−size "
    "over schemas (0.25 for schemas of two problems)",
    "chance model": "wsc-chance, an lm-eval model with random log-likelihoods: the calibration "
    "check of the intervals and p-values, not a model to rank",
    "documents": "lm-eval documents: schemas (or twin pairs, dyads), the unit of the tests and "
    "of the bootstrap",
}
EQUAL = ("equal length", "equal")  # a column restricted to equal-length answers (thesis §3.7.4)


def _registry() -> dict[str, str]:
    """Each registry symbol with the description of its first record (``a``: acc, not
    acc_original, which shares the symbol)."""
    out: dict[str, str] = {}
    for metric in registry.REGISTRY:
        out.setdefault(metric.symbol, metric.description)
    return out


GLOSSARY: dict[str, str] = {**_registry(), **OWN}


def describe(header: str) -> str | None:
    """The meaning of a column header that is or holds a symbol: ``A``, ``p (A)``, ``ΔA``,
    ``a (equal length)``, ``A wsc273_nocands``; None for a header without one (``model``)."""
    header = header.strip()
    if header in GLOSSARY:
        return GLOSSARY[header]
    inner = re.fullmatch(r"p \((.+)\)", header)
    if inner:
        return (
            f"p-value of {inner[1]}: two-sided, against chance for an accuracy (above or below "
            "it), against 0 for a difference"
        )
    restricted = re.fullmatch(r"(.+) \((.+)\)", header)
    if restricted and restricted[2] in EQUAL:
        found = describe(restricted[1])
        if found is None:
            return None
        return f"{found}, on the problems whose two answers have the same number of tokens"
    if header.startswith("Δ") and len(header) > 1:
        found = describe(header[1:])
        return f"difference in {header[1:]}: {found}" if found else None
    head, _, rest = header.partition(" ")
    if rest and head in GLOSSARY:
        return f"{GLOSSARY[head]} ({rest})"
    return None
