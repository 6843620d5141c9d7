"""Every dataset the tasks evaluate, by name: which file, which parser or transformation, what size.

Sizes from ``data/README.md`` and the papers are checked on every load: a file that parses to a
different number of problems or schemas is an error, not a silently smaller evaluation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from . import data, parsers
from .problems import Schema, count
from .transforms import TRANSFORMS, transform_schemas

log = logging.getLogger(f"lm_eval.{__name__}")

WINOGRANDE_DEV = "elazar/winogrande/dev.jsonl"


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    build: Callable[[], list[Schema]]
    expected: tuple[int, int] | None  # (problems, schema groups); None for derived baselines
    origin: str  # what it is and where it comes from, for the task README and logs


def _maler(relpath: str) -> Callable[[], list[Schema]]:
    return lambda: list(parsers.parse_maler(data.resolve(relpath)).schemas)


def _winogrande_all() -> list[Schema]:
    schemas = parsers.group_twins(parsers.parse_winogrande(data.resolve(WINOGRANDE_DEV)))
    pairs = sum(len(s.problems) == 2 for s in schemas)
    log.info(
        f"wsc_tasks: {WINOGRANDE_DEV}: {pairs} twin pairs and {len(schemas) - pairs} problems "
        "without a twin (problem metrics only)"
    )
    return schemas


def _winogrande_twins() -> list[Schema]:
    return [s for s in load("winogrande_dev") if len(s.problems) == 2]


def _transformed(base: str, transform: str) -> Callable[[], list[Schema]]:
    def build() -> list[Schema]:
        source = load(base)
        kept, dropped = transform_schemas(source, TRANSFORMS[transform])
        for reason, n in sorted(dropped.items()):
            log.info(f"wsc_tasks: {transform} of {base}: dropped {n} schema(s): {reason}")
        problems, groups = count(kept)
        log.info(
            f"wsc_tasks: {transform} of {base}: kept {len(kept)} of {len(source)} schemas "
            f"({problems} problems, {groups} schema groups)"
        )
        return kept

    return build


_W = "maler/wsc266/"
SPECS: dict[str, DatasetSpec] = {
    spec.name: spec
    for spec in [
        DatasetSpec(
            "wsc273_schemas",
            _maler(_W + "wsc273.txt"),
            (273, 137),
            "WSC273 preprocessed as thesis §3.2; 253–255 scored as {253,254},{254,255}",
        ),
        DatasetSpec("wsc266", _maler(_W + "wsc266.txt"), (266, 133), "WSC266, thesis §3.3"),
        DatasetSpec(
            "wsc266_associative",
            _maler(_W + "wsc266_associative.txt"),
            (50, 25),
            "associative subset, thesis §3.4.1",
        ),
        DatasetSpec(
            "wsc266_nonassociative",
            _maler(_W + "wsc266_nonassociative.txt"),
            (216, 108),
            "non-associative subset, thesis §3.4.1",
        ),
        DatasetSpec(
            "wsc266_switched",
            _maler(_W + "wsc266_switched.txt"),
            (140, 70),
            "switched candidates of the switchable subset, thesis §3.4.2",
        ),
        DatasetSpec(
            "wsc266_adjectival",
            _maler(_W + "wsc266_adjectival.txt"),
            (174, 87),
            "adjectival perturbation of the symmetrical subset, thesis §3.4.4",
        ),
        DatasetSpec(
            "wsc266_unbalanced",
            _maler(_W + "wsc266_unbalanced.txt"),
            (266, 133),
            "unbalanced perturbation, thesis §3.4.4",
        ),
        DatasetSpec(
            "wsc266_inverted",
            _maler(_W + "wsc266_inverted.txt"),
            (266, 133),
            "inverted schemas, solution by key, thesis §3.4.3",
        ),
        DatasetSpec(
            "wsc266_associative_nocands",
            _maler(_W + "wsc266_associative_nocands.txt"),
            (50, 25),
            "no-candidates perturbation of the associative subset (thesis, hand-made)",
        ),
        DatasetSpec(
            "wsc266_nonassociative_nocands",
            _maler(_W + "wsc266_nonassociative_nocands.txt"),
            (216, 108),
            "no-candidates perturbation of the non-associative subset (thesis, hand-made)",
        ),
        DatasetSpec(
            "wsc273_nocands",
            _transformed("wsc273_schemas", "nocands"),
            None,
            "no-cands baseline (Elazar §5) of WSC273, made by wsc_tasks.transforms",
        ),
        DatasetSpec(
            "wsc273_partsent",
            _transformed("wsc273_schemas", "partsent"),
            None,
            "part-sent baseline (Elazar §5, fn. 9) of WSC273, made by wsc_tasks.transforms",
        ),
        DatasetSpec(
            "winogrande_dev",
            _winogrande_all,
            (1267, 284),
            "Winogrande (xl) dev, all problems; schema metrics over the 284 twin pairs",
        ),
        DatasetSpec(
            "winogrande_twins",
            _winogrande_twins,
            (568, 284),
            "Winogrande dev twins paired by qID (Elazar §3.1)",
        ),
        DatasetSpec(
            "winogrande_nocands",
            _transformed("winogrande_twins", "nocands"),
            None,
            "no-cands baseline of the Winogrande twins, made by wsc_tasks.transforms",
        ),
        DatasetSpec(
            "winogrande_partsent",
            _transformed("winogrande_twins", "partsent"),
            None,
            "part-sent baseline of the Winogrande twins, made by wsc_tasks.transforms",
        ),
    ]
}


@cache
def _load_cached(name: str) -> tuple[Schema, ...]:
    if name not in SPECS:
        raise KeyError(f"unknown wsc_tasks dataset {name!r}; known: {sorted(SPECS)}")
    spec = SPECS[name]
    schemas = spec.build()
    problems, groups = count(schemas)
    if spec.expected is not None and (problems, groups) != spec.expected:
        raise ValueError(
            f"dataset {name}: parsed {problems} problems in {groups} schema groups, expected "
            f"{spec.expected[0]} and {spec.expected[1]} (data/README.md). Is it the pinned file?"
        )
    log.info(f"wsc_tasks: {name}: {len(schemas)} documents, {problems} problems, {groups} schemas")
    return tuple(schemas)


def load(name: str) -> list[Schema]:
    """The schemas of a named dataset, parsed, transformed and size-checked."""
    return list(_load_cached(name))
