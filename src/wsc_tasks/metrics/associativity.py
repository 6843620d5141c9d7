"""Associativity controls (thesis §4.4, Tables 4.25–4.28): how much accuracy survives no-cands.

r is an accuracy (problem or schema) on a subset of WSC266 and r_B the same accuracy on its
no-candidates perturbation, where nothing but association can solve a problem. r − r_B is the
accuracy lost to the perturbation, also the thesis's *adjusted* accuracy; relative loss
(r − r_B)/r (eq. 4.1) and relative gain (r − r_B)/(1 − r_B) (eq. 4.2), ``ratios.relative_loss``
and ``relative_gain``. Subsets: the associative schemas of Trichelair et al., the others, and all
of WSC266. Each lm-eval document is a ``consistency.PairOutcome`` (WSC266 schema, its no-cands
schema) tagged with its ``subset``; each reported quantity is a record of ``registry``.
"""

from __future__ import annotations

from functools import cache

from wsc_tasks.data.problems import Schema

SUBSETS = ("associative", "nonassociative")
ALL = "wsc266"  # the scope of every schema
SCOPES = (ALL, *SUBSETS)
# what a scope's schema accuracy counts, for "undefined: no <unit>" messages
SCOPE_UNITS = {
    ALL: "schema",
    "associative": "associative schema",
    "nonassociative": "non-associative schema",
}
QUANTITIES = ("original", "nocands", "adjusted", "rel_loss", "rel_gain")  # r, r_B, r − r_B, …
# the catalog datasets of each subset and of its no-candidates perturbation (the associativity
# task reads both at once, as the pair dataset wsc266_nocands)
DATASETS = {
    "associative": ("wsc266_associative", "wsc266_associative_nocands"),
    "nonassociative": ("wsc266_nonassociative", "wsc266_nonassociative_nocands"),
}


@cache
def _associative_numbers() -> frozenset[int | None]:
    from wsc_tasks.data import catalog

    return frozenset(p.number for s in catalog.load(DATASETS[SUBSETS[0]][0]) for p in s.problems)


def subset(original: Schema) -> str:
    """``associative`` if the WSC266 schema is in the thesis's associative subset file."""
    numbers = _associative_numbers()
    inside = [p.number in numbers for p in original.problems]
    if any(inside) != all(inside):
        raise ValueError(f"schema {original.uid} is only partly in the associative subset")
    return SUBSETS[0] if all(inside) else SUBSETS[1]
