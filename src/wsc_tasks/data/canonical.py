"""The published datasets in their published order, cut into shards: what the contamination check
(Oren et al. 2024) compares with shuffles of itself.

Which datasets: the catalog's datasets in their own right (roles ``full`` and ``adversarial``:
WSC273, WSC266, Winogrande dev, Reid250); every other dataset is made from one of them, or here,
and has no public copy in an order of its own.

What is shuffled: not problems but **schemas**. Oren et al.'s test needs the examples of a file
to be exchangeable — any order as likely as the published one for a model that never saw it. The
published files are not exchangeable problem by problem: the two problems of a schema (twins)
follow each other and differ by a word, so a model that can copy from its context (any real LM)
finds the published order more likely than a problem shuffle without having seen the file. Each
schema is kept whole, its problems in file order, and the schemas are what is permuted; shards are
contiguous runs of schemas (Reid250 lists its substitution schemas before its transposition ones,
and a shard within one run keeps that order out of the comparison).

How a problem is written: its sentence with the blank as ``_`` (Winogrande's published form; the
WSC files mark the pronoun's place, the published WSC has the pronoun there), one problem a line.
Under the null hypothesis any writing gives a valid test; a model that memorised another writing
of the file is still detected through the rest of each line, with less power.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from wsc_tasks.data import catalog
from wsc_tasks.data.problems import Problem, Schema

BLANK = "_"
SEPARATOR = "\n"  # between problems, and between schemas


def published() -> list[str]:
    """The catalog's published datasets (roles full and adversarial), in catalog order."""
    return catalog.datasets(catalog.FULL) + catalog.datasets(catalog.ADVERSARIAL)


def line(problem: Problem) -> str:
    """One problem as the check writes it: its sentence, each blank as ``_``."""
    return BLANK.join(problem.segments)


def unit_text(schema: Schema) -> str:
    """One schema: its problems' lines in file order."""
    return SEPARATOR.join(line(p) for p in schema.problems)


def units(name: str) -> list[str]:
    """The schemas of a published dataset as text, in the file's order (a schema where its first
    problem is); an unpublished name is an error naming the published ones."""
    if name not in published():
        raise KeyError(
            f"dataset {name!r} has no published order of its own; the contamination check runs "
            f"on {', '.join(published())}"
        )
    return [unit_text(s) for s in catalog.load(name)]


def shard_bounds(n_units: int, shards: int) -> list[tuple[int, int]]:
    """``shards`` contiguous runs of ``n_units`` schemas, sizes differing by at most one; each
    needs two schemas to be shuffled, so more shards than ``n_units // 2`` is an error."""
    if shards < 2:
        raise ValueError(f"shards is {shards}: the test compares shards, it needs at least 2")
    if shards > n_units // 2:
        raise ValueError(
            f"shards is {shards}: {n_units} schemas give at most {n_units // 2} shards of two "
            "schemas (a shard of one has no other order)"
        )
    size, extra = divmod(n_units, shards)
    bounds, start = [], 0
    for i in range(shards):
        end = start + size + (i < extra)
        bounds.append((start, end))
        start = end
    return bounds


@dataclass(frozen=True)
class Shard:
    """One shard: its schemas in published order and the seeded orders it is compared with."""

    dataset: str
    index: int
    units: tuple[str, ...]
    orders: tuple[tuple[int, ...], ...]  # permutations of range(len(units))

    @property
    def canonical(self) -> str:
        return SEPARATOR.join(self.units)

    def shuffled(self) -> list[str]:
        return [SEPARATOR.join(self.units[i] for i in order) for order in self.orders]


def permutations(n: int, count: int, seed: int) -> list[tuple[int, ...]]:
    """``count`` uniformly random orders of ``n`` items (drawn independently, with replacement,
    as the test assumes: the published order itself may be drawn), from ``seed``."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        order = list(range(n))
        rng.shuffle(order)
        out.append(tuple(order))
    return out


def shards(
    name: str, n_shards: int, n_permutations: int, seed: int = 1234, texts: Sequence[str] = ()
) -> list[Shard]:
    """The shards of dataset ``name`` (or of ``texts``, schemas as text, when given), each with
    ``n_permutations`` orders; a shard's orders are seeded by ``seed`` and its index, so that
    a ``--limit`` run's shards are those of the full run."""
    if n_permutations < 1:
        raise ValueError(f"permutations is {n_permutations}: at least 1 shuffle per shard")
    all_units = list(texts) if texts else units(name)
    out = []
    for i, (start, end) in enumerate(shard_bounds(len(all_units), n_shards)):
        chosen = tuple(all_units[start:end])
        orders = permutations(len(chosen), n_permutations, seed * 1_000_003 + i)
        out.append(Shard(name, i, chosen, tuple(orders)))
    return out
